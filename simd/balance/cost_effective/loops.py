"""The balanced loop in its three forms: original (Figure 1), cost-effective (Figure 2),
expand (all tasks at once through a load-balancing search).

Every form runs the caller's solution phase (``body``) on the same (datum, task) pairs and
charges the model clock as the emulated machine would: all the VPs of the VP set step in
every iteration, the idle ones masked off. :data:`LOOP_FORMS` names them; :func:`run_loop`
checks its arguments and the workload, then runs the form asked for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from simd.balance.cost_effective.cost_effective_form import cost_effective
from simd.balance.cost_effective.forms import DEFAULT_CHUNK, LoopState, expand, original
from simd.balance.cost_effective.records import LoopResult, check_clock
from simd.transfers import min_into

__all__ = ["FORMS", "LOOP_FORMS", "run_loop"]

#: The forms of the balanced loop, by name, in the order the papers present them: each a
#: function ``form(loop, workload)`` of the loop's state
#: (:class:`~simd.balance.cost_effective.forms.LoopState`) and the workload (a 1-D integer
#: backend array with at least one datum).
LOOP_FORMS: dict[str, Callable[[LoopState, Any], None]] = {
    "original": original,
    "cost-effective": cost_effective,
    "expand": expand,
}

#: The names of the forms (those of :data:`LOOP_FORMS`, in its order).
FORMS = tuple(LOOP_FORMS)


def run_loop(  # noqa: PLR0913 (the public signature)
    workload: Any,
    body: Callable[[Any, Any], None] | None,
    *,
    machine: Any,
    form: str = "cost-effective",
    overestimate: float | None = None,
    clock: str = "model",
    name: str = "scan-conversion",
    task_cost: float = 1.0,
    progress: Any = None,
    prune: bool = True,
    chunk: int | None = None,
    warn: bool = True,
    workload_stats: tuple[int, int, int] | None = None,
) -> LoopResult:
    """Run every task of ``workload`` through ``body`` in one of three loop forms.

    Parameters
    ----------
    workload : 1-D integer array (NumPy, CuPy or sequence)
        Tasks per problem datum; datum ``i`` has tasks ``0 .. workload[i] - 1``.
    body : callable(items, tasks) or None
        The solution phase: called once per iteration with two equal-length integer backend
        arrays, the datum and the 0-based task index of every task run in that iteration
        (live tasks only, packed): int32 where the number of data and the total of tasks
        are below 2**31 (half the bytes a task at the loop's peak), else int64. It runs
        inside ``machine.vp_set(slots)`` so its own instructions are charged for the whole
        VP set (``len(workload)``, or the chunk for ``expand``). The order of tasks within
        a call is unspecified.
    machine : simd.Machine
    form : str
        "original" (Figure 1), "cost-effective" (Figure 2) or "expand".
    overestimate : float, optional
        Cost overestimate in iterations for the decision phase; None: a stored calibration
        for this loop and machine, else an online estimate (module docstring).
    clock : str
        "model" (machine cycles) or "wall" (seconds on this host): the clock the costs are
        measured with for the decision and the warning.
    name : str
        Name of the loop; the machine phase enclosing the loop's phases and the key of
        stored calibrations.
    task_cost : float
        Model cycles per VP per iteration for the body's own elementwise work, charged as
        ``machine.charge("elementwise", slots, ops=task_cost)``.
    progress : None, True or callable(done, total)
        Progress report in tasks done (True: a tqdm bar).
    prune : bool
        Skip information gathering once no decision can be positive (module docstring).
    chunk : int, optional
        Tasks per step of the expand form (default 4 Mi).
    warn : bool
        Issue :class:`CostOverestimateWarning` when a measured cost exceeds the
        overestimate.
    workload_stats : (total, max, min) of ints, optional
        The workload's sum, maximum and minimum, when the caller already knows them (read
        back together with other figures): run_loop then reads nothing back at start-up
        (on a GPU, one host sync fewer). They are trusted; the dtype and shape checks
        still run. The model clock is charged the same either way.

    Returns
    -------
    LoopResult

    Raises
    ------
    ValueError
        Bad form, clock, workload (negative, fractional, not 1-D), overestimate or chunk.
    TypeError
        Non-integer workload dtype or a body that is not callable.

    Examples
    --------
    >>> from simd import Machine
    >>> seen = []
    >>> res = run_loop([3, 0, 1], lambda i, t: seen.extend(zip(i.tolist(), t.tolist())),
    ...                machine=Machine(pes=4, backend="numpy"), form="original")
    >>> sorted(seen), res.iterations
    ([(0, 0), (0, 1), (0, 2), (2, 0)], 3)
    """
    _check_options(form, clock, body, overestimate, task_cost, chunk)
    w, total_tasks, max_w = _validate_workload(workload, machine, workload_stats)
    n = int(w.size)
    call = body if body is not None else (lambda items, tasks: None)
    advance, close = _progress_callback(progress, total_tasks)
    result = LoopResult(
        form=form,
        name=name,
        iterations=0,
        max_workload=max_w,
        mean_workload=float(total_tasks / n) if n else 0.0,
        total_tasks=total_tasks,
        decisions=0,
        stats={},
        clock=clock,
        vps=n,
    )
    loop = LoopState(
        machine,
        call,
        result,
        advance,
        task_cost=task_cost,
        overestimate=overestimate,
        prune=prune,
        warn=warn,
        chunk=chunk or DEFAULT_CHUNK,
    )
    try:
        with machine.phase(name) as result.record:
            if n:
                LOOP_FORMS[form](loop, w)
    finally:
        close()
    return result


def _check_options(
    form: str, clock: str, body: Any, overestimate: Any, task_cost: Any, chunk: Any
) -> None:
    """``run_loop``'s options, checked before any work (one-line errors)."""
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}; got {form!r}")
    check_clock(clock)
    if body is not None and not callable(body):
        raise TypeError("body must be a callable body(items, tasks) or None")
    if overestimate is not None:
        if isinstance(overestimate, bool) or not isinstance(overestimate, (int, float)):
            raise TypeError(f"overestimate must be a number, got {overestimate!r}")
        if not (math.isfinite(overestimate) and overestimate >= 0):
            raise ValueError(f"overestimate must be a finite number >= 0, got {overestimate}")
    if not (isinstance(task_cost, (int, float)) and math.isfinite(task_cost) and task_cost >= 0):
        raise ValueError(f"task_cost must be a finite number >= 0, got {task_cost!r}")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")


