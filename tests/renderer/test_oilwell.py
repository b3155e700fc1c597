"""The oil-well data sets: Table 1 of Ahrens & Hansen (1995) in shape, triangle counts, slabs."""

import numpy as np
import pytest

from bench.cm5.workload import PAPER_TABLE1
from renderer.datasets import builtin as datasets
from renderer.datasets import oilwell
from simd import Machine

#: Table 1 of Ahrens & Hansen (1995) (scan max, scan avg, z-buffer max, z-buffer avg) per view,
#: under the names of the oil-well sets made to match it.
PAPER = {
    "oilwell": PAPER_TABLE1["balanced"],
    "oilwell-unbalanced": PAPER_TABLE1["unbalanced"],
}


def within(ours: float, paper: float, factor: float) -> bool:
    return paper / factor <= ours <= paper * factor


@pytest.fixture(scope="module")
def table():
    """Table 1 of both oil-well sets at the default size (128^3 grid), 512 x 512."""
    return {
        kind: {
            r["view"]: r
            for r in datasets.workload_table(
                datasets.load_dataset(kind, "250k", cache=False),
                machine=Machine(pes=512, backend="numpy"),
            )
        }
        for kind in datasets.OILWELL
    }


def test_scan_conversion_maxima_come_close_to_the_papers(table):
    # the slivers are 1.5 units tall: about the paper's 231 and 512 scan lines side on; the
    # fracture's walls from (45,45); a magnification of 2 cannot reach the paper's M(45,45)
    # 468, 2.8 times its (45,45) 169: ours reach twice their (45,45)
    # (test_a_zoom_of_two_bounds_the_magnified_maxima), 0.69 of the paper's
    for kind, views in PAPER.items():
        for view, (smax, _, _, _) in views.items():
            factor = 1.5 if (kind, view) == ("oilwell-unbalanced", "M(45,45)") else 1.35
            assert within(table[kind][view]["scan_max"], smax, factor), (kind, view)
    unb = table["oilwell-unbalanced"]
    assert unb["(0,0)"]["scan_max"] > 220 and unb["M(0,0)"]["scan_max"] > 480


def test_averages_stay_near_the_papers(table):
    for kind, views in PAPER.items():
        for view, (_, savg, _, zavg) in views.items():
            if not (kind == "oilwell" and view == "M(45,45)"):  # the paper's avg 1 there
                assert within(table[kind][view]["scan_avg"], savg, 2.1), (kind, view)
            assert within(table[kind][view]["zbuf_avg"], zavg, 2.1), (kind, view)


def test_the_unbalanced_set_is_unbalanced_in_the_scan_conversion_loop(table):
    for view in PAPER["oilwell"]:
        bal, unb = table["oilwell"][view], table["oilwell-unbalanced"][view]
        assert bal["scan_max"] / bal["scan_avg"] < 5
        assert unb["scan_max"] / unb["scan_avg"] > 35  # the paper: 28 to 117
        if view in ("(0,0)", "M(0,0)"):
            # side on the slivers and the fracture's walls are edge on: no long spans
            assert unb["zbuf_max"] <= 2 * bal["zbuf_max"]


def test_the_fracture_gives_the_papers_long_spans_from_45_45(table):
    # the fracture's walls, one tall cell as long as the fracture, lie horizontal from
    # (45,45): the paper's 30 pixels per span (119 magnified, 4 times, which a
    # magnification of 2 cannot give)
    unb = table["oilwell-unbalanced"]
    assert within(unb["(45,45)"]["zbuf_max"], 30, 1.2)
    assert within(unb["M(45,45)"]["zbuf_max"], 119 / 2, 1.2)
    assert table["oilwell"]["(45,45)"]["zbuf_max"] < 10  # the uniform grid: short spans


def test_the_wide_column_gives_the_papers_z_buffer_maxima(table):
    # polygons three voxels wide about the image centre: 7 to 9 pixels per span, 14 to 21
    # magnified (one-voxel polygons give 3 to 4); all but the fracture's views
    for kind, views in PAPER.items():
        for view, (_, _, zmax, _) in views.items():
            if kind == "oilwell-unbalanced" and view.endswith("(45,45)"):
                continue  # the fracture's walls: test_the_fracture_gives_...
            assert within(table[kind][view]["zbuf_max"], zmax, 1.45), (kind, view)


