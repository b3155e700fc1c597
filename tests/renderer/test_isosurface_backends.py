"""renderer.isosurface on every backend: the fused CPU kernels bit for bit against the array
code, the counting stand-in for CuPy (the GPU code path, its launches and host syncs
pinned), the array code itself (``SIMD_FORCE_REFERENCE=1``), the model clock, and CuPy
(``gpu``)."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from kernels import counting
from renderer.contour import arrays as contour_arrays
from renderer.contour import cpu_kernels as contour_cpu_kernels
from renderer.contour import parameters
from simd import Machine

#: Per extraction on the counting stand-in (pinned: they may only go down). Syncs: one
#: read back of the output sizes with the checks' counts, one of the mesh. Launches: the
#: classification and the counts (one fused kernel each), the two scans (one kernel each;
#: the set-up of a scan's scratch, once per process, is not counted), the checks'
#: reduction, the sizes (two adds and a stack of two), the read back's copies into one
#: buffer (two, then three), the emission (one fused kernel).
BUDGET = {"launches": 15, "syncs": 2}


def smooth(shape, seed, sigma=1.2):
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(seed)
    return gaussian_filter(rng.standard_normal(shape), sigma).astype(np.float32)


def ball(n=16):
    t = np.linspace(-1, 1, n)
    x, y, z = np.meshgrid(t, t, t, indexing="ij")
    return (0.5 - (x * x + y * y + z * z)).astype(np.float32)


def volumes():
    """Volumes that exercise the kernels' paths: smooth, plateaus at the level, float64,
    one cell thick along each axis, rows crossed everywhere."""
    quantised = np.round(smooth((7, 8, 9), 1) * 4) / 4
    rows = np.zeros((4, 5, 6), np.float32)
    rows[::2] = 1.0  # planes alternate: the rows are constant, and differ
    # many values a hair below a level no float32 holds: compared as the kernels compare
    near = np.random.default_rng(1).random((8, 9, 10)).astype(np.float32) * 0.2
    near[np.random.default_rng(2).random(near.shape) < 0.3] = np.float32(0.1)
    return {
        "just-below-the-level": (near, float(np.float32(0.1)) + 1e-10),
        "smooth": (smooth((9, 10, 11), 0), 0.0),
        "level-not-float32": (smooth((9, 10, 11), 0), 0.1),
        "plateaus": (quantised, 0.0),
        "float64": (smooth((8, 7, 6), 2).astype(np.float64), 0.05),
        "thin-0": (smooth((2, 9, 10), 3), 0.0),
        "thin-1": (smooth((9, 2, 10), 4), 0.0),
        "thin-2": (smooth((9, 10, 2), 5), 0.0),
        "constant-rows": (rows, 0.5),
    }


def offsets(edges, tris, spans):
    starts = (np.cumsum(edges.reshape(-1)) - edges.reshape(-1)).reshape(edges.shape)
    return (starts, np.cumsum(tris) - tris, spans), (int(edges.sum()), int(tris.sum()))


@pytest.mark.parametrize("case", sorted(volumes()))
def test_cpu_kernels_match_the_array_code(case):
    volume, level = volumes()[case]
    got = contour_cpu_kernels.classify_cpu(volume, level)
    want = contour_arrays.classify_arrays(np, volume, level)
    for name, a, b in zip(("rows", "edges", "tris", "spans"), got, want, strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
    rows, edges, tris, spans = want
    where, sizes = offsets(edges, tris, spans)
    geometry = (0.5, 1.0, 2.0, -1.0, 0.0, 3.0)
    wide = (np.float64, np.int64)
    got = contour_cpu_kernels.emit_cpu(volume, level, geometry, rows, where, sizes, wide)
    want = contour_arrays.emit_arrays(np, volume, level, geometry, rows, where, sizes)
    for name, a, b in zip(("vertices", "normals", "faces"), got, want, strict=True):
        assert np.array_equal(a, b), name  # bit for bit
    # the default types: the same values rounded where they are stored
    narrow = contour_cpu_kernels.emit_cpu(volume, level, geometry, rows, where, sizes)
    assert [a.dtype for a in narrow] == [np.float32, np.float32, np.int32]
    for name, a, b in zip(("vertices", "normals", "faces"), narrow, want, strict=True):
        assert np.array_equal(a, b.astype(a.dtype)), name


def test_thresholds_compare_as_the_level():
    values = np.float32([0.1, np.nextafter(np.float32(0.1), 1), -np.inf, 3e38, np.nan])
    for level in (0.1, float(np.float32(0.1)), -1e39, 1e39, 0.0):
        above, at = parameters.thresholds(np.float32, level)
        assert np.array_equal(values >= above, values.astype(np.float64) >= level)
        assert np.array_equal(values == at, values.astype(np.float64) == level)


@pytest.mark.parametrize("case", ["smooth", "plateaus", "thin-2", "float64"])
def test_every_backend_gives_the_same_mesh(monkeypatch, case):
    volume, level = volumes()[case]
    want = renderer.isosurface(volume, level, machine=Machine(pes=64, backend="numpy"))
    got = renderer.isosurface(volume, level, machine=Machine(pes=64, backend="counting"))
    monkeypatch.setenv("SIMD_FORCE_REFERENCE", "1")
    arrays = renderer.isosurface(volume, level, machine=Machine(pes=64, backend="numpy"))
    for mesh in (got, arrays):
        assert np.array_equal(mesh.vertices, want.vertices)
        assert np.array_equal(mesh.normals, want.normals)
        assert np.array_equal(mesh.faces, want.faces)
        assert type(mesh.vertices) is np.ndarray


def test_counting_backend_within_budget():
    m = Machine(backend="counting")
    volume = ball()
    renderer.isosurface(volume, 0.0, machine=m)  # the case tables go to the device once
    with counting.measure() as c:
        mesh = renderer.isosurface(volume, 0.0, machine=m)
        assert isinstance(mesh, renderer.DeviceMesh)
        assert mesh.vertices.dtype == np.float32  # the mesh comes to the host when read
    total = c.total
    assert total.syncs == BUDGET["syncs"], dict(total.sync_ops)
    assert total.launches == BUDGET["launches"], dict(total.ops)
    assert total.ops["kernel:renderer.contour_classify"] == 1
    assert total.ops["kernel:renderer.contour_count"] == 1
    assert total.ops["kernel:renderer.contour_emit"] == 1
    assert not total.implicit, "host arrays mixed into device operations"
    assert total.h2d_bytes == volume.nbytes  # the volume, nothing else
    # float32 vertices and normals, int32 faces: half the bytes of float64 and int64
    out = (48 * len(mesh.vertices) + 24 * mesh.n_faces) // 2
    assert out < total.d2h_bytes < out + 64  # the mesh, the sizes and the checks
    assert c.stages()["classify"].syncs == 0 and c.stages()["emit"].syncs == 0


def test_phases_and_model_clock():
    m = Machine(pes=512, backend="numpy")
    volume = ball(16)
    renderer.isosurface(volume, 0.0, machine=m)
    stats = m.stats
    assert list(stats.phases) == ["classify", "scan", "emit"]
    assert stats["scan"].calls == {"scan": 2, "reduce": 1}
    assert stats["emit"].calls == {"shift": 15, "elementwise": 2, "send": 6}
    # pinned: the model clock is deterministic (16^3 points on a CM-5 of 512 nodes)
    assert m.clock == 7912.0
    again = Machine(pes=512, backend="counting")
    renderer.isosurface(volume, 0.0, machine=again)
    assert again.clock == m.clock


def test_device_array_for_a_host_machine():
    volume = ball(12)
    device = counting.cupy.asarray(volume)
    m = Machine(pes=64, backend="numpy")
    got = renderer.isosurface(device, 0.0, machine=m)
    want = renderer.isosurface(volume, 0.0, machine=m)
    assert np.array_equal(got.faces, want.faces)


@pytest.mark.gpu
def test_gpu_matches_numpy(gpu_machine, cpu_machine):
    import cupy

    volume, level = volumes()["plateaus"]
    want = renderer.isosurface(volume, level, machine=cpu_machine)
    got = renderer.isosurface(cupy.asarray(volume), level, machine=gpu_machine)
    assert np.array_equal(got.vertices, want.vertices)
    assert np.array_equal(got.normals, want.normals)
    assert np.array_equal(got.faces, want.faces)
    big = renderer.datasets.marschner_lobb(64)
    want = renderer.isosurface(big, 0.5, machine=cpu_machine)
    got = renderer.isosurface(big, 0.5, machine=gpu_machine)
    assert np.array_equal(got.faces, want.faces)
    assert np.array_equal(got.vertices, want.vertices)
