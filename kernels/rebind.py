"""One kernel body, several compilation targets: a function's globals rebound per target.

Numba resolves a function's globals when it compiles it, so a copy of a scalar body whose
global names point at one target's primitives (``numba.njit`` functions for the CPU,
``numba.cuda.jit`` device functions or the CUDA simulator's module for the GPU) compiles
for that target. The renderer's fused stage kernels and the expand form's load-balancing
search are written once this way.
"""

from __future__ import annotations

import types
from typing import Any

__all__ = ["bind"]


def bind(fn: Any, **names: Any) -> Any:
    """A copy of function ``fn`` whose global ``names`` are rebound (the same code object).

    Examples
    --------
    >>> def area(r):
    ...     return pi * r * r
    >>> bind(area, pi=3)(2)
    12
    """
    scope = dict(fn.__globals__)
    scope.update(names)
    out = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    out.__qualname__, out.__doc__ = fn.__qualname__, fn.__doc__
    return out
