"""An id given as an argument: never empty. An empty one was sent as-is, and the API
answered for another path (`runs show ''` asked for `/runs/`, `workflows enable ''` for
`/workflows//toggle`: a 404 "No resource at …" that named no id)."""

from __future__ import annotations

from typing import Any

import click

from app.cli.bad_value import BadValue


class _Id(click.ParamType[str, Any]):
    name = "id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            raise BadValue(value, "an id is never empty", ctx, param)
        return value


ID = _Id()
