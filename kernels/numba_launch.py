"""Numba CUDA kernels: compiled once per machine, launched on CuPy's stream for tens of
microseconds of host time.

The one launch path of every Numba CUDA kernel (the mesh shifts of
:mod:`kernels.numba_shift`, the renderer's fused stage kernels, the load-balancing search):
:func:`launch_on_stream`. Numba's own launch costs hundreds of microseconds of host time
(typed dispatch, a Numba device array made for every CuPy array, a stream wrapper, a
ctypes object per scalar), and Numba compiles every kernel again in every process. On
CuPy arrays this module uses Numba as a compiler only:

- **Compile once per machine.** The first launch of a kernel with an argument signature
  compiles it to PTX with Numba (its default options) and links that to a cubin for the
  GPU's architecture (nvJitLink, through ``cuda.core``), kept in the cache folder
  (:func:`kernels.cache.cache_dir`, ``cuda/``) under a key made of the kernel's name, its
  argument types, the architecture, the versions of Numba, NVVM and nvJitLink, and the
  content of the project's source files: an edited kernel, device function or constant
  never loads a stale binary. Later processes load the
  cubin and compile nothing. Each compilation is timed and, past a second, announced
  (:func:`kernels.compiles.compiling`). Where the cache folder cannot be written the cubin
  is kept in memory only.
- **Launch cheaply.** Per signature, the kernel's parameters are laid out once as Numba's
  kernel ABI lays out arguments: an array is ``5 + 2 * ndim`` fields (meminfo, parent,
  size, itemsize, data pointer, shape, strides), a scalar one field, a tuple its items;
  every field in an 8-byte slot of a buffer whose slot addresses are the ``void**`` of
  ``cuLaunchKernel``. A launch fills the buffer with one ``struct.pack_into`` and calls
  the driver on CuPy's current stream (ordered after the arrays' producers, no sync),
  under a lock, as the driver copies the parameters before it returns.

On NumPy arrays (Numba copies them to the device and back) and in Numba's CUDA simulator
the launch goes through Numba's dispatcher as it is. Numba's low-occupancy warning is off
(:mod:`kernels.numba_cuda`): small meshes and frames launch small grids legitimately.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from kernels.cache import cache_dir

__all__ = [
    "CompiledKernel",
    "argument_kinds",
    "probe",
    "compile_cubin",
    "compiled_count",
    "launch_on_stream",
    "parameter_format",
    "parameter_slots",
    "SLOT_FORMATS",
]

log = logging.getLogger("simd_emu.compile")

#: The project's source tree (the parent of this package).
_ROOT = Path(__file__).resolve().parents[1]

#: Types whose instances are device arrays (``__cuda_array_interface__``), learnt per type,
#: and the scalar types a kernel takes (NumPy's learnt likewise).
_ARRAY_TYPES: set[type] = set()
_SCALAR_TYPES: set[type] = {bool, int, float}

#: The prepared kernels of this process, by the id of their dispatcher (which each holds).
_PREPARED: dict[int, CompiledKernel] = {}

_compiled = 0


def compiled_count() -> int:
    """How many kernels this process has compiled (not loaded from the cache)."""
    return _compiled


def launch_on_stream(xp: Any, kernel: Any, grid: Any, block: Any, args: tuple) -> None:
    """Launch the Numba CUDA dispatcher ``kernel[grid, block]`` with ``args`` on ``xp``'s
    current stream (CuPy's; Numba's default stream for NumPy ``xp``)."""
    prepared = None if xp is np else _PREPARED.get(id(kernel))
    if prepared is None:
        if xp is np or _simulator():
            from kernels.numba_cuda import cuda_module

            kernel[grid, block, cuda_module().default_stream()](*args)
            return
        prepared = _PREPARED[id(kernel)] = CompiledKernel(kernel)
    prepared.launch(xp, grid, block, args)


def _simulator() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def _increment(a):
    """The probe kernel: ``a[i] += 1`` (``cuda`` is bound by :func:`probe`)."""
    i = cuda.grid(1)  # noqa: F821
    if i < a.size:
        a[i] += 1


def probe(xp: Any) -> str:
    """Compile (or load from the cache) and launch a tiny kernel on ``xp``'s GPU; what it
    used, in words. Raises whatever stops Numba's CUDA target here.

    A kernel computing a wrong result raises ``RuntimeError``.
    """
    import time

    from kernels.numba_cuda import cuda_module
    from kernels.rebind import bind

    cuda = cuda_module()
    before, t = _compiled, time.perf_counter()
    x = xp.arange(1000, dtype=np.int32)
    launch_on_stream(xp, cuda.jit(bind(_increment, cuda=cuda)), 4, 256, (x,))
    if not bool((x == xp.arange(1, 1001, dtype=np.int32)).all()):
        raise RuntimeError("the probe kernel computed a wrong result")
    how = "compiled" if _compiled > before else "loaded from the cache"
    return f"a probe kernel {how} and run in {time.perf_counter() - t:.2f} s ({_toolchain()})"


@functools.cache
def _toolchain() -> str:
    """The versions of Numba, numba-cuda, NVVM and nvJitLink, as far as they can be read:
    what makes a cubin, so part of its cache key."""
    parts = []
    for package in ("numba", "numba-cuda"):
        try:
            parts.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{package} version unknown")
    try:
        from numba.cuda.cudadrv import nvvm

        parts.append("NVVM {}.{}".format(*nvvm.NVVM().get_version()))
    except Exception:  # noqa: BLE001 - only a description
        parts.append("NVVM version unknown")
    try:
        from cuda.bindings import nvjitlink

        parts.append("nvJitLink {}.{}".format(*nvjitlink.version()))
    except Exception:  # noqa: BLE001
        parts.append("nvJitLink version unknown")
    return ", ".join(parts)


# --------------------------------------------------------------------------- signatures


def argument_kinds(args: tuple) -> tuple:
    """The argument types of a launch as plain data, the key of its compiled kernel:
    ``(dtype, ndim, c_contiguous)`` for a device array, the type for a scalar (a Python
    int is an int64, a float a float64, as Numba types them), a tuple of kinds for a tuple.

    Examples
    --------
    >>> argument_kinds((3, 2.5, np.float32(1), (1, 2)))
    (<class 'int'>, <class 'float'>, <class 'numpy.float32'>, (<class 'int'>, <class 'int'>))
    """
    kinds = []
    for a in args:  # a loop, not a generator: one Python-level call per argument
        kinds.append(_kind(a))
    return tuple(kinds)


def _kind(a: Any) -> Any:
    t = type(a)
    if t in _ARRAY_TYPES:
        return (a.dtype, a.ndim, bool(a.flags.c_contiguous))
    if t in _SCALAR_TYPES:
        return t
    if t is tuple:
        return argument_kinds(a)
    if isinstance(a, np.bool_ | np.integer | np.floating):
        _SCALAR_TYPES.add(t)
        return t
    if not isinstance(a, np.ndarray) and hasattr(a, "__cuda_array_interface__"):
        _ARRAY_TYPES.add(t)
        return _kind(a)
    raise TypeError(f"a Numba CUDA kernel takes no {t.__name__} argument")


#: struct codes of the scalar dtypes, each padded to an 8-byte slot.
SLOT_FORMATS = {
    np.dtype(np.bool_): "?7x",
    np.dtype(np.int8): "b7x",
    np.dtype(np.uint8): "B7x",
    np.dtype(np.int16): "h6x",
    np.dtype(np.uint16): "H6x",
    np.dtype(np.int32): "i4x",
    np.dtype(np.uint32): "I4x",
    np.dtype(np.int64): "q",
    np.dtype(np.uint64): "Q",
    np.dtype(np.float32): "f4x",
    np.dtype(np.float64): "d",
}


def _scalar_dtype(kind: type) -> np.dtype:
    if kind is bool:
        return np.dtype(np.bool_)
    if kind is int:
        return np.dtype(np.int64)
    if kind is float:
        return np.dtype(np.float64)
    return np.dtype(kind)


def parameter_format(kinds: tuple) -> str:
    """The ``struct`` format of the kernel parameters of ``kinds`` (:func:`argument_kinds`):
    one 8-byte slot per field of Numba's kernel ABI, little-endian.

    Examples
    --------
    >>> parameter_format(((np.dtype(np.float32), 2, True), int, np.float32))
    '<qqqqqqqqqqf4x'
    """
    return "<" + "".join(_fields(k) for k in kinds)


def _fields(kind: Any) -> str:
    if isinstance(kind, tuple) and len(kind) == 3 and isinstance(kind[0], np.dtype):
        return "q" * (5 + 2 * kind[1])  # meminfo, parent, size, itemsize, data, shape, strides
    if isinstance(kind, tuple):
        return "".join(_fields(k) for k in kind)
    return SLOT_FORMATS[_scalar_dtype(kind)]


def _flatten(args: tuple, out: list) -> None:
    """The values of the parameters of ``args``, in ABI order, appended to ``out``."""
    for a in args:
        if type(a) in _ARRAY_TYPES:
            out += (0, 0, a.size, a.itemsize, a.data.ptr)
            out += a.shape
            out += a.strides
        elif type(a) is tuple:
            _flatten(a, out)
        else:
            out.append(a)


def numba_types(kinds: tuple) -> tuple:
    """The Numba types of ``kinds`` (what Numba's dispatcher would type the launch as)."""
    from numba import types as nb
    from numba.np import numpy_support

    def one(kind: Any) -> Any:
        if isinstance(kind, tuple) and len(kind) == 3 and isinstance(kind[0], np.dtype):
            dtype, ndim, c_contiguous = kind
            return nb.Array(numpy_support.from_dtype(dtype), ndim, "C" if c_contiguous else "A")
        if isinstance(kind, tuple):
            return nb.BaseTuple.from_types([one(k) for k in kind])
        return numpy_support.from_dtype(_scalar_dtype(kind))

    return tuple(one(k) for k in kinds)


# --------------------------------------------------------------------------- compiling


def compile_cubin(
    py_func: Any, kinds: tuple, cc: tuple[int, int], *, refresh: bool = False
) -> tuple[bytes, str]:
    """The cubin of the kernel ``py_func`` for arguments of ``kinds`` on a GPU of compute
    capability ``cc``, and its entry point's name: from the cache folder (unless
    ``refresh``), else compiled (Numba to PTX, nvJitLink to a cubin) and stored there.
    Needs no GPU."""
    name = f"{py_func.__module__}.{py_func.__qualname__}"
    signature = ",".join(map(str, numba_types(kinds)))
    key = hashlib.sha256(
        "\n".join(
            [name, signature, f"sm_{cc[0]}{cc[1]}", _toolchain(), _source_digest(py_func)]
        ).encode()
    ).hexdigest()[:32]
    folder = cache_dir() / "cuda"
    cubin_path = folder / f"{py_func.__qualname__}-{key}.cubin"
    entry_path = cubin_path.with_suffix(".json")
    if not refresh:
        try:
            entry = json.loads(entry_path.read_text(encoding="utf-8"))["entry"]
            return cubin_path.read_bytes(), entry
        except (OSError, ValueError, KeyError):
            pass
    cubin, entry = _compile(py_func, kinds, cc, name, signature)
    _store(cubin_path, cubin, entry_path, json.dumps({"entry": entry}).encode())
    return cubin, entry


def _store(cubin_path: Path, cubin: bytes, entry_path: Path, entry: bytes) -> None:
    """Write both files under temporary names, then rename them, the entry last: a reader
    finds both or neither. A folder that cannot be written keeps nothing (said at DEBUG)."""
    written = []
    try:
        cubin_path.parent.mkdir(parents=True, exist_ok=True)
        for path, data in ((cubin_path, cubin), (entry_path, entry)):
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
            written.append(tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        for tmp, path in zip(written, (cubin_path, entry_path), strict=True):
            os.replace(tmp, path)
    except OSError as err:
        log.debug("the compiled kernel is not cached (%s): %s", cubin_path.parent, err)
        for tmp in written:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _compile(py_func: Any, kinds: tuple, cc: tuple, name: str, signature: str) -> tuple:
    global _compiled
    import time

    from cuda.core import Linker, LinkerOptions, ObjectCode

    from kernels.compiles import compiling
    from kernels.numba_cuda import cuda_module

    log.debug("compiling the GPU kernel %s(%s) for sm_%d%d", name, signature, *cc)
    t = time.perf_counter()
    with compiling():
        ptx, _ = cuda_module().compile_ptx(py_func, numba_types(kinds), cc=cc)
        entry = re.search(r"\.entry\s+([\w$]+)", ptx).group(1)
        options = LinkerOptions(arch=f"sm_{cc[0]}{cc[1]}")
        linker = Linker(ObjectCode.from_ptx(ptx.encode()), options=options)
        cubin = bytes(linker.link("cubin").code)
    _compiled += 1
    log.debug("compiled %s in %.1f s", name, time.perf_counter() - t)
    return cubin, entry


#: The project's library packages: every cubin's key covers all their source, as a kernel
#: may use any of their functions and constants (an edit anywhere compiles anew, once).
_PACKAGES = frozenset({"kernels", "simd", "renderer", "diffusion", "mimd"})


def _source_digest(py_func: Any) -> str:
    """A digest of the source of the project's library packages and of the package the
    kernel ``py_func`` is defined in (a script's or a test's, outside them)."""
    packages = set(_PACKAGES)
    path = Path(py_func.__code__.co_filename).resolve()
    if _ROOT in path.parents:
        packages.add(path.relative_to(_ROOT).parts[0])
    return _package_digest(frozenset(packages))


@functools.cache
def _package_digest(packages: frozenset[str]) -> str:
    digest = hashlib.sha256()
    for package in sorted(packages):
        for path in sorted((_ROOT / package).rglob("*.py")):  # none where it is not here
            digest.update(str(path.relative_to(_ROOT)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


# --------------------------------------------------------------------------- launching


class CompiledKernel:
    """A Numba CUDA kernel launched from its cubins, one per argument signature and device.

    ``launch_kernel`` is the driver's ``cuLaunchKernel`` (CuPy's binding), replaceable for
    tests without a GPU.
    """

    def __init__(self, dispatcher: Any, launch_kernel: Any = None) -> None:
        # Held, so that its id (the key of _PREPARED) is never another object's.
        self.dispatcher = dispatcher
        self.py_func = dispatcher.py_func
        self.launch_kernel = launch_kernel
        self.lock = threading.Lock()
        #: Per (device, argument kinds): (CUfunction, packer, parameter buffer, address of
        #: the void** array, the array itself).
        self.plans: dict[tuple, tuple] = {}

    def launch(self, xp: Any, grid: Any, block: Any, args: tuple) -> None:
        """Launch on ``xp``'s current stream over ``grid`` blocks of ``block`` threads."""
        device = xp.cuda.runtime.getDevice()
        key = (device, argument_kinds(args))
        plan = self.plans.get(key)
        if plan is None:
            plan = self.plans[key] = self.prepare(xp, device, key[1])
        function, packer, buffer, params, _ = plan
        values: list = []
        _flatten(args, values)
        gx, gy, gz = (*grid, 1, 1)[:3] if type(grid) is tuple else (grid, 1, 1)
        bx, by, bz = (*block, 1, 1)[:3] if type(block) is tuple else (block, 1, 1)
        stream = xp.cuda.get_current_stream().ptr
        with self.lock:  # one buffer per plan: filled and copied by the driver together
            packer.pack_into(buffer, 0, *values)
            self.launch_kernel(function, gx, gy, gz, bx, by, bz, 0, stream, params, 0)

    def prepare(self, xp: Any, device: int, kinds: tuple) -> tuple:
        """Load (or compile) the cubin for ``kinds`` on ``device`` and lay out its
        parameters."""
        driver = xp.cuda.driver
        if self.launch_kernel is None:
            self.launch_kernel = driver.launchKernel
        major, minor = divmod(int(xp.cuda.Device(device).compute_capability), 10)
        cubin, entry = compile_cubin(self.py_func, kinds, (major, minor))
        try:
            module = driver.moduleLoadData(cubin)
        except driver.CUDADriverError:  # a cached cubin this driver refuses: compile anew
            cubin, entry = compile_cubin(self.py_func, kinds, (major, minor), refresh=True)
            module = driver.moduleLoadData(cubin)
        function = driver.moduleGetFunction(module, entry)
        return (function, *parameter_buffer(kinds))


def parameter_buffer(kinds: tuple) -> tuple[struct.Struct, Any, int, Any]:
    """The packer of the parameters of ``kinds``, the buffer it fills (8 bytes a field),
    the address of the ``void**`` array of the fields' addresses that ``cuLaunchKernel``
    takes, and that array (to keep it alive)."""
    return parameter_slots(parameter_format(kinds))


def parameter_slots(fmt: str) -> tuple[struct.Struct, Any, int, Any]:
    """The packer of the ``struct`` format ``fmt`` of 8-byte slots, the buffer it fills,
    the address of the ``void**`` array of the slots' addresses that ``cuLaunchKernel``
    takes, and that array (to keep it alive)."""
    packer = struct.Struct(fmt)
    n = packer.size // 8
    buffer = ctypes.create_string_buffer(max(8, packer.size))
    base = ctypes.addressof(buffer)
    pointers = (ctypes.c_void_p * max(1, n))(*(base + 8 * i for i in range(n)))
    return packer, buffer, ctypes.addressof(pointers), pointers
