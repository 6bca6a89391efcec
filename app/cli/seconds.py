"""A flag that is a number of seconds: finite, and not negative. click's FLOAT takes `nan`
and `inf`, and its FloatRange lets `nan` through (it compares false with every bound):
`setup --wait nan` retried for good, `dev --startup-timeout nan` gave up at once."""

from __future__ import annotations

import math
from typing import Any

import click

from app.cli.bad_value import BadValue


class Seconds(click.ParamType[float, Any]):
    """Seconds a command waits: a finite number, 0 or more (more than 0 when `positive`,
    for a wait that cannot succeed in no time); else a usage error naming the flag, in
    one line (BadValue)."""

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
            raise BadValue(str(value), f"must be a finite number of seconds, {least}", ctx, param)
        return number


SECONDS = Seconds()
POSITIVE_SECONDS = Seconds(positive=True)
