"""The three loop forms give the same image (and the balancer actually balances)."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from renderer.datasets.builtin import load_dataset
from simd import Machine


@pytest.fixture(scope="module")
def small_meshes():
    return {kind: load_dataset(kind, 32) for kind in ("balanced", "unbalanced")}


@pytest.mark.parametrize("kind", ["balanced", "unbalanced"])
@pytest.mark.parametrize("view,mag", [((0, 0), 1.0), ((45, 45), 1.0), ((45, 45), 2.5)])
def test_images_identical_across_loop_forms(small_meshes, kind, view, mag):
    mesh = small_meshes[kind]
    frames = {
        form: renderer.render(
            mesh,
            view=view,
            magnification=mag,
            size=96,
            loop=form,
            machine=Machine(pes=32, backend="numpy"),
        )
        for form in renderer.LOOP_FORMS
    }
    base = frames["original"]
    assert base.coverage.any()
    for form, frame in frames.items():
        np.testing.assert_array_equal(frame.image, base.image, err_msg=form)
        np.testing.assert_array_equal(frame.depth, base.depth, err_msg=form)
        np.testing.assert_array_equal(frame.face, base.face, err_msg=form)
        for loop in ("scan-conversion", "z-buffer"):
            a, b = frame.stats.loops[loop], base.stats.loops[loop]
            assert a.max_workload == b.max_workload
            assert a.mean_workload == pytest.approx(b.mean_workload)


def test_flat_shading_identical_across_forms(small_meshes):
    mesh = small_meshes["balanced"]
    imgs = [
        renderer.render(
            mesh, size=64, loop=form, shading="flat", machine=Machine(pes=32, backend="numpy")
        ).image
        for form in renderer.LOOP_FORMS
    ]
    for img in imgs[1:]:
        np.testing.assert_array_equal(img, imgs[0])


def test_original_iterations_equal_max_workload(small_meshes):
    frame = renderer.render(
        small_meshes["unbalanced"],
        size=96,
        loop="original",
        machine=Machine(pes=32, backend="numpy"),
    )
    for loop in ("scan-conversion", "z-buffer"):
        s = frame.stats.loops[loop]
        assert s.iterations == s.max_workload
        assert s.decisions == 0


def test_cost_effective_balances_unbalanced_data(small_meshes):
    mesh = small_meshes["unbalanced"]
    runs = {
        form: renderer.render(mesh, size=128, loop=form, machine=Machine(pes=32, backend="numpy"))
        for form in ("original", "cost-effective")
    }
    scan = runs["cost-effective"].stats.loops["scan-conversion"]
    assert scan.decisions >= 1
    assert scan.iterations < scan.max_workload
    assert runs["cost-effective"].stats.cycles < runs["original"].stats.cycles


def test_stats_layout(small_meshes):
    frame = renderer.render(
        small_meshes["balanced"], size=48, machine=Machine(pes=32, backend="numpy")
    )
    stats = frame.stats
    assert list(stats.stages) == list(renderer.pipeline.STAGES)
    assert list(stats.loops) == ["scan-conversion", "z-buffer"]
    for name, loop in stats.loops.items():
        # a loop stage is its loop's machine phase
        assert stats.stages[name] is loop.record and loop.record.name == name
    # the stages' cycles are the frame's, and add up to what the machine was charged
    assert stats.cycles == sum(r.cycles for r in stats.stages.values())
    assert stats.machine.total.cycles == stats.cycles
    assert all(r.wall >= 0 for r in stats.stages.values()) and stats.wall > 0
    counts = stats.counts
    assert counts.fragments >= counts.pixels == int(frame.coverage.sum())
    assert counts.fragments == stats.loops["z-buffer"].total_tasks
    assert counts.spans == stats.loops["z-buffer"].vps <= stats.loops["scan-conversion"].total_tasks
    assert frame.image.dtype == np.uint8 and frame.image.shape == (48, 48, 3)
    assert frame.depth.dtype == np.float32
    assert (frame.depth[~frame.coverage] == 1.0).all()
    assert ((frame.depth >= 0) & (frame.depth <= 1)).all()
    assert (frame.image[~frame.coverage] == 0).all()


@pytest.mark.gpu
def test_images_identical_across_backends(small_meshes, gpu_machine):
    mesh = small_meshes["unbalanced"]
    for form in renderer.LOOP_FORMS:
        cpu = renderer.render(mesh, size=128, loop=form, machine=Machine(backend="numpy"))
        gpu = renderer.render(mesh, size=128, loop=form, machine=Machine(backend="cupy"))
        np.testing.assert_array_equal(gpu.image, cpu.image, err_msg=form)
        np.testing.assert_array_equal(gpu.depth, cpu.depth, err_msg=form)
        np.testing.assert_array_equal(gpu.face, cpu.face, err_msg=form)


def test_forms_identical_with_near_plane_clipping():
    from tests.renderer.meshes import grid_mesh

    verts, faces = grid_mesh(12, 12, -2, -2, 2, 2, jitter=0.3, seed=9)
    verts = verts[:, [0, 2, 1]]
    cam = renderer.Camera(eye=(0.0, 0.3, 0.4), target=(0.2, 0.0, -1.0), fovy=80, near=0.35, far=10)
    frames = [
        renderer.render(
            (verts, faces), camera=cam, size=64, loop=form, machine=Machine(pes=16, backend="numpy")
        )
        for form in renderer.LOOP_FORMS
    ]
    assert frames[0].stats.counts.clipped > 0
    for f in frames[1:]:
        np.testing.assert_array_equal(f.image, frames[0].image)
        np.testing.assert_array_equal(f.depth, frames[0].depth)
