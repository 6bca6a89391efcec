"""Start-up mistakes are one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.store.sqlite_schema import SCHEMA_VERSION
from tests.platform.conftest import run_trellis, trellis_env
from tests.store.future_schema import FUTURE_VERSION, migrate_to_future
from tests.support.server import free_port


@pytest.fixture
def bad_catalog(tmp_path: Path) -> Path:
    path = tmp_path / "executors.yaml"
    path.write_text("mcpServers: [this is: not, a valid: server\n")
    return path


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_dev_with_a_bad_catalog_exits_naming_the_file(tmp_path: Path, bad_catalog: Path) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_EXECUTORS_FILE=str(bad_catalog))
    result = run_trellis(["dev"], env)
    assert result.returncode != 0
    assert str(bad_catalog) in result.stderr
    assert "Traceback" not in result.stderr


def test_api_with_a_bad_catalog_exits_naming_the_file(tmp_path: Path, bad_catalog: Path) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_EXECUTORS_FILE=str(bad_catalog))
    result = run_trellis(["api"], env)
    assert result.returncode != 0
    assert str(bad_catalog) in result.stderr
    assert "Traceback" not in result.stderr


def test_worker_with_a_bad_catalog_exits_naming_the_file(tmp_path: Path, bad_catalog: Path) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_EXECUTORS_FILE=str(bad_catalog))
    result = run_trellis(["worker"], env)
    assert result.returncode != 0
    assert str(bad_catalog) in result.stderr
    assert "Traceback" not in result.stderr


def test_dev_on_a_taken_api_port_says_so(tmp_path: Path, taken_port: int) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_API_PORT=str(taken_port))
    result = run_trellis(["dev"], env)
    assert result.returncode != 0
    assert f"port {taken_port}" in result.stderr
    assert "already in use" in result.stderr
    assert "Traceback" not in result.stderr


def test_dev_on_a_taken_temporal_port_says_so(tmp_path: Path, taken_port: int) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_PORT=str(taken_port))
    result = run_trellis(["dev"], env)
    assert result.returncode != 0
    assert f"port {taken_port}" in result.stderr
    assert "TRELLIS_TEMPORAL_PORT" in result.stderr


def test_dev_on_a_taken_temporal_metrics_port_says_so(tmp_path: Path, taken_port: int) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_METRICS_PORT=str(taken_port))
    result = run_trellis(["dev"], env)
    assert result.returncode != 0
    assert f"port {taken_port}" in result.stderr
    assert "TRELLIS_TEMPORAL_METRICS_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_dev_on_a_taken_temporal_http_api_port_says_so(tmp_path: Path, taken_port: int) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_HTTP_API_PORT=str(taken_port))
    result = run_trellis(["dev"], env)
    assert result.returncode != 0
    assert f"port {taken_port}" in result.stderr
    assert "TRELLIS_TEMPORAL_HTTP_API_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_dev_given_one_port_for_two_parts_says_so_before_starting_any(tmp_path: Path) -> None:
    # Each port alone was free: the dev server then failed on its own, in a JSON log line.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_PORT=str(port), TRELLIS_UI_PORT=str(port))
    result = run_trellis(["dev"], env)
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith(
            f"port {port} is given to two parts (--temporal-port / TRELLIS_TEMPORAL_PORT and "
            "--ui-port / TRELLIS_UI_PORT); choose another for one of them"
        )
    ), result.stderr
    assert "FATAL" not in result.stderr and "Traceback" not in result.stderr


def test_api_on_a_taken_port_says_so(tmp_path: Path, taken_port: int) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_API_PORT=str(taken_port))
    result = run_trellis(["api"], env)
    assert result.returncode != 0
    assert f"port {taken_port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_invalid_setting_is_one_line_naming_the_variable_and_exit_code_2(tmp_path: Path) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_API_PORT="not-a-port")
    result = run_trellis(["api"], env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "trellis api: invalid value 'not-a-port' for --api-port / TRELLIS_API_PORT: "
        "must be a valid integer, unable to parse string as an integer"
    ]


def test_dev_on_port_zero_starts_nothing(tmp_path: Path) -> None:
    # Port 0 used to reach the Temporal dev server, which failed only after it was spawned.
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_PORT="0")
    result = run_trellis(["dev"], env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "trellis dev: invalid value '0' for --temporal-port / TRELLIS_TEMPORAL_PORT: "
        "must be greater than or equal to 1"
    ]
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("flag", "typed", "reason"),
    [
        ("--reconcile-interval-seconds", "0", "must be greater than 0"),
        ("--catalog-refresh-seconds", "-1e0", "must be greater than 0"),
        ("--temporal-port", "00", "must be greater than or equal to 1"),
    ],
)
def test_a_number_flag_refused_is_quoted_as_typed(
    tmp_path: Path, flag: str, typed: str, reason: str
) -> None:
    # click converted it first: `invalid value '0.0'` for a `0` the user typed.
    result = run_trellis(["worker", flag, typed], trellis_env(tmp_path / "data"))
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"trellis worker: invalid value '{typed}' for {flag} / TRELLIS_"), line
    assert line.endswith(reason), line


def test_a_number_flag_that_is_no_number_is_one_line_naming_it_as_a_variable_is(
    tmp_path: Path,
) -> None:
    # It was click's own three-line usage error, which named no variable and stopped
    # before the other bad settings were said (found by a docs audit).
    env = {**trellis_env(tmp_path), "TRELLIS_API_WORKERS": "0"}
    result = run_trellis(["api", "--api-port", "abc", "--log-level", "verbose"], env)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "trellis api: invalid value 'abc' for --api-port / TRELLIS_API_PORT: "
        "must be a valid integer, unable to parse string as an integer",
        "trellis api: invalid value '0' for --api-workers / TRELLIS_API_WORKERS: "
        "must be greater than or equal to 1",
        "trellis api: invalid value 'verbose' for --log-level / TRELLIS_LOG_LEVEL: "
        "must be 'DEBUG', 'INFO', 'WARNING', 'ERROR' or 'CRITICAL'",
    ], result.stderr


@pytest.mark.parametrize(
    ("command", "flag", "typed", "least"),
    [
        ("setup", "--wait", "nan", "0 or more"),
        ("setup", "--wait", "inf", "0 or more"),
        ("setup", "--wait", "-1", "0 or more"),
        ("dev", "--startup-timeout", "nan", "more than 0"),
        ("dev", "--startup-timeout", "-inf", "more than 0"),
        ("dev", "--startup-timeout", "0", "more than 0"),
    ],
)
def test_a_wait_that_is_no_finite_number_of_seconds_is_one_line_naming_its_flag(
    tmp_path: Path, command: str, flag: str, typed: str, least: str
) -> None:
    # `setup --wait nan` retried for good ("0 of nan s"), `dev --startup-timeout nan` gave
    # up at once ("did not answer within nans: None"), exit 1 (found by an outside audit).
    env = trellis_env(tmp_path / "data", TRELLIS_TEMPORAL_ADDRESS="127.0.0.1:1")
    result = run_trellis([command, flag, typed], env, timeout=20)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"trellis {command}: invalid value '{typed}' for {flag}: "
        f"must be a finite number of seconds, {least}"
    ]
    assert not (tmp_path / "data").exists()


def test_help_documents_every_command_and_setting(tmp_path: Path) -> None:
    result = run_trellis(["--help"], trellis_env(tmp_path))
    assert result.returncode == 0
    for word in ("dev", "api", "worker", "setup", "TRELLIS_DATA_DIR", "TRELLIS_STORE_URL"):
        assert word in result.stdout


@pytest.mark.parametrize("command", ["dev", "api", "worker"])
def test_a_catalog_variable_that_is_not_set_stops_start_up_naming_it(
    tmp_path: Path, command: str
) -> None:
    catalog = tmp_path / "executors.yaml"
    catalog.write_text(
        "a2aAgents:\n  - {name: a, url: 'https://a.example.com/', headers: {X-Key: '${A_KEY}'}}\n"
    )
    env = trellis_env(tmp_path / "data", TRELLIS_EXECUTORS_FILE=str(catalog))
    env.pop("A_KEY", None)
    result = run_trellis([command], env)
    assert result.returncode != 0
    assert "a2aAgents[0].headers.X-Key: environment variable A_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_catalog_url_no_request_can_go_to_stops_start_up_naming_it(tmp_path: Path) -> None:
    # It started, and `/servers` said `OverflowError: connect(): port must be 0-65535.`
    catalog = tmp_path / "executors.yaml"
    catalog.write_text("mcpServers:\n  - {id: s, url: 'http://127.0.0.1:99999/mcp'}\n")
    env = trellis_env(tmp_path / "data", TRELLIS_EXECUTORS_FILE=str(catalog))
    result = run_trellis(["api"], env)
    assert result.returncode != 0
    assert "mcpServers[0].url: port 99999 must be a number from 1 to 65535" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_service_token_key_that_cannot_sign_stops_the_worker_naming_it(tmp_path: Path) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_SERVICE_TOKEN_KEY="too-short")
    result = run_trellis(["worker"], env)
    assert result.returncode != 0
    assert "TRELLIS_SERVICE_TOKEN_KEY must be at least 32 bytes for HS256" in result.stderr
    assert "too-short" not in result.stderr
    assert "Traceback" not in result.stderr


def test_dev_mode_on_a_public_address_refuses_to_start(tmp_path: Path) -> None:
    for command in ("api", "dev"):
        env = trellis_env(tmp_path / command, TRELLIS_API_HOST="0.0.0.0")
        result = run_trellis([command], env)
        assert result.returncode != 0
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert "TRELLIS_AUTH_MODE=dev" in lines[0] and "TRELLIS_AUTH_MODE=jwt" in lines[0]
        assert "0.0.0.0" in lines[0]


def test_jwt_mode_without_a_secret_or_key_set_refuses_to_start(tmp_path: Path) -> None:
    env = trellis_env(tmp_path, TRELLIS_AUTH_MODE="jwt", TRELLIS_API_HOST="0.0.0.0")
    result = run_trellis(["api"], env)
    assert result.returncode != 0
    assert "TRELLIS_JWT_SECRET" in result.stderr and "TRELLIS_JWT_JWKS_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_jwt_mode_never_prints_its_secret(tmp_path: Path) -> None:
    secret = "short-secret-value"
    env = trellis_env(tmp_path, TRELLIS_AUTH_MODE="jwt", TRELLIS_JWT_SECRET=secret)
    result = run_trellis(["api"], env)
    assert result.returncode != 0 and "at least 32 bytes" in result.stderr
    assert secret not in result.stderr + result.stdout


@pytest.mark.parametrize("command", ["api", "worker", "setup"])
def test_a_store_url_trellis_cannot_use_is_one_line_without_its_password(
    tmp_path: Path, command: str
) -> None:
    env = trellis_env(tmp_path / "data", TRELLIS_STORE_URL="mongo://u:hunter2@db/x")
    result = run_trellis([command], env)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"trellis {command}: --store-url / TRELLIS_STORE_URL: unsupported store URL "
        "'mongo://u:***@db/x': use sqlite:///absolute/path.db or mongodb://host:port/database "
        "(mongodb+srv:// also works)"
    ]


@pytest.mark.parametrize("command", ["api", "worker"])
def test_a_mongodb_url_its_driver_cannot_parse_is_one_line_naming_the_setting(
    tmp_path: Path, command: str
) -> None:
    # A password pasted unescaped holding a `/`: PyMongo's ValueError was a 40-line traceback.
    url = f"mongodb://trellis:Pa55/w0rd@127.0.0.1:{free_port()}/trellis"
    env = trellis_env(tmp_path / "data", TRELLIS_STORE_URL=url)
    result = run_trellis([command], env)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"trellis {command}: --store-url / TRELLIS_STORE_URL: mongodb://trellis:***@127.0.0.1:"
    )
    assert "not a MongoDB URL PyMongo can use: Port contains non-digit characters" in line
    assert "Pa55" not in result.stderr + result.stdout


@pytest.mark.parametrize("command", ["dev", "worker"])
def test_a_data_dir_that_cannot_be_created_is_one_line_naming_it(
    tmp_path: Path, command: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = trellis_env(blocker / "data")
    result = run_trellis([command], env)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"trellis {command}: --data-dir / TRELLIS_DATA_DIR: cannot create ")
    assert line.endswith(": Not a directory")


@pytest.mark.parametrize("command", ["api", "worker", "dev"])
def test_a_store_file_that_cannot_be_opened_is_one_line_naming_it(
    tmp_path: Path, command: str
) -> None:
    # A directory where the database file should be: its directory exists, the file cannot open.
    (tmp_path / "store.db").mkdir()
    url = f"sqlite:///{tmp_path}/store.db"
    env = trellis_env(tmp_path / "data", TRELLIS_STORE_URL=url)
    result = run_trellis([command], env)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()  # one line, no traceback
    assert line.startswith(
        f"trellis {command}: cannot reach the store at {url} (--store-url / TRELLIS_STORE_URL): "
    )
    assert line.endswith("unable to open database file")


@pytest.mark.parametrize("command", ["api", "worker", "dev"])
def test_a_store_newer_than_this_code_is_one_line_saying_what_to_do(
    tmp_path: Path, command: str
) -> None:
    # Reached, and newer: a rollback across a migration this code cannot use. The line
    # said "cannot reach the store".
    data = tmp_path / "data"
    data.mkdir()
    asyncio.run(migrate_to_future(data / "trellis.db", additive=False))
    result = run_trellis([command], trellis_env(data))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"trellis {command}: sqlite:///{data / 'trellis.db'} (--data-dir / TRELLIS_DATA_DIR):"
        f" the store's schema version {FUTURE_VERSION} is newer than this code"
        f" ({SCHEMA_VERSION}), and changes that code at {SCHEMA_VERSION} cannot use: roll"
        " forward, or restore the file saved before the upgrade (docs/operations.md,"
        ' "Deploys, mixed versions and rollbacks")'
    ]


def test_an_api_whose_mongodb_does_not_answer_says_so_without_its_password(tmp_path: Path) -> None:
    # MongoDB gives up after its 5 s server selection.
    url = f"mongodb://trellis:s3cret-pw@127.0.0.1:{free_port()}/trellis"
    env = trellis_env(tmp_path / "data", TRELLIS_STORE_URL=url)
    result = run_trellis(["api"], env)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        "trellis api: cannot reach the store at mongodb://trellis:***@127.0.0.1:"
    )
    assert "(--store-url / TRELLIS_STORE_URL): MongoDB store unavailable" in line
    assert "s3cret-pw" not in result.stderr + result.stdout


@pytest.mark.parametrize("command", [["worker"], ["setup", "--wait", "0"]])
def test_under_json_logs_the_fatal_line_is_json_too(tmp_path: Path, command: list[str]) -> None:
    # The warnings before it were JSON, the line saying why it stopped was plain text.
    env = trellis_env(
        tmp_path / "data",
        TRELLIS_LOG_FORMAT="json",
        TRELLIS_TEMPORAL_ADDRESS="127.0.0.1:1",
        TRELLIS_NO_SUCH_THING="1",  # a warning before it
    )
    result = run_trellis(command, env)
    assert result.returncode == 1
    # Every line JSON (the store's INFO line on creating its file may come between).
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    warning, fatal = lines[0], lines[-1]
    assert warning["level"] == "WARNING"
    assert fatal["level"] == "ERROR" and fatal["logger"] == "trellis.startup"
    assert fatal["message"].startswith(
        f"trellis {command[0]}: cannot reach Temporal at 127.0.0.1:1"
    )


@pytest.mark.parametrize("command", ["api", "worker"])
def test_a_sqlite_url_without_an_absolute_path_is_refused_and_makes_nothing(
    tmp_path: Path, command: str
) -> None:
    # `sqlite://relative.db` lost every leading slash and opened /relative.db.
    name = f"trellis-relative-{uuid.uuid4().hex[:8]}"
    env = trellis_env(tmp_path / "data", TRELLIS_STORE_URL=f"sqlite://{name}/trellis.db")
    try:
        result = run_trellis([command], env)
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            f"trellis {command}: --store-url / TRELLIS_STORE_URL: store URL "
            f"'sqlite://{name}/trellis.db' names no absolute path: use "
            "sqlite:///absolute/path.db (three slashes, then the path from /)"
        ]
        assert not Path("/", name).exists()
    finally:
        shutil.rmtree(Path("/", name), ignore_errors=True)
