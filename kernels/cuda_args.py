"""A CUDA kernel's C parameters, and CuPy's rules for the arguments of a ``RawKernel`` launch.

CuPy passes each argument of ``kernel(grid, block, args)`` by its own Python or NumPy type,
not by the C parameter's: a Python ``int`` goes as a 64-bit integer, a ``float`` as a
``double``, a ``bool`` as one byte, a NumPy scalar (or a NumPy array of one element) as its
dtype, a device array as its pointer (CuPy 14: ``cupy.cuda.function._pointer`` and
``cupy._core._scalar.CScalar``). The driver copies as many bytes as the C parameter has
from where the argument lies, so a Python ``float`` for a ``float`` parameter, an ``int``
for an ``int`` parameter, or a 0-d device array for a scalar parameter is a silent bug on
a GPU: the kernel reads the wrong bytes, and every later parameter is misaligned.
CuPy checks neither the types nor the number of arguments.

:func:`kernel_params` reads the parameters of an ``extern "C" __global__`` kernel from its
source (after its ``#define`` / ``#if`` lines and ``typedef`` names) and
:func:`check_launch` checks a launch against them and against the launch limits of every
CUDA device since compute capability 3.0 (and the kernel's ``__launch_bounds__``). The
counting stand-in for CuPy (:mod:`kernels.counting`) checks every ``RawKernel`` /
``RawModule`` launch with it, so the tests that count frames, iterations and scans also
check each kernel's arguments, without a GPU.

Examples
--------
>>> src = 'extern "C" __global__ void k(const float* x, float s, long long n) {}'
>>> [(p.name, p.pointer, str(p.dtype)) for p in kernel_params(src, "k").params]
[('x', True, 'float32'), ('s', False, 'float32'), ('n', False, 'int64')]
>>> try:
...     check_launch(kernel_params(src, "k"), (1,), (128,), (None, 0.5, 7))
... except KernelArgumentError as e:
...     print(str(e).split("): ", 1)[1])
a Python float goes as a 8-byte float64 (CuPy's rule), the parameter is float32
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "KernelArgumentError",
    "KernelParams",
    "Param",
    "check_launch",
    "cupy_scalar_dtype",
    "kernel_params",
    "split_top_level",
]

#: Limits of every CUDA device since compute capability 3.0 (CUDA C Programming Guide,
#: "Technical Specifications per Compute Capability").
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
#: Dynamic shared memory a launch may ask for without opting in per kernel
#: (``cudaFuncAttributeMaxDynamicSharedMemorySize``), which this project never does.
MAX_DYNAMIC_SHARED = 48 * 1024


class KernelArgumentError(TypeError):
    """A kernel launch that would pass the wrong bytes, or fail, on a real GPU."""


# C scalar types as NumPy dtypes (LP64: long is 64-bit on Linux).
_C_TYPES = {
    "bool": np.bool_,
    "char": np.int8,
    "signed char": np.int8,
    "unsigned char": np.uint8,
    "short": np.int16,
    "unsigned short": np.uint16,
    "int": np.int32,
    "signed int": np.int32,
    "unsigned int": np.uint32,
    "unsigned": np.uint32,
    "long": np.int64,
    "unsigned long": np.uint64,
    "long long": np.int64,
    "long long int": np.int64,
    "unsigned long long": np.uint64,
    "unsigned long long int": np.uint64,
    "size_t": np.uint64,
    "ptrdiff_t": np.int64,
    "int8_t": np.int8,
    "uint8_t": np.uint8,
    "int16_t": np.int16,
    "uint16_t": np.uint16,
    "int32_t": np.int32,
    "uint32_t": np.uint32,
    "int64_t": np.int64,
    "uint64_t": np.uint64,
    "float": np.float32,
    "double": np.float64,
}
#: Pointee types through which any object may be accessed (C's character types) or that
#: say nothing of it: pointers to them take a device array of any dtype.
_ANY_POINTEE = {"void", "char", "signed char", "unsigned char"}
_QUALIFIERS = {"const", "volatile", "__restrict__", "__restrict", "restrict", "struct"}


@dataclass(frozen=True)
class Param:
    """One C parameter: its name, its type as written (typedefs resolved), whether it is a
    pointer, and the NumPy dtype of the value (of the pointee for a pointer; None where
    it is not a plain scalar type, e.g. ``void``)."""

    name: str
    ctype: str
    pointer: bool
    dtype: np.dtype | None

    @property
    def any_pointee(self) -> bool:
        return self.pointer and self.ctype in _ANY_POINTEE


@dataclass(frozen=True)
class KernelParams:
    """A kernel's name, parameters and ``__launch_bounds__`` maximum of threads per block
    (None when it has none)."""

    name: str
    params: tuple[Param, ...]
    max_threads: int | None


def _strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", " ", source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


def _eval_condition(expr: str, defines: dict[str, str]) -> bool:
    """A ``#if`` expression of integers, defined names and C's logical operators (unknown
    names are 0, as in C's preprocessor)."""
    expr = re.sub(r"defined\s*\(?\s*(\w+)\s*\)?", lambda m: "1" if m[1] in defines else "0", expr)
    for _ in range(8):  # defines that name other defines
        expr = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: defines.get(m[0], "0"), expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    if not re.fullmatch(r"[\d\s()+\-*/%<>=!andortn]*", expr):
        raise ValueError(f"cannot evaluate the preprocessor condition {expr!r}")
    return bool(eval(expr, {"__builtins__": {}}, {}))  # noqa: S307 - digits and operators


