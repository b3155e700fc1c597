"""The counting device's array, and the counted operations it runs on.

:class:`DeviceArray` plays ``cupy.ndarray``: a NumPy subclass whose every operation goes
through :func:`run` (a device operation: unwrap the arguments, compute with NumPy, count
it, wrap the result) or :func:`sync` (a read back to the host), which answer from the tape
while one is replayed (:mod:`kernels.counting.tape`). Ufuncs go through :func:`run_ufunc`,
NumPy functions and the ndarray methods of :data:`~kernels.counting.op_costs.METHOD_MODELS`
through :func:`run_function`, which counts them by :mod:`kernels.counting.op_costs`. The
array and these operations are one module because each needs the other: the array's
methods are counted operations, and the operations make and recognise device arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from kernels.counting.api_checks import api, check_call
from kernels.counting.op_costs import (
    JOINS,
    METHOD_MODELS,
    NEEDED_COPIES,
    SPECIAL,
    SYNCING,
    VIEWS,
    copies,
)
from kernels.counting.records import check_allocation, entry, state
from kernels.counting.tape import host_copy

__all__ = ["DeviceArray", "run", "run_function", "run_ufunc", "sync", "to_host", "to_host_copy"]

#: NumPy's conversions, as the stand-in itself uses them (never refused:
#: :func:`kernels.counting.host_conversions_refused` patches NumPy's attributes, not these).
to_host, to_host_copy = np.asarray, np.array


class _Call:
    """Unwraps the device arrays of one operation's arguments; notes host arrays."""

    __slots__ = ("host_bytes", "implicit", "traffic")

    def __init__(self) -> None:
        self.host_bytes = 0
        self.implicit = 0
        self.traffic = 0

    def unwrap(self, a: Any, *, host_ok: bool = False) -> Any:
        if isinstance(a, DeviceArray):
            base = a.view(np.ndarray)
            self.traffic += base.nbytes
            return base
        if type(a) is np.ndarray:
            if a.ndim and not host_ok:
                self.host_bytes += a.nbytes
                self.implicit += 1
            return a
        if isinstance(a, list | tuple):
            items = [self.unwrap(v, host_ok=host_ok) for v in a]
            return type(a)(items) if isinstance(a, tuple) else items
        return a


def _wrap(r: Any) -> Any:
    if isinstance(r, DeviceArray):
        return r
    if isinstance(r, np.ndarray):
        return r.view(DeviceArray)
    if isinstance(r, np.generic):
        return np.asarray(r).view(DeviceArray)
    if isinstance(r, tuple):
        return tuple(_wrap(v) for v in r)
    if isinstance(r, list):
        return [_wrap(v) for v in r]
    return r


def _out_bytes(r: Any) -> int:
    if isinstance(r, np.ndarray):
        return r.nbytes
    if isinstance(r, tuple | list):
        return sum(_out_bytes(v) for v in r)
    return 0


def _spec(r: Any) -> Any:
    """The shape of a result, to make a stand-in for it (:func:`_stub`)."""
    if isinstance(r, np.ndarray):
        return ("array", r.shape, r.dtype, isinstance(r, DeviceArray))
    if isinstance(r, tuple | list):
        return (type(r), [_spec(v) for v in r])
    return ("value", r)


def _stub(spec: Any) -> Any:
    kind = spec[0]
    if kind == "array":
        out = np.empty(spec[1], dtype=spec[2])
        return out.view(DeviceArray) if spec[3] else out
    if kind == "value":
        return spec[1]
    return kind(_stub(v) for v in spec[1])


@entry
def run(  # noqa: PLR0913 (an operation and its cost model, by keyword)
    op: str,
    fn: Callable,
    args: tuple,
    kwargs: dict,
    *,
    launches: int | Callable[[Any], int] = 1,
    setups: int = 0,
    syncs: int = 0,
    host_ok: bool = False,
    wrap: bool = True,
    h2d: int = 0,
) -> Any:
    """Run ``fn`` on the unwrapped arguments and count it as ``op``."""
    if state.depth:
        return fn(*args, **kwargs)
    tape = state.tape
    if tape is not None and tape.position is not None:  # replaying: no device work
        counts, spec = tape.next(op)
        out = _stub(spec)
        state.record(op, **counts)
        return out
    call = _Call()
    args = call.unwrap(args, host_ok=host_ok)
    kwargs = {k: call.unwrap(v, host_ok=host_ok) for k, v in kwargs.items()}
    capture = state.capture
    if capture is not None:
        if syncs:
            capture.refuse(f"{op}: a read back to the host")
        if call.host_bytes + h2d:
            capture.refuse(f"{op}: a copy of host memory to the device")
    state.depth += 1
    try:
        result = fn(*args, **kwargs)
    finally:
        state.depth -= 1
    check_allocation(_out_bytes(result))
    n = launches(result) if callable(launches) else launches
    out = _wrap(result) if wrap else result
    if capture is not None:  # the device arrays the caller gets (a scalar is one here)
        capture.add(fn, args, kwargs, out)
    counts = {
        "launches": n,
        "setups": setups,
        "syncs": syncs,
        "h2d": call.host_bytes + h2d,
        "d2h": 8 * syncs,
        "traffic": (call.traffic + _out_bytes(result)) if n or setups else 0,
        "implicit": call.implicit,
    }
    if tape is not None:
        tape.entries.append((op, counts, _spec(out)))
    state.record(op, **counts)
    return out


