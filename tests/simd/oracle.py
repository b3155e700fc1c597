"""Serial, element-by-element oracles of the instructions, in plain Python.

They are written from the definitions in DESIGN.md, independently of
``kernels.reference``, so that the vectorised implementations are checked against
something that shares none of their code.
"""

from __future__ import annotations

import operator

import numpy as np


def _nan_max(a, b):
    """numpy.maximum on two scalars: a NaN operand gives NaN (Python's max does not)."""
    return a if a != a else b if b != b else max(a, b)


def _nan_min(a, b):
    """numpy.minimum on two scalars: a NaN operand gives NaN."""
    return a if a != a else b if b != b else min(a, b)


BINARY = {
    "add": operator.add,
    "max": _nan_max,
    "min": _nan_min,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
}


def identity(op: str, dtype) -> object:
    dtype = np.dtype(dtype)
    if op in ("add", "or", "xor", "copy"):
        return False if dtype.kind == "b" else 0
    if op == "and":  # all bits set
        if dtype.kind == "b":
            return True
        return np.iinfo(dtype).max if dtype.kind == "u" else -1
    if dtype.kind == "f":
        return -np.inf if op == "max" else np.inf
    if dtype.kind == "b":
        return op == "min"
    info = np.iinfo(dtype)
    return info.min if op == "max" else info.max


def wrap(value, dtype):
    """A Python integer wrapped into ``dtype``'s range (two's complement), as the machine's
    integer sums wrap; other values unchanged."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu" or isinstance(value, bool):
        return value
    info = np.iinfo(dtype)
    return (int(value) - int(info.min)) % 2 ** (8 * dtype.itemsize) + int(info.min)


def fold(values, op, dtype, initial=None):
    """Serial reduction of Python numbers: the identity (or ``initial``) combined with each."""
    acc = identity(op, dtype) if initial is None else initial
    for v in values:
        acc = BINARY[op](acc, v)
    return wrap(acc, dtype)


def scan_line(
    values, op, *, flags=None, exclusive=False, reverse=False, initial=None, dtype=np.int64
):
    """Scan one line of Python numbers; ``flags`` True at segment starts in index order."""
    n = len(values)
    flags = [False] * n if flags is None else list(flags)
    out = [None] * n
    order = range(n - 1, -1, -1) if reverse else range(n)

    def is_start(i):
        if reverse:
            return i == n - 1 or flags[i + 1]
        return i == 0 or flags[i]

    start_value = identity(op, dtype) if initial is None else initial
    acc = None
    for i in order:
        if is_start(i):
            acc = None
        if op == "copy":
            if acc is None:
                head = values[i]
                out[i] = start_value if exclusive else head
                acc = head
            else:
                out[i] = acc
            continue
        f = BINARY[op]
        if acc is None:
            before = start_value
            acc = values[i] if initial is None else f(initial, values[i])
        else:
            before = acc
            acc = f(acc, values[i])
        out[i] = before if exclusive else acc
    return out


def shift_nd(x: np.ndarray, offsets, boundary) -> np.ndarray:
    """``out[i] = x[i - offsets]`` element by element."""
    out = np.empty_like(x)
    for index in np.ndindex(*x.shape):
        src = []
        outside = False
        for i, k, n in zip(index, offsets, x.shape, strict=True):
            j = i - k
            if boundary == "wrap":
                j %= n
            elif boundary == "edge":
                j = min(max(j, 0), n - 1)
            elif not 0 <= j < n:
                outside = True
            src.append(j)
        if outside:
            out[index] = 0 if boundary == "zero" else boundary
        else:
            out[index] = x[tuple(src)]
    return out
