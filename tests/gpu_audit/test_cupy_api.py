"""The CuPy code path asks CuPy only for what CuPy 14 has, in the form CuPy takes.

The counting stand-in runs the CuPy path on NumPy, whose API is wider: without these
checks a NumPy-only name, keyword or method would pass every test here and fail on the
first GPU run. Three nets:

- a static scan of the sources (``simd``, ``kernels``, ``renderer``, ``diffusion``,
  ``mimd``, ``bench``): every attribute of ``xp`` / ``cupy`` / ``cupyx`` exists in the
  installed CuPy (or in the stored table, ``kernels.cupy_api``), and every call's
  keywords and argument count bind to CuPy's signature;
- the stand-in refuses at run time what CuPy refuses (names, keywords, ufunc keywords
  and list operands, ndarray methods, ``get(out=)`` mismatches), checked here;
- the programs run on the stand-in with NumPy's conversions refusing device arrays
  (``counting.host_conversions_refused``), as CuPy's arrays do.
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest

from kernels import counting, cupy_api
from kernels.counting import cupy as xp

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("simd", "kernels", "renderer", "diffusion", "mimd", "bench")
#: The names a CuPy array namespace is held under in the sources.
ROOTS = {"xp", "cupy", "cupyx", "cp"}
#: Attributes of the counting stand-in only, reached through ``xp`` where it may be one
#: (always behind ``getattr(xp, name, None)`` / ``hasattr``, never on real CuPy).
STAND_IN_ONLY = {"launch_emulated", "push_scope", "pop_scope", "measure", "scope", "device_name"}


def _sources():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            if path.parent != ROOT / "kernels" / "counting":  # the stand-in itself
                yield path


def _chain(node):
    """``["xp", "cuda", "Event"]`` of an attribute chain rooted at a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    if isinstance(node, ast.Attribute):  # self.xp.where, m.xp.zeros: rooted at .xp
        return None
    return None


def _uses():
    """(path, line, chain, call node or None) of every ``xp.`` / ``cupy.`` chain, counting
    ``self.xp`` and ``m.xp`` as ``xp``."""
    for path in _sources():
        tree = ast.parse(path.read_text(), str(path))
        calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
        seen = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or id(node) in seen:
                continue
            parts, inner = [], node
            while isinstance(inner, ast.Attribute):
                seen.add(id(inner))
                parts.append(inner.attr)
                inner = inner.value
            parts.reverse()
            if isinstance(inner, ast.Name) and inner.id in ROOTS:
                chain = [inner.id, *parts]
            elif "xp" in parts[:-1] or (parts and parts[0] == "xp"):
                chain = parts[parts.index("xp") :]  # self.xp.where -> xp.where
            else:
                continue
            if len(chain) < 2:
                continue
            # the call of the whole chain, if any (the outermost attribute node)
            yield path, node.lineno, chain, calls.get(id(node))


@pytest.fixture(scope="module")
def cupy_module():
    return pytest.importorskip("cupy")


def test_the_stored_table_is_the_installed_cupys(cupy_module):
    stored = cupy_api.load()
    if cupy_module.__version__ != stored["version"]:
        pytest.skip(f"CuPy {cupy_module.__version__} here, the table is of {stored['version']}")
    fresh = cupy_api.snapshot(cupy_module, np)
    assert set(fresh["names"]) == stored["names"], "run: python -m kernels.cupy_api"
    # The functions NumPy has too: those NumPy removed (row_stack in 2.5) drop out here.
    here = {k: v for k, v in stored["functions"].items() if hasattr(np, k)}
    assert fresh["functions"] == here, "run: python -m kernels.cupy_api"
    assert fresh["methods"] == stored["methods"], "run: python -m kernels.cupy_api"
    assert fresh["ufunc_methods"] == stored["ufunc_methods"]


def test_sources_use_only_what_cupy_has(cupy_module):
    import cupyx  # noqa: F401 - so that cupyx's submodules resolve

    missing = []
    for path, line, chain, _ in _uses():
        root, first = chain[0], chain[1]
        if root in ("xp",) and first in STAND_IN_ONLY:
            continue
        obj = cupy_module if root in ("xp", "cupy", "cp") else __import__("cupyx")
        for name in chain[1:]:
            if name in ("ptr",):  # attributes of values (a stream's pointer)
                break
            try:
                obj = getattr(obj, name)
            except AttributeError:
                missing.append(f"{path.relative_to(ROOT)}:{line}: {'.'.join(chain)}")
                break
            if not isinstance(obj, type(cupy_module)) and not hasattr(obj, "__dict__"):
                break
    assert not missing, "not in CuPy:\n" + "\n".join(missing)


