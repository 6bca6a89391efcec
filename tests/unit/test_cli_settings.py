"""Every setting has a flag on the commands that read it (secrets: environment only)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import click
import pytest

from app.cli.main import cli, main
from app.cli.settings_options import (
    HELP,
    SCOPES,
    SETTINGS_COMMANDS,
    env_name,
    flag_name,
    is_secret,
    scope,
    settings_from,
)
from app.outbound import executor_catalog
from app.settings import Settings
from tests.support.server import free_port

README = Path(__file__).resolve().parents[2] / "README.md"
SETTINGS = list(Settings.model_fields.items())


def _flags(command: str) -> set[str]:
    found = cli.commands[command]
    return {opt for param in found.params for opt in getattr(param, "opts", [])}


@pytest.mark.parametrize(("name", "info"), SETTINGS, ids=[n for n, _ in SETTINGS])
def test_every_setting_but_a_secret_is_a_flag_of_each_command_that_reads_it(
    name: str, info: Any
) -> None:
    for command in SETTINGS_COMMANDS:
        has_flag = flag_name(name) in _flags(command)
        assert has_flag == (command in scope(name) and not is_secret(info)), (name, command)


@pytest.mark.parametrize("name", list(Settings.model_fields))
def test_the_readme_documents_every_setting(name: str) -> None:
    assert f"| `{env_name(name)}` |" in README.read_text()


CHOICES = [(n, i) for n, i in SETTINGS if get_origin(i.annotation) is Literal]


@pytest.mark.parametrize(("name", "info"), CHOICES, ids=[n for n, _ in CHOICES])
def test_the_readme_names_every_value_a_choice_setting_accepts(name: str, info: Any) -> None:
    (row,) = [line for line in README.read_text().splitlines() if f"| `{env_name(name)}` |" in line]
    for value in get_args(info.annotation):
        assert f"`{value}`" in row, value


def test_trellis_dev_reads_every_setting_it_hands_to_its_children() -> None:
    assert all("dev" in scope(name) for name in Settings.model_fields)


def test_a_flag_overrides_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRELLIS_API_PORT", "9001")
    context = cli.commands["api"].make_context("api", ["--api-port", "9002"])
    assert settings_from(context.params).api_port == 9002


def test_the_environment_applies_when_no_flag_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRELLIS_API_PORT", "9001")
    context = cli.commands["api"].make_context("api", [])
    assert settings_from(context.params).api_port == 9001


def test_a_boolean_setting_has_a_flag_and_its_negation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRELLIS_TEMPORAL_TLS", "true")
    context = cli.commands["worker"].make_context("worker", ["--no-temporal-tls"])
    assert settings_from(context.params).temporal_tls is False


def test_a_boolean_setting_given_both_ways_is_a_usage_error_naming_both() -> None:
    # `--temporal-tls --no-temporal-tls` took the last one without a word.
    for args in (["--temporal-tls", "--no-temporal-tls"], ["--no-temporal-tls", "--temporal-tls"]):
        with pytest.raises(click.UsageError) as refused:
            cli.commands["worker"].make_context("worker", args)
        assert refused.value.message == (
            "--temporal-tls and --no-temporal-tls contradict each other: give one"
        )
    context = cli.commands["worker"].make_context("worker", ["--temporal-tls", "--temporal-tls"])
    assert settings_from(context.params).temporal_tls is True
    assert main(["worker", "--temporal-tls", "--no-temporal-tls"]) == 2


@pytest.mark.parametrize(
    ("flag", "given", "name", "value"),
    [
        ("--log-level", "debug", "log_level", "DEBUG"),
        ("--log-format", "JSON", "log_format", "json"),
    ],
)
def test_a_choice_is_taken_in_any_case_from_a_flag_as_from_its_variable(
    monkeypatch: pytest.MonkeyPatch, flag: str, given: str, name: str, value: str
) -> None:
    context = cli.commands["worker"].make_context("worker", [flag, given])
    assert getattr(settings_from(context.params), name) == value
    monkeypatch.setenv(env_name(name), given)
    assert getattr(settings_from({}), name) == value


def test_an_empty_temporal_address_means_the_embedded_dev_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As docker compose passes `${TRELLIS_TEMPORAL_ADDRESS:-}`: dev started no dev server
    # yet waited for one at --temporal-port.
    monkeypatch.setenv("TRELLIS_TEMPORAL_ADDRESS", "")
    settings = settings_from({})
    assert settings.embedded_temporal and settings.temporal_address is None


def test_the_old_namespace_flag_still_works() -> None:
    context = cli.commands["setup"].make_context("setup", ["--namespace", "prod"])
    assert settings_from(context.params).temporal_namespace == "prod"


def test_a_list_setting_takes_its_comma_separated_form() -> None:
    context = cli.commands["worker"].make_context(
        "worker", ["--http-allowed-networks", "10.0.0.0/8,fd00::/8"]
    )
    assert [str(n) for n in settings_from(context.params).http_allowed_networks] == [
        "10.0.0.0/8",
        "fd00::/8",
    ]


def test_a_secret_has_no_flag() -> None:
    with pytest.raises(click.NoSuchOption):
        cli.commands["worker"].make_context("worker", ["--temporal-api-key", "k"])


def test_the_api_has_a_flag_for_the_web_ui_port_its_console_links_to() -> None:
    context = cli.commands["api"].make_context("api", ["--ui-port", "9233"])
    assert settings_from(context.params).resolved_temporal_ui_url == "http://127.0.0.1:9233"


@pytest.mark.parametrize(
    ("command", "reads"), [("api", True), ("token", True), ("worker", False), ("setup", False)]
)
def test_only_the_commands_that_check_or_sign_tokens_list_the_jwt_secret(
    command: str, reads: bool
) -> None:
    assert ("TRELLIS_JWT_SECRET" in (cli.commands[command].epilog or "")) == reads


def test_token_takes_the_issuer_audience_and_claim_names_the_api_checks() -> None:
    args = ["--sub", "a", "--scopes", "workflows-read", "--jwt-issuer", "https://idp"]
    args += ["--jwt-audience", "trellis-api", "--jwt-roles-claim", "realm_access.roles"]
    settings = settings_from(cli.commands["token"].make_context("token", args).params)
    assert (settings.jwt_issuer, settings.jwt_audience) == ("https://idp", "trellis-api")
    assert settings.jwt_roles_claim == "realm_access.roles"


def test_the_overview_names_token_among_the_commands_reading_the_jwt_settings() -> None:
    rows = dict(
        line.split(None, 1)
        for line in (cli.epilog or "").splitlines()
        if line.strip().startswith("TRELLIS_")
    )
    for name in ("SECRET", "ISSUER", "AUDIENCE", "SCOPES_CLAIM", "ROLES_CLAIM", "NAME_CLAIM"):
        assert rows[f"TRELLIS_JWT_{name}"] == "dev, api, token"
    assert rows["TRELLIS_JWT_JWKS_URL"] == "dev, api"


def test_the_catalog_honours_its_refresh_setting() -> None:
    catalog = executor_catalog(Settings(catalog_refresh_seconds=7.5))
    assert catalog.refresh_seconds == 7.5


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No TRELLIS_* from our environment; a data dir that nothing has created yet."""
    import os

    for name in [n for n in os.environ if n.startswith("TRELLIS_")]:
        monkeypatch.delenv(name)
    data_dir = tmp_path / "data"
    monkeypatch.setenv("TRELLIS_DATA_DIR", str(data_dir))
    return data_dir


