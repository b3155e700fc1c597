"""Numba CUDA kernels for NEWS / X-Net mesh shifts and the halo exchange of PE tiles.

These are the ``"cupy"`` backend's implementations of ``shift`` and ``halo_exchange``; the
oracle they are tested against is :mod:`kernels.reference`. They take CuPy arrays through
the CUDA array interface (no copy, launched on CuPy's current stream), Numba device arrays,
or NumPy arrays (copied to the device and back: that is how the tests drive them in Numba's
CUDA simulator, ``NUMBA_ENABLE_CUDASIM=1``).

Both kernels are pure data movement, so they work on the bits of the elements: an array of
any 1, 2, 4 or 8 byte dtype (bool, int32, int64, float32, float64, ...) is viewed as the
unsigned integer of that size. That gives four compiled specialisations per kernel, keeps
NaN payloads and negative zeros intact, and makes a shift of floats bit-exact.

Kernels are built lazily: ``numba.cuda`` is imported on the first call, never at import
time of this module, and Numba's dispatcher caches one compiled kernel per signature.

References
----------
.. [1] T. Blank, "The MasPar MP-1 architecture", Proc. IEEE Compcon Spring 1990: the X-Net
   mesh moves data between the 8 nearest neighbours of a 2D PE array, all PEs at once.
.. [2] W. D. Hillis, "The Connection Machine", MIT Press, 1985: NEWS grid communication,
   shifts of a parallel variable along one axis of its VP set.
.. [3] E. S. Biagioni and J. F. Prins, "Scan Directed Load Balancing for Highly-Parallel
   Mesh-Connected Computers", UNC Chapel Hill, 1991 (seed 003), section 6: the image is
   divided into tiles of an orthogonal decomposition and each PE copies the edge pixels of
   its 8 X-Net neighbours before every diffusion step.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import numpy as np

from kernels import registry

__all__ = ["compile_ptx", "halo_exchange", "kernel_functions", "ptx_signatures", "shift"]

# Boundary modes as the kernels see them.
_WRAP, _FILL, _EDGE = 0, 1, 2

# Threads per block. The simulator runs one Python thread per CUDA thread, so it gets small
# blocks; a real GPU gets 256 (8 warps), enough to hide memory latency in a copy kernel.
_THREADS_GPU = 256
_THREADS_SIM = 32

# Grid limits of every CUDA device since compute capability 3.0; the kernels loop with a
# grid stride, so a capped grid still covers any size.
_MAX_GRID_X = 2**31 - 1
_MAX_GRID_YZ = 65535

_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


# --------------------------------------------------------------------------------------
# Kernel bodies (plain Python, compiled by numba.cuda.jit on first use)
# --------------------------------------------------------------------------------------


def _shift3_body(src, dst, inner, d_c, mid, d_r, mode, fill):
    """Shift a C-contiguous ``(outer, rows, L)`` view along ``rows`` and along ``L``.

    Algorithm: the NEWS / X-Net mesh shift of the Connection Machine (Hillis 1985) and the
    MasPar MP-1 (Blank 1990; seed 003 section 6), done as a gather: every output element
    reads its source ``i - offset``, one thread per element, grid-stride loops.
    ``L = n_c * inner`` is a shifted axis of extent ``n_c`` with everything after it
    flattened in (``inner`` elements per step), so a shift by ``d_c`` steps is a shift of
    the flattened row by ``d_c * inner`` elements: interior points need no division.
    ``rows = n_r * mid`` likewise for a second shifted axis (``d_r`` steps of ``mid``).
    ``outer`` collects the axes before both. Only the border elements of ``edge`` mode
    compute a remainder (the position inside the step), which is rare and warp-uniform.
    Offsets arrive normalised: in ``[0, n)`` for wrap, in ``[-n, n]`` otherwise.
    """
    outer = dst.shape[0]
    rows = dst.shape[1]
    length = dst.shape[2]
    x0, y0, z0 = cuda.grid(3)  # noqa: F821 (bound when the kernel is built)
    sx = cuda.gridDim.x * cuda.blockDim.x  # noqa: F821
    sy = cuda.gridDim.y * cuda.blockDim.y  # noqa: F821
    sz = cuda.gridDim.z * cuda.blockDim.z  # noqa: F821
    dc = d_c * inner
    dr = d_r * mid
    # while loops, not range(): a range with a runtime step divides to get its trip count.
    o = z0
    while o < outer:
        r = y0
        while r < rows:
            sr = r - dr
            row_fill = False
            if sr < 0:
                if mode == 0:
                    sr += rows
                elif mode == 2:
                    sr = r % mid
                else:
                    row_fill = True
            elif sr >= rows:
                if mode == 0:
                    sr -= rows
                elif mode == 2:
                    sr = rows - mid + r % mid
                else:
                    row_fill = True
            c = x0
            while c < length:
                sc = c - dc
                take = not row_fill
                if sc < 0:
                    if mode == 0:
                        sc += length
                    elif mode == 2:
                        sc = c % inner
                    else:
                        take = False
                elif sc >= length:
                    if mode == 0:
                        sc -= length
                    elif mode == 2:
                        sc = length - inner + c % inner
                    else:
                        take = False
                if take:
                    dst[o, r, c] = src[o, sr, sc]
                else:
                    dst[o, r, c] = fill
                c += sx
            r += sy
        o += sz


def _halo_body(tiles, heights, widths, out, width, mode, fill):
    """One thread per output point of ``out[r, c, y, x]`` (grid z: PE, y: row, x: column).

    Algorithm: the tile-edge exchange of the MP-1 diffusion program of Biagioni and Prins
    (seed 003, section 6: "copying the pixels from the edges of each of the 8 neighboring
    processors" over the X-Net), as a gather from the neighbours' tile buffers.
    The point sits ``(y - width, x - width)`` from the tile's top-left. Along each axis it
    falls in the own tile, in the previous or next PE's tile (that PE's last or first
    ``width`` points; every tile has at least ``width`` of them), past the mesh border
    (``boundary``: wrap to the other side, replicate the edge or fill), or beyond the valid
    window ``[0, h + 2 * width)``, where the output is zero like the reference's padding.
    """
    n_r = tiles.shape[0]
    n_c = tiles.shape[1]
    span_y = out.shape[2]
    span_x = out.shape[3]
    x0, y0, z0 = cuda.grid(3)  # noqa: F821
    sx = cuda.gridDim.x * cuda.blockDim.x  # noqa: F821
    sy = cuda.gridDim.y * cuda.blockDim.y  # noqa: F821
    sz = cuda.gridDim.z * cuda.blockDim.z  # noqa: F821
    # PE index p = r * n_c + c advances by the grid stride; (r, c) follow it by adding the
    # stride's quotient and remainder, so each thread divides once, not once per point.
    n_pe = n_r * n_c
    step_r = sz // n_c
    step_c = sz - step_r * n_c
    r = z0 // n_c
    c = z0 - r * n_c
    p = z0
    while p < n_pe:
        h = heights[r]
        w = widths[c]
        yo = y0
        while yo < span_y:
            yy = yo - width
            # 0: take from tile (rs, ly); 1: boundary fill; 2: outside the window (zero).
            rk = 0
            rs = r
            ly = yy
            if yy < 0:
                if r > 0:
                    rs = r - 1
                    ly = heights[r - 1] + yy
                elif mode == 0:
                    rs = n_r - 1
                    ly = heights[n_r - 1] + yy
                elif mode == 2:
                    ly = 0
                else:
                    rk = 1
            elif yy >= h + width:
                rk = 2
            elif yy >= h:
                if r < n_r - 1:
                    rs = r + 1
                    ly = yy - h
                elif mode == 0:
                    rs = 0
                    ly = yy - h
                elif mode == 2:
                    ly = h - 1
                else:
                    rk = 1
            xo = x0
            while xo < span_x:
                xx = xo - width
                ck = 0
                cs = c
                lx = xx
                if xx < 0:
                    if c > 0:
                        cs = c - 1
                        lx = widths[c - 1] + xx
                    elif mode == 0:
                        cs = n_c - 1
                        lx = widths[n_c - 1] + xx
                    elif mode == 2:
                        lx = 0
                    else:
                        ck = 1
                elif xx >= w + width:
                    ck = 2
                elif xx >= w:
                    if c < n_c - 1:
                        cs = c + 1
                        lx = xx - w
                    elif mode == 0:
                        cs = 0
                        lx = xx - w
                    elif mode == 2:
                        lx = w - 1
                    else:
                        ck = 1
                if rk == 2 or ck == 2:
                    out[r, c, yo, xo] = 0
                elif rk == 1 or ck == 1:
                    out[r, c, yo, xo] = fill
                else:
                    out[r, c, yo, xo] = tiles[rs, cs, ly, lx]
                xo += sx
            yo += sy
        p += sz
        r += step_r
        c += step_c
        if c >= n_c:
            c -= n_c
            r += 1


def kernel_functions() -> dict[str, Any]:
    """The kernels' Python functions, bound to ``numba.cuda``, for ``cuda.compile_ptx``.

    Returns
    -------
    dict
        ``{"shift3": fn, "halo": fn}``; each ``fn`` is a plain function whose globals see
        ``numba.cuda`` as ``cuda``, ready for ``cuda.jit`` or ``cuda.compile_ptx``.
    """
    from numba import cuda

    return {
        "shift3": _bind(_shift3_body, cuda),
        "halo": _bind(_halo_body, cuda),
    }


def _bind(fn, cuda_module):
    """A copy of ``fn`` whose global ``cuda`` is ``cuda_module`` (imported lazily)."""
    import types

    namespace = dict(fn.__globals__)
    namespace["cuda"] = cuda_module
    bound = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__)
    bound.__doc__ = fn.__doc__
    return bound


def ptx_signatures() -> dict[tuple[str, str], tuple]:
    """Every (kernel, element view) the dispatchers compile, with its Numba signature.

    The element views are ``uint8``, ``uint16``, ``uint32`` and ``uint64``: every supported
    dtype runs through one of them (bool, int8, uint8 through ``uint8``; int32, float32
    through ``uint32``; int64, float64 through ``uint64``; ...). The argument types are
    those a launch from :func:`shift` or :func:`halo_exchange` produces.
    """
    from numba import types

    sigs = {}
    i64 = types.int64
    sizes = types.Array(types.int64, 1, "C")
    for name in ("uint8", "uint16", "uint32", "uint64"):
        t = getattr(types, name)
        a3 = types.Array(t, 3, "C")
        a4 = types.Array(t, 4, "C")
        sigs[("shift3", name)] = (a3, a3, i64, i64, i64, i64, i64, t)
        sigs[("halo", name)] = (a4, sizes, sizes, a4, i64, i64, t)
    return sigs


def compile_ptx(cc: tuple[int, int] = (9, 0)) -> dict[tuple[str, str], str]:
    """PTX of every kernel specialisation for compute capability ``cc``, without a GPU.

    Uses ``numba.cuda.compile_ptx`` (NVVM from the CUDA toolkit wheels); it cannot run in
    the CUDA simulator.

    Parameters
    ----------
    cc : tuple of int
        Target compute capability, e.g. ``(9, 0)`` for an H100 (``sm_90``).

    Returns
    -------
    dict
        ``{(kernel, element view): ptx source}``.
    """
    from numba import config, cuda

    if config.ENABLE_CUDASIM:
        raise RuntimeError("compile_ptx needs the real numba.cuda, not the CUDA simulator")
    fns = kernel_functions()
    return {
        key: cuda.compile_ptx(fns[key[0]], sig, cc=cc)[0] for key, sig in ptx_signatures().items()
    }


@functools.cache
def _kernels() -> dict[str, Any]:
    """``cuda.jit`` dispatchers, built once; each compiles per argument signature."""
    from numba import cuda

    return {name: cuda.jit(fn) for name, fn in kernel_functions().items()}


def _threads() -> int:
    from numba import config

    return _THREADS_SIM if config.ENABLE_CUDASIM else _THREADS_GPU


def _launch(kernel, grid, block, stream, *args) -> None:
    """Launch, without Numba's low-occupancy warning: small meshes are legitimate here."""
    from numba.core.errors import NumbaPerformanceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        kernel[grid, block, stream](*args)


