"""A flag that is a number of seconds: finite, and not negative. click's FLOAT takes `nan`
and `inf`, and its FloatRange lets `nan` through (it compares false with every bound):
`setup --wait nan` retried for good, `dev --startup-timeout nan` gave up at once."""

from __future__ import annotations

import math
from typing import IO, Any

import click


class Seconds(click.ParamType[float, Any]):
    """Seconds a command waits: a finite number, 0 or more (more than 0 when `positive`,
    for a wait that cannot succeed in no time); else a usage error naming the flag."""

    name = "seconds"

    def __init__(self, positive: bool = False) -> None:
        self.positive = positive

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < 0 or (self.positive and number == 0):
            least = "more than 0" if self.positive else "0 or more"
            raise BadSeconds(str(value), f"must be a finite number of seconds, {least}", ctx, param)
        return number


class BadSeconds(click.BadParameter):
    """One line, as a setting refused is (`trellis setup: invalid value 'nan' for --wait:
    must be …`), not click's three: the same mistake reads the same as a flag or a
    variable. Exit code 2, a usage error's."""

    def __init__(
        self, typed: str, reason: str, ctx: click.Context | None, param: click.Parameter | None
    ) -> None:
        super().__init__(f"{typed!r} {reason}", ctx, param)
        self.typed = typed
        self.reason = reason

    def show(self, file: IO[Any] | None = None) -> None:
        command = self.ctx.command_path if self.ctx is not None else "trellis"
        flag = self.param.opts[0] if self.param is not None else "a flag"
        line = f"{command}: invalid value '{self.typed}' for {flag}: {self.reason}"
        click.echo(line, file=file, err=file is None)


SECONDS = Seconds()
POSITIVE_SECONDS = Seconds(positive=True)
