"""The farmer (master and workers) of Muniz & Zaluska section 4.3: workers ask, the farmer
serves one request at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import FARMER, Policy, check_nonneg

__all__ = ["Farmer"]


@dataclass(frozen=True)
class Farmer(Policy):
    """Master/worker farm (Muniz & Zaluska section 4.3, Pritchard et al. 1987).

    Processor ``farmer`` holds every task and hands one out per request, in task order; a
    worker asks when it runs dry, its request's start-up on its CPU. The farmer serves the
    requests one at a time in the order they arrive, ``serve`` seconds of its CPU each and
    the hand-out's start-up (a first-come first-served server, the centralised bottleneck
    that grows with P); with its pool empty it serves the request and the worker asks no
    more. With ``farmer_works`` the farmer's processor also runs tasks between requests
    (the control run of Muniz & Zaluska section 4.4 is this policy on a single processor).
    ``routing_factor`` multiplies the wire time of its messages (per hop and per byte, so
    also the bandwidth they take): 1 for "farmer + VCR", above 1 for the "farmer
    original" whose messages were forwarded by user-level processes.

    Not charged: the network's ``pack`` and ``unpack`` (uninstalling and installing a
    process or mobile object, Barker & Chrisochoides 4.5): the farmer sends batches
    of data to worker processes placed at compile time (Muniz & Zaluska 4.3), whose
    preparation ``serve`` stands for.
    """

    serve: float = 2e-4
    farmer: int = 0
    farmer_works: bool = True
    routing_factor: float = 1.0
    name = "farmer"
    code = FARMER
    default_placement = "root"

    def __post_init__(self) -> None:
        check_nonneg(self, "serve", "routing_factor")
        if isinstance(self.farmer, bool) or not isinstance(self.farmer, int) or self.farmer < 0:
            raise ValueError(f"Farmer.farmer must be a processor id >= 0, got {self.farmer!r}")

    def owners(self, n, p, placement):
        """The farmer holds every task, by definition."""
        if self.farmer >= p:
            raise ValueError(f"farmer processor {self.farmer} not in a machine of {p}")
        return np.full(n, self.farmer, dtype=np.int64)

    def engine_parameters(self, network) -> dict[str, float]:
        return {
            "A": self.serve,
            "B": self.farmer,
            "C": float(self.farmer_works),
            "D": self.routing_factor,
        }
