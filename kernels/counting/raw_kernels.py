"""Compiled kernels on the counting device: each launch checked, counted once and emulated.

``RawModule`` / ``RawKernel`` give kernels that are never compiled: a launch checks its
arguments against the kernel's C parameters (:func:`kernels.cuda_args.check_launch`),
counts one and runs the NumPy emulation registered for the kernel's name
(:func:`kernels.fastpaths.emulation`; the backend's own kernels' are in
:mod:`kernels.counting.emulations`). The Numba kernels' launches come through
:func:`launch` too, their argument types noted as Numba would compile them
(:func:`numba_signature`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from kernels import cuda_args
from kernels import cuda_scan_source as _scan_src
from kernels.counting import device_array
from kernels.counting.device_array import DeviceArray
from kernels.counting.emulations import variant_of_source
from kernels.counting.records import entry, state
from kernels.fastpaths import emulation

__all__ = [
    "ElementwiseKernel",
    "RawKernel",
    "RawModule",
    "checked_launches",
    "launch",
    "numba_launches",
    "numba_signature",
]

#: Launches of ``RawKernel`` / ``RawModule`` kernels whose arguments, grid and block were
#: checked against the kernel's C signature (:mod:`kernels.cuda_args`), by kernel name.
checked_launches: Counter = Counter()

#: Launches of the Numba kernels (``CountingCuPy.launch_emulated``) by (kernel name,
#: :func:`numba_signature` of the arguments): the specialisations a GPU run would compile.
numba_launches: Counter = Counter()


class _Kernel:
    """A compiled kernel on the counting device: a launch checks its arguments against
    the kernel's C parameters as CuPy would pass them (:func:`kernels.cuda_args.check_launch`:
    a wrong type or count raises, as it would silently misread on a GPU), counts one and
    emulates it."""

    def __init__(self, name: str, variant: Any = None, code: str = "") -> None:
        self.name, self.variant, self.code = name, variant, code
        self.params: Any = None  # read from the source at the first launch, as CuPy compiles

    @entry
    def __call__(
        self,
        grid: Any,
        block: Any,
        args: tuple,
        *,
        shared_mem: int = 0,
        stream: Any = None,
        enable_cooperative_groups: bool = False,
    ) -> None:
        if state.strict:
            if self.params is None:
                self.params = cuda_args.kernel_params(self.code, self.name)
            cuda_args.check_launch(
                self.params, grid, block, args, shared_mem=shared_mem, device_array=DeviceArray
            )
            checked_launches[self.name] += 1
        launch(self.name, args, self.variant)


#: Kernels that set up state a process keeps for later calls (once per scratch): counted
#: as ``setups``, not ``launches`` (see :class:`~kernels.counting.records.Counts`).
SETUP_KERNELS = frozenset({_scan_src.INIT_KERNEL})


@entry
def launch(name: str, args: tuple, variant: Any = None) -> None:
    """Count one launch of kernel ``name`` (a set-up, for :data:`SETUP_KERNELS`) and run its
    NumPy emulation on ``args``."""
    emulate = emulation(name)
    if emulate is None:
        raise NotImplementedError(
            f"kernel {name!r} has no NumPy emulation on the counting device; register "
            "one with kernels.fastpaths.emulates"
        )
    # device_array.run, not a name imported here: a benchmark that times the stand-in's
    # operations replaces it there
    setup = name in SETUP_KERNELS
    device_array.run(
        f"kernel:{name}",
        lambda *a: emulate(variant, a),
        tuple(args),
        {},
        wrap=False,
        launches=0 if setup else 1,
        setups=int(setup),
    )


class RawModule:
    """``cupy.RawModule`` on the counting device (the source is kept, never compiled)."""

    def __init__(self, code: str | None = None, *, options: tuple = (), **kwargs: Any) -> None:
        self.code = code or ""
        self.options = options

    def get_function(self, name: str) -> _Kernel:
        return _Kernel(name, variant_of_source(self.code), self.code)


class RawKernel(_Kernel):
    """``cupy.RawKernel(code, name)`` on the counting device."""

    def __init__(self, code: str, name: str, options: tuple = (), **kwargs: Any) -> None:
        super().__init__(name, None, code)


class ElementwiseKernel:
    """``cupy.ElementwiseKernel`` on the counting device: an emulation registered by name."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 **kwargs: Any) -> None:  # fmt: skip
        self.name = name

    @entry
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        emulate = emulation(self.name)
        if emulate is None:
            raise NotImplementedError(f"elementwise kernel {self.name!r} has no emulation")
        return device_array.run(f"kernel:{self.name}", lambda *a: emulate(None, a), args, kwargs)


def numba_signature(args: tuple) -> tuple:
    """The argument types Numba's CUDA dispatcher would compile a launch for, as plain data:
    ``("array", dtype, ndim, layout)`` for a device array (layout "C", "F" or "A", as Numba
    reads it from the strides of a CuPy array), ``("host_array", ...)`` for a host array
    (Numba would copy it to the device and back), ``("scalar", dtype)`` for a number (a
    Python int is an int64, a float a float64, as Numba types them), ``("tuple", items)``.

    Examples
    --------
    >>> numba_signature((np.zeros((2, 3), np.float32), 3, (1.5,)))
    (('host_array', 'float32', 2, 'C'), ('scalar', 'int64'), ('tuple', (('scalar', 'float64'),)))
    """
    return tuple(_numba_type(a) for a in args)


def _numba_type(a: Any) -> tuple:
    if isinstance(a, np.ndarray):
        layout = "C" if a.flags.c_contiguous else "F" if a.flags.f_contiguous else "A"
        kind = "array" if isinstance(a, DeviceArray) else "host_array"
        return (kind, a.dtype.name, a.ndim, layout)
    if isinstance(a, np.generic):
        return ("scalar", a.dtype.name)
    if isinstance(a, bool):
        return ("scalar", "bool")
    if isinstance(a, int):
        return ("scalar", "int64")
    if isinstance(a, float):
        return ("scalar", "float64")
    if isinstance(a, tuple):
        return ("tuple", tuple(_numba_type(v) for v in a))
    raise TypeError(f"Numba kernels take no {type(a).__name__} argument")
