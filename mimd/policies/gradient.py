"""The Gradient Model and the Extended Gradient (Muniz & Zaluska sections 4.1, 4.2, 5 and
6.1): a pressure surface propagated one hop per status update, a spawn tree placed down it,
and the Extended Gradient's check-and-reserve handshakes."""

from __future__ import annotations

from dataclasses import dataclass

from .base import EXTENDED, GRADIENT, Policy, check_nonneg

__all__ = ["GradientModel", "ExtendedGradient"]


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
    processor propagates one hop per interval.
    A heavily loaded processor sends one unit of work per interval to its neighbour of
    least pressure when that is below its own: work flows down the gradient hop by hop,
    with no check that the target is still light (the overflow effect). Spawning is not
    rate-limited: a busy processor holding a spawn bundle places half of it down its
    current gradient, then half of what is left, and so on, one placement after the other
    (``spawn`` seconds of its CPU each, then packing and the start-up).

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
    code = GRADIENT
    default_placement = "root"

    def __post_init__(self) -> None:
        check_nonneg(self, "interval", "low", "high", "spawn", "window")
        if self.interval <= 0 or self.window <= 0:
            raise ValueError("GradientModel.interval and window must be > 0")
        if self.high > 1:
            raise ValueError(f"busyness thresholds lie in [0, 1], got high={self.high}")
        if self.high <= self.low:
            raise ValueError(f"thresholds need low < high, got low={self.low}, high={self.high}")

    def bundles(self, placement: str) -> bool:
        """From the root, the tasks start as one spawn bundle (Muniz & Zaluska 6.1)."""
        return placement == "root"

    def engine_parameters(self, network) -> dict[str, float]:
        return {
            "A": self.interval,
            "B": self.low,
            "C": self.high,
            "D": self.window,
            "E": self.spawn,
        }


@dataclass(frozen=True)
class ExtendedGradient(GradientModel):
    """Extended Gradient of Muniz (1994), Muniz & Zaluska section 4.2.

    The gradient also carries the id of the nearest light processor. A heavily loaded
    processor asks that processor directly (routed, any distance) to confirm it is still
    light and to reserve itself (check-and-reserve handshake, ``process`` seconds on the
    target); only on a yes is the work sent, straight to it. Several sources asking one
    target: the first request to arrive wins, the others are refused. A source asks when it
    starts a task, when work reaches it and after each status update; a refused one waits
    for the next update.
    """

    process: float = 2e-4
    name = "extended-gradient"
    code = EXTENDED

    def __post_init__(self) -> None:
        super().__post_init__()
        check_nonneg(self, "process")

    def engine_parameters(self, network) -> dict[str, float]:
        return super().engine_parameters(network) | {"F": self.process}
