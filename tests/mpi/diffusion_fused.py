"""Run on N ranks by tests/diffusion/test_distributed.py: the fused step across ranks.

On the counting backend (the CuPy code path: the fused kernel of
:mod:`diffusion.cuda_kernels` run by :mod:`diffusion.fused`, computed by its NumPy model), a
block of rows with a ghost row from each neighbour block gives, gathered, the one-rank
result of the same backend bit for bit, with the same info (iterations, ``converged``,
the active and updated fractions): plain, ``epsilon``, ``freeze``, ``return_info``,
convergence between two read-backs, 2-D and 3-D, uneven and empty blocks. Then the cost per
iteration on ranks is pinned: launches, syncs, and the bytes that cross (the faces only,
through pinned host staging). Prints ``ok RANK CHECKED`` at the end.
"""

import os
import sys
import warnings

import numpy as np
from mpi4py import MPI

from diffusion import anisotropic_diffusion
from diffusion.dense import DiffusionStabilityWarning
from diffusion.fused import CHECK_EVERY
from kernels import counting
from simd import Machine


def abort(*exc_info):
    """A failed check on one rank ends every rank (the others would wait for it)."""
    sys.__excepthook__(*exc_info)
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = abort
os.environ["SIMD_MPI_CUDA_AWARE"] = "0"  # device arrays cross through pinned host buffers
m = Machine(pes=16, backend="counting", comm=MPI.COMM_WORLD)
assert m.ranks.device.path == "pinned host staging"
rng = np.random.default_rng(12)
checked = 0


def run(image, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiffusionStabilityWarning)
        return anisotropic_diffusion(image, return_info=True, **kw)


def check(whole, mine, label, **kw):
    """``mine`` (this rank's rows of ``whole``) diffused on the ranks equals, gathered, the
    one-rank result on the counting backend bit for bit, and so do the infos."""
    global checked
    out, info = run(m.asarray(mine), machine=m, **kw)
    assert isinstance(out, counting.DeviceArray), (label, type(out))
    got = m.gather(np.asarray(out))
    mine_info = (info.iterations, info.active_fraction, info.updated_fraction, info.converged)
    infos = MPI.COMM_WORLD.allgather(mine_info)
    assert all(i == infos[0] for i in infos), (label, infos)
    if m.is_root:
        ref, ref_info = run(counting.cupy.asarray(whole), **kw)
        ref = np.asarray(ref)
        assert got.shape == ref.shape and got.dtype == ref.dtype, (label, got.shape)
        diff = got.view(np.uint32) != ref.view(np.uint32)
        assert not diff.any(), f"{label}: {int(diff.sum())} values differ"
        want = (ref_info.iterations, ref_info.active_fraction, ref_info.updated_fraction,
                ref_info.converged)  # fmt: skip
        assert infos[0] == want, (label, infos[0], want)
    checked += 1


