"""The dense diffusion split in blocks across MPI ranks (diffusion.blocks): bit for bit
the one-rank result, and the command line on several ranks."""

from __future__ import annotations

import pytest

from tests.mpi_support import run_ranks


@pytest.mark.mpi
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_blocks_equal_one_rank_bit_for_bit(n):
    done = run_ranks(n, "diffusion_blocks.py", timeout=150)
    assert sorted(line.split()[0] for line in done.stdout.splitlines()) == ["ok"] * n
