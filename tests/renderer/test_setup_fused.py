"""The fused triangle setup (renderer.setup_kernels) against the array code, bit for bit.

The oracle is :func:`renderer.scan.setup_triangles_arrays`, the chain of array expressions
the fused kernel replaces. Floats are compared by their bits (a last-bit difference from a
contracted multiply-add, or a -0.0, would fail).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import renderer
from kernels import counting
from renderer import pipeline
from renderer.scan import setup_triangles, setup_triangles_arrays
from renderer.setup_kernels import OUTPUTS, setup_cpu
from simd import Machine

FIELDS = [name for name, _, _ in OUTPUTS] + ["n_degenerate"]


def assert_same_setup(got, want) -> None:
    for name in FIELDS:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if g.dtype.kind == "f":
            bits = f"i{g.itemsize}"
            g, w = np.ascontiguousarray(g).view(bits), np.ascontiguousarray(w).view(bits)
        np.testing.assert_array_equal(g, w, err_msg=name)


def random_triangles(n: int, seed: int = 0) -> np.ndarray:
    """Clip coordinates with every special case of setup: degenerate triangles (repeated
    and collinear vertices), both orientations, vertices on pixel centres and half-way
    between sub-pixel steps (round half to even), horizontal edges, ones beyond the
    viewport, tiny and huge ones."""
    rng = np.random.default_rng(seed)
    clip = rng.normal(scale=0.8, size=(n, 3, 4))
    clip[..., 3] = rng.uniform(0.05, 4.0, size=(n, 3))
    k = n // 8
    clip[:k, 1] = clip[:k, 0]  # a repeated vertex
    clip[k : 2 * k, 2] = 0.5 * (clip[k : 2 * k, 0] + clip[k : 2 * k, 1])  # collinear
    clip[2 * k : 3 * k, 1, 1] = clip[2 * k : 3 * k, 0, 1]  # a horizontal edge (w = 1 below)
    clip[2 * k : 3 * k, :2, 3] = 1.0
    clip[3 * k : 4 * k, :, :2] *= 1e-4  # sub-pixel triangles
    clip[4 * k : 5 * k, :, :2] *= 40.0  # far beyond the viewport (inside the guard band)
    # window x = 0.5 + j / 512 exactly (a tie of the 1/256 snapping) on a 64-wide viewport
    j = rng.integers(-2000, 2000, size=(k, 3))
    clip[5 * k : 6 * k, :, 3] = 1.0
    clip[5 * k : 6 * k, :, 0] = (0.5 + j / 512.0) / 32.0 - 1.0
    return clip


@pytest.mark.parametrize(("width", "height"), [(64, 48), (17, 1), (1, 1)])
def test_cpu_kernel_matches_array_code(width, height):
    clip = random_triangles(4000)
    got = renderer.scan.TriangleSetup(**setup_cpu(clip, width, height))
    want = setup_triangles_arrays(np, clip, width, height)
    assert int(want.n_degenerate) >= 800  # the degenerate cases above are really there
    assert_same_setup(got, want)


def test_empty_and_non_contiguous_input():
    for clip in (np.zeros((0, 3, 4)), random_triangles(64)[:, :, :4][::2]):
        want = setup_triangles_arrays(np, clip, 32, 32)
        assert_same_setup(setup_triangles(np, clip, 32, 32), want)


def test_float32_input_takes_the_array_code():
    clip = random_triangles(64).astype(np.float32)
    assert_same_setup(setup_triangles(np, clip, 32, 32), setup_triangles_arrays(np, clip, 32, 32))


def _recording_setups(monkeypatch) -> list:
    """Wrap the pipeline's setup: every call compares the fused result with the array code."""
    seen = []

    def checked(xp, clip, width, height, *, machine=None):
        got = setup_triangles(xp, clip, width, height, machine=machine)
        host = machine.asnumpy(clip) if machine is not None else clip
        assert_same_setup(
            type(got)(**{f: _host(machine, getattr(got, f)) for f in FIELDS}),
            setup_triangles_arrays(np, host, width, height),
        )
        seen.append(int(clip.shape[0]))
        return got

    monkeypatch.setattr(pipeline, "setup_triangles", checked)
    return seen


def _host(machine, a):
    return np.asarray(machine.asnumpy(a)) if machine is not None else a


def near_clip_camera(mesh):
    cam = renderer.default_camera(mesh, (45.0, 45.0))
    distance = math.dist(cam.eye, cam.target)
    return renderer.Camera(
        eye=cam.eye, target=cam.target, up=cam.up, fovy=cam.fovy, near=distance, far=cam.far
    )


@pytest.mark.parametrize("backend", ["numpy", "counting"])
def test_frames_set_up_as_the_array_code(monkeypatch, backend):
    seen = _recording_setups(monkeypatch)
    mesh = renderer.load_dataset("balanced", 16, cache=False)
    for kw in ({}, {"camera": near_clip_camera(mesh)}):
        m = Machine(backend=backend)
        frame = renderer.render(mesh, size=64, loop="expand", machine=m, **kw)
        if kw:
            assert frame.stats.counts.clipped > 0
    assert len(seen) == 2


def test_250k_frame_set_up_as_the_array_code(monkeypatch):
    seen = _recording_setups(monkeypatch)
    mesh = renderer.load_dataset("balanced", "250k")
    renderer.render(mesh, size=512, loop="expand", machine=Machine(backend="numpy"))
    assert seen == [241_802]


def test_counting_backend_one_launch():
    m = Machine(backend="counting")
    clip = random_triangles(500)
    dclip = m.asarray(clip)
    with counting.measure() as c:
        got = setup_triangles(m.xp, dclip, 64, 48, machine=m)
    # the fused kernel and the zeroing of its degenerate count; nothing read back
    assert c.total.ops["kernel:renderer.setup_triangles"] == 1
    assert c.total.launches == 2 and c.total.syncs == 0
    want = setup_triangles_arrays(np, clip, 64, 48)
    assert_same_setup(type(got)(**{f: _host(m, getattr(got, f)) for f in FIELDS}), want)
