"""The Temporal dev server's command-line flags, in one place (used by `trellis dev` and tests).

The defaults are slow for short steps: measured on a 2-core machine, a hand-written
20-step workflow took ~1,050 ms on the default dev server and ~155 ms with these.
"""

from __future__ import annotations

from pathlib import Path

from temporal_workflows import search_attributes

# Flag/value pairs read better on one line.
# fmt: off
TUNING_ARGS: tuple[str, ...] = (
    # The transfer-queue processor polls at a low rate by default, which adds
    # tens of milliseconds to every task hand-off.
    "--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000",
    # WAL + normal sync: far fewer fsyncs per workflow task, still crash-safe.
    "--sqlite-pragma", "journal_mode=wal",
    "--sqlite-pragma", "synchronous=normal",
)
# fmt: on


def search_attribute_args() -> list[str]:
    """`--search-attribute` flags registering our custom attributes at start."""
    args: list[str] = []
    for key in search_attributes.ALL:
        args += ["--search-attribute", f"{key.name}=Keyword"]
    return args


def dev_server_command(
    temporal_bin: str,
    *,
    port: int,
    ui_port: int,
    db_file: Path | None,
    namespace: str,
    log_format: str = "text",
    metrics_port: int | None = None,
    http_port: int | None = None,
) -> list[str]:
    """The full `temporal server start-dev` command line; with `log_format` "json" its log
    lines are JSON objects too (TRELLIS_LOG_FORMAT: one format for the whole platform)."""
    # fmt: off
    cmd = [
        temporal_bin, "server", "start-dev",
        "--ip", "127.0.0.1",
        "--port", str(port),
        "--ui-port", str(ui_port),
        "--log-level", "error",
        *TUNING_ARGS,
        *search_attribute_args(),
    ]
    # fmt: on
    if log_format == "json":
        cmd += ["--log-format", "json"]
    if metrics_port is not None:
        cmd += ["--metrics-port", str(metrics_port)]
    if http_port is not None:  # else a free port the dev server picks
        cmd += ["--http-port", str(http_port)]
    if namespace != "default":
        cmd += ["--namespace", namespace]
    if db_file is not None:
        cmd += ["--db-filename", str(db_file)]
    return cmd
