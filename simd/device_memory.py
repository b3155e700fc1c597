"""How much of the GPU's memory is free, and work refused in one line when it needs more.

A job too large for the device fails early and plainly: :func:`require_device_memory`
compares what it is about to allocate with what is free (the driver's free memory plus the
blocks CuPy's pool holds for reuse) and raises :class:`~simd.errors.DeviceMemoryError`
naming both and the way out; :func:`out_of_memory` turns CuPy's own out-of-memory error,
met in the middle of the work, into the same one line. On the NumPy backend nothing is
checked (the host's memory is the operating system's business).
"""

from __future__ import annotations

from typing import Any

from simd.errors import DeviceMemoryError

__all__ = ["free_device_bytes", "gib", "out_of_memory", "require_device_memory"]


def free_device_bytes(machine: Any) -> int | None:
    """Bytes of the machine's GPU free for new arrays (the driver's free memory and the
    blocks CuPy's memory pool keeps for reuse); None on the NumPy backend."""
    if machine.backend != "cupy":
        return None
    xp = machine.xp
    free, _ = xp.cuda.runtime.memGetInfo()
    return int(free) + int(xp.get_default_memory_pool().free_bytes())


def require_device_memory(machine: Any, nbytes: int, what: str, way_out: str) -> None:
    """Refuse ``what`` in one line when it needs more than the GPU has free.

    Examples
    --------
    >>> from simd import Machine
    >>> from kernels import counting
    >>> m = Machine(backend="counting")
    >>> with counting.device_memory(2**30):
    ...     try:
    ...         require_device_memory(m, 3 * 2**30, "the volume", "use the CPU")
    ...     except MemoryError as err:
    ...         print(err)
    the volume needs 3.0 GiB of GPU memory, which has 1.0 GiB free: use the CPU
    """
    free = free_device_bytes(machine)
    if free is not None and nbytes > free:
        raise DeviceMemoryError(
            f"{what} needs {gib(nbytes)} of GPU memory, which has {gib(free)} free: {way_out}"
        )


def out_of_memory(machine: Any, error: MemoryError, what: str, way_out: str) -> DeviceMemoryError:
    """CuPy's out-of-memory ``error`` met during ``what``, as one line naming the
    allocation that failed, the memory free and the way out."""
    size = getattr(error, "size", None)
    asked = f" (an allocation of {gib(size)})" if size else ""
    free = free_device_bytes(machine)
    left = f", {gib(free)} free" if free is not None else ""
    return DeviceMemoryError(f"{what} ran out of GPU memory{asked}{left}: {way_out}")


def gib(nbytes: float) -> str:
    """Bytes in the unit that reads best.

    >>> gib(3 * 2**30), gib(1536 * 2**20), gib(2048)
    ('3.0 GiB', '1.5 GiB', '2.0 KiB')
    """
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{int(nbytes)} bytes"
