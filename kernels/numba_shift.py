"""The ``"cupy"`` backend's ``shift`` and ``halo_exchange``: Numba CUDA kernels on CuPy arrays.

:func:`shift` and :func:`halo_exchange` have the signatures of their oracles in
:mod:`kernels.reference` (the array namespace first) and register themselves for the
``"cupy"`` backend. They take what :class:`simd.Machine` passes after checking it: one
int offset per axis, a boundary that is "wrap", "zero", "edge" or a number, host int64
tile sizes that fit the buffers and a halo width that fits every tile. They check nothing
again.

The kernels (:mod:`kernels.numba_shift_kernels`) run on CuPy's current stream and read
CuPy arrays through the CUDA array interface (no copy, no synchronisation). Both are pure
data movement, so they work on the bits of the elements: an array of any 1, 2, 4 or 8 byte
dtype (bool, int32, int64, float32, float64, ...) is viewed as the unsigned integer of that
size. That gives four compiled specialisations per kernel, keeps NaN payloads and negative
zeros intact, and makes a shift of floats bit-exact.

``numba.cuda`` is imported on the first call, never at import time of this module, and
Numba's dispatcher caches one compiled kernel per signature. With ``xp = numpy`` the same
code runs the kernels on host arrays, which Numba copies to the device and back at every
launch: that is how the tests drive them in Numba's CUDA simulator.

References
----------
.. [1] T. Blank, "The MasPar MP-1 architecture", Proc. IEEE Compcon Spring 1990.
.. [2] W. D. Hillis, "The Connection Machine", MIT Press, 1985.
.. [3] E. S. Biagioni and J. F. Prins, "Scan Directed Load Balancing for Highly-Parallel
   Mesh-Connected Computers", UNC Chapel Hill, 1991, sections 5 and 6.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kernels import registry
from kernels.numba_launch import launch_on_stream

__all__ = ["halo_exchange", "shift"]

# Boundary modes as the kernels see them.
_WRAP, _FILL, _EDGE = 0, 1, 2
_MODES = {"wrap": _WRAP, "zero": _FILL, "edge": _EDGE}

# Threads per block: 256 (8 warps), enough to hide memory latency in a copy kernel.
_THREADS = 256

# Grid limits of every CUDA device since compute capability 3.0; the kernels loop with a
# grid stride, so a capped grid still covers any size.
_MAX_GRID_X = 2**31 - 1
_MAX_GRID_YZ = 65535


def _kernels() -> dict[str, Any]:
    """The ``cuda.jit`` dispatchers, by name (imports ``numba.cuda`` on the first call)."""
    from kernels.numba_shift_kernels import build_kernels

    return build_kernels()


#: The unsigned-integer dtype of each element size, made once.
_BITS = {n: np.dtype(f"u{n}") for n in (1, 2, 4, 8)}
#: (mode, fill) of each boundary mode per element size: what a mode costs per call is a hit.
_MODE_FILLS = {
    (mode, n): (code, bits.type(0)) for mode, code in _MODES.items() for n, bits in _BITS.items()
}


def _bits(itemsize: int) -> np.dtype:
    """The unsigned-integer dtype of ``itemsize`` bytes."""
    return _BITS.get(itemsize) or np.dtype(f"u{itemsize}")


def _fill_bits(boundary: Any, dtype: np.dtype) -> tuple[int, Any]:
    """Boundary as (mode, fill value in the unsigned-integer view of ``dtype``)."""
    if isinstance(boundary, str):
        hit = _MODE_FILLS.get((boundary, dtype.itemsize))
        if hit is not None:
            return hit
    bits = _bits(dtype.itemsize).type
    if isinstance(boundary, str):
        return _MODES[boundary], bits(0)
    # Same conversion as the reference (xp.asarray(fill, dtype=x.dtype)), then its bits.
    value = np.asarray(boundary, dtype=dtype).reshape(1).view(bits)[0]
    return _FILL, bits(value)


def _grid(extents: tuple[int, int, int], threads: int) -> tuple[tuple, tuple]:
    """Launch shape for ``(x, y, z)`` extents: a block as wide as x allows, rest in y.

    Both block sides are capped to the extent (rounded up to a power of two), so a small
    window launches a small block: a 4 x 4 window gets a (4, 4) block, not (4, 64).
    """
    ex, ey, ez = extents
    bx = min(threads, 1 << max(0, (ex - 1).bit_length()))
    by = max(1, min(threads // bx, 1 << max(0, (ey - 1).bit_length())))
    grid = (
        max(1, min(_MAX_GRID_X, -(-ex // bx))),
        max(1, min(_MAX_GRID_YZ, -(-ey // by))),
        max(1, min(_MAX_GRID_YZ, ez)),
    )
    return grid, (bx, by, 1)


def _launch(xp: Any, name: str, extents: tuple[int, int, int], *args: Any) -> None:
    """Launch kernel ``name`` over ``extents`` on ``xp``'s current stream
    (:func:`kernels.numba_launch.launch_on_stream`)."""
    emulated = getattr(xp, "launch_emulated", None)
    if emulated is not None:  # the counting stand-in for CuPy (kernels.counting) runs it
        emulated(f"numba_shift.{name}", args)
        return
    grid, block = _grid(extents, _THREADS)
    launch_on_stream(xp, _kernels()[name], grid, block, args)


def shift(xp: Any, x: Any, offsets: tuple[int, ...], boundary: Any = "wrap") -> Any:
    """NEWS / X-Net mesh shift with ``numpy.roll`` semantics: ``out[i] = x[i - offsets]``.

    The signature and result of :func:`kernels.reference.shift`. One kernel moves the
    array along up to two axes at once (an X-Net diagonal, e.g. ``offsets=(1, -1)``), one
    thread per output element; shifts along more axes chain kernels, which gives the same
    result since each axis's boundary acts independently.

    Parameters
    ----------
    xp : module
        The array namespace of ``x`` (CuPy; NumPy in the CUDA simulator).
    x : array
        The parallel variable (any shape and dtype of 1, 2, 4 or 8 bytes).
    offsets : tuple of int
        One offset per axis of ``x``.
    boundary : {"wrap", "zero", "edge"} or number
        What enters at the mesh border: torus wrap, zeros, the nearest border element, or
        a constant (converted to ``x.dtype`` as ``numpy.asarray(value, dtype)`` does).

    Returns
    -------
    array
        A new C-contiguous array of the shape and dtype of ``x``.

    Notes
    -----
    Algorithm: a gather, each output element reads its source ``i - offset`` (X-Net /
    NEWS communication of the MasPar MP-1 [1]_ and the Connection Machine [2]_, all PEs
    moving at once). The array is viewed as ``(outer, n_r * mid, n_c * inner)``, so an
    interior element's source is its index minus a constant: no divisions.

    Examples
    --------
    On a GPU, with ``cupy``:

    >>> shift(cupy, cupy.arange(5), (2,), "zero")  # doctest: +SKIP
    array([0, 0, 0, 1, 2])
    """
    shape = x.shape  # a tuple of ints, for NumPy and CuPy arrays alike
    dtype = x.dtype
    mode, fill = _fill_bits(boundary, dtype)
    steps = _steps(shape, tuple(offsets), mode)
    if not steps:  # zero-extent axes and zero offsets move nothing
        return xp.array(x, copy=True, order="C")
    cur = (x if x.flags.c_contiguous else xp.ascontiguousarray(x)).view(_bits(dtype.itemsize))
    for view, extents, scalars in steps:
        out = xp.empty(view, dtype=cur.dtype)
        _launch(xp, "shift3", extents, cur.reshape(view), out, *scalars, mode, fill)
        cur = out
    return cur.reshape(shape).view(dtype)


#: (shape, offsets, mode) -> the kernels of a shift, memoised (see _steps).
_STEPS: dict[tuple, tuple] = {}


def _steps(shape: tuple[int, ...], offsets: tuple, mode: int) -> tuple:
    """The kernels of a shift of an array of ``shape`` by ``offsets`` in boundary ``mode``:
    per kernel, (the 3-D view it moves, its extents, its scalar arguments ``inner, d_c,
    mid, d_r``); none when nothing moves. Memoised: a shift seen before plans nothing.

    Offsets are normalised: wrap offsets into [0, n); others clamp to [-n, n] (same result,
    no overflow). The highest axes go first, two per kernel: (a, b) with a < b.
    """
    key = (shape, offsets, mode)
    hit = _STEPS.get(key)
    if hit is not None:
        return hit
    moves = []
    for a, (n, k) in enumerate(zip(shape, offsets, strict=True)):
        if n == 0:
            continue
        k = int(k)
        k = k % n if mode == _WRAP else max(-n, min(n, k))
        if k:
            moves.append((a, k))
    steps = []
    if math.prod(shape) and moves:
        moves.reverse()
        while moves:
            (b, d_c), rest = moves[0], moves[1:]
            if rest:
                a, d_r = rest[0]
                moves = rest[1:]
            else:
                a, d_r = b, 0
                moves = []
            inner = math.prod(shape[b + 1 :])
            length = shape[b] * inner
            if d_r:
                outer = math.prod(shape[:a])
                mid = math.prod(shape[a + 1 : b])
                rows = shape[a] * mid
            else:
                outer, mid, rows = 1, 1, math.prod(shape[:b])
            steps.append(((outer, rows, length), (length, rows, outer), (inner, d_c, mid, d_r)))
    if len(_STEPS) >= 4096:  # a bound on what a program of many shapes keeps
        _STEPS.clear()
    hit = _STEPS[key] = tuple(steps)
    return hit


def halo_exchange(
    xp: Any, tiles: Any, heights: Any, widths: Any, width: int = 1, boundary: Any = "edge"
) -> Any:
    """Tiles of an orthogonal decomposition with a halo of their 8 X-Net neighbours' edges.

    The signature and result of :func:`kernels.reference.halo_exchange`.

    Parameters
    ----------
    xp : module
        The array namespace of ``tiles`` (CuPy; NumPy in the CUDA simulator).
    tiles : array of shape (R, C, BH, BW)
        Per-PE tile buffers; PE ``(r, c)`` holds ``heights[r] x widths[c]`` grid points at
        the top-left of ``tiles[r, c]``, the blocks tiling the grid in row-major PE order.
    heights, widths : host int sequences of lengths R and C
        Tile sizes, in ``[width, BH]`` and ``[width, BW]``.
    width : int
        Halo width, at least 1 and at most every tile's height and width.
    boundary : {"edge", "zero", "wrap"} or number
        Extension of the grid beyond the mesh border ("edge" replicates it: zero flux).

    Returns
    -------
    array of shape (R, C, BH + 2 * width, BW + 2 * width)
        Each tile at ``[width:width + h, width:width + w]``, its neighbours' border points
        around it, zeros beyond ``h + 2 * width`` rows or ``w + 2 * width`` columns.

    Notes
    -----
    Algorithm: the ghost-cell exchange of a stencil on a mesh of PEs with an orthogonal
    decomposition (Biagioni and Prins [3]_, whose balancer keeps every tile at least one
    point thick); the MP-1's X-Net [1]_ gives the diagonal neighbours directly. Here one
    kernel computes every output point (one thread each) from its neighbour's tile, which
    equals four X-Net shifts of the tile edges and their corners.
    """
    n_r, n_c, bh, bw = (int(n) for n in tiles.shape)
    dtype = np.dtype(tiles.dtype)
    mode, fill = _fill_bits(boundary, dtype)
    bits = np.dtype(f"u{dtype.itemsize}")
    shape = (n_r, n_c, bh + 2 * width, bw + 2 * width)
    out = xp.empty(shape, dtype=bits)
    if n_r * n_c:
        _launch(
            xp,
            "halo",
            (shape[3], shape[2], n_r * n_c),
            xp.ascontiguousarray(tiles).view(bits),
            xp.asarray(np.asarray(heights, dtype=np.int64)),
            xp.asarray(np.asarray(widths, dtype=np.int64)),
            out,
            int(width),
            mode,
            fill,
        )
    return out.view(dtype)


registry.register("shift", "cupy")(shift)
registry.register("halo_exchange", "cupy")(halo_exchange)
