"""`${VAR}` in catalog values, resolved from the environment when the file is read.

So a catalog can name credentials (headers, a stdio server's env) without holding them.
`$${` writes a literal `${`. A variable that is not set stops start-up, naming it and where
it is used, never a value. What the file wrote is kept beside what it resolved to, so the
catalog routes can show a value as written, `${VAR}` and all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_TOKEN = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\{")


class InterpolationError(ValueError):
    """Every `${…}` that could not be resolved, one `where: what` each, joined by `; `."""


def interpolate(data: Any, environ: Mapping[str, str]) -> tuple[Any, dict[str, str], set[str]]:
    """`data` with every `${VAR}` in its string values resolved; resolved -> as written
    for each string that changed; and the values the environment gave (to mask)."""
    written: dict[str, str] = {}
    given: set[str] = set()
    problems: list[str] = []

    def resolve(value: Any, where: str) -> Any:
        if isinstance(value, str):
            return _string(value, where)
        if isinstance(value, dict):
            return {k: resolve(v, f"{where}.{k}".lstrip(".")) for k, v in value.items()}
        if isinstance(value, list):
            return [resolve(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return value

    def _string(text: str, where: str) -> str:
        def replace(match: re.Match[str]) -> str:
            token, name = match.group(0), match.group(1)
            if token == "$${":
                return "${"
            if name is None:
                problems.append(f"{where}: '${{' must start a ${{VARIABLE}} (write $${{ for '${{')")
                return token
            if name not in environ:
                problems.append(f"{where}: environment variable {name} is not set")
                return token
            given.add(environ[name])
            return environ[name]

        resolved = _TOKEN.sub(replace, text)
        if resolved != text:
            written[resolved] = text
        return resolved

    result = resolve(data, "")
    if problems:
        raise InterpolationError("; ".join(problems))
    return result, written, given


def variables_in(written: str) -> list[str]:
    """The names of the `${VAR}`s a value was written with (`$${` is no variable)."""
    return [m.group(1) for m in _TOKEN.finditer(written) if m.group(1)]