def test_a_bad_variable_is_one_line_naming_it_its_value_and_what_is_allowed(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRELLIS_LOG_LEVEL", "LOUD")
    assert main(["api"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis api: invalid value 'LOUD' for --log-level / TRELLIS_LOG_LEVEL: "
        "must be 'DEBUG', 'INFO', 'WARNING', 'ERROR' or 'CRITICAL'"
    ]
    assert not clean_env.exists()


def test_a_web_ui_url_that_is_not_an_http_url_is_refused(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was served to the console as given, a broken relative link.
    monkeypatch.setenv("TRELLIS_TEMPORAL_UI_URL", "notaurl")
    assert main(["api"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis api: invalid value 'notaurl' for --temporal-ui-url / TRELLIS_TEMPORAL_UI_URL: "
        "must be an http:// or https:// URL"
    ]


def test_the_default_gate_timeout_is_bounded_as_a_nodes_is(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A node's timeoutSeconds stops at 366 days; the default had no bound.
    assert main(["api", "--default-gate-timeout-seconds", "40000000"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis api: invalid value '40000000' for --default-gate-timeout-seconds / "
        "TRELLIS_DEFAULT_GATE_TIMEOUT_SECONDS: must be less than or equal to 31622400"
    ]


@pytest.mark.parametrize("value", ["1e300", "86401"])
def test_a_grace_or_interval_past_a_day_is_refused_before_anything_starts(
    clean_env: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # 1e300 (and inf) passed the check, then crashed the worker's start (OverflowError)
    # after `trellis dev` had started Temporal.
    assert main(["worker", "--worker-shutdown-grace-seconds", value]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"trellis worker: invalid value '{value}' for --worker-shutdown-grace-seconds / "
        "TRELLIS_WORKER_SHUTDOWN_GRACE_SECONDS: must be less than or equal to 86400"
    ]
    for flag in ("--reconcile-interval-seconds", "--catalog-refresh-seconds"):
        assert main(["dev", flag, value]) == 2
        assert "must be less than or equal to 86400" in capsys.readouterr().err
    assert main(["api", "--api-shutdown-grace-seconds", "86401"]) == 2
    assert "must be less than or equal to 86400" in capsys.readouterr().err


def test_each_bad_setting_is_a_line_of_its_own(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRELLIS_API_WORKERS", "0")
    assert main(["api", "--max-payload-bytes", "-1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis api: invalid value '0' for --api-workers / TRELLIS_API_WORKERS: "
        "must be greater than or equal to 1",
        "trellis api: invalid value '-1' for --max-payload-bytes / TRELLIS_MAX_PAYLOAD_BYTES: "
        "must be greater than 0",
    ]


def test_a_bad_variable_without_a_flag_on_the_command_is_named_by_the_variable_only(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRELLIS_AUTH_MODE", "none")
    assert main(["worker"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis worker: invalid value 'none' for TRELLIS_AUTH_MODE: must be 'dev' or 'jwt'"
    ]


@pytest.mark.parametrize(
    ("args", "variables", "line"),
    [
        (["--api-port", "70000"], {}, "'70000' for --api-port / TRELLIS_API_PORT: "
         "must be less than or equal to 65535"),
        ([], {"TRELLIS_API_PORT": "0"}, "'0' for --api-port / TRELLIS_API_PORT: "
         "must be greater than or equal to 1"),
        ([], {"TRELLIS_TEMPORAL_PORT": "65536"}, "'65536' for --temporal-port / "
         "TRELLIS_TEMPORAL_PORT: must be less than or equal to 65535"),
        (["--ui-port", "-1"], {}, "'-1' for --ui-port / TRELLIS_UI_PORT: "
         "must be greater than or equal to 1"),
    ],
)  # fmt: skip
def test_a_port_out_of_range_is_refused_before_anything_starts(
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    variables: dict[str, str],
    line: str,
) -> None:
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert main(["dev", *args]) == 2
    assert capsys.readouterr().err.splitlines() == [f"trellis dev: invalid value {line}"]
    assert not clean_env.exists()


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("TRELLIS_JWT_JWKS_URL", "idp.example.com/certs", "must be an http:// or https:// URL"),
        ("TRELLIS_DEFAULT_GATE_TIMEOUT_SECONDS", "-5", "must be greater than 0"),
    ],
)
def test_a_value_that_would_fail_later_is_refused_at_start(
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    reason: str,
) -> None:
    monkeypatch.setenv(variable, value)
    flag = "--" + variable.removeprefix("TRELLIS_").lower().replace("_", "-")
    # A free port: before the check, the API would have started.
    assert main(["api", "--api-port", str(free_port())]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"trellis api: invalid value '{value}' for {flag} / {variable}: {reason}"
    ]


def test_a_secret_that_does_not_validate_is_named_but_not_shown() -> None:
    from pydantic import ValidationError

    from app.cli.settings_options import invalid_settings

    with pytest.raises(ValidationError) as caught:
        Settings(store_url=["mongodb://u:hunter2@db/x"])  # type: ignore[arg-type]
    (line,) = invalid_settings(caught.value).lines
    assert line.startswith("invalid value for TRELLIS_STORE_URL: ")
    assert "hunter2" not in line


def test_a_pattern_a_value_must_match_is_said_as_the_other_rules_are(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRELLIS_SERVICE_TOKEN_HEADER", "X Bad")
    assert main(["worker"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis worker: invalid value 'X Bad' for --service-token-header / "
        "TRELLIS_SERVICE_TOKEN_HEADER: must match pattern '^[A-Za-z0-9-]+$'"
    ]


def test_the_offload_size_stops_below_what_temporal_refuses(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Above Temporal's 2 MiB payload limit steps failed (TMPRL1103) once a payload landed
    # between the limit and the offload size.
    monkeypatch.setenv("TRELLIS_STORE_URL", "nosuch://store")  # else: stop at the store
    assert main(["worker", "--payload-offload-bytes", "3000000"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis worker: invalid value '3000000' for --payload-offload-bytes / "
        "TRELLIS_PAYLOAD_OFFLOAD_BYTES: must be less than or equal to 1048576"
    ]
    assert settings_from({"payload_offload_bytes": "1048576"}).payload_offload_bytes == 1048576


@pytest.mark.parametrize(
    "value",
    # The SDK printed a raw UserWarning (not a log line) for a scheme; no port dialled 80.
    ["http://127.0.0.1:7233", "127.0.0.1", "::1:7233", "[::1]", "temporal:0", "temporal:"],
)
def test_a_temporal_address_that_is_not_host_port_is_refused(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    monkeypatch.setenv("TRELLIS_TEMPORAL_ADDRESS", value)
    monkeypatch.setenv("TRELLIS_STORE_URL", "nosuch://store")  # else: stop at the store
    assert main(["worker"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"trellis worker: invalid value '{value}' for --temporal-address / "
        "TRELLIS_TEMPORAL_ADDRESS: must be host:port (e.g. temporal.example.com:7233, "
        "[::1]:7233), no scheme"
    ]


@pytest.mark.parametrize("value", ["127.0.0.1:7233", "[::1]:7233", "ns.a1b2c.tmprl.cloud:7233"])
def test_a_temporal_address_of_host_and_port_is_taken(value: str) -> None:
    assert Settings(temporal_address=value).resolved_temporal_address == value


def test_the_sticky_cache_size_is_bounded(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # 99999999999999999999 passed the check and crashed the worker's start (OverflowError).
    monkeypatch.setenv("TRELLIS_STORE_URL", "nosuch://store")  # else: stop at the store
    assert main(["worker", "--worker-max-cached-workflows", "99999999999999999999"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "trellis worker: invalid value '99999999999999999999' for "
        "--worker-max-cached-workflows / TRELLIS_WORKER_MAX_CACHED_WORKFLOWS: "
        "must be less than or equal to 1000000"
    ]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("-1", "must be greater than or equal to 0"),
        ("a week", "must be a valid number, unable to parse string as a number"),
        ("inf", "must be a finite number"),
        # now - timedelta(days=1e9) would overflow.
        ("1e9", "must be less than or equal to 36500"),
    ],
)
def test_a_run_retention_that_is_not_a_number_of_days_is_refused(
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
    why: str,
) -> None:
    monkeypatch.setenv("TRELLIS_RUN_RETENTION_DAYS", value)
    monkeypatch.setenv("TRELLIS_STORE_URL", "nosuch://store")  # else: stop at the store
    assert main(["worker"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"trellis worker: invalid value '{value}' for --run-retention-days / "
        f"TRELLIS_RUN_RETENTION_DAYS: {why}"
    ]


@pytest.mark.parametrize(("days", "kept"), [(None, None), (0, None), (0.5, timedelta(hours=12))])
def test_an_unset_or_zero_run_retention_keeps_every_run(
    days: float | None, kept: timedelta | None
) -> None:
    assert Settings(run_retention_days=days).run_retention == kept


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--default-gate-timeout-seconds", "nan"),
        ("--worker-shutdown-grace-seconds", "inf"),
        ("--api-shutdown-grace-seconds", "nan"),
        ("--reconcile-interval-seconds", "inf"),
        ("--catalog-refresh-seconds", "nan"),
    ],
)
def test_a_duration_that_is_not_a_finite_number_is_said_to_be_one(
    clean_env: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    # `nan` was refused as "must be less than or equal to 31622400".
    assert main(["dev", flag, value]) == 2
    variable = "TRELLIS_" + flag[2:].upper().replace("-", "_")
    assert capsys.readouterr().err.splitlines() == [
        f"trellis dev: invalid value '{value}' for {flag} / {variable}: must be a finite number"
    ]


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("TRELLIS_LOG_LEVEL", "verbose", "'DEBUG', 'INFO', 'WARNING', 'ERROR' or 'CRITICAL'"),
        ("TRELLIS_LOG_FORMAT", "XML", "'text' or 'json'"),
        ("TRELLIS_AUTH_MODE", "None", "'dev' or 'jwt'"),
    ],
)
def test_a_bad_choice_is_quoted_as_typed(
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    allowed: str,
) -> None:
    # `verbose` was quoted as 'VERBOSE' (the README promises the value as typed).
    monkeypatch.setenv(variable, value)
    assert main(["api"]) == 2
    flag = "--" + variable.removeprefix("TRELLIS_").lower().replace("_", "-")
    assert capsys.readouterr().err.splitlines() == [
        f"trellis api: invalid value '{value}' for {flag} / {variable}: must be {allowed}"
    ]


def test_the_apis_shutdown_grace_takes_a_fraction_of_a_second_as_the_workers_does() -> None:
    # `2.5` was refused as not an integer.
    context = cli.commands["api"].make_context("api", ["--api-shutdown-grace-seconds", "2.5"])
    assert settings_from(context.params).api_shutdown_grace_seconds == 2.5


@pytest.mark.parametrize(
    "name", [n for n, info in Settings.model_fields.items() if not is_secret(info)]
)
def test_every_flag_says_what_it_sets_and_goes_only_to_the_commands_reading_it(
    name: str,
) -> None:
    # `--max-schedules-per-workflow` showed only its variable and default (found by an
    # audit), and was a flag of the worker, which does not read it.
    assert HELP.get(name) or Settings.model_fields[name].description, name
    # Every platform command reads a setting SCOPES leaves out: the logs' only.
    assert name in SCOPES or name in ("log_level", "log_format"), name
    assert "worker" not in scope("max_schedules_per_workflow")


@pytest.mark.parametrize(
    ("variable", "flag"),
    [
        ("TRELLIS_TEMPORAL_NAMESPACE", "--temporal-namespace"),
        ("TRELLIS_TASK_QUEUE", "--task-queue"),
    ],
)
def test_a_blank_namespace_or_task_queue_is_refused_as_an_empty_one_is(
    clean_env: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    flag: str,
) -> None:
    # Spaces passed `min_length=1`, and the worker polled a task queue named '  '.
    monkeypatch.setenv(variable, "  ")
    assert main(["worker"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"trellis worker: invalid value '  ' for {flag} / {variable}: must not be blank"
    ]
    assert not clean_env.exists()


@pytest.mark.parametrize("value", ["  ", "bad name", "x_y!", "-lead.example.com", "a..b", "é.com"])
def test_a_tls_server_name_that_is_no_dns_name_or_ip_is_refused(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # It failed only at connect, in the SDK's words, naming no setting.
    monkeypatch.setenv("TRELLIS_TEMPORAL_TLS_SERVER_NAME", value)
    assert main(["worker"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"trellis worker: invalid value '{value}' for --temporal-tls-server-name / "
        "TRELLIS_TEMPORAL_TLS_SERVER_NAME: must be a DNS name (letters, digits, hyphens, "
        "dots) or an IP address"
    ]
    assert not clean_env.exists()


@pytest.mark.parametrize(
    "value", ["temporal", "ns.a1b2c.tmprl.cloud", "Temporal-1.example.com.", "10.0.0.7", "::1"]
)
def test_a_tls_server_name_that_is_a_dns_name_or_ip_is_taken(value: str) -> None:
    assert Settings(temporal_tls_server_name=value).temporal_tls_server_name == value