def _preprocess(source: str) -> tuple[str, dict[str, str]]:
    """The lines of ``source`` that its ``#if`` / ``#ifdef`` / ``#else`` / ``#endif`` keep,
    and its ``#define`` names (object-like ones only)."""
    defines: dict[str, str] = {}
    keep: list[str] = []
    stack: list[tuple[bool, bool]] = []  # (this branch on, some branch taken)
    for line in source.splitlines():
        s = line.strip()
        on = all(b for b, _ in stack)
        directive = re.match(r"#\s*(\w+)\s*(.*)", s)
        if not directive:
            if on:
                keep.append(line)
            continue
        word, rest = directive[1], directive[2].strip()
        if word in ("if", "ifdef", "ifndef"):
            if word == "if":
                taken = on and _eval_condition(rest, defines)
            else:
                taken = (rest in defines) == (word == "ifdef")
            stack.append((taken, taken))
        elif word == "elif":
            _, done = stack.pop()
            outer = all(b for b, _ in stack)
            taken = not done and outer and _eval_condition(rest, defines)
            stack.append((taken, done or taken))
        elif word == "else":
            _, done = stack.pop()
            stack.append((not done, True))
        elif word == "endif":
            stack.pop()
        elif word == "define" and on:
            m = re.match(r"(\w+)(?!\()\s*(.*)", rest)
            if m:
                defines[m[1]] = m[2].strip() or "1"
        elif word == "undef" and on:
            defines.pop(rest, None)
    return "\n".join(keep), defines


def _typedefs(code: str) -> dict[str, str]:
    found = {n: t for t, n in re.findall(r"\btypedef\s+([\w\s:]+?)\s+(\w+)\s*;", code)}
    found.update(re.findall(r"\busing\s+(\w+)\s*=\s*([\w\s:]+?)\s*;", code))
    return {name: " ".join(t.split()) for name, t in found.items()}


def split_top_level(text: str, opening: str, closing: str) -> list[str]:
    """``text`` split at the commas outside any bracket of ``opening``/``closing``.

    >>> split_top_level("a, f(b, c), d", "(", ")")
    ['a', ' f(b, c)', ' d']
    """
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _split_params(text: str) -> list[str]:
    parts = split_top_level(text, "<([", ">)]")
    return [p.strip() for p in parts if p.strip() and p.strip() != "void"]


def _param(text: str, typedefs: dict[str, str]) -> Param:
    pointer = text.count("*") > 0
    words = [w for w in re.findall(r"[\w:]+", text.replace("*", " ")) if w not in _QUALIFIERS]
    if len(words) < 2:
        raise ValueError(f"cannot read the kernel parameter {text!r}")
    name, ctype = words[-1], " ".join(words[:-1])
    for _ in range(8):  # typedefs of typedefs
        if ctype not in typedefs:
            break
        resolved = typedefs[ctype].split()
        ctype = " ".join(w for w in resolved if w not in _QUALIFIERS)
    dtype = _C_TYPES.get(ctype)
    if dtype is None and not (pointer and ctype in _ANY_POINTEE):
        raise ValueError(f"kernel parameter {text!r}: unknown C type {ctype!r}")
    return Param(name, ctype, pointer, None if dtype is None else np.dtype(dtype))


@functools.lru_cache(maxsize=512)
def kernel_params(source: str, name: str) -> KernelParams:
    """The parameters of the ``extern "C" __global__`` kernel ``name`` in CUDA ``source``.

    Raises ValueError when the source has no such kernel or a parameter's type is not a
    C scalar type or a pointer.
    """
    code, defines = _preprocess(_strip_comments(source))
    typedefs = _typedefs(code)
    head = re.search(
        r'extern\s+"C"\s+__global__\s+void\s*(?:__launch_bounds__\s*\(([^)]*)\)\s*)?'
        + re.escape(name)
        + r"\s*\(",
        code,
    )
    if head is None:
        raise ValueError(f'no extern "C" __global__ kernel {name!r} in the source')
    start, depth, end = head.end(), 1, head.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(code[end], 0)
        end += 1
    params = tuple(_param(p, typedefs) for p in _split_params(code[start : end - 1]))
    max_threads = None
    if head[1]:
        first = head[1].split(",")[0].strip()
        for _ in range(8):
            first = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: defines.get(m[0], m[0]), first)
        if not re.fullmatch(r"[\d\s()+\-*/]+", first):
            raise ValueError(f"cannot evaluate __launch_bounds__({head[1]})")
        max_threads = int(eval(first, {"__builtins__": {}}, {}))  # noqa: S307 - arithmetic
    return KernelParams(name, params, max_threads)


