"""The printed table: ours, hand-written, ratio and the issue's target per workload."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Row:
    """One comparison. Latency: lower is better, ratio = ours / hand-written.

    Throughput (runs/s): higher is better, ratio = ours / hand-written as well.
    """

    name: str
    ours: float
    hand: float | None
    unit: str
    ratio: float | None
    target: float | None
    ours_p90: float | None = None
    hand_p90: float | None = None
    note: str = ""

    @property
    def verdict(self) -> str:
        if self.target is None or self.ratio is None:
            return ""
        if self.unit == "runs/s":
            return "ok" if self.ratio >= self.target else "MISS"
        return "ok" if self.ratio <= self.target else "MISS"

    @property
    def target_text(self) -> str:
        if self.target is None:
            return "-"
        return f"{'>=' if self.unit == 'runs/s' else '<='} {self.target:.1f}x"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value < 10 else f"{value:,.1f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_report(rows: list[Row], events: dict[str, dict[str, Any]]) -> None:
    """Print the comparison table, then history events per run."""
    width = max(len(r.name) for r in rows)
    head = (
        f"{'workload':<{width}}  {'unit':>6}  {'ours':>8}  {'p90':>8}  {'hand':>8}  "
        f"{'p90':>8}  {'ratio':>6}  {'target':>7}  verdict"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.name:<{width}}  {r.unit:>6}  {_num(r.ours):>8}  {_num(r.ours_p90):>8}  "
            f"{_num(r.hand):>8}  {_num(r.hand_p90):>8}  {_ratio(r.ratio):>6}  {r.target_text:>7}  "
            f"{r.verdict} {r.note}".rstrip()
        )
    print("\nms: median (p90) trigger -> completed; runs/s: higher is better; ratio = ours/hand.")
    print("\nhistory events of one run (total, per step, by type):")
    for name, counts in events.items():
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(counts["by_type"].items()))
        print(f"  {name}: {counts['total']} ({counts['per_step']}/step) {kinds}")
