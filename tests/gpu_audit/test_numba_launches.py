"""Every Numba kernel specialisation that the CuPy path launches compiles for sm_90.

Numba's CUDA dispatcher compiles one specialisation per argument signature at the first
launch on a GPU. The PTX tests of each kernel compile hand-written signatures, and the
CUDA simulator runs the Python functions untyped: a launch whose argument types differ
from those (a C-contiguous table where the test wrote a strided one, an int32 field
where it wrote int64, a Python int where it wrote a float) would be typed and compiled
for the first time on the GPU. Here the counting stand-in records the argument types of
every Numba launch of counted frames (every loop form, a near-plane clip, a prepared
scene), shifts and halo exchanges of every element size and the mesh diffusion
(``kernels.counting.numba_launches``), and a child process with the real ``numba.cuda``
compiles exactly those signatures for sm_90. The launch shapes (``_grid`` helpers) are
checked against the device limits for every size up to the grid caps.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from kernels import counting
from kernels.cuda_args import MAX_BLOCK, MAX_GRID, MAX_THREADS_PER_BLOCK
from simd import Machine
from tests.gpu_compile import ptx_from_child, require_installed

_SCRIPT = """
import json
import re
import types as pytypes
from unittest import mock

import numpy as np
from numba import cuda, types
from numba.np import numpy_support

from kernels.numba_shift_kernels import build_kernels as shift_kernels
from renderer.stages.cuda_kernels import KERNEL_NAMES, kernel_functions
from simd.balance.cost_effective import search_kernels

funcs = {long: kernel_functions()[short] for short, long in KERNEL_NAMES.items()}
funcs.update({f"numba_shift.{k}": d.py_func for k, d in shift_kernels().items()})
funcs[search_kernels.KERNEL_NAME] = search_kernels.kernel_function()


def typ(d):
    if d[0] in ("array", "host_array"):
        return types.Array(numpy_support.from_dtype(np.dtype(d[1])), d[2], d[3])
    if d[0] == "scalar":
        return numpy_support.from_dtype(np.dtype(d[1]))
    return types.BaseTuple.from_types([typ(x) for x in d[1]])


sm90 = pytypes.SimpleNamespace(compute_capability=(9, 0))
out = {}
for key, (name, sig) in json.loads(%r).items():
    with mock.patch("numba.cuda.dispatcher.get_current_device", return_value=sm90):
        ptx = cuda.compile_ptx(funcs[name], tuple(typ(d) for d in sig), cc=(9, 0))[0]
    out[key] = {
        "target": "sm_90" if ".target sm_90" in ptx else ptx[:200],
        "params": re.findall(r"\\.param \\.(\\w+)", ptx),
    }
print(json.dumps(out))
"""


def _near_clip(renderer, mesh):
    import math

    cam = renderer.default_camera(mesh, (45.0, 45.0))
    d = math.dist(cam.eye, cam.target)
    return renderer.Camera(eye=cam.eye, target=cam.target, up=cam.up, fovy=cam.fovy,
                           near=d, far=cam.far)  # fmt: skip


@pytest.fixture(scope="module")
def launched() -> dict[str, tuple]:
    """(kernel name, argument types) of every Numba launch of the runs, by a short key."""
    import renderer
    from diffusion import mesh_diffusion

    before = dict(counting.numba_launches)
    for name in ("balanced", "unbalanced"):
        mesh = renderer.load_dataset(name, 12, cache=False)
        for loop in ("expand", "original", "cost-effective"):
            renderer.render(mesh, size=48, loop=loop, machine=Machine(backend="counting"))
        renderer.render(mesh, size=48, camera=_near_clip(renderer, mesh),
                        machine=Machine(backend="counting"))  # fmt: skip
    scene = renderer.Scene(renderer.load_dataset("balanced", 12, cache=False),
                           machine=Machine(backend="counting"))  # fmt: skip
    renderer.render(scene, size=48)
    m = Machine(pes=(4, 4), backend="counting")
    for dtype in (np.bool_, np.int8, np.int16, np.int32, np.float32, np.int64, np.float64):
        x = m.asarray((np.arange(8 * 12 * 3) % 5).astype(dtype).reshape(8, 12, 3))
        for boundary in ("wrap", "zero", "edge", 1):
            m.shift(x, (1, -2, 0), boundary=boundary)
            m.shift(x[:, :, 0], 1, axis=1, boundary=boundary)
        tiles = m.asarray((np.arange(4 * 4 * 5 * 6) % 7).astype(dtype).reshape(4, 4, 5, 6))
        m.halo_exchange(tiles, [5, 4, 5, 3], [6, 6, 2, 5], width=1, boundary="edge")
    img = (np.random.default_rng(0).random((24, 24)) * 100).astype(np.float32)
    mesh_diffusion(img, niter=2, machine=m)
    mesh_diffusion(img, niter=2, epsilon=1e-3, balance_every=1, machine=m)
    after = counting.numba_launches
    new = [k for k in after if after[k] > before.get(k, 0)]
    return {f"{name}/{i}": (name, sig) for i, (name, sig) in enumerate(sorted(new))}


def test_launches_take_device_arrays_only(launched):
    host = {k: v for k, v in launched.items() if "host_array" in json.dumps(v)}
    assert not host, f"Numba would copy host arrays at every launch: {host}"
    names = {name for name, _ in launched.values()}
    assert {"numba_shift.shift3", "numba_shift.halo", "renderer.setup_triangles"} <= names


@pytest.fixture(scope="module")
def compiled(launched) -> dict[str, dict]:
    """The sm_90 PTX target and parameter list of every launched specialisation."""
    require_installed("numba_cuda", "numba-cuda (the CUDA target of Numba)")
    return ptx_from_child(_SCRIPT % json.dumps(launched))


def test_every_launched_specialisation_compiles_for_sm90(launched, compiled):
    bad = {k: v["target"] for k, v in compiled.items() if v["target"] != "sm_90"}
    assert not bad and sorted(compiled) == sorted(launched), bad


def _kind(d):
    """``kernels.numba_launch``'s kind of a counting-backend argument type."""
    if d[0] == "array":
        return (np.dtype(d[1]), d[2], d[3] == "C")
    if d[0] == "scalar":
        return np.dtype(d[1]).type
    return tuple(_kind(x) for x in d[1])