def cupy_scalar_dtype(value: Any) -> np.dtype:
    """The dtype CuPy 14 passes a scalar kernel argument as (``_scalar.CScalar``)."""
    if type(value) is bool:
        return np.dtype(np.bool_)
    if type(value) is int:
        return np.dtype(np.uint64 if value >= 2**63 else np.int64)
    if type(value) is float:
        return np.dtype(np.float64)
    if type(value) is complex:
        return np.dtype(np.complex128)
    if isinstance(value, np.generic):
        return value.dtype
    raise KernelArgumentError(f"CuPy cannot pass a {type(value).__name__} as a kernel argument")


def _dims(what: str, dims: Any, limits: tuple[int, ...], kernel: str) -> tuple[int, ...]:
    if not isinstance(dims, tuple):
        raise KernelArgumentError(
            f"kernel {kernel}: {what} must be a tuple (CuPy's RawKernel takes only tuples), "
            f"not {type(dims).__name__}"
        )
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int | np.integer) for d in dims):
        raise KernelArgumentError(f"kernel {kernel}: {what} {dims!r} is not 1 to 3 integers")
    for axis, (d, limit) in enumerate(zip(dims, limits, strict=False)):
        if d < 1:
            # CuPy launches max(1, d): a zero would still run one block of threads.
            raise KernelArgumentError(
                f"kernel {kernel}: {what}[{axis}] = {d}; CuPy would launch max(1, {d})"
            )
        if d > limit:
            raise KernelArgumentError(
                f"kernel {kernel}: {what}[{axis}] = {d} exceeds the device limit {limit}"
            )
    return tuple(int(d) for d in dims)


def check_launch(
    kernel: KernelParams,
    grid: Any,
    block: Any,
    args: Any,
    *,
    shared_mem: int = 0,
    device_array: type | tuple[type, ...] = (),
) -> None:
    """Raise :class:`KernelArgumentError` where a ``RawKernel`` launch would go wrong on a
    GPU: grid or block not a tuple or beyond the device's (or the kernel's
    ``__launch_bounds__``) limits, too much dynamic shared memory, another number of
    arguments than of parameters, or an argument that CuPy passes with other bytes than
    its parameter has (see the module docstring). ``device_array``: the device array
    type(s), passed as pointers.
    """
    name = kernel.name
    _dims("grid", grid, MAX_GRID, name)
    threads = _dims("block", block, MAX_BLOCK, name)
    total = int(np.prod(threads))
    limit = min(MAX_THREADS_PER_BLOCK, kernel.max_threads or MAX_THREADS_PER_BLOCK)
    if total > limit:
        raise KernelArgumentError(
            f"kernel {name}: a block of {total} threads exceeds {limit} (the launch fails)"
        )
    if not 0 <= int(shared_mem) <= MAX_DYNAMIC_SHARED:
        raise KernelArgumentError(
            f"kernel {name}: {shared_mem} bytes of dynamic shared memory (at most "
            f"{MAX_DYNAMIC_SHARED} without an opt-in)"
        )
    if not isinstance(args, tuple | list):
        raise KernelArgumentError(f"kernel {name}: args must be a tuple, not {type(args)}")
    if len(args) != len(kernel.params):
        raise KernelArgumentError(
            f"kernel {name}: {len(args)} arguments for {len(kernel.params)} parameters "
            f"({', '.join(p.name for p in kernel.params)}); CuPy does not check"
        )
    for i, (p, a) in enumerate(zip(kernel.params, args, strict=True)):
        where = f"kernel {name}, argument {i} ({p.name}: {p.ctype}{' *' if p.pointer else ''})"
        _check_arg(where, p, a, device_array)


def _check_arg(where: str, p: Param, a: Any, device_array: Any) -> None:
    on_device = bool(device_array) and isinstance(a, device_array)
    if p.pointer:
        if a is None:
            return  # CuPy 14 passes a null pointer
        if on_device:
            if not p.any_pointee and a.dtype != p.dtype:
                raise KernelArgumentError(
                    f"{where}: a device array of {a.dtype} for a pointer to {p.dtype}"
                )
            return
        if isinstance(a, np.ndarray):
            raise KernelArgumentError(f"{where}: a host array for a device pointer")
        if cupy_scalar_dtype(a).itemsize == 8 and cupy_scalar_dtype(a).kind in "iu":
            return  # a raw address (a null pointer as numpy.uint64(0))
        raise KernelArgumentError(f"{where}: {type(a).__name__} {a!r} for a pointer")
    if on_device:
        raise KernelArgumentError(
            f"{where}: a device array for a scalar parameter (CuPy passes its pointer); "
            "pass a NumPy scalar of the parameter's dtype"
        )
    if isinstance(a, np.ndarray):
        if a.size != 1:
            raise KernelArgumentError(f"{where}: a host array of shape {a.shape} (CuPy refuses)")
        got = a.dtype
    else:
        got = cupy_scalar_dtype(a)
    if got != p.dtype:
        source = (
            f"a Python {type(a).__name__} goes as a {got.itemsize}-byte {got} (CuPy's rule)"
            if not isinstance(a, np.generic | np.ndarray)
            else f"a {got} value"
        )
        raise KernelArgumentError(f"{where}: {source}, the parameter is {p.dtype}")