# --------------------------------------------------------------------------------------
# Array plumbing: CuPy / Numba device / NumPy
# --------------------------------------------------------------------------------------


class _Device:
    """Where the arrays of one call live and how to make new ones there."""

    def __init__(self, x: Any) -> None:
        from numba import cuda

        self.cuda = cuda
        module = type(x).__module__ or ""
        if module.startswith("cupy"):
            import cupy

            self.kind = "cupy"
            self.cupy = cupy
            ptr = cupy.cuda.get_current_stream().ptr
            self.stream = cuda.external_stream(ptr) if ptr else cuda.default_stream()
        elif not isinstance(x, np.ndarray) and (
            hasattr(x, "__cuda_array_interface__") or hasattr(x, "copy_to_host")
        ):
            self.kind = "numba"
            self.stream = cuda.default_stream()
        else:
            self.kind = "numpy"
            self.stream = cuda.default_stream()

    def contiguous_bits(self, x: Any) -> Any:
        """``x`` C-contiguous and viewed as unsigned integers of its item size."""
        bits = _bits_dtype(x.dtype)
        if self.kind == "cupy":
            return self.cupy.ascontiguousarray(x).view(bits)
        if self.kind == "numpy":
            return np.ascontiguousarray(x).view(bits)
        if not x.is_c_contiguous():
            raise ValueError("Numba device arrays passed to the shift kernels must be C-contiguous")
        return x.view(bits)

    def to_kernel(self, a: Any) -> Any:
        """A device array (no copy for CuPy / Numba arrays) for a kernel argument."""
        if self.kind == "cupy":
            return self.cuda.as_cuda_array(a, sync=False)
        if isinstance(a, np.ndarray):
            return self.cuda.to_device(np.ascontiguousarray(a), stream=self.stream)
        return a

    def asarray(self, a: np.ndarray) -> Any:
        """Host data on the device (CuPy's stream-ordered pool for CuPy callers)."""
        if self.kind == "cupy":
            return self.cupy.asarray(a)
        return self.cuda.to_device(a, stream=self.stream)

    def copy(self, x: Any) -> Any:
        """A new C-contiguous array equal to ``x``, same array type."""
        if self.kind == "cupy":
            return self.cupy.array(x, copy=True, order="C")
        if self.kind == "numpy":
            return np.array(x, copy=True, order="C")
        out = self.cuda.device_array(x.shape, dtype=x.dtype, stream=self.stream)
        if x.size:
            out.copy_to_device(x, stream=self.stream)
        return out

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        if self.kind == "cupy":
            return self.cupy.empty(shape, dtype=dtype)
        return self.cuda.device_array(shape, dtype=dtype, stream=self.stream)

    def result(self, out: Any, dtype: Any) -> Any:
        """``out`` (device bits) as the caller's array type and element type."""
        if self.kind == "numpy":
            host = out.copy_to_host(stream=self.stream)
            self.stream.synchronize()
            return host.view(dtype)
        return out.view(dtype)