def _validate_workload(
    workload: Any, machine: Any, known: tuple[int, int, int] | None = None
) -> tuple[Any, int, int]:
    """The workload as an int64 backend array (int32 ones as they are: no copy; the forms
    widen what could overflow) with its sum and maximum, or a clear error.

    Sum, maximum and minimum (the check) are read back together: one host sync; none when
    the caller passes them (``known``: total, max, min).
    """
    arr = _workload_array(workload, machine)
    xp = machine.xp
    out = machine.asarray(arr, dtype=np.int32 if arr.dtype == np.int32 else np.int64)
    if not out.size:
        return out, 0, 0
    if known is not None:
        total, high, low = (int(v) for v in known)
    elif machine.backend == "cupy":  # three reductions into one buffer, one read back
        buf = xp.empty(3, dtype=np.int64)
        xp.sum(out, out=buf[0:1].reshape(()))
        xp.max(out, out=buf[1:2].reshape(()))
        min_into(xp, out, buf[2:3].reshape(()))
        total, high, low = machine.asnumpy(buf).tolist()
    else:
        total, high, low = int(out.sum()), int(out.max()), int(xp.min(out))
    if low < 0:
        raise ValueError("workload must be non-negative (a number of tasks per datum)")
    return out, total, high


def _workload_array(workload: Any, machine: Any) -> Any:
    """``workload`` as an array of whole, finite task counts in one dimension (not yet
    checked for negative entries), or a one-line error."""
    if isinstance(workload, (str, bytes)):
        raise TypeError("workload must be a 1-D array of non-negative integers, got a string")
    if not hasattr(workload, "__array__") and not hasattr(workload, "__cuda_array_interface__"):
        try:
            workload = np.asarray(workload)
        except ValueError as exc:
            raise ValueError(f"workload must be a 1-D integer array: {exc}") from exc
        except TypeError as exc:
            raise TypeError(f"workload must be a 1-D integer array: {exc}") from exc
    arr = workload
    if arr.dtype == object:
        raise TypeError("workload must be a 1-D integer array, got an object array")
    if arr.ndim != 1:
        raise ValueError(
            f"workload must be 1-D (one entry per problem datum), got shape {tuple(arr.shape)}"
        )
    kind = np.dtype(arr.dtype).kind
    if kind == "b":
        raise TypeError("workload must hold integers (task counts), got booleans")
    if kind == "f":
        host = machine.asnumpy(arr) if not isinstance(arr, np.ndarray) else arr
        if not np.all(np.isfinite(host)):
            raise ValueError("workload must be finite non-negative integers, got NaN or inf")
        if not np.all(host == np.floor(host)):
            raise ValueError("workload must hold whole numbers of tasks, got fractions")
    elif kind not in "iu":
        raise TypeError(f"workload must be an integer array, got dtype {arr.dtype}")
    return arr


def _progress_callback(progress: Any, total: int) -> tuple[Callable[[int], None], Callable]:
    """Normalise ``progress`` into (advance(done_now), close())."""
    if progress is None or progress is False:
        return (lambda done: None), (lambda: None)
    if progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - tqdm is a declared extra
            return (lambda done: None), (lambda: None)
        bar = tqdm(total=total, unit="task", leave=False)
        return bar.update, bar.close
    if callable(progress):
        state = {"done": 0}

        def advance(done: int) -> None:
            state["done"] += done
            progress(state["done"], total)

        return advance, (lambda: None)
    raise TypeError("progress must be None, True or a callable(done, total)")
