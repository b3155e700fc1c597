"""The Numba CUDA launch path without a GPU: a kernel compiled once per machine (a second
process compiles nothing), and the host work of one launch counted.

The parameter layout is checked against the PTX of every specialisation the CuPy path
launches in ``tests/gpu_audit/test_numba_launches.py``; the kernels' results against the
NumPy backend on a real GPU in the ``gpu`` tests.
"""

from __future__ import annotations

import itertools
import struct
import types

import numpy as np
import pytest

from kernels import numba_launch
from tests.gpu_compile import ptx_from_child, require_installed
from tests.kernels.host_calls import calls_of

_CHILD = """
import json, sys
import numpy as np
from kernels.numba_launch import compile_cubin, compiled_count
from tests.kernels import launch_kernels
cubin, entry = compile_cubin(launch_kernels.add_scalar, ((np.dtype(np.float32), 1, True), int),
                             (9, 0))
print(json.dumps({"compiled": compiled_count(), "elf": cubin[:4] == b"\\x7fELF",
                  "size": len(cubin), "entry": entry}))
"""


def test_a_second_process_compiles_nothing(tmp_path, monkeypatch):
    require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")
    require_installed("cuda.core", "cuda-core (nvJitLink)")
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(tmp_path))
    first = ptx_from_child(_CHILD)
    files = sorted(p.name for p in (tmp_path / "cuda").iterdir())
    second = ptx_from_child(_CHILD)
    assert first["compiled"] == 1 and first["elf"] and "add_scalar" in first["entry"]
    assert second == {**first, "compiled": 0}
    assert len(files) == 2 and sorted(p.name for p in (tmp_path / "cuda").iterdir()) == files


def test_a_cache_folder_that_cannot_be_written_keeps_the_cubin_in_memory(tmp_path, monkeypatch):
    require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")
    require_installed("cuda.core", "cuda-core (nvJitLink)")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(blocker / "cache"))
    got = ptx_from_child(_CHILD)
    assert got["compiled"] == 1 and got["elf"]
    assert [p.name for p in tmp_path.iterdir()] == ["a-file"]


def test_the_cache_key_follows_the_projects_source(tmp_path, monkeypatch):
    """The key covers the library packages and the kernel's own package: an edit to any
    of their files is another cubin; other files are not read."""
    numba_launch._package_digest.cache_clear()
    monkeypatch.setattr(numba_launch, "_ROOT", tmp_path)
    for package in ("kernels", "renderer", "tests", "elsewhere"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "a.py").write_text("x = 1\n")
    code = types.SimpleNamespace(co_filename=str(tmp_path / "tests" / "k.py"))
    kernel = types.SimpleNamespace(__code__=code)

    def digest():
        numba_launch._package_digest.cache_clear()
        return numba_launch._source_digest(kernel)

    one = digest()
    (tmp_path / "elsewhere" / "a.py").write_text("x = 2\n")
    assert digest() == one
    for package in ("kernels", "renderer", "tests"):
        (tmp_path / package / "a.py").write_text(f"x = {package!r}\n")
        assert digest() != one
        one = digest()
    numba_launch._package_digest.cache_clear()


class _DeviceArray:
    """What a launch reads of a CuPy array, as plain attributes (no Python-level calls)."""

    __cuda_array_interface__ = {}

    def __init__(self, shape, dtype, ptr):
        a = np.empty(shape, dtype)
        self.dtype, self.ndim, self.shape, self.strides = a.dtype, a.ndim, a.shape, a.strides
        self.size, self.itemsize = a.size, a.itemsize
        self.flags = types.SimpleNamespace(c_contiguous=True)
        self.data = types.SimpleNamespace(ptr=ptr)


def _launched(args):
    """Launch a kernel prepared without a GPU; the parameters the driver got, unpacked,
    and the Python-level and C-level calls of the launch."""
    calls = []

    def launch_kernel(*launch):
        calls.append(launch)

    kinds = numba_launch.argument_kinds(args)
    kernel = numba_launch.CompiledKernel(types.SimpleNamespace(py_func=None), launch_kernel)
    plan = (42, *numba_launch.parameter_buffer(kinds))
    packer, fields = plan[1], numba_launch.parameter_format(kinds)[1:]
    kernel.plans[(0, kinds)] = plan
    stream = types.SimpleNamespace(ptr=7)
    xp = types.SimpleNamespace(
        cuda=types.SimpleNamespace(
            runtime=types.SimpleNamespace(getDevice=(0).__int__),
            get_current_stream=itertools.repeat(stream).__next__,  # a C callable
        )
    )
    kernel.launch(xp, 4, 256, args)  # warm: the argument types are learnt
    events = calls_of(lambda: kernel.launch(xp, 4, 256, args))
    *shape, params, _ = calls[-1]
    pointers = (numba_launch.ctypes.c_void_p * len(fields)).from_address(params)
    raw = b"".join(numba_launch.ctypes.string_at(p, 8) for p in pointers)
    return (tuple(shape[:7]) + (shape[8],), packer.unpack(raw)), events


def test_a_launch_packs_the_arguments_as_numbas_abi():
    a = _DeviceArray((3, 5), np.float32, ptr=0x1000)
    b = _DeviceArray((6,), np.int64, ptr=0x2000)
    (launch, params), _ = _launched((a, 9, b, 2.5, (1, 2)))
    assert launch == (42, 4, 1, 1, 256, 1, 1, 7)
    assert params == (
        (0, 0, 15, 4, 0x1000, 3, 5, 20, 4)  # meminfo, parent, size, itemsize, data, ...
        + (9,)
        + (0, 0, 6, 8, 0x2000, 6, 8)
        + (2.5, 1, 2)
    )


@pytest.mark.parametrize("n_arrays", [1, 15])
def test_the_host_work_of_a_launch_is_bounded(n_arrays):
    """One launch: the launch itself, the argument kinds (one call per argument), the
    flattening and the driver; a bounded number of C calls per argument."""
    args = tuple(_DeviceArray((64,), np.float64, 4096 * (i + 1)) for i in range(n_arrays))
    args += (3, 0.5)
    _, events = _launched(args)
    n = len(args)
    # the lambda calling it, the launch, kinds, _kind each, flatten, driver
    assert events["call"] == 1 + 1 + 1 + n + 1 + 1
    assert events["c_call"] <= 8 + 2 * n, events


def test_arguments_of_no_kernel_type_are_refused():
    with pytest.raises(TypeError, match="takes no str argument"):
        numba_launch.argument_kinds(("x",))


def test_the_parameter_format_pads_every_field_to_8_bytes():
    kinds = ((np.dtype(np.uint8), 3, False), bool, np.int16, np.uint32, (float, np.float32))
    fmt = numba_launch.parameter_format(kinds)
    assert struct.calcsize(fmt) == 8 * (11 + 1 + 1 + 1 + 2)
