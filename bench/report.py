"""The printed table: ours, the hand-written baseline, their ratio and the issue's target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass
class Row:
    """One figure. `ratio` = ours / hand; `target` applies to the ratio, or to `ours` when
    `absolute`; `higher` says which way is better (runs/s, children in flight)."""

    name: str
    unit: str
    ours: float
    hand: float | None = None
    ours_p: float | None = None  # p90 (latency rows), or p99 (reads, approvals)
    hand_p: float | None = None
    target: float | None = None
    absolute: bool = False
    higher: bool = False
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.hand is None or self.hand == 0:
            return None
        return self.ours / self.hand

    @property
    def checked(self) -> float | None:
        return self.ours if self.absolute else self.ratio

    @property
    def verdict(self) -> Literal["ok", "MISS", ""]:
        value = self.checked
        if self.target is None or value is None:
            return ""
        good = value >= self.target if self.higher else value <= self.target
        return "ok" if good else "MISS"

    @property
    def target_text(self) -> str:
        if self.target is None:
            return "-"
        suffix = f" {self.unit}" if self.absolute else "x"
        return f"{'>=' if self.higher else '<='} {self.target:g}{suffix}"


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.2f}" if value < 10 else f"{value:,.1f}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_report(rows: list[Row], header: list[str], events: dict[str, dict[str, Any]]) -> None:
    """Print the comparison table, then history events per run."""
    for line in header:
        print(line)
    width = max(len(r.name) for r in rows)
    head = (
        f"{'workload':<{width}}  {'unit':>6}  {'ours':>8}  {'p90/99':>8}  {'hand':>8}  "
        f"{'p90/99':>8}  {'ratio':>6}  {'target':>12}  verdict"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.name:<{width}}  {r.unit:>6}  {_num(r.ours):>8}  {_num(r.ours_p):>8}  "
            f"{_num(r.hand):>8}  {_num(r.hand_p):>8}  {_ratio(r.ratio):>6}  "
            f"{r.target_text:>12}  {r.verdict} {r.note}".rstrip()
        )
    print("\nms: median, with p90 (p99 for reads and approvals) beside it; ratio = ours / hand.")
    if events:
        print("\nhistory events of one run (total, per step, by type):")
        for name, counts in events.items():
            kinds = ", ".join(f"{k}={v}" for k, v in sorted(counts["by_type"].items()))
            print(f"  {name}: {counts['total']} ({counts['per_step']}/step) {kinds}")
