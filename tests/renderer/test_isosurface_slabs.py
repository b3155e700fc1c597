"""Isosurfaces in slabs along axis 0: every slab's share is the whole surface's, bit for
bit, on the fused CPU kernels, the array code and the counting stand-in for CuPy; and on
MPI ranks (``tests/mpi/isosurface_ranks.py``) the gathered shares are the one-rank mesh and
the frame rendered sort-last the one-rank frame."""

from __future__ import annotations

import numpy as np
import pytest

import renderer
from renderer.contour.marching_cubes import Planes, slab_isosurface
from simd import Machine
from simd.ranks import canonical_bounds
from tests.mpi_support import ranks_said_ok, run_ranks


def _volume():
    from scipy.ndimage import gaussian_filter

    rng = np.random.default_rng(4)
    volume = gaussian_filter(rng.standard_normal((13, 9, 11)), 1.4).astype(np.float32)
    volume[volume > 0.1] = 0.1  # plateaus above the level
    return np.round(volume * 64) / 64  # and values exactly at it


def _slabs(volume, level, nslabs, machine, **where):
    n0 = volume.shape[0]
    bounds = canonical_bounds(n0, nslabs)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        first, last = Planes.held(int(lo), int(hi), n0)
        planes = Planes(first, int(lo), int(hi), n0)
        yield slab_isosurface(volume[first:last], level, planes, machine=machine, **where)


@pytest.mark.parametrize("backend", ["numpy", "counting", "reference"])
def test_slabs_give_the_whole_surface_bit_for_bit(monkeypatch, backend):
    if backend == "reference":
        monkeypatch.setenv("SIMD_FORCE_REFERENCE", "1")
    m = Machine(pes=64, backend="numpy" if backend == "reference" else backend)
    volume, level = _volume(), 0.0
    where = {"spacing": (0.5, 1.0, 2.0), "origin": (1.0, -2.0, 3.0)}
    whole = renderer.isosurface(volume, level, machine=m, **where)
    for nslabs in (2, 3, 14):  # 14: more slabs than planes, one of them empty
        vertices, normals, faces, start = [], [], [], 0
        for share in _slabs(volume, level, nslabs, m, **where):
            own = share.owned_vertices
            # the next slab's first plane, computed here too, as there
            ghost = slice(start + own, start + len(share.vertices))
            assert np.array_equal(share.vertices[own:], whole.vertices[ghost])
            assert np.array_equal(share.normals[own:], whole.normals[ghost])
            vertices.append(share.vertices[:own])
            normals.append(share.normals[:own])
            faces.append(share.faces + start)
            start += own
        assert np.array_equal(np.concatenate(vertices), whole.vertices)
        assert np.array_equal(np.concatenate(normals), whole.normals)
        assert np.array_equal(np.concatenate(faces), whole.faces)


def test_held_planes():
    assert Planes.held(0, 5, 5) == (0, 5)
    assert Planes.held(2, 4, 10) == (1, 7)
    assert Planes.held(7, 10, 10) == (6, 10)
    assert Planes.held(3, 3, 10) == (3, 3)


@pytest.mark.mpi
def test_isosurface_on_three_ranks_is_the_one_rank_mesh():
    done = run_ranks(3, "isosurface_ranks.py", timeout=120)
    assert ranks_said_ok(done, 3), done.stdout


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize(("n", "backend"), [(2, "numpy"), (5, "numpy"), (3, "counting")])
def test_isosurface_on_ranks_more_cases(n, backend):
    done = run_ranks(n, "isosurface_ranks.py", backend, timeout=120)
    assert ranks_said_ok(done, n), done.stdout
