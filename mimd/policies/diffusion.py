"""Diffusion (PREMA) and work stealing, Barker & Chrisochoides sections 2 and 4:
receivers ask their neighbourhood for work, answered by each target's polling thread."""

from __future__ import annotations

from dataclasses import dataclass

from .base import DIFFUSION, STEALING, Policy, check_nonneg

__all__ = ["Diffusion", "WorkStealing"]


@dataclass(frozen=True)
class Diffusion(Policy):
    """Diffusion as in PREMA, Barker & Chrisochoides sections 2 and 4.

    Every processor's polling thread wakes every ``quantum`` seconds (at a phase of its
    own), costing ``2 * ctx + poll`` of its CPU each time. A processor whose work pool is
    empty sends a query to every processor of its current neighbourhood (the
    ``neighbours`` nearest on the torus; an evolving set: when all say no, the next
    ``neighbours`` are asked), one after the other from its CPU. A target answers at its
    next wake-up, ``process`` seconds, with the number of unstarted tasks it can spare
    (beyond ``keep``). When all replies are in, the requester spends ``process_reply`` on
    each and ``decision`` choosing, then asks the richest for a task; at that target's next
    wake-up (requests by requester, while it has tasks to spare) its last unstarted task is
    uninstalled, packed, sent and unpacked at the requester, or the request is refused
    and the requester asks its next neighbourhood.
    """

    quantum: float = 0.01
    neighbours: int = 4
    poll: float = 2e-5
    ctx: float = 1e-5
    process: float = 5e-5
    process_reply: float = 5e-5
    decision: float = 1e-4
    keep: int = 0
    name = "diffusion"
    code = DIFFUSION
    default_placement = "block"

    def __post_init__(self) -> None:
        check_nonneg(self, "quantum", "poll", "ctx", "process", "process_reply", "decision", "keep")
        if self.quantum <= 0:
            raise ValueError("quantum must be > 0")
        if not isinstance(self.neighbours, int) or self.neighbours < 1:
            raise ValueError(f"neighbours must be an integer >= 1, got {self.neighbours!r}")

    @property
    def poll_overhead(self) -> float:
        """CPU time of one polling-thread invocation, ``2 T_ctx + T_poll`` (Barker &
        Chrisochoides, section 4.2)."""
        return 2 * self.ctx + self.poll

    def engine_parameters(self, network) -> dict[str, float]:
        return {
            "QUANTUM": self.quantum,
            "POLL_COST": self.poll_overhead,
            "NEIGHBOURS": max(1, min(self.neighbours, network.p - 1)),
            "A": self.process,
            "B": self.process_reply,
            "C": self.decision,
            "D": self.keep,
        }


@dataclass(frozen=True)
class WorkStealing(Diffusion):
    """Work stealing (Barker 2004), the variant of Barker & Chrisochoides section 4.

    An idle processor asks one victim drawn at random from its ``neighbours`` nearest
    processors (``neighbours >= P - 1``: anyone) for a task; the victim answers at its next
    poll, migrating one unstarted task or refusing (``process`` seconds), and a refused
    thief spends ``process_reply`` and tries another victim.
    """

    name = "work-stealing"
    code = STEALING
