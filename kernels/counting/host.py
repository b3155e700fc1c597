"""The host process made to behave as it does beside CuPy, where the stand-in differs.

:func:`host_conversions_refused` makes NumPy refuse device arrays, as CuPy's arrays refuse
NumPy (here a device array is a NumPy array, which NumPy converts silently);
:func:`pool_host_memory` keeps freed memory in the process, as CuPy's memory pool keeps
freed device blocks.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kernels.counting.device_array import DeviceArray
from kernels.counting.records import state

__all__ = ["host_conversions_refused", "pool_host_memory"]

_CONVERSIONS = ("asarray", "array", "asanyarray", "ascontiguousarray", "asfortranarray")


def _holds_device(a: Any) -> bool:
    if isinstance(a, DeviceArray):
        return True
    return isinstance(a, list | tuple) and any(_holds_device(v) for v in a)


@contextlib.contextmanager
def host_conversions_refused() -> Iterator[None]:
    """Make ``numpy.asarray``, ``numpy.array`` and the like refuse device arrays in the
    block, as CuPy's arrays do (``TypeError: Implicit conversion to a NumPy array is not
    allowed``): here a device array is a NumPy array, so NumPy converts it silently. The
    module attributes are patched for the block (process-wide; for tests); NumPy's work
    inside counted operations is not affected.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.counting import cupy as xp, host_conversions_refused
    >>> with host_conversions_refused():
    ...     try:
    ...         np.asarray(xp.arange(3))
    ...     except TypeError as e:
    ...         print(str(e)[:55])
    Implicit conversion to a NumPy array is not allowed (Cu
    """
    saved = {name: getattr(np, name) for name in _CONVERSIONS}

    def refusing(name: str, convert: Callable) -> Callable:
        def conversion(a: Any, *args: Any, **kwargs: Any) -> Any:
            if not state.depth and _holds_device(a):
                raise TypeError(
                    "Implicit conversion to a NumPy array is not allowed (CuPy): "
                    f"numpy.{name} of a device array; use .get() or cupy.asnumpy"
                )
            return convert(a, *args, **kwargs)

        return conversion

    try:
        for name, convert in saved.items():
            setattr(np, name, refusing(name, convert))
        yield
    finally:
        for name, convert in saved.items():
            setattr(np, name, convert)


def pool_host_memory() -> bool:
    """Keep freed memory in the process, as CuPy's memory pool keeps freed device blocks:
    glibc's ``mallopt`` with large blocks on the heap (up to its 32 MiB limit) and no
    trimming. Process-wide and for good; returns False where it cannot (not glibc).
    For benchmarks of host time: freeing an array then costs the caller nothing, as
    returning a block to CuPy's pool costs nearly nothing.
    """
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    return all(
        mallopt(option, value) == 1
        for option, value in (
            (m_mmap_threshold, 32 << 20),
            (m_trim_threshold, 2**31 - 1),
            (m_top_pad, 256 << 20),
        )
    )
