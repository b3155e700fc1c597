"""Exceptions raised by the emulated machine."""

from __future__ import annotations

__all__ = ["BackendUnavailableError", "CollisionError", "SimdError"]


class SimdError(Exception):
    """Base class of the machine's errors."""


class CollisionError(SimdError):
    """Two or more messages of a ``send(..., combine="unique")`` went to one address."""


class BackendUnavailableError(SimdError, RuntimeError):
    """The backend that was asked for cannot run here (no CuPy, no GPU, broken driver)."""