def test_calls_bind_to_cupys_signatures():
    api = cupy_api.load()
    wrong = []
    checked = 0
    for path, line, chain, call in _uses():
        if call is None or len(chain) != 2 or chain[0] == "cupyx":
            continue
        params = api["functions"].get(chain[1])
        sig = cupy_api.signature(params)
        if sig is None or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        if any(k.arg is None for k in call.keywords):  # **kwargs
            continue
        try:
            sig.bind(*call.args, **{k.arg: None for k in call.keywords})
            checked += 1
        except TypeError as err:
            wrong.append(f"{path.relative_to(ROOT)}:{line}: {'.'.join(chain)}: {err}")
    assert not wrong, "calls CuPy would refuse:\n" + "\n".join(wrong)
    assert checked > 300  # the scan sees the sources' calls


# ------------------------------------------------------------ the stand-in refuses them


@pytest.fixture
def a():
    return xp.asarray(np.arange(6, dtype=np.int64))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda a: xp.errstate, AttributeError, "no attribute 'errstate'"),
        (lambda a: xp.insert(a, 0, 1), AttributeError, "no attribute 'insert'"),
        (lambda a: np.insert(a, 0, 1), TypeError, "no implementation found for 'numpy.insert'"),
        (lambda a: xp.argsort(a, stable=True), TypeError, "stable"),
        (lambda a: xp.sort(a, stable=True), TypeError, "stable"),
        (lambda a: xp.max(a, initial=0), TypeError, "initial"),
        (lambda a: xp.take_along_axis(a, a), TypeError, "axis"),
        (lambda a: xp.count_nonzero(a, keepdims=True), TypeError, "keepdims"),
        (lambda a: xp.maximum(a, 1, where=a > 2), TypeError, "no keyword where"),
        (lambda a: xp.add(a, [1, 2, 3, 4, 5, 6]), TypeError, "not a list"),
        (lambda a: xp.add.reduce(a, initial=0), TypeError, "initial"),
        (lambda a: a.item(0), TypeError, "argument"),
        (lambda a: a.resize((3, 2)), AttributeError, "no attribute 'resize'"),
        (lambda a: a.setflags(write=False), AttributeError, "no attribute 'setflags'"),
        (lambda a: a.sum(where=a > 1), TypeError, "where"),
        (lambda a: a.max(initial=0), TypeError, "initial"),
        (lambda a: a.get(out=np.empty(6, np.int32)), TypeError, "out of int32"),
        (lambda a: a.get(out=np.empty(3, np.int64)), ValueError, "out of int64"),
    ],
)
def test_the_stand_in_refuses_what_cupy_refuses(a, call, error, match):
    with pytest.raises(error, match=match):
        call(a)


def test_what_cupy_takes_still_runs(a):
    assert int(xp.argsort(a, kind="stable")[0]) == 0
    assert int(xp.maximum(a, 2, dtype=np.int64)[0]) == 2
    assert int(xp.add.reduce(a, axis=0)) == 15
    assert int(a.reshape(2, 3).sum(axis=1, keepdims=True)[1, 0]) == 12
    assert a.item is not None and int(a[2].item()) == 2
    host = np.empty(6, np.int64)
    assert a.get(out=host) is host


def test_numpy_conversions_of_device_arrays_are_refused_in_the_block(a):
    with counting.host_conversions_refused():
        for convert in (np.asarray, np.array, np.ascontiguousarray):
            with pytest.raises(TypeError, match="Implicit conversion"):
                convert(a)
        with pytest.raises(TypeError, match="Implicit conversion"):
            np.asarray([a, a])
        assert np.asarray([1, 2]).sum() == 3  # host data converts as ever
        assert xp.asnumpy(a).sum() == 15 and a.get().sum() == 15
    assert np.asarray(a).sum() == 15  # restored


# ----------------------------------------- the programs on the stand-in, conversions refused


@pytest.fixture
def strict():
    with counting.host_conversions_refused():
        yield


@pytest.mark.parametrize("loop", ["expand", "original", "cost-effective"])
def test_frames_convert_no_device_array(strict, loop):
    import renderer
    from simd import Machine

    for name in ("balanced", "unbalanced"):
        mesh = renderer.load_dataset(name, 12, cache=False)
        frame = renderer.render(mesh, size=48, loop=loop, machine=Machine(backend="counting"))
        assert frame is not None


def test_scene_and_orbit_frames_convert_no_device_array(strict):
    import renderer
    from simd import Machine

    mesh = renderer.load_dataset("balanced", 12, cache=False)
    scene = renderer.Scene(mesh, machine=Machine(backend="counting"))
    for angle in (0.0, 90.0):
        renderer.render(scene, size=48, camera=renderer.default_camera(mesh, (30.0, angle)))


def test_diffusion_converts_no_device_array(strict):
    from diffusion import anisotropic_diffusion, mesh_diffusion

    img = (np.random.default_rng(0).random((20, 24)) * 100).astype(np.float32)
    anisotropic_diffusion(xp.asarray(img), niter=3)
    anisotropic_diffusion(xp.asarray(img), niter=3, epsilon=1e-3, freeze=True, return_info=True)
    vol = (np.random.default_rng(1).random((6, 8, 8)) * 100).astype(np.float32)
    anisotropic_diffusion(xp.asarray(vol), niter=2, epsilon=1e-3, return_info=True)
    assert mesh_diffusion is not None
