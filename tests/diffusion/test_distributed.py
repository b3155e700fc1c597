"""The dense diffusion split in blocks across MPI ranks (diffusion.blocks): bit for bit
the one-rank result on the NumPy and the counting backends (the fused kernel), and the
command line on several ranks."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.mpi_support import run_ranks


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_blocks_equal_one_rank_bit_for_bit(n):
    done = run_ranks(n, "diffusion_blocks.py", timeout=150)
    assert sorted(line.split()[0] for line in done.stdout.splitlines()) == ["ok"] * n


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_fused_step_on_ranks_equals_one_rank_within_budget(n):
    """The CuPy code path (counting backend): the fused kernel on blocks with ghost rows,
    bit for bit the one-rank result and info; launches, syncs and face bytes pinned."""
    done = run_ranks(n, "diffusion_fused.py", timeout=150)
    assert sorted(line.split()[0] for line in done.stdout.splitlines()) == ["ok"] * n


def _errors(stderr: str) -> list[str]:
    """The command's own error lines (not the launcher's report of the exit status)."""
    return [line for line in stderr.splitlines() if line.startswith("simd-emu diffuse:")]


@pytest.mark.mpi
def test_cli_on_ranks_writes_the_one_rank_bytes(tmp_path):
    from diffusion.images import builtin_image
    from simd.cli import main

    img = builtin_image("camera", size=(256, 256))[60:107, 80:133]  # 47 x 53
    np.save(tmp_path / "img.npy", img)
    common = ["diffuse", "img.npy", "--niter", "15", "--epsilon", "0.5", "--no-progress"]
    # The one-process references: the PE mesh (the default) and the dense path.
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main([*common, "--pes", "4", "4", "-o", "mesh.npy"]) == 0
        assert main([*common, "--method", "dense", "-o", "dense.tif"]) == 0
    finally:
        os.chdir(here)
    mesh = [*common, "--pes", "4", "4", "-o", "ranks.npy"]
    done = run_ranks(3, "-m simd.cli", *mesh, cwd=tmp_path, timeout=60)
    assert done.stdout.count("wrote ranks.npy") == 1 and "on 3 MPI ranks" in done.stdout
    assert (tmp_path / "ranks.npy").read_bytes() == (tmp_path / "mesh.npy").read_bytes()
    dense = [*common, "--method", "dense", "-o", "ranks.tif"]
    done = run_ranks(2, "-m simd.cli", *dense, cwd=tmp_path, timeout=60)
    assert (tmp_path / "ranks.tif").read_bytes() == (tmp_path / "dense.tif").read_bytes()


@pytest.mark.mpi
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.npy"], "no such image file"),
        (["nan.npy"], "NaN"),  # in the last rows: found on the last rank, said by rank 0
        (["img.npy", "--method", "dense", "--plot-load", "l.png"], "--plot-load: for the PE-mesh"),
        (["img.npy", "--method", "mesh"], "is more PEs than"),  # the 64 x 64 PEs
        (["nan.npy", "--pes", "2", "2"], "NaN"),  # the mesh path: rank 0 checks the image
    ],
)
def test_cli_on_ranks_bad_input_is_one_line_and_every_rank_fails(tmp_path, args, message):
    img = np.ones((9, 8), np.float32)
    np.save(tmp_path / "img.npy", img)
    img[-1, -1] = np.nan
    np.save(tmp_path / "nan.npy", img)
    done = run_ranks(
        3, "-m simd.cli", "diffuse", *args, "-o", "o.npy", cwd=tmp_path, timeout=60, check=False
    )
    assert done.returncode != 0
    errors = _errors(done.stderr)
    assert len(errors) == 1 and message in errors[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert not (tmp_path / "o.npy").exists()
