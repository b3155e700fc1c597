"""Sort-last rendering across MPI ranks: compositing, balancing, slabs and the command.

The MPI tests launch ``tests/mpi/render_ranks.py`` on 1 to 4 ranks (it checks every frame
bit for bit against the one-rank frame of the concatenated shares, and binary swap against
the plain minimum) and ``simd-emu render`` under ``mpiexec``; the others run here.
"""

from __future__ import annotations

import numpy as np
import pytest

from renderer.datasets import builtin as datasets
from renderer.ranks.balance import destinations, triangle_work
from renderer.ranks.composite import merge_min, regions
from renderer.scene.mesh import as_mesh, mesh_share, vertex_normals
from simd.cli import main
from tests.mpi_support import ranks_said_ok, run_ranks


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_frames_on_ranks_equal_the_one_rank_frame(n):
    done = run_ranks(n, "render_ranks.py", timeout=120)
    assert ranks_said_ok(done, n), done.stdout


@pytest.mark.mpi
def test_frames_on_ranks_on_the_cupy_code_path():
    # the counting stand-in runs the CuPy code path (shading every pixel, ...) on NumPy
    done = run_ranks(3, "render_ranks.py", "counting", timeout=120)
    assert ranks_said_ok(done, 3), done.stdout


def _ply(path) -> None:
    import trimesh

    mesh = datasets.load_dataset("unbalanced", 16, cache=False)
    trimesh.Trimesh(mesh.vertices, mesh.faces, process=False).export(path)


@pytest.mark.mpi
def test_render_command_on_two_ranks_writes_the_one_rank_png(tmp_path):
    _ply(tmp_path / "ml.ply")
    common = ["render", "--mesh", "ml.ply", "--size", "48", "--pes", "32", "--loop", "original"]
    one = run_ranks(1, "-m simd.cli", *common, "-o", "one.png", cwd=tmp_path, timeout=120)
    two = run_ranks(2, "-m simd.cli", *common, "-o", "two.png", "--json", "two.json",
                    cwd=tmp_path, timeout=120)  # fmt: skip
    assert (tmp_path / "one.png").read_bytes() == (tmp_path / "two.png").read_bytes()
    assert one.stdout.count("wrote") == 1 and "MPI ranks" not in one.stdout
    assert two.stdout.count("wrote") == 1 and "2 MPI ranks" in two.stdout  # rank 0 only
    # a data set in slabs, one per rank
    slabs = run_ranks(3, "-m simd.cli", "render", "--dataset-size", "12", "--size", "32",
                      "-o", "slabs.png", cwd=tmp_path, timeout=120)  # fmt: skip
    assert slabs.stdout.count("wrote") == 1 and (tmp_path / "slabs.png").exists()


@pytest.mark.mpi
@pytest.mark.parametrize(
    "kind",
    ["balanced", pytest.param("unbalanced", marks=pytest.mark.slow),
     pytest.param("oilwell-unbalanced", marks=pytest.mark.slow)],
)  # fmt: skip
def test_built_in_data_set_on_three_ranks_is_the_plain_runs_image(tmp_path, kind):
    # each rank extracts its slab; in rank order the slabs are the whole surface's
    # triangles, so the sort-last frame is the one-process frame, bit for bit
    common = ["render", "--dataset", kind, "--dataset-size", "40", "--size", "96",
              "--pes", "32"]  # fmt: skip
    assert main([*common, "--backend", "numpy", "-o", str(tmp_path / "plain.png")]) == 0
    run_ranks(3, "-m simd.cli", *common, "-o", "three.png", cwd=tmp_path, timeout=120)
    assert (tmp_path / "plain.png").read_bytes() == (tmp_path / "three.png").read_bytes()


@pytest.mark.mpi
@pytest.mark.parametrize(("flag", "value"), [("--orbit", "3"), ("--fit", None)])
def test_render_command_errors_on_ranks_give_one_line_and_every_rank_fails(tmp_path, flag, value):
    options = [flag] if value is None else [flag, value]
    bad = run_ranks(2, "-m simd.cli", "render", *options, "--dataset-size", "12", "--verbose",
                    cwd=tmp_path, timeout=60, check=False)  # fmt: skip
    lines = [x for x in bad.stderr.splitlines() if x.startswith("simd-emu render:")]
    assert bad.returncode != 0 and len(lines) == 1, bad.stderr
    assert f"{flag} runs on one process" in lines[0]
    assert not bad.stdout.strip()  # refused before any work