def test_a_zoom_of_two_bounds_the_magnified_maxima(table):
    # M narrows the field of view by 2, the camera kept: an exact zoom of the image, so no
    # magnified maximum exceeds twice the unmagnified one plus a pixel of sampling (the
    # paper's unbalanced M(45,45), 468 and 119 against 169 and 30, does); ours reach it
    for kind in PAPER:
        for view in ("(0,0)", "(45,45)"):
            one, two = table[kind][view], table[kind][f"M{view}"]
            for col in ("scan_max", "zbuf_max"):
                assert two[col] <= 2 * one[col] + 1, (kind, view, col)
    unb = table["oilwell-unbalanced"]
    for col in ("scan_max", "zbuf_max"):
        assert unb["M(45,45)"][col] >= 2 * unb["(45,45)"][col] - 2, col


def test_column_is_a_whole_number_of_wide_cells_about_the_middle():
    h = 2.0 / 127
    a, b = oilwell.column(128)
    assert (b - a) % oilwell.WIDE == 0 and b > a
    assert abs(-1 + a * h + oilwell.COLUMN) < 2 * h and abs(-1 + b * h - oilwell.COLUMN) < 3 * h
    assert oilwell.column(8) is None  # too coarse for a wide cell clear of the fracture
    for kind in datasets.OILWELL:
        blocks = oilwell.parts(kind, 128)
        wide = [xs for xs, _, _, spacing, _ in blocks if spacing[0] > 1.5 * h]
        assert wide and all(xs[0] == a and xs[-1] == b for xs in wide)


def test_triangle_counts_and_tall_slivers():
    bal = datasets.load_dataset("oilwell", "250k", cache=False)
    unb = datasets.load_dataset("oilwell-unbalanced", "250k", cache=False)
    # the paper's data sets have about 250,000 polygons each
    assert 245_000 < bal.n_faces < 266_000 and 218_000 < unb.n_faces < 238_000
    for mesh in (bal, unb):
        assert np.isfinite(mesh.vertices).all() and mesh.faces.max() < len(mesh.vertices)
        assert np.allclose(np.linalg.norm(mesh.normals, axis=1), 1.0)
    # world y is up: the unbalanced set's slivers stand 2 COARSE_Z tall, the bore walls
    height = np.ptp(unb.vertices[unb.faces][:, :, 1], axis=1)
    tall = height > 2 * oilwell.COARSE_Z - 1e-6
    assert 300 < tall.sum() < 1000 and np.ptp(bal.vertices[bal.faces][:, :, 1], axis=1).max() < 0.1


def test_field_blocks_are_the_whole_fields_samples():
    n = 21
    whole = oilwell.oilwell_field(n)
    assert whole.shape == (n, n, oilwell.z_samples(n))
    xs, ys, zs = np.arange(5, 12), np.array([0, 7, 20]), np.array([0, oilwell.z_samples(n) - 1])
    assert np.array_equal(oilwell.sample(n, xs, ys, zs), whole[np.ix_(xs, ys, zs)])


@pytest.mark.parametrize("kind", datasets.OILWELL)
def test_slabs_add_up(kind):
    whole = datasets.load_dataset(kind, 40, cache=False)
    for p in (2, 3, 4):
        slabs = [datasets.load_dataset_slab(kind, 40, r, p) for r in range(p)]
        assert sum(s.n_faces for s in slabs) == whole.n_faces
        corners = np.sort(np.concatenate([s.vertices[s.faces].sum(axis=1) for s in slabs]), 0)
        np.testing.assert_allclose(
            corners, np.sort(whole.vertices[whole.faces].sum(axis=1), 0), atol=1e-5
        )


def test_oilwell_caches_apart_from_the_marschner_lobb_sets(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(tmp_path))
    mesh = datasets.load_dataset("oilwell-unbalanced", 16)
    (path,) = tmp_path.glob("*.npz")
    assert path.name.startswith("oilwell-unbalanced-16-")
    np.testing.assert_array_equal(datasets.load_dataset("oilwell-unbalanced", 16).faces, mesh.faces)