#: Bytes of a PTX parameter type (u64, f32, b8, ...) and of a parameter_format field.
_PTX_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8}
_FIELD_BYTES = {"q": 8, "Q": 8, "d": 8, "i": 4, "I": 4, "f": 4, "h": 2, "H": 2, "b": 1}
_FIELD_BYTES.update({"B": 1, "?": 1})


def test_parameter_layout_matches_the_ptx_of_every_launched_specialisation(launched, compiled):
    """The launch path packs each argument as Numba's kernel ABI lays it out: the same
    number of parameters, each of the PTX's width (the oracle is the compiled kernel)."""
    from kernels.numba_launch import parameter_format

    for key, (_, sig) in launched.items():
        fields = re.findall(r"[qQdiIfhHbB?]", parameter_format(tuple(_kind(d) for d in sig)))
        ptx = compiled[key]["params"]
        assert [_FIELD_BYTES[f] for f in fields] == [_PTX_BYTES[t[1:]] for t in ptx], key


# ------------------------------------------------------------- launch shapes vs limits


def _sizes():
    yield from range(1, 70)
    for e in range(7, 40):
        for d in (-1, 0, 1):
            yield 2**e + d


def _within_limits(grid, block):
    grid = (grid,) if isinstance(grid, int) else tuple(grid)
    block = (block,) if isinstance(block, int) else tuple(block)
    assert all(1 <= g <= lim for g, lim in zip(grid, MAX_GRID, strict=False)), grid
    assert all(1 <= b <= lim for b, lim in zip(block, MAX_BLOCK, strict=False)), block
    assert int(np.prod(block)) <= MAX_THREADS_PER_BLOCK


def test_shift_launch_shapes_are_within_the_limits():
    from kernels.numba_shift import _THREADS, _grid

    for ex in (1, 3, 4, 5, 64, 1000, 2**20, 2**33):
        for ey in (1, 2, 7, 300, 2**17, 2**31):
            for ez in (1, 5, 70000):
                _within_limits(*_grid((ex, ey, ez), _THREADS))


def test_one_dimensional_launch_shapes_are_within_the_limits(monkeypatch):
    """The fused renderer kernels and the search kernel: ``min(cap, ceil(n / threads))``
    blocks of their thread count, for every size; the launch itself is intercepted."""
    from kernels import fastpaths
    from renderer.stages import cuda_kernels
    from simd.balance.cost_effective import search_kernels

    shapes = []
    monkeypatch.setattr(
        fastpaths, "launch", lambda xp, name, build, grid, block, args: shapes.append((grid, block))
    )
    for n in _sizes():
        cuda_kernels._launch(np, "decode", n, ())
    for n in (1, 5, 1000, 2**20):
        search_kernels.search_device(np, np.zeros(2, np.int64), 0, n)
    assert len(shapes) > 100
    for grid, block in shapes:
        _within_limits(grid, block)
