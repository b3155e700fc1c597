"""Run on N ranks by tests/renderer/test_distributed.py: sort-last rendering.

Oracles: the one-rank frame of the concatenated shares (rendered on rank 0 on a machine of
its own), and the plain elementwise minimum of the gathered buffers for the compositing.
Prints "ok <rank>" at the end on every rank.
"""

import sys

import numpy as np
from mpi4py import MPI

from renderer import render
from renderer.datasets.builtin import load_dataset, load_dataset_slab
from renderer.ranks.composite import composite_min
from renderer.scene.mesh import Mesh, as_mesh
from renderer.stages.shading import vertex_scalars
from simd import Machine

comm = MPI.COMM_WORLD
#: "numpy" by default; "counting" runs the CuPy code path (on NumPy) on every rank.
BACKEND = sys.argv[1] if len(sys.argv) > 1 else "numpy"


def _abort(kind, value, tb):  # a failed check on one rank ends them all (no waiting)
    sys.__excepthook__(kind, value, tb)
    comm.Abort(1)


sys.excepthook = _abort
m = Machine(pes=64, backend=BACKEND, comm=comm)
P, rank = m.nranks, m.rank
SIZE = 64


def local() -> Machine:
    return Machine(pes=64, backend=BACKEND)


def split(mesh: Mesh, bounds: list[int]) -> list[Mesh]:
    """Shares of ``mesh`` by face ranges, each with only the vertices it uses (and their
    normals when the mesh has them)."""
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        used, inv = np.unique(mesh.faces[lo:hi], return_inverse=True)
        normals = None if mesh.normals is None else mesh.normals[used]
        out.append(Mesh(mesh.vertices[used], inv.reshape(-1, 3).astype(np.int64), normals))
    return out


def concatenate(shares: list[Mesh]) -> Mesh:
    """The one-rank mesh: vertices concatenated, faces offset, in rank order."""
    offsets = np.cumsum([0] + [len(s.vertices) for s in shares[:-1]])
    normals = None
    if all(s.normals is not None for s in shares):
        normals = np.concatenate([s.normals for s in shares])
    return Mesh(
        np.concatenate([s.vertices for s in shares]),
        np.concatenate([s.faces + o for s, o in zip(shares, offsets, strict=True)]),
        normals,
    )


def same(frame, ref, what: str) -> None:
    for name in ("image", "depth", "face"):
        a, b = getattr(frame, name), getattr(ref, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), f"{what}: {name} differs"
    assert frame.stats.counts == ref.stats.counts, (what, frame.stats.counts, ref.stats.counts)


# ---------------------------------------------------------------- binary swap == minimum
rng = np.random.default_rng(11 + P)
dtype = np.dtype([("key", "<i8"), ("rgb", "u1", (3,)), ("face", "<i8")])
for n in (0, 1, 5, 97, SIZE * SIZE):
    records = np.empty(n, dtype)
    # distinct keys over the ranks (as distinct triangles'), some pixels empty everywhere
    records["key"] = rng.permutation(n * P)[rank::P][:n] if n else []
    records["key"][rng.random(n) < 0.3] = np.iinfo(np.int64).max
    records["rgb"] = rng.integers(0, 256, (n, 3))
    records["face"] = rank * 1000 + np.arange(n)
    empty = records["key"] == np.iinfo(np.int64).max  # as the renderer's: the same payload
    records["rgb"][empty], records["face"][empty] = 0, -1
    with m.phase("swap") as rec:
        got = composite_min(m.ranks, records)
    everyone = m.ranks.gather(records[None], root=0)
    if rank == 0:
        want = everyone[np.argmin(everyone["key"], axis=0), np.arange(n)]
        assert np.array_equal(got, want), f"binary swap differs from the minimum (n={n})"
        if P > 1 and n > 1:
            assert rec.messages > 0 and rec.message_bytes > 0
    else:
        assert got is None

# ---------------------------------------------------------------- frames, split and skewed
VARIANTS = ("plain", "flat", "paint")


def variant(k: str, mesh: Mesh) -> dict:
    """Picture options: the defaults; flat and supersampled; coloured by height (the
    value range is the whole mesh's) on a background."""
    if k == "flat":
        return {"shading": "flat", "supersample": 2}
    if k == "paint":
        heights = vertex_scalars(mesh.vertices, "height")
        return {"values": heights, "colormap": "viridis", "background": "navy"}
    return {}


