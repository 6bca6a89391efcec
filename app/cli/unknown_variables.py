"""`TRELLIS_*` variables that are no setting: a likely typo of one stops a server command.

pydantic-settings ignores a variable it does not know, so `TRELLIS_AUTH_MOD=jwt` ran the
API with no authentication. A name close to a setting's is refused (exit 2, as a bad
value); any other unknown name is only warned about, so a rollback to an older release
with a newer release's setting in its environment still starts.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.cli.settings_options import env_name
from app.settings import Settings

PREFIX = "TRELLIS_"
# Variables of that prefix that are read, but are no setting of a server.
OTHER_VARIABLES = frozenset(
    {
        "TRELLIS_URL",  # the API the CLI's commands talk to
        "TRELLIS_TOKEN",  # the bearer token they send
        "TRELLIS_API_BIND",  # docker-compose.yml: the host address the API is published on
        "TRELLIS_TEST_MONGODB_URL",  # the tests' MongoDB server
        "TRELLIS_TEST_PLATFORM_STORE",  # the store of the tests' platform
        "TRELLIS_RECORD_HISTORIES",  # tests/engine/test_replay.py records histories
        "TRELLIS_CHROMIUM",  # the console tests' browser
        "TRELLIS_TEST_ARTIFACTS",  # where the console tests leave screenshots
    }
)
# How alike (difflib's ratio of the names after the prefix) a name must be to a setting's
# to be taken for its typo: AUTH_MOD / AUTH_MODE is 0.94, API_BIND / API_HOST 0.62.
TYPO_RATIO = 0.8


@dataclass
class UnknownVariables:
    """`typos`: each name taken for a misspelt setting, with that setting's variable;
    `others`: the rest, in the order found."""

    typos: dict[str, str] = field(default_factory=dict)
    others: list[str] = field(default_factory=list)

    def typo_lines(self) -> list[str]:
        return [
            f"unknown variable {name}: did you mean {setting}? (not applied as it is spelt)"
            for name, setting in self.typos.items()
        ]

    def warning(self) -> str | None:
        if not self.others:
            return None
        return f"ignoring {', '.join(self.others)}: no setting of this release"


def setting_variables() -> frozenset[str]:
    return frozenset(env_name(name) for name in Settings.model_fields)


def unknown_variables(names: Iterable[str]) -> UnknownVariables:
    """Sort the `TRELLIS_*` names among `names` that are neither a setting nor read by
    something else (case-insensitive, as pydantic-settings reads them)."""
    settings = setting_variables()
    suffixes = {name.removeprefix(PREFIX): name for name in settings}
    found = UnknownVariables()
    for name in names:
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in settings or upper in OTHER_VARIABLES:
            continue
        close = difflib.get_close_matches(
            upper.removeprefix(PREFIX), suffixes, n=1, cutoff=TYPO_RATIO
        )
        if close:
            found.typos[name] = suffixes[close[0]]
        else:
            found.others.append(name)
    return found
