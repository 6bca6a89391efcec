"""docker-compose.yml hangs together (it cannot be run here: no Docker engine)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.platform.serve import SHUTDOWN_MARGIN_SECONDS
from tests.platform.conftest import REPO

COMPOSE = REPO / "docker-compose.yml"
TRELLIS_SERVICES = ("setup", "worker", "api")


def _compose_command() -> list[str] | None:
    """`docker compose` or `docker-compose`, whichever works without an engine, else None."""
    candidates = [["docker", "compose"], ["docker-compose"]]
    for cmd in candidates:
        if shutil.which(cmd[0]) is None:
            continue
        probe = subprocess.run([*cmd, "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return cmd
    return None


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(loaded, dict)
    return loaded


def _depends(service: dict[str, Any]) -> dict[str, str]:
    return {name: spec["condition"] for name, spec in service.get("depends_on", {}).items()}


def test_compose_config_is_valid_for_docker_compose() -> None:
    cmd = _compose_command()
    if cmd is None:
        pytest.skip("neither `docker compose` (plugin) nor `docker-compose` is installed here")
    result = subprocess.run(
        [*cmd, "-f", str(COMPOSE), "config", "-q"], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0, result.stderr


def test_compose_has_every_part_of_the_platform(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {
        "postgresql",
        "temporal",
        "temporal-ui",
        "mongodb",
        *TRELLIS_SERVICES,
    }


def test_temporal_runs_the_auto_setup_image_on_postgres(compose: dict[str, Any]) -> None:
    temporal = compose["services"]["temporal"]
    assert temporal["image"].startswith("temporalio/auto-setup:")
    assert temporal["environment"]["DB"] == "postgres12"
    assert temporal["environment"]["POSTGRES_SEEDS"] == "postgresql"
    assert _depends(temporal) == {"postgresql": "service_healthy"}


@pytest.mark.parametrize("name", ["postgresql", "temporal", "mongodb", "worker", "api"])
def test_long_running_services_have_health_checks(compose: dict[str, Any], name: str) -> None:
    assert compose["services"][name]["healthcheck"]["test"]


@pytest.mark.parametrize("name", TRELLIS_SERVICES)
def test_trellis_services_share_one_image_built_here(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    assert (service["build"], service["image"]) == (".", "trellis:local")
    assert (REPO / "Dockerfile").is_file()


@pytest.mark.parametrize("name", TRELLIS_SERVICES)
def test_trellis_services_point_at_the_compose_temporal_and_mongodb(
    compose: dict[str, Any], name: str
) -> None:
    env = compose["services"][name]["environment"]
    assert env["TRELLIS_TEMPORAL_ADDRESS"] == "temporal:7233"
    assert env["TRELLIS_STORE_URL"].startswith("mongodb://mongodb:27017/")


def test_setup_runs_trellis_setup_once_the_cluster_and_store_are_healthy(
    compose: dict[str, Any],
) -> None:
    setup = compose["services"]["setup"]
    assert setup["command"][:2] == ["trellis", "setup"]
    assert setup["restart"] == "no"
    assert _depends(setup) == {"temporal": "service_healthy", "mongodb": "service_healthy"}


@pytest.mark.parametrize("name", ["worker", "api"])
def test_worker_and_api_start_after_setup_succeeded(compose: dict[str, Any], name: str) -> None:
    assert _depends(compose["services"][name]) == {
        "setup": "service_completed_successfully",
        "temporal": "service_healthy",
        "mongodb": "service_healthy",
    }


def test_api_listens_on_all_interfaces_inside_its_container(compose: dict[str, Any]) -> None:
    api = compose["services"]["api"]
    assert api["environment"]["TRELLIS_API_HOST"] == "0.0.0.0"
    assert "8000:8000" in api["ports"]


def test_every_dependency_names_a_defined_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        assert set(_depends(service)) <= set(services), name


def test_docker_build_context_keeps_local_state_out() -> None:
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".venv", ".trellis", ".git"} <= ignored


def test_dockerfile_installs_the_package_and_runs_trellis() -> None:
    text = Path(REPO / "Dockerfile").read_text()
    assert "pip install ." in text
    assert 'CMD ["trellis", "api"]' in text


def test_the_api_serves_jwt_mode_on_its_public_address(compose: dict[str, Any]) -> None:
    env = compose["services"]["api"]["environment"]
    assert env["TRELLIS_API_HOST"] == "0.0.0.0"
    assert env["TRELLIS_AUTH_MODE"] == "jwt"


def _seconds(duration: str) -> float:
    assert duration.endswith("s"), duration
    return float(duration[:-1])


@pytest.mark.parametrize(
    ("name", "setting", "margin"),
    [
        ("worker", "TRELLIS_WORKER_SHUTDOWN_GRACE_SECONDS", SHUTDOWN_MARGIN_SECONDS),
        ("api", "TRELLIS_API_SHUTDOWN_GRACE_SECONDS", 5.0),
    ],
)
def test_stop_grace_period_outlasts_the_process_own_graceful_shutdown(
    compose: dict[str, Any], name: str, setting: str, margin: float
) -> None:
    service = compose["services"][name]
    grace = float(service["environment"][setting])
    assert _seconds(service["stop_grace_period"]) >= grace + margin
