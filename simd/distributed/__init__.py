"""The instruction set of a machine spread over MPI ranks (``Machine(..., comm=...)``).

On each rank a parallel variable is that rank's block along axis 0 (blocks in rank order,
of any sizes, possibly empty). Every function here gives, on each rank, that rank's block
of what the one-rank machine gives on the gathered (global) array, bit for bit, float
``add`` reductions included: they are correctly rounded on every backend and any number
of ranks (``kernels.exact_sum``: each rank sums its block exactly in integer limbs, one
``Allreduce`` adds the limb vectors, and the exact total is rounded once). The model
clock is charged for the global operand, so ``Machine.clock`` is the same on every rank
and equals the one-rank clock.

The machine validates the operands (errors agreed on every rank) and calls these with
local operands already checked; each function is collective. On a GPU the routing (owners,
order, counts) runs on the device and device arrays go to the collectives of
``simd.ranks``, which hand them to MPI directly or through pinned host buffers; only what
must cross leaves the device: block summaries, faces, and the rows routed to other ranks.

What each instruction communicates:

- ``scan`` (axis None or 0): one all-gather of the block layout; exact operators then one
  all-gather of per-block summaries (the trailing segment's value, whether the block starts
  a segment), folded in rank order; a float ``add`` chains the carry rank to rank instead
  (each rank waits for its predecessor's inclusive value: a sequential scan, as on one rank).
- ``reduce``, ``count``: ``Allreduce`` (float ``add``: of the exact sums' int64 limb vectors,
  one read back of them; float ``max``/``min``: an all-gather of partials, folded in rank
  order).
- ``pack``: local pack, then ``Alltoallv`` to the canonical layout.
- ``send``, ``get``: ``Alltoallv`` of (address, value) messages to the owning rank (and back).
- ``shift``, ``halo_exchange``: ``Sendrecv`` of the border rows with the neighbours, or a
  row fetch with ``Alltoallv`` when a neighbour's block is too small.

Each function takes the machine ``m`` (a :class:`simd.Machine` with ``m.ranks``) and the
instruction's local operands; one module per kind of instruction:

``layouts``
    The blocks' row offsets (one all-gather), owners of global rows, rows fetched from
    their owners.
``scans``
    ``scan``, ``spread``, ``pack``.
``reductions``
    ``reduce``, ``count``.
``router``
    ``send``, ``get``.
``mesh``
    ``shift``, ``halo_exchange`` and the uncharged row shift.
``stats``
    Every rank's phase statistics together.
"""

from __future__ import annotations

from simd.distributed.layouts import block_shape, layout
from simd.distributed.mesh import halo_exchange, shift, shift_rows_uncharged
from simd.distributed.reductions import count, reduce
from simd.distributed.router import get, send
from simd.distributed.scans import pack, scan, spread
from simd.distributed.stats import stats_across_ranks

__all__ = [
    "block_shape",
    "count",
    "get",
    "halo_exchange",
    "layout",
    "pack",
    "reduce",
    "scan",
    "send",
    "shift",
    "shift_rows_uncharged",
    "spread",
    "stats_across_ranks",
]
