"""``kernels.counting.cupy``: the counting device's array namespace, shaped like ``cupy``.

Every name CuPy has (:mod:`kernels.cupy_api`) is served from NumPy: ufuncs as
:class:`CountingUfunc` (a call is a launch whatever the inputs), functions counted by
:func:`kernels.counting.device_array.run_function`; the transfers (``asarray``,
``asnumpy``), ``cuda``, the raw kernels and the counting blocks (``measure``, ``scope``)
are the namespace's own.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from kernels.counting import device_array
from kernels.counting.api_checks import api, check_call, check_ufunc_call
from kernels.counting.device_array import DeviceArray, run_function, run_ufunc, to_host_copy
from kernels.counting.events import cuda
from kernels.counting.raw_kernels import (
    ElementwiseKernel,
    RawKernel,
    RawModule,
    launch,
    numba_launches,
    numba_signature,
)
from kernels.counting.records import check_allocation, entry, measure, scope, state

__all__ = ["CountingCuPy", "CountingUfunc", "cupy"]


class CountingUfunc:
    """A ufunc of the counting namespace: calls are device launches whatever the inputs."""

    def __init__(self, ufunc: np.ufunc) -> None:
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    @entry
    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._ufunc, name)
        if name in ("reduce", "accumulate", "at", "outer", "reduceat"):

            def method(*a: Any, **k: Any) -> Any:
                if state.strict:
                    check_call(f"{self.__name__}.{name}", api()["ufunc_methods"][name], a, k)
                return run_ufunc(self._ufunc, name, a, k)

            return method
        return attr

    @entry
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if state.strict:
            check_ufunc_call(self.__name__, args, kwargs)
        return run_ufunc(self._ufunc, "__call__", args, kwargs)


def _namespace_function(name: str, func: Callable) -> Callable:
    params = api()["functions"].get(name)

    @entry
    def call(*args: Any, **kwargs: Any) -> Any:
        if params is not None and state.strict and not state.depth:
            check_call(name, params, args, kwargs)
        return run_function(name, func, args, kwargs)

    call.__name__ = name
    return call


class CountingCuPy(types.ModuleType):
    """The ``cupy`` module as the counting device sees it (see :mod:`kernels.counting`)."""

    ndarray = DeviceArray
    cuda = cuda
    RawModule = RawModule
    RawKernel = RawKernel
    ElementwiseKernel = ElementwiseKernel
    #: What ``simd.Machine`` shows as its device.
    device_name = "counting (NumPy stand-in for CuPy)"

    def __init__(self) -> None:
        super().__init__("cupy_counting")
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self._cache[name]
        except KeyError:
            pass
        if name not in api()["names"]:
            raise AttributeError(
                f"module 'cupy' has no attribute {name!r} (CuPy {api()['version']}; the "
                "counting stand-in offers only what CuPy has: kernels.cupy_api)"
            )
        attr = getattr(np, name)  # AttributeError as the real module would
        if isinstance(attr, np.ufunc):
            attr = CountingUfunc(attr)
        elif (
            callable(attr) and not isinstance(attr, type) and not isinstance(attr, types.ModuleType)
        ):
            attr = _namespace_function(name, attr)
        self._cache[name] = attr
        # Kept in the module's dict too: later reads are plain lookups, as on the cupy
        # module, not a failed lookup (an AttributeError made and caught) and this call.
        self.__dict__[name] = attr
        return attr

    # ---- transfers
    @entry
    def asarray(self, a: Any, dtype: Any = None, order: Any = None) -> DeviceArray:
        if isinstance(a, DeviceArray):
            if dtype is None or np.dtype(dtype) == a.dtype:
                return a
            return a.astype(dtype)
        if state.capture is not None:
            state.capture.refuse("asarray: a copy of host memory to the device")
        host = to_host_copy(a, dtype=dtype, copy=True, order=order or "K")
        check_allocation(host.nbytes)
        state.record("asarray", h2d=host.nbytes)
        return host.view(DeviceArray)

    @entry
    def array(self, a: Any, dtype: Any = None, copy: bool = True, order: str = "K",
              **kwargs: Any) -> DeviceArray:  # fmt: skip
        if isinstance(a, DeviceArray):
            if not copy and (dtype is None or np.dtype(dtype) == a.dtype):
                return a
            # device_array.run, not a name imported here: a benchmark that times the
            # stand-in's operations replaces it there
            return device_array.run(
                "array", np.array, (a,), {"dtype": dtype, "copy": True, "order": order}
            )
        return self.asarray(a, dtype=dtype, order=order)

    @entry
    def asnumpy(self, a: Any, stream: Any = None, order: str = "C") -> np.ndarray:
        if isinstance(a, DeviceArray):
            return a.get(order=order)
        return np.asarray(a, order=order)

    @entry
    def get_array_module(self, *args: Any) -> Any:
        return self if any(isinstance(a, DeviceArray) for a in args) else np

    def get_default_memory_pool(self) -> Any:
        """CuPy's memory pool: the stand-in keeps no freed blocks."""
        return _POOL

    # ---- kernels not compiled but emulated
    @entry
    def launch_emulated(self, name: str, args: tuple) -> None:
        """Launch kernel ``name`` (one count) with its registered NumPy emulation; the
        argument types Numba would compile it for are noted in
        :data:`~kernels.counting.raw_kernels.numba_launches`."""
        if state.strict:
            numba_launches[(name, numba_signature(args))] += 1
        launch(name, args)

    # ---- counting
    measure = staticmethod(measure)
    scope = staticmethod(scope)

    def push_scope(self, name: str) -> None:
        state.scopes.append(name)

    def pop_scope(self) -> None:
        state.scopes.pop()

    @property
    def scope_names(self) -> list[str]:
        """The open scopes, outermost first: the list itself, for a caller that opens and
        closes them often (``simd.Machine``'s phases) to append to and pop from. Counting
        bookkeeping that CuPy has no part in, so a plain list operation."""
        return state.scopes


#: ``cupy.get_default_memory_pool()`` of the stand-in, which keeps no freed blocks.
_POOL = types.SimpleNamespace(
    free_bytes=lambda: 0, used_bytes=lambda: 0, total_bytes=lambda: 0, free_all_blocks=lambda: None
)

#: The counting namespace (one device per process, as CuPy's current device).
cupy = CountingCuPy()
state.namespace = cupy  # what the device's arrays give as their __array_namespace__
