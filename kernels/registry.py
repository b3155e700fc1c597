"""One table from (primitive, backend) to the function that implements it.

The machine looks every instruction up here. The reference implementations (written
against ``xp``) serve every backend; accelerated ones register themselves for their
backend with :func:`register` when their module is imported, and the modules of a backend
are imported the first time that backend asks for anything, never before (so CuPy and
Numba's CUDA target are only imported when the CuPy backend is in use).

Set the environment variable ``SIMD_FORCE_REFERENCE=1`` to make every lookup return the
reference implementation, for debugging a kernel against its oracle
(:func:`force_reference` reads it; other packages' fast paths ask it too).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

from kernels import reference

__all__ = ["PRIMITIVES", "force_reference", "lookup", "register", "registered", "warm_up"]

#: The primitives that have an implementation per backend.
PRIMITIVES = ("scan", "reduce", "send", "get", "shift", "halo_exchange")

#: Modules that register accelerated implementations, per backend.
_PROVIDERS: dict[str, tuple[str, ...]] = {
    "numpy": ("kernels.numba_cpu",),
    "cupy": ("kernels.cupy_scan", "kernels.cupy_router", "kernels.numba_shift"),
}

_table: dict[tuple[str, str], Callable] = {}
_loaded: set[str] = set()
_load_errors: dict[str, str] = {}
#: What lookup() found per (primitive, backend, forced): it reads the environment on every
#: call but resolves each combination once (register() forgets them).
_resolved: dict[tuple[str, str, bool], Callable] = {}


def force_reference() -> bool:
    """Whether ``SIMD_FORCE_REFERENCE`` asks for the reference implementations.

    Any value but "" and "0" switches them on; unset is off. Read on every call, so a
    change of the environment takes effect at the next lookup.

    Examples
    --------
    >>> import os
    >>> saved = os.environ.pop("SIMD_FORCE_REFERENCE", None)
    >>> force_reference()
    False
    >>> os.environ["SIMD_FORCE_REFERENCE"] = "0"; force_reference()
    False
    >>> os.environ["SIMD_FORCE_REFERENCE"] = "1"; force_reference()
    True
    >>> del os.environ["SIMD_FORCE_REFERENCE"]
    >>> if saved is not None: os.environ["SIMD_FORCE_REFERENCE"] = saved
    """
    if _ENV_DATA is not None:
        raw = _ENV_DATA.get(_ENV_KEY)
        return raw is not None and raw not in _OFF
    return os.environ.get("SIMD_FORCE_REFERENCE", "") not in ("", "0")


# Every instruction asks force_reference(), so it reads the variable the cheap way where it
# can: os.environ.get(name) of an unset name raises and catches a KeyError inside (about
# half a microsecond), while os.environ's own dict (CPython's, which os.environ[...] = ...
# and pytest's monkeypatch update) answers a get of the encoded name directly.
_ENV_DATA = getattr(os.environ, "_data", None)
if not isinstance(_ENV_DATA, dict) or not hasattr(os.environ, "encodekey"):
    _ENV_DATA = None
else:
    _ENV_KEY = os.environ.encodekey("SIMD_FORCE_REFERENCE")
    _OFF = {os.environ.encodevalue(v) for v in ("", "0")}


def register(primitive: str, backend: str) -> Callable[[Callable], Callable]:
    """Decorator that registers ``fn`` as the implementation of ``primitive`` on ``backend``.

    The function takes the same arguments as its counterpart in ``kernels.reference``
    (the array namespace first).
    """
    if primitive not in PRIMITIVES:
        raise ValueError(f"unknown primitive {primitive!r}; expected one of {PRIMITIVES}")

    def decorate(fn: Callable) -> Callable:
        _table[(primitive, backend)] = fn
        _resolved.clear()
        return fn

    return decorate


def _load_providers(backend: str) -> None:
    if backend in _loaded:
        return
    _loaded.add(backend)
    for module in _PROVIDERS.get(backend, ()):
        try:
            importlib.import_module(module)
        except ImportError as exc:  # a provider not written or its toolkit missing
            _load_errors[module] = f"{type(exc).__name__}: {exc}"


_warm: set[str] = set()


def warm_up(backend: str) -> None:
    """Load ``backend``'s providers and let each prepare its kernels (its ``warm_up()``,
    JIT compilation), once per process; nothing when the reference is forced."""
    if force_reference() or backend in _warm:
        return
    _warm.add(backend)
    _load_providers(backend)
    for module in _PROVIDERS.get(backend, ()):
        prepare = getattr(sys.modules.get(module), "warm_up", None)
        if prepare is not None:
            prepare()


def lookup(primitive: str, backend: str) -> Callable:
    """The implementation of ``primitive`` for ``backend`` (the reference if none).

    Examples
    --------
    >>> lookup("get", "numpy").__module__
    'kernels.reference'
    """
    forced = force_reference()
    key = (primitive, backend, forced)
    fn = _resolved.get(key)
    if fn is not None:
        return fn
    if primitive not in PRIMITIVES:
        raise ValueError(f"unknown primitive {primitive!r}; expected one of {PRIMITIVES}")
    if forced:
        fn = getattr(reference, primitive)
    else:
        _load_providers(backend)
        fn = _table.get((primitive, backend), getattr(reference, primitive))
    _resolved[key] = fn
    return fn


def registered(backend: str) -> dict[str, str]:
    """Which module implements each primitive on ``backend``, and provider import errors."""
    _load_providers(backend)
    table = {p: lookup(p, backend).__module__ for p in PRIMITIVES}
    table.update({f"error:{m}": e for m, e in _load_errors.items()})
    return table
