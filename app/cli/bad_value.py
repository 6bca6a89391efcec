"""A flag's value refused in one line, as a setting refused is (`trellis setup: invalid
value 'nan' for --wait: must be …`), not click's three: the same mistake reads the same
as a flag or a variable. Exit code 2, a usage error's."""

from __future__ import annotations

from typing import IO, Any

import click


class BadValue(click.BadParameter):
    """`typed` is the value as given (or the part of it that is wrong); `reason` says why."""

    def __init__(
        self, typed: str, reason: str, ctx: click.Context | None, param: click.Parameter | None
    ) -> None:
        super().__init__(f"{typed!r} {reason}", ctx, param)
        self.typed = typed
        self.reason = reason

    def show(self, file: IO[Any] | None = None) -> None:
        command = self.ctx.command_path if self.ctx is not None else "trellis"
        flag = self.param.opts[0] if self.param is not None else "a flag"
        if isinstance(self.param, click.Argument):
            flag = self.param.human_readable_name  # RUN_ID, as the usage line names it
        line = f"{command}: invalid value '{self.typed}' for {flag}: {self.reason}"
        click.echo(line, file=file, err=file is None)
