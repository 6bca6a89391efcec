"""The root `trellis` group and the entry point: exit codes and one-line errors."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence

import click

from app.cli import (
    catalog_commands,
    lineage_commands,
    run_commands,
    schedule_commands,
    share_commands,
    workflow_commands,
)
from app.cli.platform_commands import COMMANDS
from app.cli.reader_gone import READER_GONE, ReaderAwareGroup, ReaderGone, drop_unread_output
from app.cli.settings_options import SettingsError, invalid_settings, settings_overview
from app.cli.token_command import token
from app.cli.utf8_text import not_utf8, shown_as_typed
from app.startup_failure import StartupFailure

HELP = """Trellis: durable workflows on Temporal, driven by a REST API.

\b
Run the platform:
  trellis dev      the whole platform on this machine (Temporal dev server,
                   worker, API); prints each part as it is ready; Ctrl-C stops all
  trellis api      only the REST API (uvicorn)
  trellis worker   only the Temporal worker
  trellis setup    register search attributes and create store indexes (repeatable)

\b
Use it (over the REST API at TRELLIS_URL, default http://127.0.0.1:8000; a token
from TRELLIS_TOKEN or --token when the API requires one; --json prints the API's answer):
  trellis workflows list | show ID [--version N] | versions ID | apply -f def.yaml
                 | enable ID | disable ID | delete ID [--yes]
  trellis workflows share ID [--grant PRINCIPAL=PERM[,PERM…] …] [--revoke PRINCIPAL …]
  trellis runs start WORKFLOW_ID [--input k=v …]
  trellis runs list WORKFLOW_ID [--status S] | show RUN_ID | watch RUN_ID
  trellis runs pause | resume | cancel | retry RUN_ID
  trellis runs rerun RUN_ID NODE_ID | replay RUN_ID     a child run: one step again, or all
  trellis runs children RUN_ID           the runs started from a run (retry, rerun, replay)
  trellis schedules list WORKFLOW_ID | show ID | delete ID | pause ID | unpause ID | trigger ID
  trellis schedules create WORKFLOW_ID (--cron EXPR | --interval-seconds N) [--time-zone TZ]
                 [--input k=v …] [--overlap-policy P] [--paused]
  trellis schedules update ID [the flags of create; --unpaused]   what is left out is kept
  trellis schedules skips ID             firings that started no run, and why
  trellis catalog servers | agents [--refresh]   the MCP servers and A2A agents steps call
  trellis approvals                      the inbox of gates waiting for a person
  trellis approve RUN_ID STEP_ID [--reject] [--feedback TEXT] [--input k=v …]
                 [--choice NAME …] [--edited-output JSON]

\b
Try authentication:
  trellis token    print a token signed with TRELLIS_JWT_SECRET (TRELLIS_AUTH_MODE=jwt)

Flags override TRELLIS_* environment variables, which override the defaults;
`trellis COMMAND --help` lists the settings of one command.
"""


for _command in lineage_commands.COMMANDS:
    run_commands.runs.add_command(_command)
for _command in share_commands.COMMANDS:
    workflow_commands.workflows.add_command(_command)
# The commands that talk to the API.
CLIENTS = (
    workflow_commands.workflows,
    *run_commands.COMMANDS,
    schedule_commands.schedules,
    catalog_commands.catalog,
)


@click.group(
    cls=ReaderAwareGroup,
    help=HELP,
    epilog=settings_overview(clients=CLIENTS),
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
def cli() -> None:
    pass


for _command in (*COMMANDS, token, *CLIENTS):
    cli.add_command(_command)
# The commands whose arguments are text sent to the API (or into a token): the platform
# commands take paths too, which may be any bytes.
_TEXT_ARGUMENTS = frozenset(str(c.name) for c in (token, *CLIENTS))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `trellis` console script; returns the exit code."""
    from pydantic import ValidationError

    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), "")
    if command in _TEXT_ARGUMENTS and (typed := next(filter(not_utf8, args), None)) is not None:
        # The shell passes bytes; Python keeps those that are not UTF-8 as lone surrogates,
        # which no request can carry (a UnicodeEncodeError traceback once sent).
        click.echo(f"trellis {command}: {shown_as_typed(typed)} is not UTF-8 text", err=True)
        return 2
    try:
        result = cli.main(args=args, prog_name="trellis", standalone_mode=False)
        sys.stdout.flush()  # a pipe closed after the last write: found here, not at exit
    except (ReaderGone, BrokenPipeError):
        # Whoever read the output went away (`| head`): end quietly, as Unix tools do.
        drop_unread_output()
        return READER_GONE
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except (click.exceptions.Abort, KeyboardInterrupt):
        return 130
    except (SettingsError, ValidationError) as exc:
        # A bad setting is a usage error, as a bad flag value is to click: exit code 2.
        error = exc if isinstance(exc, SettingsError) else invalid_settings(exc)
        for line in error.lines:
            click.echo(f"trellis {command}: {line}", err=True)
        return 2
    except UnicodeError as exc:
        # Text read elsewhere (a variable, a pipe) that is not UTF-8: a bad value, as above.
        click.echo(f"trellis {command}: {_not_text(exc)}", err=True)
        return 2
    except StartupFailure as exc:
        _say_fatal(f"trellis {command}: {exc}")
        if argv is None:  # the `trellis` process itself, not a caller in this process
            _exit_without_finalizing(1)
        return 1
    return result if isinstance(result, int) else 0


def _not_text(exc: UnicodeError) -> str:
    """What was not UTF-8, as typed (`'\\xff'`), when the error says."""
    if isinstance(exc, UnicodeEncodeError):
        return f"{shown_as_typed(exc.object[exc.start : exc.end])} is not UTF-8 text"
    if isinstance(exc, UnicodeDecodeError):
        typed = "".join(f"\\x{byte:02x}" for byte in exc.object[exc.start : exc.end])
        return f"'{typed}' is not UTF-8 text"
    return f"a value is not UTF-8 text ({exc})"


def _say_fatal(line: str) -> None:
    """The line a command that cannot start ends with: a log line (ERROR) when this process
    writes JSON lines, so a log shipper reads it as it reads the warnings before it; else
    plain text. (Logging is set up only by a command that got as far as its settings.)"""
    logs = sys.modules.get("app.logs")
    if logs is not None and logs.json_lines():
        logging.getLogger("trellis.startup").error("%s", line)
    else:
        click.echo(line, err=True)


def _exit_without_finalizing(code: int) -> None:
    """Exit at once, after flushing what was written. After a failed connect, the Temporal
    SDK's core (1.35) can crash the interpreter's finalization ("Fatal Python error:
    PyGILState_Release", SIGABRT or SIGSEGV: exit 134/139, not 1); a process that did not
    start has nothing left to finalize."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
