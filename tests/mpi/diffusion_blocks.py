"""Run on N ranks by tests/diffusion/test_distributed.py: the dense diffusion split in
blocks of rows equals the one-rank dense result bit for bit (2-D and 3-D, every option,
spacing, epsilon, freeze, ITK's filter), and bad input fails on every rank alike."""

import sys
import warnings

import numpy as np
from mpi4py import MPI

from diffusion import anisotropic_diffusion, gradient_anisotropic_diffusion
from diffusion.dense import DiffusionStabilityWarning
from simd import Machine


def abort(*exc_info):
    """A failed check on one rank ends every rank (the others would wait for it)."""
    sys.__excepthook__(*exc_info)
    MPI.COMM_WORLD.Abort(1)


sys.excepthook = abort
m = Machine(pes=16, backend="numpy", comm=MPI.COMM_WORLD)
rng = np.random.default_rng(11)
checked = 0


def same(block, whole_result, label):
    """This rank's rows gathered on rank 0 equal the one-rank result bit for bit."""
    global checked
    got = m.gather(block)
    if m.is_root:
        assert got.dtype == whole_result.dtype, (label, got.dtype)
        assert got.shape == whole_result.shape, (label, got.shape)
        diff = got.view(np.uint32) != whole_result.view(np.uint32)
        assert not diff.any(), f"{label}: {int(diff.sum())} values differ"
    checked += 1


# Sizes that do not divide evenly over 2, 3, 4 ranks; 1, 2 and 3 rows give some ranks one
# row or none.
shapes = [(1, 9), (2, 7), (3, 5), (7, 11), (13, 10), (5, 4, 6), (6, 3, 3), (2, 5, 4)]
cases = [
    dict(niter=4, kappa=20, gamma=0.2, option=1),
    dict(niter=3, kappa=15, gamma=0.15, option=2, voxelspacing=None),
    dict(niter=5, kappa=30, gamma=0.1, option=3),
    dict(niter=12, kappa=25, gamma=0.2, option=1, epsilon=0.5),
    dict(niter=12, kappa=25, gamma=0.12, option=3, epsilon=0.3, freeze=True),
    dict(niter=30, kappa=40, gamma=0.1, option=2, epsilon=2.0),
    dict(niter=0, kappa=20, gamma=0.1, option=1),
]
for shape in shapes:
    whole = (rng.random(shape) * 200).astype(np.float32) if m.is_root else None
    if m.is_root:
        whole[tuple(s // 2 for s in shape)] = 255
    block = m.scatter(whole)
    for kw in cases:
        kw = dict(kw)
        if kw.get("option") == 2:
            kw["voxelspacing"] = tuple(1.0 + 0.5 * a for a in range(len(shape)))
        if len(shape) == 3:  # within the stability bound of six neighbours, 1/6
            kw["gamma"] = min(kw["gamma"], 0.15)
        out, info = anisotropic_diffusion(block, machine=m, return_info=True, **kw)
        ref, ref_info = (
            anisotropic_diffusion(whole, return_info=True, **kw) if m.is_root else (None, None)
        )
        same(out, ref, f"{shape} {kw}")
        infos = MPI.COMM_WORLD.allgather(
            (info.iterations, info.active_fraction, info.updated_fraction, info.converged)
        )
        assert all(i == infos[0] for i in infos), infos
        if m.is_root:
            assert infos[0] == (
                ref_info.iterations,
                ref_info.active_fraction,
                ref_info.updated_fraction,
                ref_info.converged,
            ), (shape, kw, infos[0], ref_info)
    # ITK's filter: the mean squared gradient is a global quantity.
    for itk in (
        dict(number_of_iterations=4),
        dict(number_of_iterations=5, conductance=1.5, conductance_scaling_update_interval=2),
        dict(number_of_iterations=3, time_step=0.05, spacing=(1.5,) * len(shape)),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DiffusionStabilityWarning)
            out = gradient_anisotropic_diffusion(block, machine=m, **itk)
            ref = gradient_anisotropic_diffusion(whole, **itk) if m.is_root else None
        same(out, ref, f"itk {shape} {itk}")

# An uneven, non-canonical layout (some ranks empty) works too.
same_everywhere = np.random.default_rng(5)
whole = (same_everywhere.random((9, 6)) * 100).astype(np.float32)
cuts = np.sort(same_everywhere.integers(0, 10, size=m.nranks - 1))
mine = np.split(whole, cuts)[m.rank]
kw = dict(niter=6, kappa=20, gamma=0.2, epsilon=0.4)
out = anisotropic_diffusion(mine, machine=m, **kw)
same(out, anisotropic_diffusion(whole, **kw), f"layout {cuts.tolist()}")
same(
    gradient_anisotropic_diffusion(mine, machine=m),
    gradient_anisotropic_diffusion(whole),
    f"itk layout {cuts.tolist()}",
)


def fails_everywhere(call, match):
    try:
        call()
    except ValueError as err:
        assert match in str(err), str(err)
    else:
        raise AssertionError(f"no error raised for {match!r}")


# Bad input on one rank only: every rank raises the same error, no rank hangs.
block = np.ones((2, 3), np.float32)
bad = block.copy()
bad[0, 0] = np.nan
last = m.nranks - 1
fails_everywhere(lambda: anisotropic_diffusion(bad if m.rank == last else block, machine=m), "NaN")
fails_everywhere(
    lambda: anisotropic_diffusion(block, niter=-1 if m.rank == last else 2, machine=m), "niter"
)
fails_everywhere(
    lambda: gradient_anisotropic_diffusion(
        block, conductance=-1 if m.rank == last else 2, machine=m
    ),
    "conductance",
)
if m.nranks > 1:
    fails_everywhere(
        lambda: anisotropic_diffusion(
            np.ones((2, 4 if m.rank == last else 3), np.float32), machine=m
        ),
        "differ",
    )
    fails_everywhere(
        lambda: anisotropic_diffusion(block, kappa=10 + (m.rank == last), machine=m),
        "different diffusion parameters",
    )
fails_everywhere(
    lambda: anisotropic_diffusion(np.zeros((0, 3), np.float32), machine=m), "image is empty"
)
# A gamma past the stability bound: refused on every rank alike.
fails_everywhere(
    lambda: anisotropic_diffusion(block, gamma=0.3, machine=m), "past the explicit scheme's"
)

# One stability warning of ITK's time step, on rank 0, naming the caller's file.
with warnings.catch_warnings(record=True) as record:
    warnings.simplefilter("always", DiffusionStabilityWarning)
    gradient_anisotropic_diffusion(block, time_step=0.2, number_of_iterations=1, machine=m)
where = [w.filename for w in record if issubclass(w.category, DiffusionStabilityWarning)]
assert where == ([__file__] if m.is_root else []), (m.rank, where)
checked += 1
print("ok", m.rank, checked)
