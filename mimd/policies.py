"""Load-balancing policies of Muniz & Zaluska and Barker & Chrisochoides (2005), as parameter
records.

The simulator (:mod:`mimd.simulator`) reads these records; each docstring says
which mechanism of which paper the policy follows and what its parameters mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "Policy",
    "Farmer",
    "GradientModel",
    "ExtendedGradient",
    "Diffusion",
    "WorkStealing",
    "NoBalancing",
    "POLICIES",
]


def _check_nonneg(obj, *names):
    for n in names:
        v = getattr(obj, n)
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not (v >= 0)
            or not (math.isfinite(v))
        ):
            raise ValueError(f"{type(obj).__name__}.{n} must be a finite number >= 0, got {v!r}")


@dataclass(frozen=True)
class Policy:
    """Base of all policies. ``name`` is the label used in tables."""

    name = "policy"
    #: where the tasks are at time 0 unless the caller says: "root" (processor 0) or "block"
    default_placement = "block"


@dataclass(frozen=True)
class NoBalancing(Policy):
    """Static assignment, no migration (the baseline of Barker & Chrisochoides (2005) Figure 4)."""

    name = "none"


@dataclass(frozen=True)
class Farmer(Policy):
    """Master/worker farm (Muniz & Zaluska section 4.3, Pritchard et al. 1987).

    Processor ``farmer`` holds every task and hands one out per request, in task order; a
    worker asks when it runs dry. The farmer serves requests one at a time (``serve`` seconds
    of its CPU each), which is the centralised bottleneck that grows with P. With
    ``farmer_works`` the farmer's processor also runs tasks between requests (the control
    run of Muniz & Zaluska section 4.4 is this policy on a single processor).
    ``routing_factor`` multiplies the wire time of its messages (per hop and per byte, so
    also how long they hold each link): 1 for "farmer + VCR", above 1 for the "farmer
    original" whose messages were forwarded by user-level processes.

    Each hand-out costs the farmer ``serve`` and the message start-up on its CPU; not the
    network's ``pack`` / ``unpack`` (uninstalling and installing a process or mobile object,
    Barker & Chrisochoides (2005) 4.5): the farmer sends batches of data to worker processes placed
    at compile time (Muniz & Zaluska 4.3), whose preparation ``serve`` stands for.
    """

    serve: float = 2e-4
    farmer: int = 0
    farmer_works: bool = True
    routing_factor: float = 1.0
    name = "farmer"
    default_placement = "root"

    def __post_init__(self) -> None:
        _check_nonneg(self, "serve", "routing_factor")
        if isinstance(self.farmer, bool) or not isinstance(self.farmer, int) or self.farmer < 0:
            raise ValueError(f"Farmer.farmer must be a processor id >= 0, got {self.farmer!r}")


@dataclass(frozen=True)
class GradientModel(Policy):
    """Gradient Model of Lin & Keller (1986) as described in Muniz & Zaluska section 4.1.

    Each processor measures its busyness as the fraction of time spent on tasks, averaged
    over ``window`` seconds (Muniz & Zaluska section 5: the idle count, averaged over a period of
    the order of a migration, after Barak & Shiloh). Every ``interval`` seconds it
    classifies itself with two thresholds: lightly loaded when busyness ``< low`` and its
    queue is empty, over-loaded when busyness ``> high`` and it has queued work. Its
    pressure is 0 when light, else one more than the smallest pressure of its four torus
    neighbours (capped at the diameter + 1), so the distance to the nearest light
    processor propagates one hop per interval (mesh shifts).
    A heavily loaded processor sends one unit of work per interval to its neighbour of
    least pressure when that is below its own: work flows down the gradient hop by hop,
    with no check that the target is still light (the overflow effect). Spawning is not
    rate-limited: a busy processor holding a spawn bundle places half of it at once
    (``spawn`` seconds of its CPU per placement), down its current gradient.

    Muniz & Zaluska gives neither the interval nor the averaging window; the defaults (status every
    1 s, busyness averaged over 2 s, against tasks of 0.3-10 s) are our choice for its
    transputer machine, and ``simd-emu bench mimd`` reports how GM and EG move with them.

    A unit of work is a task, or half of a spawn bundle (Muniz & Zaluska section 6.1: processes are
    spawned recursively by splitting the descriptor array).
    """

    interval: float = 1.0
    low: float = 0.25
    high: float = 0.75
    window: float = 2.0
    spawn: float = 5e-3
    name = "gradient"
    default_placement = "root"

    def __post_init__(self) -> None:
        _check_nonneg(self, "interval", "low", "high", "spawn", "window")
        if self.interval <= 0 or self.window <= 0:
            raise ValueError("GradientModel.interval and window must be > 0")
        if self.high > 1:
            raise ValueError(f"busyness thresholds lie in [0, 1], got high={self.high}")
        if self.high <= self.low:
            raise ValueError(f"thresholds need low < high, got low={self.low}, high={self.high}")


@dataclass(frozen=True)
class ExtendedGradient(GradientModel):
    """Extended Gradient of Muniz (1994), Muniz & Zaluska section 4.2.

    The gradient also carries the id of the nearest light processor. A heavily loaded
    processor asks that processor directly (routed, any distance) to confirm it is still
    light and to reserve itself (check-and-reserve handshake, ``process`` seconds on the
    target); only on a yes is the work sent, straight to it. Several sources asking one
    target in the same instant: the lowest processor id wins, the others are refused.
    """

    process: float = 2e-4
    name = "extended-gradient"

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_nonneg(self, "process")


@dataclass(frozen=True)
class Diffusion(Policy):
    """Diffusion as in PREMA, Barker & Chrisochoides (2005) sections 2 and 4.

    A processor whose work pool is empty sends a query to every processor of its current
    neighbourhood (the ``neighbours`` nearest on the torus; an evolving set: when all say
    no, the next ``neighbours`` are asked). Queries are answered when the target's polling
    thread wakes (every ``quantum`` seconds, costing ``2 * ctx + poll`` each time) with the
    number of unstarted tasks it can spare. After all replies and ``decision`` seconds the
    requester asks the richest for a task; at that target's next poll one unstarted task is
    uninstalled, packed, sent and unpacked at the requester. ``process`` and
    ``process_reply`` are the CPU times to handle a request and a reply.
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
    default_placement = "block"

    def __post_init__(self) -> None:
        _check_nonneg(
            self, "quantum", "poll", "ctx", "process", "process_reply", "decision", "keep"
        )
        if self.quantum <= 0:
            raise ValueError("quantum must be > 0")
        if not isinstance(self.neighbours, int) or self.neighbours < 1:
            raise ValueError(f"neighbours must be an integer >= 1, got {self.neighbours!r}")

    @property
    def poll_overhead(self) -> float:
        """CPU time of one polling-thread invocation, ``2 T_ctx + T_poll`` (Barker &
        Chrisochoides 2005, section 4.2)."""
        return 2 * self.ctx + self.poll


@dataclass(frozen=True)
class WorkStealing(Diffusion):
    """Work stealing (Barker 2004), the variant of Barker & Chrisochoides (2005) section 4.

    An idle processor asks one victim drawn at random from its ``neighbours`` nearest
    processors (``neighbours >= P - 1``: anyone) for a task; the victim answers at its next
    poll, migrating one unstarted task or refusing, and a refused thief tries another victim.
    """

    name = "work-stealing"


POLICIES = {
    "farmer": Farmer,
    "gradient": GradientModel,
    "extended-gradient": ExtendedGradient,
    "diffusion": Diffusion,
    "work-stealing": WorkStealing,
    "none": NoBalancing,
}