def _bits_dtype(dtype: Any) -> np.dtype:
    """The unsigned integer type with the item size of ``dtype`` (the kernels' view)."""
    dtype = np.dtype(dtype)
    if dtype.itemsize not in _BITS or dtype.kind not in "biuf":
        raise TypeError(
            f"shift/halo_exchange kernels support bool, integer and float element "
            f"types of 1, 2, 4 or 8 bytes, not {dtype}"
        )
    return np.dtype(_BITS[dtype.itemsize])


def _fill_bits(boundary: Any, dtype: np.dtype) -> tuple[int, Any]:
    """Boundary as (mode, fill value in the unsigned-integer view of ``dtype``)."""
    bits = _bits_dtype(dtype).type
    if isinstance(boundary, str):
        if boundary == "wrap":
            return _WRAP, bits(0)
        if boundary == "edge":
            return _EDGE, bits(0)
        if boundary == "zero":
            return _FILL, bits(0)
        raise ValueError(f"boundary must be 'wrap', 'zero', 'edge' or a number, not {boundary!r}")
    if not np.isscalar(boundary) and np.ndim(boundary) != 0:
        raise TypeError(f"a constant boundary must be a scalar, not {type(boundary).__name__}")
    # Same conversion as the reference (xp.asarray(fill, dtype=x.dtype)), then its bits.
    value = np.asarray(boundary, dtype=dtype).reshape(1).view(bits)[0]
    return _FILL, bits(value)