# coarse: triangles large enough that moving them pays on the model clock
mesh = load_dataset("balanced", 10, cache=False)
# an overlapping coplanar pair drawn by different ranks: equal depths, the first one wins
quad = as_mesh(
    (
        np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0.2, 0.2, 0], [1.2, 0.3, 0]]),
        np.array([[0, 1, 2], [0, 2, 3], [4, 5, 2], [1, 5, 3]]),
    )
)
views = {"mesh": (mesh, (45.0, 45.0), 2.0), "quad": (quad, (0.0, 0.0), 1.0)}
even = [int(b) for b in np.linspace(0, mesh.n_faces, P + 1)]
skewed = [0] + [mesh.n_faces] * P  # everything on rank 0
for name, (whole, view, mag) in views.items():
    splits = {"even": [int(b) for b in np.linspace(0, whole.n_faces, P + 1)]}
    if name == "mesh":
        splits["skewed"] = skewed
        splits["last"] = [0] * P + [whole.n_faces]  # everything on the last rank
    for split_name, bounds in splits.items():
        shares = split(whole, bounds)
        one = concatenate(shares)
        for loop in ("expand", "cost-effective"):
            refs = {}
            if rank == 0:
                refs = {
                    k: render(
                        one,
                        view=view,
                        magnification=mag,
                        size=SIZE,
                        loop=loop,
                        machine=local(),
                        **variant(k, one),
                    )
                    for k in VARIANTS
                }
            for balance in (True, False):
                for k in VARIANTS:
                    if k != "plain" and (loop == "expand" or not balance):
                        continue  # enough to cover both: fewer launches of the pipeline
                    frame = render(
                        shares[rank],
                        view=view,
                        magnification=mag,
                        size=SIZE,
                        loop=loop,
                        machine=m,
                        rank_balance=balance,
                        **variant(k, shares[rank]),
                    )
                    what = f"{name} {split_name} {loop} balance={balance} {k} P={P}"
                    if rank != 0:
                        assert frame is None, what
                        continue
                    same(frame, refs[k], what)
                    info = frame.stats.ranks
                    assert info["faces"] == np.diff(bounds).tolist()
                    if split_name != "even" and P > 1 and balance and k == "plain":
                        # the skewed split is balanced: triangles moved, messages recorded
                        assert info["balanced"] and info["moved"] > 0, (what, info)
                        assert max(info["work_after"]) < max(info["work_before"]), info
                        assert sum(info["work_after"]) == sum(info["work_before"]), info
                        assert frame.stats.stages["rank-balance"].messages > 0
                        assert frame.stats.stages["rank-balance"].message_bytes > 0
                        print(f"{what}: work {info['work_before']} -> {info['work_after']}")
                    if not balance:
                        assert not info["balanced"] and info["work_after"] == info["work_before"]
                    if P > 1:
                        assert frame.stats.stages["composite"].messages > 0

# ---------------------------------------------------------------- slabs
for kind in ("balanced", "unbalanced"):
    slab = load_dataset_slab(kind, 21, rank, P)
    counts = m.ranks.allgather(slab.n_faces)
    whole = load_dataset(kind, 21, cache=False)
    assert sum(counts) == whole.n_faces, (kind, counts, whole.n_faces)
    shares = m.ranks.allgather((slab.vertices, slab.faces, slab.normals))
    frame = render(slab, size=SIZE, loop="cost-effective", machine=m)
    if rank == 0:
        one = concatenate([Mesh(v, f, nn) for v, f, nn in shares])
        same(frame, render(one, size=SIZE, loop="cost-effective", machine=local()), kind)
        print(f"slabs {kind}: {counts} triangles = {whole.n_faces}")

# ---------------------------------------------------------------- errors stay collective
bad = P - 1
share = split(mesh, even)[rank]
if rank == bad:
    share = Mesh(share.vertices.copy(), share.faces, None)
    share.vertices[0, 0] = np.nan
try:
    render(share, size=SIZE, machine=m)
except ValueError as err:
    assert "NaN" in str(err), err
    assert rank == bad or f"(rank {bad})" in str(err), err
else:
    raise AssertionError("no error raised")
try:
    render(Mesh(np.zeros((0, 3)), np.zeros((0, 3), np.int64)), size=SIZE, machine=m)
except ValueError as err:
    assert "empty on every rank" in str(err), err
else:
    raise AssertionError("no error raised for an empty mesh")
print("ok", rank)