@entry
def sync(op: str, nbytes: int, fn: Callable, *args: Any) -> Any:
    """A device-to-host read of ``nbytes``: one sync."""
    if state.depth:
        return fn(*args)
    if state.capture is not None:
        state.capture.refuse(f"{op}: a read back to the host")
    tape = state.tape
    if tape is not None and tape.position is not None:  # replaying: the recorded value
        result = host_copy(tape.next(op)[1])
        state.record(op, syncs=1, d2h=nbytes)
        return result
    state.depth += 1
    try:
        result = fn(*args)
    finally:
        state.depth -= 1
    if tape is not None:
        tape.entries.append((op, {}, host_copy(result)))
    state.record(op, syncs=1, d2h=nbytes)
    return result


def copied(op: str, nbytes: int, source: np.ndarray) -> Any:
    """An asynchronous device-to-host copy of ``nbytes``: no sync, the bytes counted; its
    data kept on a tape being recorded and answered from one being replayed, as a read
    back's (:func:`sync`)."""
    if not state.depth and state.capture is not None:
        state.capture.refuse(f"{op}: a copy to the host")
    tape = state.tape
    if not state.depth and tape is not None and tape.position is not None:
        result = host_copy(tape.next(op)[1])
    else:
        result = source
        if not state.depth and tape is not None:
            tape.entries.append((op, {}, host_copy(source)))
    if not state.depth:
        state.record(op, d2h=nbytes)
    return result


def _index_kind(key: Any) -> tuple[str, int]:
    """('basic' | 'gather' | 'mask', host bytes of host index arrays) of an index."""
    parts = key if isinstance(key, tuple) else (key,)
    kind, host = "basic", 0
    for k in parts:
        if isinstance(k, np.ndarray) or (isinstance(k, list) and k):
            arr = to_host(k)
            if type(k) is not DeviceArray:
                host += arr.nbytes
            if arr.dtype == np.bool_:
                return "mask", host
            kind = "gather"
    return kind, host


def _element_view(base: np.ndarray, key: Any) -> np.ndarray:
    """The 0-d view of the one element that ``key`` (integers) names in ``base``."""
    parts = key if isinstance(key, tuple) else (key,)
    ranges = tuple(
        slice(int(k), int(k) + 1 or None) if isinstance(k, int | np.integer) else k for k in parts
    )
    return base[ranges].reshape(())


def _slice_syncs(key: Any) -> int:
    parts = key if isinstance(key, tuple) else (key,)
    n = 0
    for k in parts:
        if isinstance(k, slice):
            n += sum(isinstance(v, DeviceArray) for v in (k.start, k.stop, k.step))
    return n


