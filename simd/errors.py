"""Exceptions raised by the emulated machine."""

from __future__ import annotations

__all__ = ["BackendUnavailableError", "CollisionError", "SimdError", "one_line"]


class SimdError(Exception):
    """Base class of the machine's errors."""


class CollisionError(SimdError):
    """Two or more messages of a ``send(..., combine="unique")`` went to one address."""


class BackendUnavailableError(SimdError, RuntimeError):
    """The backend that was asked for cannot run here (no CuPy, no GPU, broken driver)."""


def one_line(error: BaseException) -> str:
    r"""``error``'s message on one line (some readers' messages run over several: SimpleITK's,
    trimesh's).

    Examples
    --------
    >>> one_line(RuntimeError("cannot read\n  header: bad magic\n"))
    'cannot read header: bad magic'
    """
    return " ".join(line.strip() for line in str(error).splitlines() if line.strip())
