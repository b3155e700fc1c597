"""Run on N ranks by tests/renderer/test_isosurface_slabs.py: isosurfaces in slabs.

Oracles: the one-rank ``renderer.isosurface`` of the same volume (on a machine of this rank's
own) and the one-rank frame of its mesh. Checks, on every volume: the gathered shares are
the one-rank mesh bit for bit (vertices, normals, triangles), every share is a valid mesh
of its own (faces index its vertices), the model clock reads the one-rank clock on every
rank, a volume memory-mapped from a .npy file gives the same, a bad level is refused on
every rank alike, and the shares rendered sort-last give the one-rank frame. Prints
"ok <rank>" at the end on every rank.
"""

import os
import shutil
import sys
import tempfile

import numpy as np
from mpi4py import MPI
from scipy.ndimage import gaussian_filter

import renderer
from renderer.contour.marching_cubes import IsosurfaceShare, gather_isosurface
from simd import Machine

comm = MPI.COMM_WORLD
BACKEND = sys.argv[1] if len(sys.argv) > 1 else "numpy"


def _abort(kind, value, tb):  # a failed check on one rank ends them all (no waiting)
    sys.__excepthook__(kind, value, tb)
    comm.Abort(1)


sys.excepthook = _abort
P, rank = comm.Get_size(), comm.Get_rank()


def machine(ranks: bool) -> Machine:
    return Machine(pes=64, backend=BACKEND, comm=comm if ranks else None)


def volumes():
    rng = np.random.default_rng(5)
    smooth = gaussian_filter(rng.standard_normal((23, 17, 19)), 1.5).astype(np.float32)
    plateaus = np.round(smooth * 8) / 8  # values exactly at the level
    x, y, z = np.mgrid[-1:1:9j, -1:1:12j, -1:1:10j]
    return {
        "smooth": (smooth, 0.02, {"spacing": (0.5, 1.0, 2.0), "origin": (3.0, -1.0, 0.5)}),
        "plateaus": (plateaus, 0.0, {}),
        "thin": (smooth[:4], 0.0, {}),  # fewer planes than 3 ranks' slabs
        "ball": ((x * x + y * y + z * z).astype(np.float64), 0.5, {}),
    }


for name, (volume, level, where) in volumes().items():
    one = machine(False)
    want = renderer.isosurface(volume, level, machine=one, **where)
    m = machine(True)
    share = renderer.isosurface(volume, level, machine=m, **where)
    assert isinstance(share, IsosurfaceShare), name
    assert share.faces.size == 0 or 0 <= share.faces.min() <= share.faces.max() < len(
        share.vertices
    ), name
    assert m.clock == one.clock, (name, m.clock, one.clock)
    got = gather_isosurface(share, m)
    if rank == 0:
        for part in ("vertices", "normals", "faces"):
            assert np.array_equal(getattr(got, part), getattr(want, part)), (name, part)
    # the share's own triangles as the whole surface numbers them
    first = share.first_face
    assert np.array_equal(
        share.faces + share.first_vertex, want.faces[first : first + share.n_faces]
    )

# a .npy file memory-mapped: each rank reads its slab
volume, level, where = volumes()["smooth"]
folder = tempfile.mkdtemp() if rank == 0 else None
folder = comm.bcast(folder)
path = os.path.join(folder, "smooth.npy")
if rank == 0:
    np.save(path, volume)
comm.Barrier()
read = renderer.read_volume(path, mmap=True)
assert isinstance(read.array, np.memmap)
m = machine(True)
got = gather_isosurface(read.isosurface(level, machine=m), m)
want = renderer.isosurface(volume, level, machine=machine(False))
if rank == 0:
    assert np.array_equal(got.vertices, want.vertices) and np.array_equal(got.faces, want.faces)
del read  # the memory map closed before its file goes
comm.Barrier()
if rank == 0:
    shutil.rmtree(folder)

# a level outside the values: the same one line on every rank
try:
    renderer.isosurface(volume, 99.0, machine=machine(True))
except ValueError as err:
    assert "every value of the volume is below it" in str(err), err
else:
    raise AssertionError("a level above every value was not refused")

# rendered sort-last: the one-rank frame
volume, level, where = volumes()["smooth"]
m = machine(True)
share = renderer.isosurface(volume, level, machine=m, **where)
frame = renderer.render(share, view=(30, 20), size=48, machine=m)
if rank == 0:
    one = machine(False)
    ref = renderer.render(renderer.isosurface(volume, level, machine=one, **where),
                          view=(30, 20), size=48, machine=one)  # fmt: skip
    for part in ("image", "depth", "face"):
        assert np.array_equal(getattr(frame, part), getattr(ref, part)), part
print(f"ok {rank}", flush=True)
