"""The PE-mesh diffusion with its PE rows split across MPI ranks (diffusion.mesh on a
machine with a communicator): bit for bit the one-rank run, balancing included, and
``simd-emu diffuse`` on several ranks writing the one-process bytes."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tests.mpi_support import run_ranks


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_mesh_across_ranks_equals_one_rank_bit_for_bit(n):
    done = run_ranks(n, "mesh_ranks.py", timeout=300)
    assert sorted(line.split()[0] for line in done.stdout.splitlines()) == ["ok"] * n


@pytest.mark.mpi
def test_cli_mesh_on_ranks_writes_the_one_process_bytes(tmp_path):
    from diffusion.images import builtin_image
    from simd.cli import main

    img = builtin_image("camera", size=(256, 256))[60:120, 80:130]  # 60 x 50
    np.save(tmp_path / "img.npy", img)
    common = ["diffuse", "img.npy", "--niter", "15", "--epsilon", "0.5", "--no-progress"]
    mesh = [*common, "--pes", "6", "4", "--every", "2", "--compare"]
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main([*mesh, "--plot-load", "load1.png", "--activity-map", "act1.png",
                     "-o", "one.tif"]) == 0  # fmt: skip
        assert main([*common, "--pes", "5", "3", "--axes", "rows", "-o", "one.npy"]) == 0
    finally:
        os.chdir(here)
    done = run_ranks(
        3,
        "-m simd.cli",
        *mesh,
        "--plot-load",
        "load3.png",
        "--activity-map",
        "act3.png",
        "-o",
        "three.tif",
        cwd=tmp_path,
        timeout=60,
    )
    assert done.stdout.count("wrote three.tif, load3.png, act3.png") == 1, done.stdout
    assert "on 3 MPI ranks" in done.stdout and done.stdout.count("with / without") == 1
    for one, three in (("one.tif", "three.tif"), ("load1.png", "load3.png"),
                       ("act1.png", "act3.png")):  # fmt: skip
        assert (tmp_path / one).read_bytes() == (tmp_path / three).read_bytes(), three
    run_ranks(2, "-m simd.cli", *common, "--pes", "5", "3", "--axes", "rows", "--method",
              "mesh", "-o", "two.npy", cwd=tmp_path, timeout=60)  # fmt: skip
    assert (tmp_path / "two.npy").read_bytes() == (tmp_path / "one.npy").read_bytes()
