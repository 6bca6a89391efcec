"""Bodies of the liveness and readiness probes."""

from __future__ import annotations

from typing import Literal

from temporal_workflows.base import CamelModel


class Liveness(CamelModel):
    status: Literal["ok"] = "ok"


class Readiness(CamelModel):
    status: Literal["ready"] = "ready"
    checks: dict[str, str]
