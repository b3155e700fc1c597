"""Test helpers for the Numba shift / halo kernels: PTX compilation and simulator settings.

Nothing here is used by the production path (:mod:`kernels.numba_shift`). Every helper
works on the kernels that path launches: :func:`compile_ptx` compiles the ``py_func`` of the
dispatchers that :func:`kernels.numba_shift_kernels.build_kernels` returns, and the
simulator helpers only change the launch shape of :mod:`kernels.numba_shift`.

Importing this module imports neither ``numba.cuda`` nor the kernels.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

#: Threads per block in Numba's CUDA simulator, which runs one Python thread per CUDA
#: thread: small blocks keep it fast (a real GPU gets ``kernels.numba_shift._THREADS``).
SIM_THREADS = 32


def ptx_signatures() -> dict[tuple[str, str], tuple]:
    """Every (kernel, element view) the dispatchers compile, with its Numba signature.

    The element views are ``uint8``, ``uint16``, ``uint32`` and ``uint64``: every supported
    dtype runs through one of them (bool, int8, uint8 through ``uint8``; int32, float32
    through ``uint32``; int64, float64 through ``uint64``; ...). The argument types are
    those a launch from ``kernels.numba_shift.shift`` or ``halo_exchange`` produces.
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

    Compiles the Python functions of the production dispatchers with
    ``numba.cuda.compile_ptx`` (NVVM from the CUDA toolkit wheels), which the CUDA
    simulator does not have.

    Returns
    -------
    dict
        ``{(kernel, element view): ptx source}``.
    """
    from numba import config, cuda

    from kernels.numba_shift_kernels import KERNELS, build_kernels

    if config.ENABLE_CUDASIM:
        raise RuntimeError("compile_ptx needs the real numba.cuda, not the CUDA simulator")
    dispatchers = build_kernels()
    for name, fn in KERNELS.items():
        assert dispatchers[name].py_func is fn, f"{name}: dispatcher runs other code"
    return {
        key: cuda.compile_ptx(dispatchers[key[0]].py_func, sig, cc=cc)[0]
        for key, sig in ptx_signatures().items()
    }


@contextlib.contextmanager
def simulator_launch_shape(*, max_grid: int | None = None) -> Iterator[None]:
    """Launch with :data:`SIM_THREADS` threads per block and, optionally, capped grids.

    ``max_grid=1`` launches one block per grid, so every grid-stride loop of the kernels
    iterates.
    """
    from kernels import numba_shift

    saved = numba_shift._THREADS, numba_shift._MAX_GRID_X, numba_shift._MAX_GRID_YZ
    numba_shift._THREADS = SIM_THREADS
    if max_grid is not None:
        numba_shift._MAX_GRID_X = numba_shift._MAX_GRID_YZ = max_grid
    try:
        yield
    finally:
        numba_shift._THREADS, numba_shift._MAX_GRID_X, numba_shift._MAX_GRID_YZ = saved
