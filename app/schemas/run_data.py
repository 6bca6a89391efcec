"""A request field a run will carry (an input, a decision's data): JSON a run can hold.

A value nested too deep, a number that is not finite or text that is not valid Unicode
would fail later, where it can no longer be refused cleanly: as a 500, a schedule that
cannot fire, or NaN stored as null. Refused here, as a 400 naming the part.
"""

from __future__ import annotations

from typing import Any

from pydantic import AfterValidator

from temporal_workflows.json_data import data_problem


def run_data(path: str) -> AfterValidator:
    """Validates a field as data a run can hold; `path` names it in the 400."""

    def check(value: Any) -> Any:
        problem = data_problem(value, path)
        if problem is not None:
            raise ValueError(problem)
        return value

    return AfterValidator(check)