class DeviceArray(np.ndarray):
    """An array on the counting device (plays ``cupy.ndarray``; NumPy holds the data).

    Examples
    --------
    >>> from kernels.counting import cupy as xp
    >>> a = xp.arange(3)
    >>> type(a).__name__, a.__array_namespace__() is xp
    ('DeviceArray', True)
    """

    __array_priority__ = 100.0

    @entry
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return run_ufunc(ufunc, method, inputs, kwargs)

    @entry
    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = func.__name__
        if state.strict and not state.depth and name not in api()["names"]:
            if getattr(np, name, None) is func:  # a NumPy function CuPy lacks
                raise TypeError(
                    f"no implementation found for 'numpy.{name}' on cupy.ndarray (CuPy "
                    f"{api()['version']} has no {name}; the counting stand-in refuses it)"
                )
        return run_function(name, func, args, kwargs)

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The array namespace of the counting device, :data:`kernels.counting.cupy`, as a
        CuPy array gives ``cupy`` (whatever ``api_version`` is asked for)."""
        return state.namespace

    # ---- reads to the host: one sync each
    @entry
    def get(
        self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True
    ) -> np.ndarray:
        """A host copy (one sync; with ``out`` and ``blocking=False`` an asynchronous copy
        into ``out``, pinned host memory: no sync, the bytes counted)."""
        if out is not None and (out.dtype != self.dtype or out.shape != self.shape):
            # CuPy raises (TypeError for the dtype, ValueError for the shape); NumPy would
            # cast and broadcast
            error = TypeError if out.dtype != self.dtype else ValueError
            raise error(f"get: out of {out.dtype} {out.shape} for {self.dtype} {self.shape}")
        if out is not None and not blocking:
            out[...] = copied("get[async]", self.nbytes, self.view(np.ndarray))
            return out
        host = sync("get", self.nbytes, np.array, self.view(np.ndarray))
        if out is not None:
            out[...] = host
            return out
        return host

    @entry
    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        """Copy the host array ``arr`` (same shape and dtype) in: asynchronous, no sync."""
        if arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError(f"set: {arr.dtype} {arr.shape} into {self.dtype} {self.shape}")
        if state.capture is not None:
            state.capture.refuse("set: a copy of host memory to the device")
        state.record("set", h2d=arr.nbytes)
        self.view(np.ndarray)[...] = arr

    @entry
    def item(self) -> Any:  # CuPy's takes no index (NumPy's does)
        return sync("item", self.itemsize, self.view(np.ndarray).item)

    @entry
    def tolist(self) -> Any:
        return sync("tolist", self.nbytes, self.view(np.ndarray).tolist)

    @entry
    def __int__(self) -> int:
        return sync("int", self.itemsize, int, self.view(np.ndarray))

    @entry
    def __float__(self) -> float:
        return sync("float", self.itemsize, float, self.view(np.ndarray))

    @entry
    def __complex__(self) -> complex:
        return sync("complex", self.itemsize, complex, self.view(np.ndarray))

    @entry
    def __bool__(self) -> bool:
        return sync("bool", self.itemsize, bool, self.view(np.ndarray))

    @entry
    def __index__(self) -> int:
        return sync("index", self.itemsize, self.view(np.ndarray).__index__)

    def __repr__(self) -> str:
        state.depth += 1  # printing is for people, not counted
        try:
            return repr(self.view(np.ndarray)).replace("array(", "device_array(", 1)
        finally:
            state.depth -= 1

    __str__ = __repr__

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]

    def __reduce__(self) -> Any:
        return (np.asarray, (self.view(np.ndarray),))

    # ---- indexing
    @entry
    def __getitem__(self, key: Any) -> Any:
        base = self.view(np.ndarray)
        if state.depth:
            return base[key]
        if type(key) is DeviceArray:  # the common case, classified without the loops below
            kind, host, syncs = ("mask" if key.dtype == np.bool_ else "gather"), 0, 0
        else:
            kind, host = _index_kind(key)
            syncs = _slice_syncs(key)
        if kind == "mask":
            return run(
                "getitem[mask]", base.__getitem__, (key,), {}, launches=2, syncs=1 + syncs,
                host_ok=True, h2d=host,
            )  # fmt: skip
        if kind == "gather":
            return run(
                "getitem[gather]", base.__getitem__, (key,), {}, launches=1, syncs=syncs,
                host_ok=True, h2d=host,
            )  # fmt: skip
        # a view: no kernel (a 0-d view for a single element, as CuPy gives)
        if syncs:
            if state.capture is not None:
                state.capture.refuse("a slice bound read from the device")
            state.record("getitem[slice bound]", syncs=syncs, d2h=8 * syncs)
        out = base[key]
        if isinstance(out, np.generic):  # a 0-d view of the element, as CuPy gives
            return _element_view(base, key).view(DeviceArray)
        return out.view(DeviceArray)

    @entry
    def __setitem__(self, key: Any, value: Any) -> None:
        base = self.view(np.ndarray)
        if state.depth:
            base[key] = value
            return
        kind, host = _index_kind(key)
        scalar = not isinstance(value, np.ndarray) or value.ndim == 0
        if type(value) is np.ndarray and value.ndim:
            host += value.nbytes  # CuPy uploads a host value first
        launches, syncs = 1, _slice_syncs(key)
        if kind == "mask" and not scalar:
            launches, syncs = 3, syncs + 1  # the mask's true positions are counted first
        elif kind == "gather" and not scalar:
            launches = 1
        run(
            "setitem[mask]" if kind == "mask" else f"setitem[{kind}]",
            _scatter if kind == "gather" and not scalar else base.__setitem__,
            (base, key, value) if kind == "gather" and not scalar else (key, value),
            {},
            launches=launches,
            syncs=syncs,
            wrap=False,
            host_ok=True,
            h2d=host,
        )
        return None

    @entry
    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe",
               subok: bool = True, copy: bool = True) -> Any:  # fmt: skip
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        return run("astype", np.ndarray.astype, (self, dtype), {"order": order, "casting": casting})


def _scatter(base: np.ndarray, key: Any, value: Any) -> None:
    """``base[key] = value`` with integer index arrays where, of duplicate destinations, the
    first write wins: NumPy keeps the last, CuPy's scatter an undefined one (whichever
    thread writes last), so the stand-in takes the other end from NumPy. A program that
    reads a destination written twice with different values then differs between the
    NumPy machine and this one (the tests compare them); one that never reads it (a spare
    slot taking the writes to drop) does not."""
    parts = key if isinstance(key, tuple) else (key,)
    if all(isinstance(k, np.ndarray) and k.dtype.kind in "iu" for k in parts) and parts:
        shape = base.shape[: len(parts)]
        idx = np.broadcast_arrays(*parts)
        flat = np.ravel_multi_index(
            tuple(np.where(k < 0, k + n, k) for k, n in zip(idx, shape, strict=True)), shape
        ).reshape(-1)
        _, first = np.unique(flat, return_index=True)
        if first.size < flat.size:  # duplicates: write each destination's first value
            rest = base.shape[len(parts) :]
            rows = np.broadcast_to(value, idx[0].shape + rest).reshape(flat.size, *rest)
            base[tuple(k.reshape(-1)[first] for k in idx)] = rows[first]
            return
    base[key] = value


@entry
def run_ufunc(ufunc: np.ufunc, method: str, inputs: tuple, kwargs: dict) -> Any:
    """Run ``ufunc``'s ``method`` (``"__call__"``, ``"reduce"``, ...): one launch."""
    out = kwargs.get("out")
    fn = getattr(ufunc, method)
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    result = run(name, fn, inputs, kwargs, wrap=out is None)
    if method == "at":
        return None
    if out is not None:
        outs = out if isinstance(out, tuple) else (out,)
        return outs[0] if len(outs) == 1 else outs
    return result


