"""The load-balancing search: which datum, and which of its tasks, every task is.

The one primitive of the ``expand`` form (moderngpu's ``transform_lbs``, in SIMD form):
given the exclusive add-scan of a workload, every task of a range learns the datum it
belongs to and its index within that datum, with one send and one max-scan
(:func:`load_balancing_search`).

:class:`Expansion` runs it for the expand form. The emulated machine executes those
instructions and the model clock charges them; the host computes the same items and tasks
with one fused kernel where that changes no charge (:mod:`.search_kernels`: one launch
per range on a GPU instead of about 25, and no intermediate arrays), else with the
instructions themselves.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernels.registry import force_reference
from simd.balance.cost_effective.search_kernels import search_cpu, search_device

__all__ = ["EXPAND_ENDS_OPS", "SEARCH_OPS", "Expansion", "load_balancing_search"]

#: Elementwise operations per datum of the search: the overlap test (5) and the clip (1).
SEARCH_OPS = 6
#: Elementwise operations per task: the task index within its datum.
TASK_INDEX_OPS = 1
#: Elementwise operations per datum of the expansion: ``ends = offsets + workload``.
EXPAND_ENDS_OPS = 1


class Expansion:
    """The tasks of a workload, range by range: the expand form's expansion.

    Creating it runs the machine's exclusive add-scan of ``workload`` (the data's first
    tasks), its add-reduction (the total, which the front end knows already) and
    ``ends = offsets + workload``; :meth:`tasks` then gives the datum and task index of
    every task of a range (:func:`load_balancing_search`).

    Where the fused kernel charges what the instructions charge, it computes the tasks
    (``fused``): on one process, with a cost model without per-active terms (those read
    the send's senders), the NumPy backend or deferred address checks (eager ones read the
    number of senders back), and no ``SIMD_FORCE_REFERENCE``. The reduction and the ends,
    which it does not read, are then charged and not computed.

    Parameters
    ----------
    workload : 1-D int32 or int64 backend array
        Tasks per datum (non-negative, at least one datum).
    machine : simd.Machine
    total : int, optional
        The workload's sum, known to the front end. Where it and the number of data are
        below 2**31, the fused search gives int32 items and tasks (8 bytes a task less at
        the expand form's peak) and an int32 workload is scanned as it is; else, and
        without it, int64.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(pes=4, backend="numpy")
    >>> items, tasks = Expansion(m.asarray([3, 0, 1]), machine=m).tasks(0, 4)
    >>> items.tolist(), tasks.tolist()
    ([0, 0, 0, 2], [0, 1, 2, 0])
    """

    def __init__(self, workload: Any, *, machine: Any, total: int | None = None) -> None:
        m = self.machine = machine
        n = int(workload.size)
        small = total is not None and max(n, int(total)) < 2**31
        if workload.dtype != np.int64 and not small:  # the first tasks' scan needs 64 bits
            workload = workload.astype(np.int64)
        self.fused = (
            m.ranks is None
            and not m.cost.per_active
            and (m.backend == "numpy" or m.checks == "deferred")
            and workload.dtype in (np.int32, np.int64)
            and not force_reference()
        )
        self.dtype = np.int32 if small else np.int64
        self.offsets = m.scan(workload, "add", exclusive=True, initial=0)
        self.ends = None
        if self.fused:  # the total, read by the front end already: charged as the machine's
            m.charge("reduce", n, nbytes=workload.nbytes, label="reduce")
        else:
            m.reduce(workload, "add")
            self.ends = self.offsets + workload
        m.charge("elementwise", n, ops=EXPAND_ENDS_OPS)

    def tasks(self, start: int, stop: int) -> tuple[Any, Any]:
        """Datum and task index (backend arrays: int32 where the class docstring says,
        else int64) of tasks ``start .. stop - 1``, ``0 <= start < stop <=`` the total."""
        if not self.fused:
            return load_balancing_search(self.offsets, self.ends, start, stop, machine=self.machine)
        m, offsets = self.machine, self.offsets
        n, length = int(offsets.size), stop - start
        if m.backend == "numpy":
            items, tasks, senders = search_cpu(offsets, start, stop, self.dtype)
        else:  # deferred checks: every datum sends (the masked-off ones to no address)
            items, tasks = search_device(m.xp, offsets, start, stop, self.dtype)
            senders = n
        # The instructions of load_balancing_search, charged in its order.
        m.charge("elementwise", n, ops=SEARCH_OPS)
        m.charge("router", n, nbytes=16 * senders, label="send")
        m.charge("scan", length, nbytes=16 * length, label="scan")
        m.charge("router", length, nbytes=16 * length, label="get")
        m.charge("elementwise", length, ops=TASK_INDEX_OPS)
        return items, tasks


def load_balancing_search(offsets: Any, ends: Any, start: int, stop: int, *, machine: Any):
    """Datum and task index of every task numbered ``start`` to ``stop - 1``.

    Every datum with tasks in ``[start, stop)`` marks its first task in that range with its
    number (a ``send`` with the max combiner); an inclusive max-scan then carries each
    datum's number over its tasks, since data are numbered in offset order.

    Parameters
    ----------
    offsets : 1-D int64 backend array
        First task of each datum: the exclusive add-scan of the workload.
    ends : 1-D int64 backend array
        ``offsets + workload``.
    start, stop : int
        The range of tasks, ``0 <= start < stop <= ends[-1]``.
    machine : simd.Machine

    Returns
    -------
    items, tasks : 1-D int64 backend arrays of length ``stop - start``
        The datum of each task and the task's 0-based index within that datum.

    References
    ----------
    .. [1] S. Baxter, moderngpu 2.0, "transform_lbs" / load-balancing search.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(pes=4, backend="numpy")
    >>> items, tasks = load_balancing_search(m.asarray([0, 3, 3]), m.asarray([3, 3, 4]), 0, 4,
    ...                                      machine=m)
    >>> items.tolist(), tasks.tolist()
    ([0, 0, 0, 2], [0, 1, 2, 0])
    """
    m = machine
    xp = m.xp
    length = stop - start
    datum = xp.arange(offsets.size, dtype=np.int64)
    overlaps = (ends > offsets) & (offsets < stop) & (ends > start)
    dest = xp.clip(offsets - start, 0, length - 1)
    m.charge("elementwise", offsets.size, ops=SEARCH_OPS)
    marks = m.send(datum, dest, length, combine="max", mask=overlaps, fill=-1)
    items = m.scan(marks, "max")
    first = m.get(offsets, items)
    tasks = xp.arange(start, stop, dtype=np.int64) - first
    m.charge("elementwise", length, ops=TASK_INDEX_OPS)
    return items, tasks
