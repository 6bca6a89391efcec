"""A `TRELLIS_*` variable that is no setting: refused when it looks like a misspelt one,
otherwise named in a warning (a newer release's setting must not stop an older one)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from app.cli.main import main
from app.cli.unknown_variables import OTHER_VARIABLES, setting_variables, unknown_variables
from app.platform.child_env import settings_env
from app.settings import Settings
from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No TRELLIS_* from our environment; a data dir that nothing has created yet."""
    for name in [n for n in os.environ if n.upper().startswith("TRELLIS_")]:
        monkeypatch.delenv(name)
    data_dir = tmp_path / "data"
    monkeypatch.setenv("TRELLIS_DATA_DIR", str(data_dir))
    return data_dir


@pytest.mark.parametrize(
    ("name", "setting"),
    [
        ("TRELLIS_AUTH_MOD", "TRELLIS_AUTH_MODE"),
        ("TRELLIS_JWT_SECRETS", "TRELLIS_JWT_SECRET"),
        ("TRELLIS_TEMPORAL_ADRESS", "TRELLIS_TEMPORAL_ADDRESS"),
        ("trellis_task_queu", "TRELLIS_TASK_QUEUE"),
    ],
)
def test_a_name_close_to_a_settings_is_taken_for_its_typo(name: str, setting: str) -> None:
    found = unknown_variables([name])
    assert found.typos == {name: setting} and found.others == []


def test_settings_and_the_variables_other_parts_read_are_not_unknown() -> None:
    names = [*setting_variables(), *OTHER_VARIABLES, "trellis_api_port", "PATH"]
    found = unknown_variables(names)
    assert found.typos == {} and found.others == []


def test_a_name_like_no_setting_is_only_warned_about() -> None:
    found = unknown_variables(["TRELLIS_SOMETHING_NEWER", "TRELLIS_API_PORT"])
    assert found.typos == {}
    assert found.warning() == "ignoring TRELLIS_SOMETHING_NEWER: no setting of this release"


@pytest.mark.parametrize("command", ["api", "worker", "dev", "setup"])
def test_a_misspelt_setting_stops_a_server_command_naming_the_setting(
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    # It ran the API with no authentication: pydantic-settings ignores names it lacks.
    monkeypatch.setenv("TRELLIS_AUTH_MOD", "jwt")
    # Were it not refused, the command would stop at its store check (exit 1), not serve.
    monkeypatch.setenv("TRELLIS_STORE_URL", "nosuch://store")
    for port in ("API_PORT", "TEMPORAL_PORT", "UI_PORT"):
        monkeypatch.setenv(f"TRELLIS_{port}", str(free_port()))
    assert main([command]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"trellis {command}: unknown variable TRELLIS_AUTH_MOD: did you mean "
        "TRELLIS_AUTH_MODE? (not applied as it is spelt)"
    ]
    assert not clean_env.exists()


def test_a_typo_is_reported_with_the_bad_values(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRELLIS_AUTH_MOD", "jwt")
    monkeypatch.setenv("TRELLIS_API_WORKERS", "0")
    assert main(["api"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis api: unknown variable TRELLIS_AUTH_MOD: did you mean TRELLIS_AUTH_MODE? "
        "(not applied as it is spelt)",
        "trellis api: invalid value '0' for --api-workers / TRELLIS_API_WORKERS: "
        "must be greater than or equal to 1",
    ]


def test_an_unknown_name_is_one_warning_and_the_command_goes_on(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRELLIS_SOMETHING_NEWER", "1")
    monkeypatch.setenv("TRELLIS_OTHER_NEW_THING", "2")
    # It goes on to the start-up checks: dev mode off loopback is refused (exit 1).
    monkeypatch.setenv("TRELLIS_API_HOST", "0.0.0.0")
    assert main(["api"]) == 1
    err = capsys.readouterr().err.splitlines()
    warnings = [line for line in err if "TRELLIS_SOMETHING_NEWER" in line]
    assert len(warnings) == 1
    assert "ignoring TRELLIS_SOMETHING_NEWER, TRELLIS_OTHER_NEW_THING: no setting" in warnings[0]
    assert "WARNING" in warnings[0]
    assert err[-1].startswith("trellis api: refusing to serve on 0.0.0.0")


def test_the_children_of_dev_get_no_unknown_variable_to_warn_about_again(tmp_path: Path) -> None:
    base = {"TRELLIS_SOMETHING_NEWER": "1", "trellis_api_port": "1", "PATH": "/bin"}
    env = settings_env(Settings(data_dir=tmp_path, api_port=9123), base=base)
    assert "TRELLIS_SOMETHING_NEWER" not in env and "trellis_api_port" not in env
    assert env["TRELLIS_API_PORT"] == "9123" and env["PATH"] == "/bin"


# Where a variable is read or documented: os.environ / getenv / click's envvar, the
# compose file and its .env, the docs.
READ = re.compile(r"""(?:environ(?:\.get)?\(|environ\[|getenv\(|envvar=)\s*["'](TRELLIS_\w+)""")
NAMED = re.compile(r"\b(TRELLIS_[A-Z0-9_]*[A-Z0-9])\b(?![*_])")


def _named_variables() -> set[str]:
    found: set[str] = set()
    for path in [*REPO.glob("**/*.py")]:
        if ".venv" not in path.parts:
            found |= set(READ.findall(path.read_text(encoding="utf-8")))
    documented: set[str] = set()
    docs = [REPO / "README.md", REPO / ".env.example", REPO / "docker-compose.yml"]
    for path in [*docs, *(REPO / "docs").glob("*.md")]:
        documented |= set(NAMED.findall(path.read_text(encoding="utf-8")))
    # The docs show a typo (TRELLIS_AUTH_MOD) as an example of what is refused.
    return found | (documented - set(unknown_variables(documented).typos))


def test_every_trellis_variable_read_or_documented_is_a_setting_or_known() -> None:
    assert _named_variables() - setting_variables() <= OTHER_VARIABLES
