"""Children receive the supervisor's resolved settings, not their own guesses."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.platform.child_env import settings_env
from app.settings import Settings


def test_children_get_the_data_dir_as_an_absolute_path() -> None:
    env = settings_env(Settings(data_dir=Path("relative/dir")), base={})
    assert env["TRELLIS_DATA_DIR"] == str(Path("relative/dir").resolve())


def test_children_get_the_store_url_pinned_to_the_data_dir(tmp_path: Path) -> None:
    env = settings_env(Settings(data_dir=tmp_path), base={})
    assert env["TRELLIS_STORE_URL"] == f"sqlite:///{tmp_path.resolve() / 'trellis.db'}"


def test_children_read_back_the_same_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = Settings(
        data_dir=tmp_path,
        api_port=9123,
        temporal_tls=True,
        task_queue="q",
        http_allowed_networks="10.0.0.0/8,fd00::/8",  # type: ignore[arg-type]
    )
    for key, value in settings_env(given, base={}).items():
        monkeypatch.setenv(key, value)
    read = Settings()
    assert read.resolved_store_url == given.resolved_store_url
    assert (read.api_port, read.temporal_tls, read.task_queue) == (9123, True, "q")
    assert read.http_allowed_networks == given.http_allowed_networks


def test_unset_settings_in_our_environment_do_not_leak_to_children(tmp_path: Path) -> None:
    env = settings_env(Settings(data_dir=tmp_path), base={"TRELLIS_TEMPORAL_ADDRESS": "x:1"})
    assert "TRELLIS_TEMPORAL_ADDRESS" not in env
