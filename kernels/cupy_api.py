"""What CuPy's API offers, as data: names and call signatures, without importing CuPy.

The counting stand-in for CuPy (:mod:`kernels.counting`) computes with NumPy, whose API is
wider than CuPy's: a function CuPy lacks (``numpy.errstate``, ``numpy.insert``), a keyword
it does not take (``argsort(stable=True)``, ``max(initial=0)``, a ufunc's ``where=``), an
ndarray method it lacks or takes fewer arguments in (``a.item(0)``, ``a.resize``) all run
there and fail on a GPU. The stand-in refuses them using this table, read from the JSON
file beside this module (``cupy_api.json``), which ``python -m kernels.cupy_api`` writes
from the installed CuPy (importing CuPy needs no GPU); ``tests/gpu_audit`` checks that the
file matches the installed CuPy.

A signature is a list of ``[name, kind, has_default]`` (``kind`` as
:class:`inspect.Parameter` numbers it) or a string: ``"ufunc"``, or ``"unknown"`` where
CuPy's object has no readable signature (those calls are not checked).

Examples
--------
>>> api = load()
>>> "errstate" in api["names"], "where" in api["names"]
(False, True)
>>> list(signature(api["functions"]["argsort"]).parameters)  # no stable=, unlike NumPy's
['a', 'axis', 'kind']
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import re
import sys
from typing import Any

from kernels.cuda_args import split_top_level

__all__ = ["load", "signature", "snapshot"]

_PATH = os.path.join(os.path.dirname(__file__), "cupy_api.json")
_KINDS = [
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.VAR_POSITIONAL,
    inspect.Parameter.KEYWORD_ONLY,
    inspect.Parameter.VAR_KEYWORD,
]
_UFUNC_METHODS = ("reduce", "accumulate", "at", "outer", "reduceat")


@functools.cache
def load() -> dict[str, Any]:
    """The stored table: ``version``, ``names`` (the public names of the ``cupy`` module),
    ``functions``, ``methods`` (of ``cupy.ndarray``), ``ufunc_methods`` and
    ``ufunc_keywords`` (signatures as above)."""
    with open(_PATH, encoding="utf-8") as f:
        data = json.load(f)
    data["names"] = frozenset(data["names"])
    data["ndarray_names"] = frozenset(data["ndarray_names"])
    data["ufunc_keywords"] = frozenset(data["ufunc_keywords"])
    return data


@functools.lru_cache(maxsize=1024)
def _signature(params: tuple) -> inspect.Signature:
    return inspect.Signature(
        [
            inspect.Parameter(
                name, _KINDS[kind], default=None if has_default else inspect.Parameter.empty
            )
            for name, kind, has_default in params
        ]
    )


def signature(params: Any) -> inspect.Signature | None:
    """The :class:`inspect.Signature` of a stored signature (None if not a list); defaults
    are all None (only which parameters have one is stored)."""
    if not isinstance(params, list):
        return None
    return _signature(tuple(tuple(p) for p in params))


def _from_signature(sig: inspect.Signature, drop_self: bool = False) -> list:
    params = list(sig.parameters.values())
    if drop_self and params and params[0].name == "self":
        params = params[1:]
    return [
        [p.name, _KINDS.index(p.kind), p.default is not inspect.Parameter.empty] for p in params
    ]


def _from_docstring(obj: Any) -> list | str:
    """Parameters from a Cython docstring's first line ``name(self, a, b=1, *c) -> T``."""
    first = (getattr(obj, "__doc__", None) or "").strip().splitlines()
    m = re.match(r"[\w.]+\((.*)\)(\s*->.*)?$", first[0]) if first else None
    if m is None:
        return "unknown"
    out, kind = [], 1
    for part in split_top_level(m[1], "([{", ")]}"):
        part = part.strip()
        if not part:
            continue
        if part == "*":
            kind = 3
            continue
        has_default = "=" in part
        words = part.split("=")[0].split()
        name = words[-1]
        if name.startswith("**"):
            out.append([name[2:], 4, False])
        elif name.startswith("*"):
            out.append([name[1:], 2, False])
            kind = 3
        elif name != "self":
            out.append([name, kind, has_default])
    return out


def _describe(obj: Any) -> list | str:
    if type(obj).__name__ == "ufunc":
        return "ufunc"
    try:
        return _from_signature(inspect.signature(obj))
    except (TypeError, ValueError):
        return _from_docstring(obj)


def snapshot(cupy: Any, numpy: Any) -> dict[str, Any]:
    """The table for the ``cupy`` module given (and ``numpy``: only the functions and
    methods NumPy has too are stored, as the stand-in can only offer those)."""
    names = sorted(n for n in dir(cupy) if not n.startswith("_"))
    functions = {}
    for n in names:
        obj = getattr(cupy, n)
        if callable(obj) and not isinstance(obj, type) and hasattr(numpy, n):
            functions[n] = _describe(obj)
    nd_names = sorted(n for n in dir(cupy.ndarray) if not n.startswith("_"))
    methods = {}
    for n in nd_names:
        obj = getattr(cupy.ndarray, n)
        if callable(obj) and hasattr(numpy.ndarray, n):
            methods[n] = _describe(obj)
    ufunc_methods = {n: _from_docstring(getattr(cupy.add, n)) for n in _UFUNC_METHODS}
    return {
        "version": cupy.__version__,
        "names": names,
        "ndarray_names": nd_names,
        "functions": functions,
        "methods": methods,
        "ufunc_methods": ufunc_methods,
        # ufunc.__call__ takes **kwargs and pops these (cupy/_core/_kernel.pyx); others
        # raise TypeError (no ``where=``, ``order=``, ``subok=``, ``signature=``).
        "ufunc_keywords": ["casting", "dtype", "out"],
    }


def _dumps(data: dict[str, Any]) -> str:
    """JSON with one line per function or method (short diffs when CuPy changes)."""
    compact = functools.partial(json.dumps, separators=(",", ":"))
    sections = []
    for key in sorted(data):
        value = data[key]
        if isinstance(value, dict):
            body = ",\n".join(f"  {compact(k)}: {compact(v)}" for k, v in sorted(value.items()))
            sections.append(f"{compact(key)}: {{\n{body}\n}}")
        else:
            sections.append(f"{compact(key)}: {compact(value)}")
    return "{\n" + ",\n".join(sections) + "\n}\n"


def main() -> None:
    """Write ``cupy_api.json`` from the installed CuPy."""
    import cupy
    import numpy

    data = snapshot(cupy, numpy)
    with open(_PATH, "w", encoding="utf-8") as f:
        f.write(_dumps(data))
    sys.stdout.write(f"wrote {_PATH} (CuPy {data['version']})\n")


if __name__ == "__main__":
    main()
