"""The load-balancing search: which datum, and which of its tasks, every task is.

The one primitive of the ``expand`` form (moderngpu's ``transform_lbs``, in SIMD form):
given the exclusive add-scan of a workload, every task of a range learns the datum it
belongs to and its index within that datum, with one send and one max-scan.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SEARCH_OPS", "load_balancing_search"]

#: Elementwise operations per datum of the search: the overlap test (5) and the clip (1).
SEARCH_OPS = 6
#: Elementwise operations per task: the task index within its datum.
TASK_INDEX_OPS = 1


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
