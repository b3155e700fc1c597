"""The dense path with the image split in blocks of rows across MPI ranks.

Each rank holds a block of rows (along axis 0) of the image or volume. The iteration loops
are the one-rank ones (:func:`diffusion.dense.pm_diffuse`, :func:`diffusion.dense.itk_diffuse`)
given a layout, :class:`_Blocks`, whose blocks have neighbours: an iteration sends the
block's first and last rows to the neighbour ranks (:meth:`simd.ranks.Ranks.exchange_faces`)
as ghost rows of theirs, runs the one-rank update on the block with its ghost rows around
it, and keeps the block's own rows: every update reads the point's neighbours only, so each
kept row sees exactly what it sees on one rank. At the global border nothing is added and
the one-rank boundary rule applies. On device arrays that update is the fused kernel
(:mod:`diffusion._cupy`) on a buffer holding the block and its ghost rows, computing and
writing only the block's rows. Global quantities are made exact: counts by an integer sum
over the ranks (with ``epsilon`` on the device, once every
:data:`diffusion._cupy.CHECK_EVERY` iterations, when they are read), ITK's mean squared
gradient from per-row sums gathered in row order (:func:`diffusion.dense.gradient_row_sums`).
The result equals the one-rank result of the same backend bit for bit, whatever the number
of ranks and the layout (empty blocks included).

Reached through ``anisotropic_diffusion(block, ..., machine=m)`` and
``gradient_anisotropic_diffusion(block, ..., machine=m)`` with ``m`` a machine made with a
communicator; the functions here take the same arguments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from diffusion.dense import (
    ITKParameters,
    Layout,
    PMParameters,
    check_image,
    itk_diffuse,
    pm_diffuse,
)

__all__ = ["block_anisotropic_diffusion", "block_gradient_anisotropic_diffusion"]


class _Blocks(Layout):
    """The layout of the image over the ranks, and the halo exchange of its blocks."""

    def __init__(self, machine: Any, block: Any, settings: Any) -> None:
        """``settings``: the run's parameters (hashable), which must be the same on every
        rank."""
        self.ranks = machine.ranks
        mine = (block.ndim, tuple(block.shape[1:]), int(block.shape[0]), settings)
        every = self.ranks.allgather(mine)
        # Every rank reaches the same verdict from the same gathered data: no rank waits.
        kinds = {(d, t) for d, t, _, _ in every}
        if len(kinds) != 1:
            raise ValueError(
                "the ranks' blocks differ in dimensions or in the shape of a row: "
                + "; ".join(f"rank {r}: {e[2]} x {e[1]}" for r, e in enumerate(every))
            )
        if len({e[3] for e in every}) != 1:
            raise ValueError("the ranks were given different diffusion parameters")
        self.rows = [e[2] for e in every]
        super().__init__((sum(self.rows), *block.shape[1:]))
        if self.size == 0:
            raise ValueError(f"image is empty (shape {self.shape})")
        self.local = int(block.shape[0])
        # A ghost row on each side with a non-empty block (empty blocks are skipped).
        r = self.ranks.rank
        if self.local:
            self.ghosts = (int(any(self.rows[:r])), int(any(self.rows[r + 1 :])))

    def fill(self, ext: Any, own: slice) -> None:
        if self.ghosts == (0, 0):  # no neighbour sends here or waits for this block
            return
        below, above = self.ranks.exchange_faces(ext[own], 1, rows=self.rows)
        if below is not None:
            ext[: own.start] = below
        if above is not None:
            ext[own.stop :] = above

    def total(self, counts: np.ndarray) -> np.ndarray:
        """Integer sums over the ranks (exact, so the same on any number of ranks)."""
        return self.ranks.allreduce(np.ascontiguousarray(counts), "add")

    def gather_rows(self, sums: np.ndarray) -> np.ndarray:
        """Per-row host values (``(k, rows)``) of every rank, in row order."""
        return self.ranks.gather(np.ascontiguousarray(sums.T), root=None).T


def block_anisotropic_diffusion(
    block: Any,
    niter: int = 1,
    kappa: float = 50,
    gamma: float = 0.1,
    voxelspacing: Any = None,
    option: int = 1,
    *,
    epsilon: float = 0.0,
    freeze: bool = False,
    return_info: bool = False,
    machine: Any,
) -> Any:
    """:func:`diffusion.anisotropic_diffusion` of the image whose rows the ranks of
    ``machine`` hold: returns this rank's rows of the result (and the global info)."""
    ranks = machine.ranks
    with ranks.collective_errors():
        xp, out = check_image(block, allow_empty=True)
        p = PMParameters.check(
            out.ndim, niter, kappa, gamma, voxelspacing, option, epsilon=epsilon, freeze=freeze
        )
    blocks = _Blocks(machine, out, p)
    if ranks.is_root:  # one warning, not one per rank, at the caller of anisotropic_diffusion
        p.warn_if_unstable(stacklevel=3)
    out, info = pm_diffuse(xp, out, blocks, p, return_info)
    return (out, info) if return_info else out


def block_gradient_anisotropic_diffusion(
    block: Any,
    time_step: float = 0.125,
    conductance: float = 3.0,
    conductance_scaling_update_interval: int = 1,
    number_of_iterations: int = 5,
    spacing: Any = None,
    *,
    machine: Any,
) -> Any:
    """:func:`diffusion.gradient_anisotropic_diffusion` of the image whose rows the ranks
    of ``machine`` hold: returns this rank's rows of the result."""
    ranks = machine.ranks
    with ranks.collective_errors():
        xp, out = check_image(block, allow_empty=True)
        p = ITKParameters.check(
            out.ndim,
            time_step,
            conductance,
            conductance_scaling_update_interval,
            number_of_iterations,
            spacing,
        )
    blocks = _Blocks(machine, out, p)
    if ranks.is_root:
        p.warn_if_unstable(stacklevel=3)  # at the caller of gradient_anisotropic_diffusion
    return itk_diffuse(xp, out, blocks, p)
