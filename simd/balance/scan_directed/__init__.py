"""Scan-directed load balancing on a mesh (Biagioni & Prins 1991).

A k-dimensional data grid lives on a k-dimensional PE mesh under an *orthogonal
decomposition*: one boundary vector per axis says which PE hyperplane holds which data
hyperplanes, and PE ``I`` keeps its block at the low corner of a fixed buffer of ``b``
points per dimension (:class:`TiledGrid`). The balancer moves whole data hyperplanes
between neighbouring PE hyperplanes so that every PE hyperplane carries about the same
load, using only scans (to find the loads, the flows and the average) and nearest-neighbour
shifts (to move the data), as the paper prescribes:

* :func:`balance` with a 1-D mesh is Algorithm 1 (``limited=False``) or Algorithm 2
  (``limited=True``, the pseudo-load ``alpha`` of inactive points bounds the buffer use);
* with a k-D mesh it is Algorithm 3 or its limited-buffer analogue Algorithm 4, balancing
  the axes one after another (all of them, or only those in ``axes``: Figure 10).

On a machine spread over MPI ranks (``Machine(..., comm=...)``) each rank's
:class:`TiledGrid` holds a block of the mesh's PE rows (``rows``) while the boundary vectors
stay global; the scans and shifts span the ranks, the front end's lines are put together
from every rank's PE rows, and every rank takes the same decisions, so a balancing step
moves the same data as on one rank.

Whatever happens, the Locality Constraints of Figure 1 hold after every step: the mapping
stays orthogonal (constraint 2) and monotone (constraint 1, data moves through FIFO buffers
and never passes other data: Lemma 3), and every PE keeps at least one data hyperplane per
axis (constraint 3). A balancing step whose average load is too small to spread every data
hyperplane over a single PE hyperplane aborts (the paper's underflow test). Each put or
get of a data hyperplane is checked against the receiver's buffer: a move that would
overflow a buffer, or empty a PE, waits (and is counted in :attr:`AxisReport.blocked`), so
no buffer ever overflows and no point is lost or duplicated.

Notes
-----
Every PE of a PE hyperplane computes the same flow, so the walk of the boundary between
PE hyperplanes ``i - 1`` and ``i`` depends only on that flow and on the loads of the data
hyperplanes that cross it. The front end follows it on a vector of ``p`` boundaries; the
data itself moves by machine shifts, one hyperplane per put/get cycle, charged to the
model clock like the scans that decide it.

References
----------
E. S. Biagioni and J. F. Prins, "Scan Directed Load Balancing for Highly-Parallel
Mesh-Connected Computers", in Unstructured Scientific Computation on Scalable
Multiprocessors, MIT Press, 1991.

Modules
-------
``grid``
    The decomposition: :class:`TiledGrid`, the hierarchical boundaries of Lemma 1 and the
    Locality Constraints (:func:`locality_violations`, :class:`LocalityError`).
``flows``
    Step 1 of a balancing step: the hyperplane loads, the average and the flows, by scans.
``moves``
    Step 2: the put/get cycles that move the data hyperplanes by mesh shifts.
``balancing``
    :func:`balance`, the two steps along every axis balanced.
"""

from __future__ import annotations

from simd.balance.scan_directed.balancing import balance
from simd.balance.scan_directed.flows import AxisReport
from simd.balance.scan_directed.grid import (
    LocalityError,
    TiledGrid,
    check_grid,
    hierarchical_boundaries,
    locality_violations,
)

__all__ = [
    "AxisReport",
    "LocalityError",
    "TiledGrid",
    "balance",
    "check_grid",
    "hierarchical_boundaries",
    "locality_violations",
]
