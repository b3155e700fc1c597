"""The base of the MIMD balancing policies: a record of a policy's parameters.

:class:`Policy` is a frozen record of a policy's parameters and the code of its protocol
in the event engine (:mod:`mimd.engine_kernels`). Also here: the initial placements of the
tasks (:func:`initial_placement`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Policy", "NoBalancing", "initial_placement"]

#: The protocols' codes in the event engine (:mod:`mimd.engine_kernels`).
NONE, FARMER, DIFFUSION, STEALING, GRADIENT, EXTENDED = range(6)


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
    """Base of all policies: a record of a policy's parameters.

    A policy is a frozen dataclass: its fields are its parameters, ``name`` labels it in
    tables and results, ``code`` names its protocol in the event engine
    (:mod:`mimd.engine_kernels`), whose handlers (:mod:`mimd.policy_kernels`,
    :mod:`mimd.gradient_kernels`) carry out its steps; :meth:`engine_parameters` hands
    them its fields. The base's protocol does nothing: it is :class:`NoBalancing`.

    To add a policy: a code in :mod:`mimd.policies.base` (``NONE``, ``FARMER``, ...), its
    steps in the engine's handlers (what a processor does when it runs dry, when each of its
    messages arrives, when its polling thread wakes; :func:`mimd.policy_kernels.dispatch`
    and :func:`~mimd.policy_kernels.deliver` name the places), a subclass here with
    ``@dataclass(frozen=True)`` that sets ``name`` and ``code`` (and ``default_placement``
    if the tasks should start elsewhere than in blocks), listed in :data:`mimd.POLICIES`,
    which ``simd-emu bench mimd`` compares on the same task sets; and the same policy as
    SimGrid actors (:mod:`mimd.simgrid_policies`), so that the tests can check the engine's
    run against SimGrid's.

    Examples
    --------
    >>> from mimd import NoBalancing, simulate
    >>> r = simulate([1.0, 2.0, 3.0, 4.0], NoBalancing(), processors=2)
    >>> round(r.makespan, 6)  # blocks: 1 + 2 on one processor, 3 + 4 on the other
    7.0
    """

    name = "policy"
    #: the protocol's code in the event engine
    code = NONE
    #: where the tasks are at time 0 unless the caller says: "root" (processor 0) or "block"
    default_placement = "block"

    def owners(self, n: int, p: int, placement) -> np.ndarray:
        """Processor of each of ``n`` tasks at time 0 on ``p`` processors.

        ``placement`` is the caller's, or :attr:`default_placement`: a name of
        :func:`initial_placement`, or each task's processor.
        """
        if isinstance(placement, str):
            return initial_placement(n, p, placement)
        return np.asarray(placement, dtype=np.int64)

    def bundles(self, placement: str) -> bool:
        """Whether the tasks start as spawn bundles unless the caller says (default no)."""
        return False

    def engine_parameters(self, network) -> dict[str, float]:
        """The engine's policy parameters (``PR_*`` of :mod:`mimd.engine_kernels` by
        name, without the prefix): none for the base."""
        return {}


@dataclass(frozen=True)
class NoBalancing(Policy):
    """Static assignment, no migration (the baseline of Barker & Chrisochoides' Figure 4)."""

    name = "none"
