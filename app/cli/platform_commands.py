"""`trellis dev | api | worker | setup`: the platform's processes."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import Any

import click

from app.cli.ready_file_option import ready_file_path
from app.cli.seconds import POSITIVE_SECONDS, SECONDS
from app.cli.settings_options import SettingsError, settings_flags, settings_from, settings_help
from app.cli.unknown_variables import unknown_variables
from app.settings import Settings

WIDE = {"max_content_width": 100}


def configured(params: dict[str, Any]) -> Settings:
    """The command's settings, with logging set up from them (once, before anything runs).

    A `TRELLIS_*` variable that looks like a misspelt setting is refused with the bad
    values (SettingsError); other unknown ones are warned about once logging is set up.
    """
    from app.logs import configure_logging

    unknown = unknown_variables(os.environ)
    try:
        settings = settings_from(params)
    except SettingsError as exc:
        raise SettingsError(unknown.typo_lines() + exc.lines) from None
    if unknown.typos:
        raise SettingsError(unknown.typo_lines())
    configure_logging(settings.log_level, settings.log_format)
    warning = unknown.warning()
    if warning is not None:
        logging.getLogger("trellis.settings").warning("%s", warning)
    return settings


@click.command(epilog=settings_help("dev"), context_settings=WIDE)
@settings_flags("dev")
@click.option(
    "--startup-timeout", type=POSITIVE_SECONDS, default=60.0, show_default=True,
    help="seconds to wait for every part to be ready",
)  # fmt: skip
def dev(startup_timeout: float, **params: Any) -> int:
    """Run the whole platform here: a Temporal dev server (SQLite in the data dir, Web UI
    on), the worker and the API; print each part as it is ready; Ctrl-C stops all."""
    from app.platform.dev import run_dev

    return asyncio.run(run_dev(configured(params), startup_timeout=startup_timeout))


@click.command(epilog=settings_help("api"), context_settings=WIDE)
@settings_flags("api")
def api(**params: Any) -> int:
    """Run only the REST API (uvicorn)."""
    from app.platform.serve import run_api

    run_api(configured(params))
    return 0


@click.command(epilog=settings_help("worker"), context_settings=WIDE)
@settings_flags("worker")
@click.option(
    "--ready-file", default=None, callback=ready_file_path, metavar="PATH",
    help="file to create once the worker polls (removed when it stops); its directory must exist",
)  # fmt: skip
def worker(ready_file: Path | None, **params: Any) -> int:
    """Run only the Temporal worker (interpreter, steps, projections, reconciler)."""
    from app.platform.serve import run_worker_process

    run_worker_process(configured(params), ready_file=ready_file)
    return 0


@click.command(epilog=settings_help("setup"), context_settings=WIDE)
@settings_flags("setup")
@click.option(
    "--wait", type=SECONDS, default=60.0, show_default=True,
    help="seconds to keep retrying an unreachable cluster",
)  # fmt: skip
def setup(wait: float, **params: Any) -> int:
    """Register Trellis's search attributes on a cluster and create the store's schema and
    indexes (safe to repeat)."""
    from app.platform.preflight import check_store, check_temporal_tls
    from app.redaction import redacted_url
    from app.setup import run_setup

    settings = configured(params)
    check_store(settings)
    check_temporal_tls(settings)
    added = asyncio.run(run_setup(settings, wait_seconds=wait))
    click.echo(f"search attributes added: {', '.join(added) or 'none (all present)'}")
    click.echo(f"store ready: {redacted_url(settings.resolved_store_url)}")
    return 0


COMMANDS = (dev, api, worker, setup)
