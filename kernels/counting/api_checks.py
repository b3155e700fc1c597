"""The counting stand-in's checks of calls against CuPy's API (:mod:`kernels.cupy_api`).

NumPy, which computes for the stand-in, takes more than CuPy does: these checks make the
stand-in refuse, with CuPy's ``TypeError``, the calls CuPy would refuse (a signature that
does not bind, a ufunc keyword or a list operand CuPy lacks).
"""

from __future__ import annotations

from typing import Any

from kernels import cupy_api

__all__ = ["api", "check_call", "check_ufunc_call"]


def api() -> dict[str, Any]:
    """CuPy's API as stored (:func:`kernels.cupy_api.load`): names, signatures, keywords.

    Examples
    --------
    >>> "asarray" in api()["names"]
    True
    """
    return cupy_api.load()


#: (name, positional count, keywords) of calls that bind to CuPy's signature: a call of
#: the same shape is not checked again (binding depends on nothing else).
_BOUND: set[tuple] = set()


def check_call(name: str, params: Any, args: tuple, kwargs: dict) -> None:
    """Raise TypeError where CuPy's ``name`` (signature ``params``, see
    :mod:`kernels.cupy_api`) would not take these arguments.

    Examples
    --------
    >>> zeros = api()["functions"]["zeros"]
    >>> check_call("zeros", zeros, (3,), {"dtype": "f4"})  # binds: nothing to say
    >>> try:
    ...     check_call("zeros", zeros, (3,), {"like": None})
    ... except TypeError as e:
    ...     print(str(e)[:36])
    cupy zeros(shape, dtype=None, order=
    """
    key = (name, len(args), tuple(kwargs))
    if key in _BOUND:
        return
    sig = cupy_api.signature(params)
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(
                f"cupy {name}{sig} would refuse this call ({err}); the counting stand-in "
                "refuses what CuPy does"
            ) from None
    _BOUND.add(key)


def check_ufunc_call(name: str, args: tuple, kwargs: dict) -> None:
    """Raise TypeError where CuPy's ufunc ``name`` would refuse the call."""
    if kwargs and not kwargs.keys() <= api()["ufunc_keywords"]:
        bad = sorted(set(kwargs) - api()["ufunc_keywords"])
        raise TypeError(
            f"cupy.{name}() takes no keyword {', '.join(bad)} (CuPy's ufuncs take out, "
            "dtype and casting; the counting stand-in refuses what CuPy does)"
        )
    for a in args:
        if isinstance(a, list | tuple):
            raise TypeError(
                f"cupy.{name}(): CuPy's ufuncs take arrays and scalars, not a "
                f"{type(a).__name__} (Unsupported type)"
            )
