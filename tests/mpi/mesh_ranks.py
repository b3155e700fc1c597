"""Run on N ranks by tests/diffusion/test_mesh_distributed.py: the PE-mesh diffusion with
its PE rows split across the ranks equals the one-rank mesh diffusion bit for bit (image,
activity map, loads, balancing reports, model cycles and clock), with and without
scan-directed balancing, and a bad image on rank 0 fails on every rank alike."""

import sys
import warnings

import numpy as np
from mpi4py import MPI

from diffusion.dense import DiffusionStabilityWarning
from diffusion.mesh import mesh_diffusion
from simd import Machine


def abort(*exc_info):
    """A failed check on one rank ends every rank (the others would wait for it)."""
    sys.__excepthook__(*exc_info)
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = abort
comm = MPI.COMM_WORLD
root = comm.Get_rank() == 0
rng = np.random.default_rng(7)
checked = 0


def image(shape):
    """A bright off-centre block on a noisy half: the activity is skewed, so the
    balancing moves rows and columns across the rank borders."""
    img = np.zeros(shape, np.float32)
    h, w = shape
    img[h // 5 : h // 2, w // 4 : (3 * w) // 4] = 200
    img[: h // 2] += (rng.random((h // 2, w)) * 40).astype(np.float32)
    return img


def report_fields(reports):
    return [
        [
            (
                r.axis,
                r.aborted,
                r.average,
                r.alpha,
                r.flows.tolist(),
                r.cycles,
                r.moved,
                r.blocked,
                np.asarray(r.loads_before).tolist(),
                np.asarray(r.loads_after).tolist(),
            )
            for r in step
        ]
        for step in reports
    ]


def summary(res, m):
    return (
        res.iterations,
        res.converged,
        res.active_fraction,
        res.max_load,
        res.static_max_load,
        report_fields(res.balance_reports),
        {k: p.cycles for k, p in res.phases.items()},
        {k: p.calls for k, p in res.phases.items()},
        m.clock,
    )


FIELDS = ("iterations", "converged", "active", "max_load", "static", "reports", "cycles")
FIELDS += ("calls", "clock")

# (image shape, mesh): uneven PE rows on 2-4 ranks; 3 PE rows leave rank 3 of 4 empty.
layouts = [((48, 40), (4, 4)), ((48, 40), (6, 3)), ((21, 17), (3, 3)), ((30, 26), (5, 2))]
cases = [
    dict(niter=6, kappa=20, gamma=0.2),
    dict(niter=12, kappa=25, gamma=0.2, epsilon=0.5, balance_every=1, check=True),
    dict(niter=14, kappa=25, gamma=0.15, epsilon=0.8, balance_every=2, limited_buffers=False),
    dict(niter=10, kappa=30, gamma=0.2, epsilon=0.5, balance_every=3, balance_axes=(0,)),
    dict(niter=10, kappa=30, gamma=0.2, epsilon=0.5, balance_every=2, balance_axes=(1,)),
    dict(niter=12, kappa=20, gamma=0.12, option=3, epsilon=0.4, freeze=True, balance_every=2),
    dict(
        niter=8,
        kappa=15,
        gamma=0.1,
        option=2,
        voxelspacing=(1.0, 1.5),
        epsilon=0.3,
        balance_every=1,
        buffer=40,
    ),
    dict(niter=60, kappa=40, gamma=0.2, epsilon=3.0, balance_every=4),  # converges early
]
for shape, pes in layouts:
    whole = image(shape)  # the same generator on every rank: only rank 0's is passed
    for kw in cases:
        if "buffer" in kw and kw["buffer"] < 2 * -(-shape[0] // pes[0]):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DiffusionStabilityWarning)
            m = Machine(pes=pes, backend="numpy", comm=comm)
            res = mesh_diffusion(whole if root else None, machine=m, **kw)
            mine = summary(res, m)
            everyone = comm.allgather(mine)
            assert all(s == everyone[0] for s in everyone), (shape, pes, kw)
            if root:
                one = Machine(pes=pes, backend="numpy")
                ref = mesh_diffusion(whole, machine=one, **kw)
                assert res.image.dtype == ref.image.dtype and res.image.shape == ref.image.shape
                diff = res.image.view(np.uint32) != ref.image.view(np.uint32)
                assert not diff.any(), f"{shape} {pes} {kw}: {int(diff.sum())} values differ"
                assert np.array_equal(res.activity, ref.activity), (shape, pes, kw)
                expected = summary(ref, one)
                for got, want, what in zip(mine, expected, FIELDS, strict=True):
                    assert got == want, f"{shape} {pes} {kw}: {what}: {got} != {want}"
            else:
                assert res.image is None and res.activity is None
        checked += 1

# A bad image on rank 0 raises the same error on every rank.
m = Machine(pes=(2, 2), backend="numpy", comm=comm)
bad = np.ones((8, 8), np.float32)
bad[5, 5] = np.nan
last = comm.Get_size() - 1
good = np.ones((8, 8), np.float32)
for given, kw, message in (
    (bad, {}, "NaN"),
    (np.ones(8, np.float32), {}, "2-D"),
    (good, {"niter": -1 if comm.Get_rank() == last else 2}, "niter"),  # one rank's argument
    (good, {"balance_every": 1 + (comm.Get_rank() == last)}, "different diffusion parameters"),
    (np.ones((1, 8), np.float32), {}, "larger than the image"),
):
    if message.startswith("different") and comm.Get_size() == 1:
        continue
    try:
        mesh_diffusion(given if root else None, machine=m, **{"niter": 2, **kw})
    except ValueError as exc:
        assert message in str(exc), exc
    else:
        raise AssertionError("no error")
    checked += 1
print("ok", checked)
