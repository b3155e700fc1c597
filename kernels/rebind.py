"""One kernel body, several compilation targets: a function's globals rebound per target.

Numba resolves a function's globals when it compiles it, so a copy of a scalar body whose
global names point at one target's primitives (``numba.njit`` functions for the CPU,
``numba.cuda.jit`` device functions or the CUDA simulator's module for the GPU) compiles
for that target. The renderer's fused stage kernels and the expand form's load-balancing
search are written once this way.

A body calls the primitives below by name (:func:`fmul`, :func:`rint`, :func:`to_i64`, ...)
whose Python definitions here make it runnable as plain Python; each target binds its own:
the CPU's (:func:`cpu_primitives`, through :func:`cpu_body`), the GPU's from libdevice. A
loop over the items calling the body is compiled for the CPU by :func:`cpu_loop`.

Importing this module does not import Numba; compiling does.
"""

from __future__ import annotations

import functools
import hashlib
import types
from typing import Any

import numpy as np

__all__ = [
    "bind",
    "code_digest",
    "cpu_body",
    "cpu_inline",
    "cpu_loop",
    "cpu_primitives",
    "fmul",
    "rint",
    "to_i64",
]


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


def fmul(a, b):
    """A float64 product rounded on its own (each target binds its own: the GPU's never
    contracts with a following sum into a fused multiply-add)."""
    return a * b


def rint(x):
    """Round half to even (each target binds its own)."""
    return np.rint(x)


def to_i64(x):
    """Float to int64, truncating (each target binds its own)."""
    return np.int64(x)


@functools.cache
def cpu_inline(fn: Any) -> Any:
    """``fn`` compiled for the CPU to be inlined into the bodies that call it."""
    import numba

    return numba.njit(inline="always")(fn)


@functools.cache
def cpu_primitives() -> dict[str, Any]:
    """The CPU's primitives by name, ``numba.njit`` functions inlined into the bodies."""

    def fmul_cpu(a, b):
        return a * b

    def rint_cpu(x):
        return np.rint(x)

    def to_i64_cpu(x):
        return np.int64(x)

    def floor_cpu(x):
        return np.floor(x)

    def to_u8_cpu(x):
        return np.uint8(x)

    return {
        "fmul": cpu_inline(fmul_cpu),
        "rint": cpu_inline(rint_cpu),
        "to_i64": cpu_inline(to_i64_cpu),
        "floor": cpu_inline(floor_cpu),
        "to_u8": cpu_inline(to_u8_cpu),
    }


def cpu_body(fn: Any, *primitives: str, **functions: Any) -> Any:
    """Body ``fn`` compiled for the CPU with the named ``primitives`` of
    :func:`cpu_primitives` and the scalar ``functions`` it calls bound, inlined into the
    loops that call it: a call per item costs more than a light body's work (its many
    array arguments are passed, and reference-counted, on every call).

    Examples
    --------
    >>> def halve(x):
    ...     return fmul(x, 0.5)
    >>> cpu_body(halve, "fmul")(3.0)
    1.5
    """
    import numba

    prims = cpu_primitives()
    names = {n: prims[n] for n in primitives}
    names.update({n: cpu_inline(f) for n, f in functions.items()})
    return numba.njit(error_model="numpy", inline="always")(bind(fn, **names))


def cpu_loop(rows: Any) -> Any:
    """``rows`` (a loop over items calling a body) compiled for the CPU with IEEE float
    division (``error_model="numpy"``: x / 0 gives inf or NaN as in NumPy, not an
    exception), cached on disk where a cache folder can be used.

    Numba checks a cached loop against the loop's own source file only, not against the
    bodies bound into it; so the cache entry is named by a digest of the code of the loop
    and of every function it reaches through its globals (:func:`code_digest`): an edited
    body, in whatever file, compiles the loop again.

    The loop is serial: a parallel one (``prange``) was no faster on a 2-core machine, and
    its idle OpenMP threads spin after the loop, slowing the NumPy stage that follows by
    more than the loop gained.

    It is compiled without Numba's reference counting (``_nrt=False``): the loops only
    index the arrays they are given (they allocate nothing, which Numba would refuse to
    compile), and counting the references of a body's many array arguments on every item
    cost several times the body's own work (setup of 242k triangles: 17.5 ms, 3.7 without).

    Its compiles are timed and, past a second, announced (:func:`kernels.compiles.watch`).
    """
    import numba

    from kernels.compiles import watch

    watch()
    options = {"nogil": True, "error_model": "numpy", "_nrt": False}
    rows = bind(rows)  # a copy: its name becomes the cache file's, the caller's stays
    rows.__qualname__ = f"{rows.__qualname__}_{code_digest(rows)}"
    try:
        return numba.njit(cache=True, **options)(rows)
    except RuntimeError:  # no cache locator for this file: compile in memory only
        return numba.njit(**options)(rows)


def code_digest(fn: Any) -> str:
    """A digest of the code of ``fn`` and of every Python function it reaches through the
    global names its code reads (Numba dispatchers by their Python function), the same in
    every process.

    Examples
    --------
    >>> def twice(x):
    ...     return fmul(x, 2.0)
    >>> code_digest(bind(twice, fmul=rint)) == code_digest(twice)
    False
    """
    digest = hashlib.sha256()
    seen: set[int] = set()
    stack = [fn]
    while stack:
        f = stack.pop()
        f = getattr(f, "py_func", f)  # a Numba dispatcher: its Python function
        code = getattr(f, "__code__", None)
        if code is None or id(code) in seen:
            continue
        seen.add(id(code))
        digest.update(_code_bytes(code))
        scope = f.__globals__
        stack.extend(scope[name] for name in reversed(code.co_names) if name in scope)
    return digest.hexdigest()[:16]


def _code_bytes(code: types.CodeType) -> bytes:
    """The bytecode, names and constants of ``code`` and of the code nested in it."""
    parts = [code.co_code, repr(code.co_names).encode()]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            parts.append(_code_bytes(const))
        elif isinstance(const, frozenset):  # its repr's order changes with the hash seed
            parts.append(repr(sorted(map(repr, const))).encode())
        else:
            parts.append(repr(const).encode())
    return b"".join(parts)
