"""The base of the MIMD balancing policies: what a policy decides in a simulated run.

:class:`Policy` is a frozen record of a policy's parameters whose methods are the steps of
its protocol; the simulator (:mod:`mimd.simulator`) calls them at fixed points of every
tick and knows no policy by name. Also here: the initial placements of the tasks
(:func:`initial_placement`) and the task states the simulator and the protocols share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Policy",
    "NoBalancing",
    "initial_placement",
    "INF",
    "QUEUED",
    "RUNNING",
    "TRANSIT",
    "DONE",
    "MEMBER",
]

INF = math.inf

#: Task states: waiting in a queue (a bundle's head), running, in a message, finished, and
#: a member of a spawn bundle (the bundle's head stands for it in the queue).
QUEUED, RUNNING, TRANSIT, DONE, MEMBER = 0, 1, 2, 3, 4


def check_nonneg(obj, *names) -> None:
    """Raise ``ValueError`` unless each attribute ``names`` of ``obj`` is a finite number >= 0."""
    for n in names:
        v = getattr(obj, n)
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not (v >= 0)
            or not (math.isfinite(v))
        ):
            raise ValueError(f"{type(obj).__name__}.{n} must be a finite number >= 0, got {v!r}")


def initial_placement(n: int, p: int, how: str = "block") -> np.ndarray:
    """Processor of each task at time 0.

    Parameters
    ----------
    n, p : int
        Tasks and processors.
    how : {"block", "cyclic", "root"}
        ``block``: equal contiguous shares in task order (Barker & Chrisochoides, section 4.1,
        "each of P processors is initially assigned an equal fraction of the N tasks"); ``cyclic``:
        task ``i`` on processor ``i % p``; ``root``: all on processor 0 (Muniz & Zaluska: the
        root process spawns every task).

    Examples
    --------
    >>> initial_placement(6, 3).tolist(), initial_placement(5, 2, "cyclic").tolist()
    ([0, 0, 1, 1, 2, 2], [0, 1, 0, 1, 0])
    """
    if how == "block":
        return (np.arange(n, dtype=np.int64) * p) // max(n, 1)
    if how == "cyclic":
        return np.arange(n, dtype=np.int64) % p
    if how == "root":
        return np.zeros(n, dtype=np.int64)
    raise ValueError(f"placement must be 'block', 'cyclic' or 'root', got {how!r}")


@dataclass(frozen=True)
class Policy:
    """Base of all policies: their parameters, and the steps of their protocol.

    A policy is a frozen dataclass: its fields are its parameters, ``name`` labels it in
    tables and results, and its methods are the steps the simulator
    (:func:`mimd.simulate`) calls in every run. The base's steps do nothing: a policy that
    overrides none is :class:`NoBalancing`.

    To add a policy, subclass ``Policy`` with ``@dataclass(frozen=True)``, set ``name``
    (and ``default_placement`` if the tasks should start elsewhere than in blocks), and
    override the steps its protocol needs:

    * :meth:`owners`, :meth:`bundles` -- where the tasks are at time 0;
    * :meth:`setup` -- the protocol's state for one run, as arrays set on ``sim`` (the
      policy object itself is immutable and may serve several runs);
    * :meth:`protocol` (before idle processors take work from their queue),
      :meth:`after_dispatch` and :meth:`dispatchers` -- the per-tick steps: requests,
      replies and migrations, counted in ``sim.messages`` (``sim.give`` counts the units
      of work it moves in ``sim.migrations``);
    * :meth:`next_due`, :meth:`next_tick` -- when the protocol next has something to do
      (the simulator skips the ticks in which nothing happens);
    * :meth:`before_progress`, :meth:`after_progress`, :meth:`delivered`,
      :meth:`unpack_cost` -- its share of the steps every policy goes through.

    Then list the class in :data:`mimd.POLICIES`, the policies by name, which
    ``simd-emu bench mimd`` compares on the same task sets. The simulation ``sim``
    the steps receive holds the processor arrays (``sim.cur``: running task or -1,
    ``sim.qcount``: queued tasks, ``sim.debt``: CPU time owed, ``sim.pid``), the task arrays
    (``sim.owner``, ``sim.state``), the SIMD machine ``sim.m``, the network ``sim.net`` and
    the shared steps (``sim.message``, ``sim.charge``, ``sim.give``, ``sim.rank``,
    ``sim.now``); see :mod:`mimd.simulator`.

    Examples
    --------
    A processor with queued work sends one unit to its right-hand neighbour when that
    one has nothing to do:

    >>> from dataclasses import dataclass
    >>> from mimd import Policy, simulate
    >>> @dataclass(frozen=True)
    ... class PushRight(Policy):
    ...     name = "push-right"
    ...
    ...     def protocol(self, sim):
    ...         right = (sim.pid + 1) % sim.P
    ...         idle = (sim.cur < 0) & (sim.qcount == 0)
    ...         donors = sim.xp.flatnonzero((sim.qcount > 0) & idle[right])
    ...         sim.give(donors, right[donors], sim.now() + sim.debt[donors])
    >>> r = simulate([1.0] * 8, PushRight(), processors=4, placement="root")
    >>> r.runs.tolist() == [1] * 8, r.migrations > 0
    (True, True)
    """

    name = "policy"
    #: where the tasks are at time 0 unless the caller says: "root" (processor 0) or "block"
    default_placement = "block"

    # where the tasks start ---------------------------------------------------------------
    def owners(self, n: int, p: int, placement: str) -> np.ndarray:
        """Processor of each of ``n`` tasks at time 0 on ``p`` processors.

        ``placement`` is the caller's, or :attr:`default_placement`
        (:func:`initial_placement`).
        """
        return initial_placement(n, p, placement)

    def bundles(self, placement: str) -> bool:
        """Whether the tasks start as spawn bundles unless the caller says (default no)."""
        return False

    # one run -----------------------------------------------------------------------------
    def setup(self, sim) -> None:
        """Make the protocol's state for the run ``sim`` (called once, before tick 0)."""

    def before_progress(self, sim, t0: float, t1: float) -> None:
        """Charge CPU work the policy does in ``(t0, t1]`` whatever happens (polling)."""

    def after_progress(self, sim, span: float, use) -> None:
        """Observe the step of ``span`` seconds in which processors ran tasks for ``use``."""

    def protocol(self, sim) -> None:
        """The protocol's step before idle processors take work: answer what is due."""

    def dispatchers(self, sim, waiting):
        """Of the idle processors with queued work (mask ``waiting``), those that start
        the head of their queue now (default all)."""
        return waiting

    def after_dispatch(self, sim) -> None:
        """The protocol's step after idle processors took work: ask for more."""

    def delivered(self, sim, procs) -> None:
        """Work has arrived at processors ``procs`` (and joined their queues)."""

    def unpack_cost(self, network) -> float:
        """CPU time a receiver spends on each unit of work it is sent."""
        return network.unpack

    def next_due(self, sim) -> float:
        """Exact time of the protocol's earliest pending message event, or ``inf``."""
        return INF

    def next_tick(self, sim) -> float:
        """Earliest tick at which the protocol acts besides its messages, or ``inf``."""
        return INF


@dataclass(frozen=True)
class NoBalancing(Policy):
    """Static assignment, no migration (the baseline of Barker & Chrisochoides' Figure 4)."""

    name = "none"
