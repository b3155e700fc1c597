"""Exceptions raised by the emulated machine."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = [
    "BackendUnavailableError",
    "CollisionError",
    "DeviceMemoryError",
    "GPUUnavailableWarning",
    "MissingPackageError",
    "SimdError",
    "one_line",
    "require",
]


class SimdError(Exception):
    """Base class of the machine's errors."""


class CollisionError(SimdError):
    """Two or more messages of a ``send(..., combine="unique")`` went to one address."""


class BackendUnavailableError(SimdError, RuntimeError):
    """The backend that was asked for cannot run here (no CuPy, no GPU, broken driver)."""


class DeviceMemoryError(SimdError, MemoryError):
    """Work that the GPU's memory cannot hold: the message names the bytes it needs, the
    bytes free and the way out (slabs or shares over MPI ranks, or the CPU)."""


class GPUUnavailableWarning(UserWarning):
    """The automatic backend choice is NumPy on a machine whose GPU path fails (the
    message says why)."""


class MissingPackageError(SimdError, ImportError):
    """A package that one feature needs (reading a mesh file, a DICOM image) is not
    installed; the message names the extra that installs it."""


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module`` for ``purpose``, or raise :class:`MissingPackageError` saying in one
    line which extra installs it.

    Examples
    --------
    >>> require("json", "data", "reading JSON").__name__
    'json'
    >>> try:
    ...     require("no_such_x", "data", "a mesh file")
    ... except MissingPackageError as err:
    ...     print(err)
    a mesh file needs the package 'no_such_x', which is not installed: pip install 'simd-emu[data]'
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as err:
        if err.name is None or not (module == err.name or module.startswith(err.name + ".")):
            raise  # the package is there but something it imports is not
        raise MissingPackageError(
            f"{purpose} needs the package {err.name!r}, which is not installed: "
            f"pip install 'simd-emu[{extra}]'",
            name=err.name,
        ) from None


def one_line(error: BaseException) -> str:
    r"""``error``'s message on one line (some readers' messages run over several: SimpleITK's,
    trimesh's).

    Examples
    --------
    >>> one_line(RuntimeError("cannot read\n  header: bad magic\n"))
    'cannot read header: bad magic'
    """
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip())
