"""The simulated message-passing machine: :func:`simulate` runs a task set under a policy.

The MIMD machines of Muniz & Zaluska and of Barker & Chrisochoides are simulated by
a discrete-event engine compiled by Numba (:mod:`mimd.run_kernels` and the modules it
names): a torus of processors, each with one CPU that runs its tasks and, first, its
message start-ups and protocol work; links that share their bandwidth among the messages
crossing them, as SimGrid's do (:mod:`mimd.network_kernels`); and the policies' protocols
as handlers of the events (:mod:`mimd.policy_kernels`, :mod:`mimd.gradient_kernels`).
Every event happens at its exact time: there is no time step. SimGrid (Casanova, Legrand,
Quinson et al.), the simulator the distributed-computing community validates such
algorithms on, is its oracle: :mod:`mimd.on_simgrid` runs the same policies as SimGrid
actors, and the tests and ``python -m bench.mimd_engines`` compare the two.

Random choices (work-stealing victims, polling phases) come from the seed, the victims
from a hash of the seed, the processor and its draw's number, so a run is deterministic
for a given seed and the same in both engines. Processor and task ids decide every tie.
"""

from __future__ import annotations

import numpy as np

from kernels.compiles import Stopwatch

from .network import Network, torus_shape
from .policies.base import Policy, initial_placement
from .result import SimResult

__all__ = ["SimResult", "simulate", "initial_placement", "MAX_TASKS", "memory_needed"]

#: The most tasks one simulation takes (its rows of tasks and messages are in memory).
MAX_TASKS = 50_000_000
#: The most events one simulation runs unless told otherwise.
MAX_EVENTS = 2_000_000_000


def simulate(  # noqa: PLR0913 (the public signature)
    costs,
    policy: Policy,
    *,
    network: Network | None = None,
    processors: int | None = None,
    placement=None,
    bundle: bool | None = None,
    seed: int = 0,
    app_messages: float = 0.0,
    app_bytes: int = 0,
    max_events: int = MAX_EVENTS,
    progress=None,
) -> SimResult:
    """Run ``costs`` (one entry per task, seconds) on the simulated MIMD machine.

    Parameters
    ----------
    costs : array_like of float
        Execution time of each task on one processor (seconds, > 0).
    policy : Policy
        :class:`Farmer`, :class:`GradientModel`, :class:`ExtendedGradient`,
        :class:`Diffusion`, :class:`WorkStealing` or :class:`NoBalancing`.
    network : Network, optional
        Topology and costs; default ``Network(shape=torus_shape(processors))``.
    processors : int, optional
        Number of processors when ``network`` is not given (default 16).
    placement : {"block", "cyclic", "root"} or array of int, optional
        Initial placement of the tasks, or each task's processor; default the policy's
        (root for Muniz & Zaluska's policies). The farmer holds every task whatever it is.
    bundle : bool, optional
        Start from one spawn bundle per processor's tasks, that the gradient policies split
        in halves as they place it (Muniz & Zaluska's multiple-spawning tree); default True
        for the gradient policies placed from the root or on given processors, False
        otherwise.
    seed : int
        Seed of the random choices (work-stealing victims, polling phases).
    app_messages, app_bytes : float, int
        Messages of ``app_bytes`` bytes each task sends while it runs (Barker & Chrisochoides
        section 6.2: four neighbours); each costs the sender ``startup + app_bytes *
        per_byte`` of CPU.
    max_events : int
        Safety limit on the events simulated.
    progress : callable(float), optional
        Called with the fraction of the tasks done, every few million events (the run goes
        on in slices; Ctrl-C stops it between two).

    Returns
    -------
    SimResult

    Examples
    --------
    >>> from mimd import Farmer, simulate
    >>> r = simulate([1.0] * 8, Farmer(), processors=4)
    >>> bool(r.runs.tolist() == [1] * 8), round(r.makespan, 1)
    (True, 2.0)
    """
    if not (app_messages >= 0 and app_bytes >= 0):
        raise ValueError("app_messages and app_bytes must be >= 0")
    host, network, owners, bundle = _checked(
        costs, policy, network, processors, placement, bundle, seed
    )
    app = app_messages * (network.startup + app_bytes * network.per_byte)
    with Stopwatch() as clock:  # a first run's compile is said, not timed
        state = _run(host, policy, network, (owners, bundle, int(seed), app), max_events, progress)
    return _result(state, policy, network, app, clock.seconds)


def _checked(costs, policy, network, processors, placement, bundle, seed):
    """The checked task costs, network, initial owners and bundling (one-line errors)."""
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a Policy instance, got {type(policy).__name__}")
    host = np.asarray(costs, dtype=np.float64)
    if host.ndim != 1 or host.size == 0:
        raise ValueError(f"costs must be a non-empty 1-D array, got shape {host.shape}")
    if not np.all(np.isfinite(host)) or np.any(host <= 0):
        raise ValueError("costs must be finite and > 0 (seconds per task)")
    if host.size > MAX_TASKS:
        raise ValueError(
            f"{host.size:,} tasks are more than one simulation takes ({MAX_TASKS:,}); "
            "simulate fewer, coarser tasks"
        )
    if network is None:
        network = Network(shape=torus_shape(16 if processors is None else processors))
    elif processors is not None and processors != network.p:
        raise ValueError(f"processors={processors} disagrees with network of {network.p}")
    if not isinstance(seed, int | np.integer) or isinstance(seed, bool):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    n, p = host.size, network.p
    if placement is None:
        placement = policy.default_placement
    if not isinstance(placement, str):
        placement = np.asarray(placement, dtype=np.int64)
        if placement.shape != (n,) or placement.min() < 0 or placement.max() >= p:
            raise ValueError(f"placement must give each of the {n} tasks a processor of {p}")
    owners = np.asarray(policy.owners(n, p, placement), dtype=np.int64)
    if bundle is None:  # given owners: as the policy places from its root
        bundle = policy.bundles(placement if isinstance(placement, str) else "root")
    return host, network, owners, bool(bundle)


