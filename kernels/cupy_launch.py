"""CuPy's compiled kernels launched through ``cuLaunchKernel``, their parameters laid out once.

A ``RawKernel`` call in CuPy converts every argument on every launch (a C struct made per
array, a type lookup per scalar) before it calls the driver: several microseconds of
host time per launch, more than the rest of a small instruction. The backend's own kernels
(the scans, the router's send and get) are launched here instead, as
:mod:`kernels.numba_launch` launches the Numba kernels: per kernel, its C parameters are read
from its source once (:func:`kernels.cuda_args.kernel_params`) and laid out as one 8-byte
slot each (a pointer, or a scalar of exactly the parameter's C type); a launch fills the
slots with one ``struct.pack_into`` (a device array gives its data pointer, None a null
pointer) and calls the driver on the stream given, under a lock, as the driver copies the
parameters before it returns.

Packing by the parameter's own C type, not by the argument's Python type, also removes
CuPy's trap of a Python ``int`` passed as 8 bytes to an ``int`` parameter: a value that
does not fit its parameter raises ``struct.error`` instead of shifting every later one.

On the counting stand-in for CuPy (:mod:`kernels.counting`), whose kernels are not
compiled, :func:`launcher` gives a launch that calls the kernel as CuPy's ``RawKernel``
would be called, so that the stand-in checks the arguments, counts the launch and emulates
it.

Examples
--------
>>> src = 'extern "C" __global__ void k(const float* x, int n, double s) {}'
>>> parameter_format(src, "k")
'<Qi4xd'
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from kernels import cuda_args
from kernels.numba_launch import SLOT_FORMATS, parameter_slots

__all__ = ["DriverLaunch", "launcher", "parameter_format"]


def parameter_format(source: str, name: str) -> str:
    """The ``struct`` format of kernel ``name``'s parameters in ``source``: one 8-byte
    little-endian slot each, a pointer as an unsigned 64-bit address."""
    return _format(cuda_args.kernel_params(source, name).params)


def _format(params: tuple) -> str:
    return "<" + "".join("Q" if p.pointer else SLOT_FORMATS[p.dtype] for p in params)


class DriverLaunch:
    """Launches of one compiled kernel function through ``cuLaunchKernel``.

    ``launch(stream, grid, block, args)``: ``args`` as a ``RawKernel`` takes them (device
    arrays, None for a null pointer, scalars), ``grid`` and ``block`` tuples of three
    ints, ``stream`` the stream's handle (``cupy.cuda.get_current_stream().ptr``).
    ``params``: the kernel's C parameters (:func:`kernels.cuda_args.kernel_params`).
    """

    __slots__ = ("buffer", "function", "launch_kernel", "lock", "pack", "params", "pointer",
                 "slots")  # fmt: skip

    def __init__(self, function: int, params: tuple, launch_kernel: Callable) -> None:
        self.function = function
        self.launch_kernel = launch_kernel
        #: Whether each parameter is a pointer (a device array's address, or 0 for None).
        self.pointer = tuple(p.pointer for p in params)
        packer, self.buffer, self.params, self.slots = parameter_slots(_format(params))
        self.pack = packer.pack_into
        self.lock = threading.Lock()

    def __call__(self, stream: int, grid: tuple, block: tuple, args: tuple) -> None:
        values = [
            (0 if a is None else a.data.ptr) if pointer else a
            for a, pointer in zip(args, self.pointer, strict=True)
        ]
        with self.lock:  # one buffer: filled and copied by the driver together
            self.pack(self.buffer, 0, *values)
            self.launch_kernel(self.function, *grid, *block, 0, stream, self.params, 0)


def launcher(xp: Any, kernel: Any, source: str, name: str) -> Callable:
    """The launch of ``kernel`` (``name`` compiled from ``source`` by ``xp.RawModule``):
    ``launch(stream, grid, block, args)``, ``grid`` and ``block`` tuples of three ints.

    On CuPy a :class:`DriverLaunch` of the compiled function; on a namespace whose kernels
    are not compiled (the counting stand-in) a call of the kernel object itself.
    """
    function = getattr(getattr(kernel, "kernel", None), "ptr", None)
    if function is None:

        def call(stream: int, grid: tuple, block: tuple, args: tuple) -> None:
            kernel(grid, block, args)

        return call
    params = cuda_args.kernel_params(source, name).params
    return DriverLaunch(int(function), params, xp.cuda.driver.launchKernel)
