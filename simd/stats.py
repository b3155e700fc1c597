"""Per-phase statistics of the machine: calls, bytes moved, model cycles, wall time."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

__all__ = ["PhaseStats", "Stats"]


@dataclass
class PhaseStats:
    """What the instructions of one phase cost.

    ``wall`` is the phase's wall time in seconds, inclusive of nested phases and measured
    with the device synchronised at the phase's boundaries; ``cycles`` and ``calls`` count
    only the instructions charged to this phase itself (the innermost open phase).
    """

    calls: Counter = field(default_factory=Counter)
    bytes: int = 0
    cycles: float = 0.0
    wall: float = 0.0
    entries: int = 0

    def add(self, other: PhaseStats) -> None:
        self.calls.update(other.calls)
        self.bytes += other.bytes
        self.cycles += other.cycles
        self.wall += other.wall
        self.entries += other.entries


@dataclass
class Stats:
    """Statistics of a machine, per phase name (a snapshot; see ``Machine.stats``).

    Printing it gives a table in the form of Table 4 of Ahrens & Hansen: one row per
    phase with model cycles (and emulated seconds), wall seconds, bytes moved and calls.
    Nested phases are listed by path (``outer/inner``); ``total`` sums the cycles and bytes
    of every phase and the wall time of the top-level ones (nested wall time is included
    in its parent's).
    """

    phases: dict[str, PhaseStats]
    machine: str = ""
    clock_hz: float = 0.0

    @property
    def total(self) -> PhaseStats:
        """All phases together (wall time of the top-level phases only)."""
        total = PhaseStats()
        for name, phase in self.phases.items():
            total.calls.update(phase.calls)
            total.bytes += phase.bytes
            total.cycles += phase.cycles
            if "/" not in name:
                total.wall += phase.wall
        return total

    def __getitem__(self, name: str) -> PhaseStats:
        return self.phases[name]

    def to_dict(self) -> dict:
        """Plain data for JSON."""
        return {
            "machine": self.machine,
            "phases": {
                name: {
                    "calls": dict(p.calls),
                    "bytes": p.bytes,
                    "cycles": p.cycles,
                    "model_seconds": p.cycles / self.clock_hz if self.clock_hz else None,
                    "wall_seconds": p.wall,
                }
                for name, p in self.phases.items()
            },
        }

    def __str__(self) -> str:
        rows = list(self.phases.items()) + [("total", self.total)]
        name_width = max([5] + [len(n) for n, _ in rows])
        header = (
            f"{'phase':<{name_width}}  {'model cycles':>14}  {'model s':>10}  {'wall s':>9}"
            f"  {'MB moved':>9}  calls"
        )
        lines = [f"machine: {self.machine}", header, "-" * len(header)]
        for name, p in rows:
            model_s = p.cycles / self.clock_hz if self.clock_hz else float("nan")
            calls = ", ".join(f"{k} {v}" for k, v in sorted(p.calls.items()))
            lines.append(
                f"{name:<{name_width}}  {p.cycles:>14.0f}  {model_s:>10.6f}  {p.wall:>9.4f}"
                f"  {p.bytes / 1e6:>9.2f}  {calls}"
            )
        return "\n".join(lines)
