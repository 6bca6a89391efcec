"""Tracing is off by default and on with the standard OTEL_* variables; what Trellis cannot
do (another exporter or protocol) stops start-up saying what to set."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.resources import SERVICE_NAME

from app.tracing import TracingSettingsError, tracer_provider_from_env, tracing_wanted
from tests.platform.conftest import run_trellis, trellis_env

ENDPOINT = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": ""},  # compose's `${VAR:-}` when unset
        {**ENDPOINT, "OTEL_SDK_DISABLED": "true"},
        {**ENDPOINT, "OTEL_TRACES_EXPORTER": "none"},
    ],
    ids=["nothing", "empty", "sdk-disabled", "exporter-none"],
)
def test_tracing_is_off(environ: dict[str, str]) -> None:
    assert not tracing_wanted(environ)
    assert tracer_provider_from_env("trellis-api", environ) is None


@pytest.mark.parametrize(
    "environ",
    [ENDPOINT, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}],
    ids=["endpoint", "traces-endpoint"],
)
def test_an_otlp_endpoint_turns_it_on_under_the_process_service_name(
    environ: dict[str, str],
) -> None:
    provider = tracer_provider_from_env("trellis-worker", environ)
    assert provider is not None
    try:
        assert provider.resource.attributes[SERVICE_NAME] == "trellis-worker"
    finally:
        provider.shutdown()


def test_otel_service_name_names_the_service(monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES from the environment.
    monkeypatch.setenv("OTEL_SERVICE_NAME", "trellis-eu-api")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod")
    provider = tracer_provider_from_env("trellis-api", ENDPOINT)
    assert provider is not None
    try:
        assert provider.resource.attributes[SERVICE_NAME] == "trellis-eu-api"
        assert provider.resource.attributes["deployment.environment"] == "prod"
    finally:
        provider.shutdown()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"),
        # The traces variable overrides the general one: setting that would not help.
        (
            {
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            },
            "set OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
        ),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTLP only"),
    ],
    ids=["grpc", "traces-grpc", "zipkin"],
)
def test_what_trellis_cannot_export_is_refused_naming_the_variable(
    extra: dict[str, str], says: str
) -> None:
    with pytest.raises(TracingSettingsError, match=says):
        tracer_provider_from_env("trellis-api", {**ENDPOINT, **extra})


@pytest.mark.parametrize("command", ["api", "worker"])
def test_a_process_asked_for_grpc_refuses_to_start_in_one_line(
    tmp_path: Path, command: str
) -> None:
    env = trellis_env(tmp_path / "data", **ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    result = run_trellis([command], env)
    assert result.returncode == 1
    assert "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf" in result.stderr
    assert "Traceback" not in result.stderr