def test_binary_swap_regions_nest_and_cover():
    for n in (0, 1, 7, 4096):
        for p2 in (1, 2, 4, 8):
            b = regions(n, p2)
            assert b[0] == 0 and b[-1] == n and (np.diff(b) >= 0).all()
            if p2 > 1:  # halving: the first half's regions end where the half ends
                assert regions(n, p2)[p2 // 2] == b[p2 // 2]


def test_merge_min_keeps_the_smaller_key_and_its_payload():
    dt = np.dtype([("key", "<i8"), ("rgb", "u1", (3,))])
    a = np.array([(1, (1, 1, 1)), (9, (2, 2, 2))], dt)
    b = np.array([(5, (3, 3, 3)), (4, (4, 4, 4))], dt)
    got = merge_min(a, b)
    assert got["key"].tolist() == [1, 4] and got["rgb"][:, 0].tolist() == [1, 4]


def test_destinations_are_contiguous_and_balance_the_work():
    rng = np.random.default_rng(3)
    work = rng.integers(1, 50, 1000)
    starts = np.cumsum(work) - work
    for p in (1, 2, 3, 4, 7):
        dest = destinations(starts, int(work.sum()), p)
        assert (np.diff(dest) >= 0).all() and dest.min() >= 0 and dest.max() < p
        per_rank = np.bincount(dest, weights=work, minlength=p)
        assert per_rank.max() - work.sum() / p <= work.max()


def test_triangle_work_counts_the_clipped_bounding_box():
    clip = np.array([[[-1.0, -1, 0, 1], [0, -1, 0, 1], [-1, 0, 0, 1]]])  # 32 x 32 of 64
    assert triangle_work(clip, 64, 64).tolist() == [32 * 32 + 1]
    far = clip + np.array([10.0, 0, 0, 0])  # off the viewport: set-up only
    assert triangle_work(far, 64, 64).tolist() == [1]


def test_mesh_shares_carry_the_whole_normals_and_keep_the_face_order():
    mesh = datasets.load_dataset("balanced", 12, cache=False)
    mesh = as_mesh((mesh.vertices, mesh.faces))  # no normals: computed from all faces
    normals = vertex_normals(mesh)
    for p in (1, 2, 5):
        shares = [mesh_share(mesh, r, p) for r in range(p)]
        corners = np.concatenate([s.vertices[s.faces] for s in shares])
        assert np.array_equal(corners, mesh.vertices[mesh.faces])
        shaded = np.concatenate([s.normals[s.faces] for s in shares])
        assert np.array_equal(shaded, normals[mesh.faces])


@pytest.mark.parametrize("kind", datasets.DATASETS)
def test_slabs_have_the_whole_surfaces_triangles(kind):
    whole = datasets.load_dataset(kind, 19, cache=False)
    for p in (1, 2, 3, 5):
        slabs = [datasets.load_dataset_slab(kind, 19, r, p) for r in range(p)]
        assert sum(s.n_faces for s in slabs) == whole.n_faces


def test_slab_sizes_fit_across_ranks_only(monkeypatch):
    # 20 planes of 20 x 20: on 2 ranks 10 each, and the 4 beside them a slab reads
    monkeypatch.setattr(datasets, "MAX_SLAB_SAMPLES", 14 * 20 * 20)
    with pytest.raises(ValueError, match="run on at least 2 MPI ranks"):
        datasets.load_dataset_slab("balanced", 20, 0, 1)
    assert datasets.load_dataset_slab("balanced", 20, 1, 2).n_faces > 0
    with pytest.raises(ValueError, match="does not fit one process"):
        datasets.load_dataset("balanced", "64m", cache=False)


def test_a_machine_without_ranks_renders_as_before():
    from renderer import render
    from simd import Machine

    quad = (
        np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
        np.array([[0, 1, 2], [0, 2, 3]]),
    )
    frame = render(quad, size=16, machine=Machine(pes=8, backend="numpy"))
    assert frame.stats.ranks is None and "composite" not in frame.stats.stages
