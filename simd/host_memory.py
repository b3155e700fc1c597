"""The host's freed memory kept for the next frame, as CuPy's pool keeps the device's.

A frame on the NumPy backend allocates tens of megabytes of work arrays and frees them
at its end. With glibc's default settings the allocator hands most of that back to the
operating system, so the next frame touches fresh pages again: for the 241,498-triangle
isosurface at 512x512 that is some 20 MB of page faults, about a quarter of the frame's
time. :func:`keep_freed_memory` asks glibc to serve arrays up to 32 MiB from its heap and
to keep up to 256 MiB of freed heap for reuse (what ``MALLOC_MMAP_THRESHOLD_`` and
``MALLOC_TRIM_THRESHOLD_`` set from the environment). Where the C library is not glibc
nothing changes; ``SIMD_HOST_POOL=0`` leaves glibc's defaults alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_freed_memory"]

#: Arrays up to this many bytes come from the heap (glibc's largest mmap threshold).
MMAP_THRESHOLD = 32 * 2**20
#: Freed heap up to this many bytes stays with the process for the next allocations.
TRIM_THRESHOLD = 256 * 2**20

# glibc's <malloc.h> parameter numbers
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3


@functools.cache
def keep_freed_memory() -> bool:
    """Keep freed host memory for reuse (once per process); True where glibc took it.

    Examples
    --------
    >>> keep_freed_memory() in (True, False)
    True
    """
    if os.environ.get("SIMD_HOST_POOL", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl without mallopt, Windows)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