def _grid(extents: tuple[int, int, int], threads: int) -> tuple[tuple, tuple]:
    """Launch shape for ``(x, y, z)`` extents: a block as wide as x allows, rest in y."""
    ex, ey, ez = extents
    bx = min(threads, 1 << max(0, (ex - 1).bit_length()))
    by = max(1, threads // bx)
    grid = (
        max(1, min(_MAX_GRID_X, -(-ex // bx))),
        max(1, min(_MAX_GRID_YZ, -(-ey // by))),
        max(1, min(_MAX_GRID_YZ, ez)),
    )
    return grid, (bx, by, 1)


# --------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------


def _normalise_offsets(ndim: int, offset: Any, axis: Any) -> list[int]:
    """One int offset per axis from the (offset, axis) forms of :func:`shift`."""

    def as_ints(values: Any, what: str) -> tuple[int, ...]:
        values = (values,) if isinstance(values, (int, np.integer)) else tuple(values)
        for v in values:
            if not isinstance(v, (int, np.integer)):
                raise TypeError(f"{what} must be integers, not {type(v).__name__} {v!r}")
        return tuple(int(v) for v in values)

    if axis is None:
        if isinstance(offset, (int, np.integer)) and ndim != 1:
            raise ValueError(
                "an int offset needs an axis on a multi-dimensional array; "
                "pass axis=... or a tuple of per-axis offsets"
            )
        per_axis = list(as_ints(offset, "offsets"))
        if len(per_axis) != ndim:
            raise ValueError(
                f"a tuple of offsets needs one entry per axis ({ndim}), got {len(per_axis)}"
            )
        return per_axis
    axes = as_ints(axis, "axes")
    offs = as_ints(offset, "offsets")
    if len(axes) != len(offs):
        raise ValueError(f"{len(offs)} offsets for {len(axes)} axes")
    per_axis = [0] * ndim
    for a, k in zip(axes, offs, strict=True):
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for a {ndim}-D array")
        per_axis[a % ndim] += k  # repeated axes add up, as in numpy.roll
    return per_axis


def shift(x: Any, offset: Any, axis: Any = None, *, boundary: Any = "wrap") -> Any:
    """NEWS / X-Net mesh shift with ``numpy.roll`` semantics: ``out[i] = x[i - offset]``.

    One kernel moves the array along up to two axes at once (an X-Net diagonal, e.g.
    ``offset=(1, -1)``), one thread per output element; shifts along more axes chain
    kernels, which gives the same result since each axis's boundary acts independently.

    Parameters
    ----------
    x : cupy.ndarray, Numba device array or numpy.ndarray
        The parallel variable (any shape). NumPy input is copied to the device and the
        result back (used with Numba's CUDA simulator).
    offset : int or tuple of int
        Steps along ``axis``, or one per axis of ``x`` when ``axis`` is None.
    axis : int, tuple of int or None
        Axis (or axes, paired with ``offset``) to shift along.
    boundary : {"wrap", "zero", "edge"} or scalar, keyword-only
        What enters at the mesh border: torus wrap, zeros, the nearest border element, or
        a constant (converted to ``x.dtype`` as ``numpy.asarray(value, dtype)`` does).

    Returns
    -------
    array
        Same shape, dtype and array type as ``x`` (a new array).

    Notes
    -----
    Algorithm: a gather, each output element reads its source ``i - offset`` (X-Net /
    NEWS communication of the MasPar MP-1 [1]_ and the Connection Machine [2]_, all PEs
    moving at once). The array is viewed as ``(outer, n_r * mid, n_c * inner)``, so an
    interior element's source is its index minus a constant: no divisions.

    References
    ----------
    .. [1] T. Blank, "The MasPar MP-1 architecture", Compcon Spring 1990.
    .. [2] W. D. Hillis, "The Connection Machine", MIT Press, 1985.

    Examples
    --------
    >>> import numpy as np
    >>> shift(np.arange(5), 2, 0, boundary="zero")  # doctest: +SKIP
    array([0, 0, 0, 1, 2])
    """
    shape = tuple(int(n) for n in x.shape)
    per_axis = _normalise_offsets(len(shape), offset, axis)
    mode, fill = _fill_bits(boundary, np.dtype(x.dtype))
    dev = _Device(x)
    dtype = np.dtype(x.dtype)
    src = dev.contiguous_bits(x)
    size = math.prod(shape)
    # Normalise: wrap offsets into [0, n); others clamp to [-n, n] (same result, no
    # overflow); zero-extent axes and zero offsets move nothing.
    moves = []
    for a, (n, k) in enumerate(zip(shape, per_axis, strict=True)):
        if n == 0:
            continue
        k = k % n if mode == _WRAP else max(-n, min(n, k))
        if k:
            moves.append((a, k))
    if size == 0 or not moves:
        return dev.copy(x)
    kernel = _kernels()["shift3"]
    threads = _threads()
    cur = dev.to_kernel(src)
    # Highest axes first, two per kernel: (a, b) with a < b.
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
        view = (outer, rows, length)
        out = dev.empty(view, src.dtype)
        dst = dev.to_kernel(out)
        grid, block = _grid((length, rows, outer), threads)
        _launch(
            kernel,
            grid,
            block,
            dev.stream,
            cur.reshape(view),
            dst,
            inner,
            d_c,
            mid,
            d_r,
            mode,
            fill,
        )
        cur = dst
    if dev.kind == "cupy":
        return out.reshape(shape).view(dtype)
    return dev.result(cur.reshape(shape), dtype)


def halo_exchange(
    tiles: Any, heights: Any, widths: Any, *, width: int = 1, boundary: Any = "edge"
) -> Any:
    """Tiles of an orthogonal decomposition with a halo of their 8 X-Net neighbours' edges.

    Parameters
    ----------
    tiles : array of shape (R, C, BH, BW)
        Per-PE tile buffers; PE ``(r, c)`` holds ``heights[r] x widths[c]`` grid points at
        the top-left of ``tiles[r, c]``, the blocks tiling the grid in row-major PE order.
    heights, widths : sequences of int, lengths R and C
        Tile sizes, in ``[width, BH]`` and ``[width, BW]``.
    width : int, keyword-only
        Halo width, at least 1 and at most every tile's height and width.
    boundary : {"edge", "zero", "wrap"} or scalar, keyword-only
        Extension of the grid beyond the mesh border ("edge" replicates it: zero flux).

    Returns
    -------
    array of shape (R, C, BH + 2 * width, BW + 2 * width)
        Each tile at ``[width:width + h, width:width + w]``, its neighbours' border points
        around it, zeros beyond ``h + 2 * width`` rows or ``w + 2 * width`` columns.

    Notes
    -----
    Algorithm: the ghost-cell exchange of a stencil on a mesh of PEs with an orthogonal
    decomposition (Biagioni and Prins, seed 003, whose balancer keeps every tile at least
    one point thick); the MP-1's X-Net [1]_ gives the diagonal neighbours directly. Here
    one kernel computes every output point (one thread each) from its neighbour's tile,
    which equals four X-Net shifts of the tile edges and their corners.

    References
    ----------
    .. [1] T. Blank, "The MasPar MP-1 architecture", Compcon Spring 1990.
    """
    if getattr(tiles, "ndim", None) != 4:
        shape = getattr(tiles, "shape", None)
        raise ValueError(f"tiles must have shape (R, C, BH, BW), not {shape}")
    n_r, n_c, bh, bw = (int(n) for n in tiles.shape)
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
        raise ValueError(f"width must be a positive int, not {width!r}")
    width = int(width)
    h_np = _host_ints(heights, "heights")
    w_np = _host_ints(widths, "widths")
    if h_np.shape != (n_r,) or w_np.shape != (n_c,):
        raise ValueError(
            f"heights and widths need {n_r} and {n_c} entries, got {h_np.size} and {w_np.size}"
        )
    for name, sizes, buffer in (("heights", h_np, bh), ("widths", w_np, bw)):
        if sizes.size and (sizes.min() < width or sizes.max() > buffer):
            raise ValueError(
                f"{name} must lie in [width, buffer] = [{width}, {buffer}], got {sizes.tolist()}"
            )
    mode, fill = _fill_bits(boundary, np.dtype(tiles.dtype))
    dtype = np.dtype(tiles.dtype)
    dev = _Device(tiles)
    src = dev.contiguous_bits(tiles)
    shape = (n_r, n_c, bh + 2 * width, bw + 2 * width)
    out = dev.empty(shape, src.dtype)
    if n_r * n_c == 0:
        return dev.result(out, dtype)
    d_h = dev.to_kernel(dev.asarray(h_np))
    d_w = dev.to_kernel(dev.asarray(w_np))
    dst = dev.to_kernel(out)
    grid, block = _grid((shape[3], shape[2], n_r * n_c), _threads())
    _launch(
        _kernels()["halo"],
        grid,
        block,
        dev.stream,
        dev.to_kernel(src),
        d_h,
        d_w,
        dst,
        width,
        mode,
        fill,
    )
    if dev.kind == "cupy":
        return out.view(dtype)
    return dev.result(dst, dtype)


def _host_ints(values: Any, name: str) -> np.ndarray:
    """Tile sizes as a host int64 vector (CuPy input is copied back: R + C numbers)."""
    if hasattr(values, "get") and not isinstance(values, np.ndarray):
        values = values.get()
    arr = np.asarray(values)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"{name} must be a 1-D sequence of ints, got {arr.dtype} {arr.shape}")
    return arr.astype(np.int64)


# --------------------------------------------------------------------------------------
# Registry adapters: same signatures as kernels.reference
# --------------------------------------------------------------------------------------


def _shift_xp(xp: Any, x: Any, offsets: tuple[int, ...], boundary: Any = "wrap") -> Any:
    """``kernels.reference.shift`` signature over :func:`shift`."""
    return shift(x, tuple(offsets), None, boundary=boundary)


def _halo_xp(xp: Any, tiles, heights, widths, width: int = 1, boundary: Any = "edge") -> Any:
    """``kernels.reference.halo_exchange`` signature over :func:`halo_exchange`."""
    return halo_exchange(tiles, heights, widths, width=width, boundary=boundary)


registry.register("shift", "cupy")(_shift_xp)
registry.register("halo_exchange", "cupy")(_halo_xp)
