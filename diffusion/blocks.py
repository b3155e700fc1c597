"""The dense path with the image split in blocks of rows across MPI ranks.

Each rank holds a block of rows (along axis 0) of the image or volume. An iteration sends
the block's first and last rows to the neighbour ranks (:meth:`simd.ranks.Ranks.exchange_faces`),
runs the one-rank update on the block with these ghost rows around it, and keeps the
block's own rows: every update reads the point's neighbours only, so each kept row sees
exactly what it sees on one rank. At the global border nothing is added and the one-rank
boundary rule applies. Global quantities are made exact: counts by an integer sum over the
ranks, ITK's mean squared gradient from per-row sums gathered in row order
(:func:`diffusion.dense.gradient_row_sums`). The result equals the one-rank result bit for
bit, whatever the number of ranks and the layout (empty blocks included).

Reached through ``anisotropic_diffusion(block, ..., machine=m)`` and
``gradient_anisotropic_diffusion(block, ..., machine=m)`` with ``m`` a machine made with a
communicator; the functions here take the same arguments.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from diffusion.dense import (
    DiffusionInfo,
    _Workspace,
    check_image,
    check_itk_parameters,
    check_parameters,
    check_spacing,
    dilate,
    gradient_row_sums,
    itk_conductance,
    itk_delta,
    mean_of_row_sums,
    pm_update,
    pm_update_inplace,
    warn_if_unstable,
    warn_itk_unstable,
)
from kernels.registry import force_reference

__all__ = ["block_anisotropic_diffusion", "block_gradient_anisotropic_diffusion"]


class _Blocks:
    """The layout of the image over the ranks, and the halo exchange of its blocks."""

    def __init__(self, machine: Any, block: Any, settings: tuple) -> None:
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
        self.shape = (sum(self.rows), *block.shape[1:])
        self.size = int(np.prod(self.shape))
        if self.size == 0:
            raise ValueError(f"image is empty (shape {self.shape})")
        self.local = int(block.shape[0])

    def extend(self, xp: Any, block: Any) -> tuple[Any, slice]:
        """``block`` with one ghost row from each neighbour block, and the slice of the
        block's own rows in it."""
        below, above = self.ranks.exchange_faces(block, 1, rows=self.rows)
        parts = [below] if below is not None else []
        parts.append(block)
        if above is not None:
            parts.append(above)
        start = 0 if below is None else 1
        ext = xp.concatenate(parts) if len(parts) > 1 else block
        return ext, slice(start, start + self.local)

    def total(self, *counts: Any) -> list[int]:
        """Integer sums over the ranks (exact, so the same on any number of ranks)."""
        mine = np.array([int(c) for c in counts], dtype=np.int64)
        return [int(c) for c in self.ranks.allreduce(mine, "add")]


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
        niter = check_parameters(niter, kappa, gamma, option, epsilon)
        spacing = check_spacing(voxelspacing, out.ndim, "voxelspacing")
    settings = (niter, float(kappa), float(gamma), spacing, option, float(epsilon), freeze)
    blocks = _Blocks(machine, out, settings)
    if ranks.is_root:  # one warning, not one per rank
        warn_if_unstable(float(gamma), spacing, option)
    fused = xp is not np and epsilon == 0 and not force_reference()
    info = DiffusionInfo()
    n = blocks.size
    ws = None
    active_count = None
    frozen = xp.zeros(out.shape, dtype=bool) if (epsilon > 0 and freeze) else None
    for _ in range(niter):
        ext, own = blocks.extend(xp, out)
        if blocks.local == 0:
            upd = xp.zeros_like(out)
        elif fused:
            from diffusion._cupy import pm_iterate

            # One fused step on the extended block: its border rows are ghosts or the
            # image border, which the kernel treats as the one-rank kernel does.
            out = pm_iterate(xp, ext, 1, float(kappa), float(gamma), spacing, option)[own].copy()
        elif xp is np:
            if ws is None or ws.d.shape != ext.shape:
                ws = _Workspace(ext.shape)
            upd = pm_update_inplace(ext, kappa, gamma, spacing, option, ws)[own]
        else:
            upd = pm_update(xp, ext, kappa, gamma, spacing, option)[own]
        info.iterations += 1
        if epsilon == 0:
            if not fused:
                out += upd
            info.active_fraction.append(1.0)
            info.updated_fraction.append(1.0)
            continue
        info.active_fraction.append(1.0 if active_count is None else active_count / n)
        changed = xp.abs(upd) >= epsilon
        if frozen is not None:
            changed &= ~frozen
        out = xp.where(changed, out + upd, out)
        if frozen is not None:
            frozen |= ~changed
            active = ~frozen
        else:
            wide, own = blocks.extend(xp, changed)
            active = dilate(xp, wide)[own]
        active_count, changed_count = blocks.total(active.sum(), changed.sum())
        info.updated_fraction.append(changed_count / n)
        if active_count == 0:
            info.converged = True
            break
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
        interval, niter, spacing = check_itk_parameters(
            time_step,
            conductance,
            conductance_scaling_update_interval,
            number_of_iterations,
            spacing,
            out.ndim,
        )
    settings = (float(time_step), float(conductance), interval, niter, spacing)
    blocks = _Blocks(machine, out, settings)
    if ranks.is_root:
        warn_itk_unstable(time_step, spacing, stacklevel=3)
    scale = tuple(1.0 / s for s in spacing)
    big_k = 0.0
    k = out.ndim
    for it in range(niter):
        ext, own = blocks.extend(xp, out)
        empty = blocks.local == 0
        if not empty:
            x = ext.astype(np.float64)
            # At the image border the pad replicates, as on one rank; beside a ghost row
            # it only feeds the ghost row's own update, which is dropped.
            p = xp.pad(x, 1, mode="edge")
        if it % interval == 0:
            sums = np.zeros((k, 0)) if empty else gradient_row_sums(xp, p, scale, own)
            every = ranks.gather(np.ascontiguousarray(sums.T), root=None).T
            big_k = itk_conductance(mean_of_row_sums(every, blocks.size), conductance)
        if empty:
            continue
        update = itk_delta(xp, x, p, big_k, scale)[own].astype(np.float32)
        out = out + (update.astype(np.float64) * float(time_step)).astype(np.float32)
    return out