def memory_needed(tasks: int, processors: int, neighbours: int = 4) -> int:
    """About the most bytes a simulation of ``tasks`` tasks on ``processors`` processors
    holds: its rows of tasks, messages and network components, events, processors and links
    (:func:`mimd.engine_kernels.new_state`), eight bytes a column, and as much again for
    what is made while the state is laid out and for the result (measured: 85 MB for 79,815
    tasks on 1,024 processors).

    >>> memory_needed(80_000, 1024) < 200e6
    True
    """
    messages, events = _capacity(tasks, processors, neighbours)
    return 16 * (16 * tasks + 37 * messages + 3 * events + 75 * processors)


def _capacity(n: int, p: int, k: int) -> tuple[int, int]:
    """Rows of messages and of the event heap a run starts with (doubled if it runs out)."""
    messages = n + p * (2 * k + 8) + 64
    return messages, 2 * messages + 4 * p + 64


#: Events a slice of a run takes (about a second), between two calls of its progress.
SLICE = 3_000_000


def _run(costs, policy, network, start, max_events, progress=None):
    """The compiled event loop on a new state (``start``: the owners, the bundling, the
    seed, each task's own messages' seconds), slice after slice; a state that ran out of
    rows is made again, twice as large (the run is deterministic)."""
    from . import engine_kernels as ek

    owners, bundle, seed, app = start
    from .run_kernels import compiled_run

    prm = ek.parameters(policy, network, app)
    q = prm[ek.PR_QUANTUM]
    rng = np.random.default_rng(seed)
    phases = rng.uniform(0.0, q, network.p) if q > 0 else np.zeros(network.p)
    capacity = _capacity(costs.size, network.p, int(prm[ek.PR_NEIGHBOURS]))
    run = compiled_run()
    while True:
        state = ek.new_state(costs, owners, bundle, prm, network.offsets(), phases, seed, capacity)
        limit = min(SLICE, max_events)
        while True:
            run(state, limit)
            if state.gi[ek.G_ERROR] != ek.ERR_EVENTS or limit >= max_events:
                break
            state.gi[ek.G_ERROR] = 0
            limit = min(limit + SLICE, max_events)
            if progress is not None:
                progress(state.gi[ek.G_DONE] / costs.size)
        error = state.gi[ek.G_ERROR]
        if error in (ek.ERR_HEAP, ek.ERR_MESSAGES):
            capacity = (2 * capacity[0], 2 * capacity[1])
            continue
        if error == ek.ERR_DEADLOCK:
            raise RuntimeError(
                f"simulation deadlocked at t={state.gf[ek.GF_NOW]:.4g} s with "
                f"{costs.size - state.gi[ek.G_DONE]} tasks left (policy {policy.name})"
            )
        if error == ek.ERR_EVENTS:
            raise RuntimeError(
                f"simulation did not finish in {max_events} events "
                f"({state.gi[ek.G_DONE]}/{costs.size} tasks done at t={state.gf[ek.GF_NOW]:.4g} s)"
            )
        if progress is not None:
            progress(1.0)
        return state


def _result(state, policy, network, app, wall) -> SimResult:
    from . import engine_kernels as ek
    from .flow_kernels import L_BUSY, L_N, L_SINCE

    s = state
    finish = s.tf[:, ek.T_FINISH].copy()
    makespan = float(np.nanmax(finish))
    p = network.p
    overhead = s.pf[:, ek.P_OVER].copy()
    q = s.prm[ek.PR_QUANTUM]
    if q > 0:
        ph = s.pf[:, ek.P_PHASE]
        overhead += s.prm[ek.PR_POLL_COST] * (np.floor((makespan - ph) / q) + 1)
    busy_links = s.lf[:, L_BUSY] + np.where(s.li[:, L_N] > 0, makespan - s.lf[:, L_SINCE], 0.0)
    work = float(s.tf[:, ek.T_COST].sum()) + s.tf.shape[0] * app
    ps = p * makespan
    return SimResult(
        policy=policy.name,
        processors=p,
        tasks=s.tf.shape[0],
        makespan=makespan,
        work=work,
        processor_seconds=ps,
        utilisation=work / ps if ps > 0 else 1.0,
        runs=s.ti[:, ek.T_RUNS].copy(),
        start=s.tf[:, ek.T_START].copy(),
        finish=finish,
        runner=s.ti[:, ek.T_RUNNER].copy(),
        busy=s.pf[:, ek.P_BUSY].copy(),
        overhead=overhead,
        migrations=int(s.gi[ek.G_MIGRATIONS]),
        messages=int(s.gi[ek.G_MESSAGES]),
        events=int(s.gi[ek.G_EVENTS]),
        wall=wall,
        extra={
            "contention": network.contention,
            "link_busy_max": float(busy_links.max()),
            "link_wait": float(s.gf[ek.GF_WAIT]),
        },
    )
