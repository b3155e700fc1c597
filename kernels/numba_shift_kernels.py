"""The Numba CUDA kernels of the ``"cupy"`` backend's ``shift`` and ``halo_exchange``.

Device code only: :mod:`kernels.numba_shift` launches these kernels on CuPy arrays. The
kernels are plain Python functions that read the thread position from ``numba.cuda``
(``cuda.grid``, ``cuda.gridDim``, ``cuda.blockDim``); :func:`build_kernels` compiles them
with ``cuda.jit``, once per process. The same functions (``KERNELS``) are what the tests
run in Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, chosen when ``numba.cuda`` is
first imported, which turns ``cuda`` here into the simulator) and compile to PTX with
``numba.cuda.compile_ptx``.

Importing this module imports ``numba.cuda``, which needs no GPU: nothing is compiled
before the first launch. :mod:`kernels.numba_shift` imports it on first use only.

Both kernels move data only, on the unsigned-integer view of the elements (``uint8``,
``uint16``, ``uint32`` or ``uint64``). Boundary modes: 0 wrap, 1 fill, 2 edge.

References
----------
.. [1] T. Blank, "The MasPar MP-1 architecture", Proc. IEEE Compcon Spring 1990: the X-Net
   mesh moves data between the 8 nearest neighbours of a 2D PE array, all PEs at once.
.. [2] W. D. Hillis, "The Connection Machine", MIT Press, 1985: NEWS grid communication,
   shifts of a parallel variable along one axis of its VP set.
.. [3] E. S. Biagioni and J. F. Prins, "Scan Directed Load Balancing for Highly-Parallel
   Mesh-Connected Computers", UNC Chapel Hill, 1991, section 5: the image is
   divided into tiles and each PE copies the edge pixels of its 8 neighbours over the mesh
   (the MP-1's X-Net) before every diffusion step.
"""

from __future__ import annotations

import functools
from typing import Any

from kernels.numba_cuda import cuda_module

cuda = cuda_module()

__all__ = ["KERNELS", "build_kernels", "halo", "shift3"]


def shift3(src, dst, inner, d_c, mid, d_r, mode, fill):
    """Shift a C-contiguous ``(outer, rows, L)`` view along ``rows`` and along ``L``.

    Algorithm: the NEWS / X-Net mesh shift of the Connection Machine (Hillis 1985) and the
    MasPar MP-1 (Blank 1990; Biagioni & Prins (1991) section 6), done as a gather: every output
    element reads its source ``i - offset``, one thread per element, grid-stride loops.
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
    x0, y0, z0 = cuda.grid(3)
    sx = cuda.gridDim.x * cuda.blockDim.x
    sy = cuda.gridDim.y * cuda.blockDim.y
    sz = cuda.gridDim.z * cuda.blockDim.z
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


def halo(tiles, heights, widths, out, width, mode, fill):
    """One thread per output point of ``out[r, c, y, x]`` (grid z: PE, y: row, x: column).

    Algorithm: the tile-edge exchange of the MP-1 diffusion program of Biagioni and Prins
    (Biagioni & Prins 1991, section 5: "copying the pixels from the edges of each of the 8
    neighboring processors" over the X-Net), as a gather from the neighbours' tile buffers.
    The point sits ``(y - width, x - width)`` from the tile's top-left. Along each axis it
    falls in the own tile, in the previous or next PE's tile (that PE's last or first
    ``width`` points; every tile has at least ``width`` of them), past the mesh border
    (``boundary``: wrap to the other side, replicate the edge or fill), or beyond the valid
    window ``[0, h + 2 * width)``, where the output is zero like the reference's padding.
    """
    n_r, n_c = tiles.shape[0], tiles.shape[1]
    span_y, span_x = out.shape[2], out.shape[3]
    x0, y0, z0 = cuda.grid(3)
    sx = cuda.gridDim.x * cuda.blockDim.x
    sy = cuda.gridDim.y * cuda.blockDim.y
    sz = cuda.gridDim.z * cuda.blockDim.z
    # PE index p = r * n_c + c advances by the grid stride; (r, c) follow it by adding the
    # stride's quotient and remainder, so each thread divides once, not once per point.
    n_pe = n_r * n_c
    step_r = sz // n_c
    step_c = sz - step_r * n_c
    r = z0 // n_c
    c = z0 - r * n_c
    p = z0
    while p < n_pe:
        h, w = heights[r], widths[c]
        yo = y0
        while yo < span_y:
            yy = yo - width
            # 0: take from tile (rs, ly); 1: boundary fill; 2: outside the window (zero).
            rk, rs, ly = 0, r, yy
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
                ck, cs, lx = 0, c, xx
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


#: The kernels' Python functions by name: what :func:`build_kernels` compiles.
KERNELS = {"shift3": shift3, "halo": halo}


@functools.cache
def build_kernels() -> dict[str, Any]:
    """``cuda.jit`` dispatchers of :data:`KERNELS`, built once per process.

    On CuPy arrays :func:`kernels.numba_launch.launch_on_stream` compiles each argument
    signature once per machine (a cubin in the cache folder) and launches it itself; the
    dispatchers' own compilation serves NumPy arrays and Numba's CUDA simulator. Each
    dispatcher's ``py_func`` is the function in :data:`KERNELS`.
    """
    return {name: cuda.jit(fn) for name, fn in KERNELS.items()}
