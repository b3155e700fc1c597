"""The image split in blocks of rows across MPI ranks, for the dense paths.

Each rank holds a block of rows (along axis 0) of the image or volume. The iteration loops
are the one-rank ones (:func:`diffusion.dense.pm_diffuse`, :func:`diffusion.itk.itk_diffuse`)
given a layout, :class:`Blocks`, whose blocks have neighbours: an iteration sends the
block's first and last rows to the neighbour ranks (:meth:`simd.ranks.Ranks.exchange_faces`)
as ghost rows of theirs, runs the one-rank update on the block with its ghost rows around
it, and keeps the block's own rows: every update reads the point's neighbours only, so each
kept row sees exactly what it sees on one rank. At the global border nothing is added and
the one-rank boundary rule applies. On device arrays that update is the fused kernel
(:mod:`diffusion.fused`) on a buffer holding the block and its ghost rows, computing and
writing only the block's rows. Global quantities are made exact: counts by an integer sum
over the ranks (with ``epsilon`` on the device, once every
:data:`diffusion.fused.CHECK_EVERY` iterations, when they are read), ITK's mean squared
gradient from per-row sums gathered in row order (:func:`diffusion.itk.gradient_row_sums`).
The result equals the one-rank result of the same backend bit for bit, whatever the number
of ranks and the layout (empty blocks included).

Reached through ``anisotropic_diffusion(block, ..., machine=m)`` and
``gradient_anisotropic_diffusion(block, ..., machine=m)`` with ``m`` a machine made with a
communicator: both check their input with :func:`image_layout`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import numpy as np

from diffusion.checks import check_image, check_machine
from diffusion.layout import Layout

__all__ = ["Blocks", "image_layout"]


class Blocks(Layout):
    """The layout of the image over the ranks of ``machine``, whose block here is
    ``block``, and the halo exchange of its blocks. Collective: the ranks compare their
    blocks' shapes and ``settings`` and all raise alike when they differ."""

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


def image_layout(image: Any, machine: Any, settings_of: Callable[[int], Any]) -> tuple:
    """``(xp, block, layout, settings)``: ``image`` checked and copied to float32, the
    layout it has (the whole image, or on a ``machine`` spread over MPI ranks this rank's
    block of rows, which may be empty: :class:`Blocks`), and the run's settings made by
    ``settings_of(ndim)``, which checks the user's values. Across ranks a bad argument
    on one rank raises the same error on every rank (collective).

    Examples
    --------
    >>> xp, block, layout, ndim = image_layout([[1, 2], [3, 4]], None, lambda ndim: ndim)
    >>> block.dtype, layout.shape, ndim
    (dtype('float32'), (2, 2), 2)
    """
    check_machine(machine)
    ranks = getattr(machine, "ranks", None)
    with contextlib.nullcontext() if ranks is None else ranks.collective_errors():
        xp, block = check_image(image, allow_empty=ranks is not None)
        settings = settings_of(block.ndim)
    if ranks is None:
        return xp, block, Layout(block.shape), settings
    return xp, block, Blocks(machine, block, settings), settings
