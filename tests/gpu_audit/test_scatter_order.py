"""Duplicate destinations of a scatter: the counting stand-in keeps the first write.

``a[index] = values`` with an index naming a destination twice keeps NumPy's last value
but an undefined one on a GPU (whichever thread writes last). The stand-in keeps the
first, so a program that reads such a destination differs between the NumPy machine and
the counting one, where the tests compare them. It found the masked ``send`` below: on a
device the machine sends masked-off messages to address -1 (the CuPy router drops them),
but the reference ``send`` (``SIMD_FORCE_REFERENCE=1``, or a dtype the kernels lack)
wrote them to the last element, and whether they or the real messages to that element
won depended on the order of the writes.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernels.counting import cupy as xp
from simd import Machine


def test_first_write_wins_on_duplicates_only():
    a = xp.zeros(5)
    a[xp.asarray(np.array([1, 1, 2, 1]))] = xp.asarray(np.array([3.0, 5.0, 4.0, 6.0]))
    assert a.tolist() == [0.0, 3.0, 4.0, 0.0, 0.0]  # NumPy: 6.0 at 1
    b = xp.zeros((3, 2))
    b[xp.asarray(np.array([2, 0, 2]))] = xp.asarray(np.arange(6.0).reshape(3, 2))
    assert b.tolist() == [[2.0, 3.0], [0.0, 0.0], [0.0, 1.0]]
    c = xp.zeros((3, 3), dtype=np.int64)
    rows, cols = xp.asarray(np.array([0, 0, 1])), xp.asarray(np.array([1, -2, 2]))
    c[rows, cols] = xp.asarray(np.array([7, 8, 9]))  # (0, 1) twice: -2 is column 1
    assert c.tolist() == [[0, 7, 0], [0, 0, 9], [0, 0, 0]]
    d = xp.zeros(4, dtype=np.int64)
    d[xp.asarray(np.array([3, 0, 1]))] = xp.asarray(np.array([1, 2, 3]))  # no duplicate
    assert d.tolist() == [2, 3, 0, 1]


@pytest.mark.parametrize("forced", ["0", "1"])
@pytest.mark.parametrize("combine", ["add", "max", "min", "or", "overwrite"])
@pytest.mark.parametrize("last_receives", [False, True])
def test_masked_send_drops_masked_messages_on_every_backend(
    monkeypatch, forced, combine, last_receives
):
    monkeypatch.setenv("SIMD_FORCE_REFERENCE", forced)
    values = np.array([1, 2, 5, 6, 4], dtype=np.int64)
    dest = np.array([0, 3 if last_receives else 1, 2, 3, 5])
    mask = np.array([True, True, False, False, True])
    results = {}
    for backend in ("numpy", "counting"):
        m = Machine(pes=4, backend=backend)
        args = (m.asarray(values), m.asarray(dest))
        into = m.asarray(np.full(6, 3, dtype=np.int64))
        m.send(*args, into=into, combine=combine, mask=m.asarray(mask))
        new = m.send(*args, size=6, combine=combine, mask=m.asarray(mask), fill=0)
        results[backend] = (m.asnumpy(into).tolist(), m.asnumpy(new).tolist())
    assert results["counting"] == results["numpy"]
