"""Every rank's phase statistics together (``Machine.stats_across_ranks``)."""

from __future__ import annotations

from copy import deepcopy

from simd.stats import PhaseStats, Stats

__all__ = ["stats_across_ranks"]


def stats_across_ranks(m, mine: Stats) -> Stats:
    """Every rank's phases together (collective): wall and comm wall of the slowest rank,
    messages and bytes summed, the rest (the same on every rank) from the first rank that
    has the phase; the union of the phase paths."""
    everyone = m.ranks.allgather(mine.phases)
    merged: dict[str, PhaseStats] = {}
    for phases in everyone:
        for path, p in phases.items():
            if path not in merged:
                merged[path] = deepcopy(p)
                merged[path].messages = merged[path].message_bytes = 0
                merged[path].wall = merged[path].comm_wall = 0.0
            total = merged[path]
            total.wall = max(total.wall, p.wall)
            total.comm_wall = max(total.comm_wall, p.comm_wall)
            total.messages += p.messages
            total.message_bytes += p.message_bytes
    return Stats(phases=merged, machine=mine.machine, clock_hz=mine.clock_hz)