@entry
def run_function(name: str, func: Callable, args: tuple, kwargs: dict) -> Any:
    """Run the NumPy function ``name``, counted by :mod:`kernels.counting.op_costs`."""
    if name not in SPECIAL:  # the common case, one lookup
        return run(name, func, args, kwargs)
    if name in VIEWS:
        return run(name, func, args, kwargs, launches=0)
    if name in NEEDED_COPIES:
        return run(name, func, args, kwargs, launches=lambda r: copies(r, args))
    if name in SYNCING:
        launches, syncs = SYNCING[name]
        return run(name, func, args, kwargs, launches=launches, syncs=syncs)
    if name == "where" and len(args) + len(kwargs) == 1:
        return run("where(nonzero)", func, args, kwargs, launches=3, syncs=1)
    if name == "repeat":
        repeats = args[1] if len(args) > 1 else kwargs.get("repeats")
        if isinstance(repeats, np.ndarray) and repeats.size > 1:
            return run(name, func, args, kwargs, launches=2, syncs=1)
    if name in JOINS:
        arrays = args[0] if args else kwargs.get("arrays", ())
        return run(name, func, args, kwargs, launches=max(1, len(arrays)))
    return run(name, func, args, kwargs)


def _method(name: str) -> Callable:
    """The ndarray method ``name``, counted as the function of that name."""
    params = api()["methods"].get(name, "unknown")

    @entry
    def method(self: DeviceArray, *args: Any, **kwargs: Any) -> Any:
        if state.strict and not state.depth:
            check_call(f"ndarray.{name}", params, args, kwargs)
        base_method = getattr(np.ndarray, name)
        wrap = name not in ("sort", "fill", "put")
        return (
            run_function(name, base_method, (self, *args), kwargs)
            if wrap
            else run(name, base_method, (self, *args), kwargs, wrap=False)
        )

    method.__name__ = name
    return method


for _name in METHOD_MODELS:
    setattr(DeviceArray, _name, _method(_name))


def _lacking(name: str) -> property:
    def refuse(self: DeviceArray) -> Any:
        raise AttributeError(
            f"'cupy.ndarray' object has no attribute {name!r} (CuPy {api()['version']}; "
            "the counting stand-in offers only what CuPy has: kernels.cupy_api)"
        )

    return property(refuse)


# The public attributes of NumPy's arrays that CuPy's lack (resize, setflags, ctypes, ...).
for _name in dir(np.ndarray):
    if not _name.startswith("_") and _name not in api()["ndarray_names"]:
        setattr(DeviceArray, _name, _lacking(_name))
