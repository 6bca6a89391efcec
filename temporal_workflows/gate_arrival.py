"""A decision that names no gate opening decides only one open when its request arrived.

Two confirms sent at once (a double click): the second, handled after the first's decision
and the next opening of the step's gate (a loop's next iteration review, the step's output
review), was taken for that one, which nobody had seen. Its arrival is the API's clock, a
gate's opening Temporal's (`Requirement.created_at`, the start of the workflow task that
opened it; a task run again gives it anew, later, so it only errs toward refusing).
"""

from __future__ import annotations

from datetime import datetime


def opened_after(created_at: str | None, arrived_at: str | None) -> bool:
    """Whether a gate opened (`created_at`) after the request arrived; False when either
    is unknown (a gate recorded before gates had an opening time)."""
    if not created_at or not arrived_at:
        return False
    return datetime.fromisoformat(created_at) > datetime.fromisoformat(arrived_at)


def opened_after_arrival(step_id: str, opening: str | None = None) -> str:
    """The 409's message."""
    which = f" ({opening})" if opening else ""
    return (
        f"The gate of step {step_id!r} that is open now{which} opened after this request "
        "arrived; a decision without `gate` decides only the one open when it arrived "
        "(decided already, or none was): read the run again"
    )
