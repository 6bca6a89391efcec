"""The `trellis` command: dev (whole platform), api, worker, setup."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from app.settings import Settings

DESCRIPTION = """\
Trellis: durable workflows on Temporal, driven by a REST API.

  trellis dev      the whole platform on this machine: a Temporal dev server
                   (SQLite in the data dir, Web UI on), the worker and the API;
                   waits until all are ready, prints the URLs; Ctrl-C stops all
  trellis api      only the REST API (uvicorn)
  trellis worker   only the Temporal worker
  trellis setup    register Trellis's search attributes on a cluster and
                   create the store's schema and indexes (safe to repeat)

Flags override TRELLIS_* environment variables, which override the defaults.
"""

# (flag, setting, help); every command takes these.
COMMON_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("--data-dir", "data_dir", "data directory (SQLite store, Temporal database)"),
    ("--store-url", "store_url", "document store: sqlite:///abs/file.db or mongodb://host/db"),
    ("--temporal-address", "temporal_address", "use this Temporal cluster (host:port)"),
    ("--namespace", "temporal_namespace", "Temporal namespace"),
    ("--task-queue", "task_queue", "Temporal task queue"),
    ("--executors-file", "executors_file", "executor catalog (YAML or JSON)"),
)
API_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("--api-host", "api_host", "address the API binds to"),
    ("--api-port", "api_port", "API port"),
)
TEMPORAL_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("--temporal-port", "temporal_port", "embedded Temporal dev server's gRPC port"),
    ("--ui-port", "ui_port", "embedded Temporal Web UI port"),
)


def _settings_epilog() -> str:
    lines = ["settings (environment variables, default):"]
    for name, info in Settings.model_fields.items():
        default = "(none)" if info.default is None else info.default
        lines.append(f"  TRELLIS_{name.upper():<34} {default}")
    return "\n".join(lines)


def _add_flags(parser: argparse.ArgumentParser, flags: Sequence[tuple[str, str, str]]) -> None:
    for flag, dest, text in flags:
        kind = Settings.model_fields[dest].annotation
        parser.add_argument(
            flag, dest=dest, default=None, type=int if kind is int else str, help=text
        )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with one subcommand per process kind."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="trellis", description=DESCRIPTION, epilog=_settings_epilog(), formatter_class=raw
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    dev = commands.add_parser("dev", help="run the whole platform", formatter_class=raw)
    _add_flags(dev, COMMON_FLAGS + API_FLAGS + TEMPORAL_FLAGS)
    dev.add_argument(
        "--startup-timeout", type=float, default=60.0, help="seconds to wait for readiness"
    )

    api = commands.add_parser("api", help="run the REST API (uvicorn)", formatter_class=raw)
    _add_flags(api, COMMON_FLAGS + API_FLAGS + TEMPORAL_FLAGS)

    worker = commands.add_parser("worker", help="run the Temporal worker", formatter_class=raw)
    _add_flags(worker, COMMON_FLAGS + TEMPORAL_FLAGS)
    worker.add_argument(
        "--ready-file", type=Path, default=None, help="file to create once the worker polls"
    )

    setup = commands.add_parser(
        "setup", help="register search attributes, create store indexes", formatter_class=raw
    )
    _add_flags(setup, COMMON_FLAGS + TEMPORAL_FLAGS)
    setup.add_argument(
        "--wait", type=float, default=60.0, help="seconds to keep retrying an unreachable cluster"
    )
    return parser


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags given on the command line."""
    overrides: dict[str, Any] = {
        name: value
        for name, value in vars(args).items()
        if name in Settings.model_fields and value is not None
    }
    return Settings(**overrides)


def _dispatch(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if args.command == "dev":
        from app.platform.dev import run_dev

        return asyncio.run(run_dev(settings, startup_timeout=args.startup_timeout))
    if args.command == "api":
        from app.platform.serve import run_api

        run_api(settings)
        return 0
    if args.command == "worker":
        from app.platform.serve import run_worker_process

        run_worker_process(settings, ready_file=args.ready_file)
        return 0
    from app.redaction import redacted_url
    from app.setup import run_setup

    added = asyncio.run(run_setup(settings, wait_seconds=args.wait))
    print(f"search attributes added: {', '.join(added) or 'none (all present)'}")
    print(f"store ready: {redacted_url(settings.resolved_store_url)}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `trellis` console script."""
    from app.platform.devserver import DevServerError
    from app.platform.preflight import PreflightError
    from app.setup import SetupError

    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except ValidationError as exc:
        print(f"trellis: invalid settings:\n{exc}", file=sys.stderr)
    except (PreflightError, DevServerError, SetupError) as exc:
        print(f"trellis {args.command}: {exc}", file=sys.stderr)
    except KeyboardInterrupt:
        return 130
    return 1


if __name__ == "__main__":
    sys.exit(main())
