"""An empty variable (`VAR=`, as docker compose's `${VAR:-}` gives) means unset, for every
setting; an empty flag is refused where the setting must not be empty."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from app.cli.main import cli, main
from app.cli.settings_options import env_name, flag_name, is_secret, scope, settings_from
from app.settings import Settings

DEFAULTS = Settings()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.upper().startswith("TRELLIS_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_an_empty_variable_is_the_default(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(env_name(name), "")
    assert getattr(Settings(), name) == getattr(DEFAULTS, name)


@pytest.mark.parametrize(
    ("variable", "attribute", "default"),
    [
        # The worker died with a 214-line traceback while the API started.
        ("TRELLIS_TEMPORAL_NAMESPACE", "temporal_namespace", "default"),
        # The worker polled the task queue "".
        ("TRELLIS_TASK_QUEUE", "task_queue", "trellis"),
        # The API bound every interface (in jwt mode; dev mode refused it).
        ("TRELLIS_API_HOST", "api_host", "127.0.0.1"),
        # trellis.db went into the working directory.
        ("TRELLIS_DATA_DIR", "data_dir", Path(".trellis")),
        # The catalog "." was read as a directory.
        ("TRELLIS_EXECUTORS_FILE", "executors_file", None),
        # Refused with exit 2, while empty JWT_* counted as unset.
        ("TRELLIS_TEMPORAL_UI_URL", "temporal_ui_url", None),
        ("TRELLIS_JWT_SCOPES_CLAIM", "jwt_scopes_claim", "scope"),
        ("TRELLIS_JWT_ROLES_CLAIM", "jwt_roles_claim", "roles"),
        ("TRELLIS_JWT_NAME_CLAIM", "jwt_name_claim", "name"),
    ],
)
def test_an_empty_variable_the_audit_found_mishandled_is_unset(
    monkeypatch: pytest.MonkeyPatch, variable: str, attribute: str, default: Any
) -> None:
    monkeypatch.setenv(variable, "")
    assert getattr(settings_from({}), attribute) == default


def test_an_empty_web_ui_url_does_not_stop_the_api(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setenv("TRELLIS_TEMPORAL_UI_URL", "")
    monkeypatch.setenv("TRELLIS_DATA_DIR", str(tmp_path))
    # It goes on to the start-up checks, stopped here by a store URL no store has.
    monkeypatch.setenv("TRELLIS_STORE_URL", "nosuch://store")
    assert main(["api", "--api-port", "18401"]) == 1
    assert "TRELLIS_TEMPORAL_UI_URL" not in capsys.readouterr().err


# Settings that have a value whatever is given: as a flag, empty is no value for them.
REQUIRED_TEXT = [
    name
    for name, info in Settings.model_fields.items()
    if info.annotation in (str, Path) and not is_secret(info)
]


@pytest.mark.parametrize("name", REQUIRED_TEXT)
def test_an_empty_flag_of_a_setting_that_must_have_a_value_is_refused(name: str) -> None:
    command = next(c for c in ("worker", "api", "setup") if c in scope(name))
    context = cli.commands[command].make_context(command, [flag_name(name), ""])
    with pytest.raises(Exception) as caught:
        settings_from(context.params)
    (line,) = caught.value.lines  # type: ignore[attr-defined]
    assert line.startswith(f"invalid value '' for {flag_name(name)} / {env_name(name)}: must ")


@pytest.mark.parametrize("name", ["temporal_address", "executors_file", "jwt_issuer"])
def test_an_empty_flag_of_an_optional_setting_is_unset(name: str) -> None:
    command = next(c for c in ("worker", "api") if c in scope(name))
    context = cli.commands[command].make_context(command, [flag_name(name), ""])
    assert getattr(settings_from(context.params), name) is None
