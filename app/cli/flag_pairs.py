"""An on/off flag pair (`--paused/--unpaused`, `--temporal-tls/--no-temporal-tls`) given
both ways is a usage error naming both (exit 2), before anything is sent or started:
click took the last one, so `--paused --unpaused` unpaused without a word."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click


class OnOffFlag(click.Option):
    """A boolean flag with an off spelling (`--on/--off`) that refuses both given."""

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        # Each spelling appends its value (click stores the last): both are seen here.
        for opts, value in ((self.opts, True), (self.secondary_opts, False)):
            parser.add_option(
                obj=self, opts=opts, dest=self.name, action="append_const", const=value
            )

    def handle_parse_result(
        self, ctx: click.Context, opts: Mapping[str, Any], args: list[str]
    ) -> tuple[Any, list[str]]:
        given = opts.get(self.name or "")
        if isinstance(given, list):
            if len(set(given)) > 1:
                raise click.UsageError(
                    f"{self.opts[0]} and {self.secondary_opts[0]} contradict each other: give one",
                    ctx=ctx,
                )
            opts = {**opts, self.name or "": given[0]}
        return super().handle_parse_result(ctx, opts, args)
