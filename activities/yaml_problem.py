"""A YAML parse error told without the file's text.

PyYAML's own message quotes the line it failed on, which in a file given by mistake (a
`.env`, a credentials file) may be a secret; where and what went wrong is enough.
"""

from __future__ import annotations

import yaml


def yaml_problem(exc: yaml.YAMLError) -> str:
    """` at line L, column C: <problem>`, or `: <problem>` where PyYAML gives no place (a
    character it refuses), to follow the words that say what could not be read."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return f"{where}: {problem}"