# Rows that do not divide evenly over 2-4 ranks (1 to 3 rows leave ranks empty); rows of a
# multiple of 4 points (the float4 variant) and not; 3-D volumes split by planes.
shapes = [(1, 8), (2, 7), (3, 12), (13, 10), (21, 16), (5, 4, 6), (6, 3, 8), (2, 5, 4)]
cases = [
    dict(niter=5, kappa=20, gamma=0.2, option=1),
    dict(niter=4, kappa=15, gamma=0.15, option=2, voxelspacing="axes"),
    dict(niter=3, kappa=30, gamma=0.1, option=3),
    dict(niter=12, kappa=25, gamma=0.2, option=1, epsilon=0.5),
    dict(niter=12, kappa=25, gamma=0.12, option=3, epsilon=0.3, freeze=True),
    dict(niter=40, kappa=40, gamma=0.1, option=2, epsilon=2.0),  # converges
    dict(niter=40, kappa=40, gamma=0.2, option=1, epsilon=1.0, freeze=True),
    dict(niter=0, kappa=20, gamma=0.1, option=1, epsilon=0.5),
]
for shape in shapes:
    whole = (rng.random(shape) * 200).astype(np.float32)  # the same on every rank (seeded)
    whole[tuple(s // 2 for s in shape)] = 255
    mine = m.scatter(whole if m.is_root else None)
    for kw in cases:
        kw = dict(kw)
        if kw.get("voxelspacing") == "axes":
            kw["voxelspacing"] = tuple(1.0 + 0.5 * a for a in range(len(shape)))
        if len(shape) == 3:  # within the stability bound of six neighbours, 1/6
            kw["gamma"] = min(kw["gamma"], 0.15)
        check(whole, mine, f"{shape} {kw}", **kw)

# An uneven, non-canonical layout (some ranks empty), and a run that converges between two
# read-backs of the counts.
same_everywhere = np.random.default_rng(5)
whole = (same_everywhere.random((11, 8)) * 100).astype(np.float32)
cuts = np.sort(same_everywhere.integers(0, 12, size=m.nranks - 1))
for kw in (dict(niter=6, kappa=20, gamma=0.2), dict(niter=30, kappa=20, gamma=0.2, epsilon=3.0)):
    check(whole, np.split(whole, cuts)[m.rank], f"layout {cuts.tolist()} {kw}", **kw)

# The cost of an iteration on ranks (16 iterations minus 8: the one-off work cancels), with
# g the neighbours of this rank's block: one launch of the step, one copy into each ghost
# row; a sync per face sent (the staging's copy to the host), and with epsilon the counts
# read back once every CHECK_EVERY iterations; only the face rows cross, each way. With
# the info (no freeze) the changed mask's face rows cross too, for the dilation.
ROWS, W = 48, 64
whole = (np.random.default_rng(0).random((ROWS, W)) * 100).astype(np.float32)
block = m.asarray(m.scatter(whole if m.is_root else None))
rows = MPI.COMM_WORLD.allgather(int(block.shape[0]))
g = int(any(rows[: m.rank])) + int(any(rows[m.rank + 1 :]))
face, counts = W * 4, 2 * 8  # a float32 row; two uint64 counts an iteration (read in batches)
budgets = {
    "plain": ({}, (1 + g, g, g * face, g * face)),
    "epsilon": ({"epsilon": 1e-4}, (1 + g, g + 1 / CHECK_EVERY, g * face + counts, g * face)),
    "epsilon/freeze": (
        {"epsilon": 1e-4, "freeze": True},
        (1 + g, g + 1 / CHECK_EVERY, g * face + counts, g * face),
    ),
    "epsilon/info": (
        {"epsilon": 1e-4, "return_info": True},
        (2 + 2 * g, 2 * g + 1 / CHECK_EVERY, g * (face + W) + counts, g * (face + W)),
    ),
}


def per_iteration(machine, kw):
    """(launches, syncs, d2h bytes, h2d bytes) per iteration: runs of 16 and 8 iterations
    differ by 8, so the one-off work before and after the loop cancels."""
    totals = []
    for niter in (8, 16):
        with counting.measure() as c:
            anisotropic_diffusion(block, niter=niter, machine=machine, **kw)
        totals.append(c.total)
    a, b = totals
    return tuple((getattr(b, k) - getattr(a, k)) / 8 for k in ("launches", "syncs", "d2h_bytes",
                                                               "h2d_bytes"))  # fmt: skip


for name, (kw, want) in budgets.items():
    got = per_iteration(m, kw)
    assert got == want, (name, m.rank, got, want)
    checked += 1

# The direct path (a CUDA-aware MPI): the same launches; a sync before each of the two
# Sendrecv calls of an exchange (it waits for the stream before every MPI call with device
# arrays); nothing crosses to the host but the counts.
os.environ["SIMD_MPI_CUDA_AWARE"] = "1"
direct = Machine(pes=16, backend="counting", comm=MPI.COMM_WORLD)
assert direct.ranks.device.path == "direct"
for name, (kw, (launches, _, _, _)) in budgets.items():
    exchanges = 2 if name == "epsilon/info" else 1  # the values, and the changed mask
    syncs = exchanges * 2 * (g > 0) + (1 / CHECK_EVERY if "epsilon" in name else 0)
    got = per_iteration(direct, kw)
    want = (launches, syncs, counts if "epsilon" in name else 0, 0)
    assert got == want, ("direct", name, m.rank, got, want)
    checked += 1

# The kernel text itself (compiled as C++, one OS thread per CUDA thread) on blocks with
# ghost rows: bit for bit the one-rank run of the same text, the tiling and seams included.
from tests.diffusion.cuda_on_cpu import cpu_cuda, unavailable  # noqa: E402

if unavailable() is None:
    from diffusion.blocks import Blocks
    from diffusion.dense import Layout, PMParameters, pm_diffuse

    host = Machine(pes=16, backend="numpy", comm=MPI.COMM_WORLD)
    for shape, kw in [
        ((37, 20), dict(epsilon=0.0, freeze=False)),  # float4 rows
        ((35, 9), dict(epsilon=0.5, freeze=False)),  # the active counts, one float a thread
        ((6, 5, 8), dict(epsilon=0.3, freeze=True)),
    ]:
        whole = (np.random.default_rng(9).random(shape) * 255).astype(np.float32)
        mine = host.scatter(whole if host.is_root else None)
        args = (PMParameters.check(len(shape), 12, 30.0, 0.08, **kw), True)
        out, info = pm_diffuse(cpu_cuda, mine.copy(), Blocks(host, mine, shape), *args)
        got = host.gather(out)
        if host.is_root:
            ref, ref_info = pm_diffuse(cpu_cuda, whole.copy(), Layout(shape), *args)
            assert got.tobytes() == ref.tobytes(), ("kernel text", shape, kw)
            assert info == ref_info, ("kernel text", shape, kw, info, ref_info)
        checked += 1

print("ok", m.rank, checked)
