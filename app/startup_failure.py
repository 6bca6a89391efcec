"""The one error class a platform part raises when it cannot start for a reason the user
can fix (a port in use, Temporal unreachable, a missing secret).

It lives apart from those parts so that `trellis` can catch it, print the message and exit
1, without importing them: the worker stack takes seconds to import, and a command such as
`trellis runs list` needs none of it.
"""

from __future__ import annotations


class StartupFailure(Exception):
    """A part of the platform (or a command) cannot start; the message says why and which
    setting to change."""
