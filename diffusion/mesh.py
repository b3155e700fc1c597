"""Anisotropic diffusion on the emulated PE mesh, with scan-directed load balancing.

The image is cut into an orthogonal decomposition over an ``R x C`` mesh of PEs (64 x 64
by default, the MasPar MP-1 of seed 003); PE ``(r, c)`` keeps its tile at the top-left of
a buffer of ``b x b`` points. Every iteration:

1. the PEs fetch their 8 neighbours' edge values by X-Net shifts
   (``Machine.halo_exchange``, zero-flux border);
2. every PE updates only its *active* points (seed 003: a point whose update is below
   ``epsilon`` keeps its value and sleeps until a neighbour changes), so the mesh waits
   for the PE with the most active points: that count is charged to the model clock;
3. the PEs exchange which points changed and wake their neighbours (or, with
   ``freeze``, retire the points that did not change for good).

Every ``balance_every`` iterations the active points are rebalanced by Biagioni & Prins'
Scan Directed Load Balancing (:mod:`simd.balance.scan_directed`), over both axes or one.
The points are updated with exactly the dense path's float32 operations, so the result
equals :func:`diffusion.anisotropic_diffusion`'s, bit for bit on NumPy, whatever the mesh
and the balancing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diffusion.conduction import flux
from diffusion.dense import check_image, check_parameters, check_spacing, warn_if_unstable
from simd.balance.scan_directed import (
    AxisReport,
    LocalityError,
    TiledGrid,
    balance,
    hierarchical_boundaries,
    locality_violations,
)
from simd.stats import DeviceInterval, PhaseRecord, PhaseStats

__all__ = ["FLAG_OPS", "UPDATE_OPS", "MeshResult", "mesh_diffusion"]

#: Operations (32-bit, each ``CostModel.elementwise`` cycles) to update one active point:
#: per axis two differences, two conductances (a division, a square, a negation and an
#: exponential of about 8 operations, or a rational/Tukey expression), two products and a
#: subtraction; then the sum, the product with gamma, the test against epsilon and the
#: store. Rough counts; what matters is that they are the same with and without balancing.
UPDATE_OPS = {1: 60.0, 2: 44.0, 3: 48.0}

#: Operations per buffer slot and iteration to rebuild the active list (the OR of the
#: neighbours' changed flags and the worklist of seed 003's MP-1 program).
FLAG_OPS = 1.0


@dataclass
class MeshResult:
    """What a run on the mesh did.

    Attributes
    ----------
    image : array
        The diffused image (float32, NumPy or CuPy like the input).
    iterations : int
        Iterations run.
    converged : bool
        True when the run stopped because no point was active any more.
    active_fraction : list of float
        Fraction of the points computed in each iteration.
    max_load : list of int
        Active points of the busiest PE in each iteration (the iteration's cost).
    static_max_load : list of int
        The same under the initial (hierarchical) decomposition, i.e. without balancing
        (recorded with ``track_static``). The activity does not depend on the balancing,
        so one run gives both.
    balance_reports : list of list of AxisReport
        One list per balancing step.
    phases : dict of str to simd.PhaseStats
        The machine phases of the run, "diffusion" and "balancing": calls, bytes, model
        cycles and wall time, summed over their executions.
    elapsed : float
        Wall seconds of the run (without the emulator's own bookkeeping for
        ``track_static``).
    cycles, wall : dict
        Model cycles and wall seconds per phase, and their "total" (``elapsed`` for the
        wall clock).
    grid : TiledGrid
        The final decomposition and buffers.
    activity : numpy.ndarray or None
        Per point, the number of iterations in which it was active (the activity map);
        recorded with ``track_static``.
    """

    image: Any
    iterations: int = 0
    converged: bool = False
    active_fraction: list[float] = field(default_factory=list)
    max_load: list[int] = field(default_factory=list)
    static_max_load: list[int] = field(default_factory=list)
    balance_reports: list[list[AxisReport]] = field(default_factory=list)
    phases: dict[str, PhaseStats] = field(default_factory=dict)
    elapsed: float = 0.0
    grid: TiledGrid | None = None
    activity: np.ndarray | None = None

    @property
    def cycles(self) -> dict[str, float]:
        """Model cycles per phase and in total."""
        out = {name: p.cycles for name, p in self.phases.items()}
        out["total"] = sum(out.values())
        return out

    @property
    def wall(self) -> dict[str, float]:
        """Wall seconds per phase, and ``elapsed`` as the total."""
        out = {name: p.wall for name, p in self.phases.items()}
        out["total"] = self.elapsed
        return out

    @property
    def mean_max_load(self) -> float:
        """Average over the iterations of the busiest PE's load."""
        return float(np.mean(self.max_load)) if self.max_load else 0.0

    @property
    def mean_static_max_load(self) -> float:
        """The same without balancing."""
        return float(np.mean(self.static_max_load)) if self.static_max_load else 0.0

    @property
    def load_ratio(self) -> float:
        """Average max load with balancing over that without (Figure 8's load ratio)."""
        base = self.mean_static_max_load
        return self.mean_max_load / base if base else 1.0

    @property
    def aborted(self) -> int:
        """Axis balancing steps that aborted (underflow or no room)."""
        return sum(r.aborted is not None for step in self.balance_reports for r in step)


def _block_max(xp: Any, active: Any, row_bounds: np.ndarray, col_bounds: np.ndarray) -> Any:
    """Largest active count over the blocks of a fixed decomposition (summed-area table),
    as a 0-d array of ``xp`` (left on the device: the caller reads it)."""
    s = xp.zeros((active.shape[0] + 1, active.shape[1] + 1), dtype=np.int64)
    s[1:, 1:] = active.astype(np.int64).cumsum(0).cumsum(1)
    r = xp.asarray(row_bounds)
    c = xp.asarray(col_bounds)
    blocks = (
        s[r[1:, None], c[None, 1:]]
        - s[r[:-1, None], c[None, 1:]]
        - s[r[1:, None], c[None, :-1]]
        + s[r[:-1, None], c[None, :-1]]
    )
    return blocks.max()


def _host(a: Any) -> np.ndarray:
    """``a`` as a NumPy array (copied from the device when it is a CuPy array)."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def check_grid(grid: TiledGrid, n_points: int) -> None:
    """Independent check of a decomposition from where the data physically are.

    Reads the global index carried in every valid buffer slot (channel ``"index"``),
    verifies that every point is held exactly once (nothing lost or duplicated), rebuilds
    the mapping ``mu`` from the slots' PE coordinates and checks the Locality Constraints
    on it. Raises :class:`LocalityError`.
    """
    xp = grid.xp
    valid = grid.valid()
    index = _host(grid.channels["index"][valid])
    counts = np.bincount(index, minlength=n_points)
    if counts.size != n_points or np.any(counts != 1):
        lost = int((counts[:n_points] == 0).sum())
        dup = int((counts > 1).sum())
        raise LocalityError(f"data points lost: {lost}, duplicated: {dup}")
    mu = []
    for coords in xp.nonzero(valid)[: grid.ndim]:  # the PE coordinates of every slot
        m = np.empty(n_points, dtype=np.int64)
        m[index] = _host(coords)
        mu.append(m.reshape(grid.shape))
    problems = locality_violations(mu, grid.pes)
    if problems:
        raise LocalityError("; ".join(problems))


def mesh_diffusion(
    image: Any,
    niter: int = 1,
    kappa: float = 50,
    gamma: float = 0.1,
    voxelspacing: Any = None,
    option: int = 1,
    *,
    epsilon: float = 0.0,
    freeze: bool = False,
    machine: Any = None,
    mesh: tuple[int, int] = (64, 64),
    buffer: int | None = None,
    balance_every: int = 0,
    balance_axes: tuple[int, ...] = (0, 1),
    limited_buffers: bool = True,
    backend: str = "auto",
    check: bool = False,
    track_static: bool = True,
    progress: Any = None,
) -> MeshResult:
    """Perona-Malik diffusion of a 2-D image on an emulated PE mesh.

    Parameters
    ----------
    image : array_like (NumPy or CuPy), 2-D
        Input image.
    niter, kappa, gamma, voxelspacing, option, epsilon, freeze
        As in :func:`diffusion.anisotropic_diffusion`.
    machine : simd.Machine, optional
        The machine to run on; its ``pes`` is the mesh. Default: a new
        ``Machine(pes=mesh, backend=backend)``. Not yet a machine spread over several
        MPI ranks (ValueError): the dense path spans ranks
        (``anisotropic_diffusion(block, ..., machine=machine)``).
    mesh : (int, int)
        PE mesh shape when no machine is given (64 x 64 is the MasPar MP-1).
    buffer : int, optional
        Buffer side ``b`` per PE (default: twice the largest tile side).
    balance_every : int
        Balance every this many iterations (0: never). Figures 8-10 use 1, 2, 5, 10, 20.
    balance_axes : tuple of int
        Axes to balance: ``(0, 1)`` both, ``(0,)`` rows only (Figure 10).
    limited_buffers : bool
        Algorithm 4 (pseudo-load of inactive points) instead of Algorithm 3.
    backend : str
        Backend of the machine made when ``machine`` is None.
    check : bool
        After every put/get cycle of every balancing step, check from the data themselves
        that no point is lost or duplicated and that the Locality Constraints hold
        (slower; for tests).
    track_static : bool
        Also record the busiest PE's load under the unbalanced decomposition.
    progress : bool or callable, optional
        True for a tqdm progress bar, or a callable ``progress(iteration, result)``.

    Returns
    -------
    MeshResult

    Examples
    --------
    >>> import numpy as np
    >>> from diffusion import anisotropic_diffusion
    >>> img = np.zeros((16, 16), np.float32); img[4:12, 4:12] = 100
    >>> res = mesh_diffusion(img, niter=20, kappa=30, gamma=0.2, epsilon=0.5, mesh=(4, 4),
    ...                      balance_every=2, backend="numpy")
    >>> ref = anisotropic_diffusion(img, niter=20, kappa=30, gamma=0.2, epsilon=0.5)
    >>> bool(np.array_equal(res.image, ref))
    True
    """
    if getattr(machine, "ranks", None) is not None and machine.nranks > 1:
        # Every rank reaches this alike (no communication), so none waits for another.
        raise ValueError(
            "mesh diffusion across ranks needs the machine's instructions (shift, scan, "
            "send, get) to span ranks, which they do not yet: use the dense path, "
            "anisotropic_diffusion(block, ..., machine=machine)"
        )
    xp_in, img = check_image(image, ndims=(2,))
    niter = check_parameters(niter, kappa, gamma, option, epsilon)
    spacing = check_spacing(voxelspacing, 2, "voxelspacing")
    warn_if_unstable(float(gamma), spacing, option)
    if (
        isinstance(balance_every, bool)
        or not isinstance(balance_every, int | np.integer)
        or balance_every < 0
    ):
        raise ValueError(f"balance_every must be a non-negative integer, got {balance_every!r}")
    balance_axes = tuple(int(a) for a in balance_axes)
    if not balance_axes or any(a not in (0, 1) for a in balance_axes):
        raise ValueError(f"balance_axes must name axes 0 and/or 1, got {balance_axes!r}")
    if machine is None:
        from simd import Machine

        mesh = tuple(int(s) for s in mesh)
        if len(mesh) != 2 or min(mesh) < 1:
            raise ValueError(f"mesh must be two positive integers, got {mesh!r}")
        if mesh[0] > img.shape[0] or mesh[1] > img.shape[1]:
            raise ValueError(
                f"the mesh {mesh} is larger than the image {img.shape}: every PE must hold "
                "at least one pixel"
            )
        machine = Machine(pes=mesh, backend=backend)
    m = machine
    if len(m.pes) != 2:
        raise ValueError(f"mesh diffusion needs a 2-D machine, got pes={m.pes}")
    if m.pes[0] > img.shape[0] or m.pes[1] > img.shape[1]:
        raise ValueError(
            f"the mesh {m.pes} is larger than the image {img.shape}: every PE must hold at "
            "least one pixel"
        )
    xp = m.xp
    host = _host(img)
    n = host.size
    arrays = {"value": host, "active": np.ones(host.shape, dtype=bool)}
    if check:
        arrays["index"] = np.arange(n, dtype=np.int64).reshape(host.shape)
    grid = TiledGrid.from_arrays(arrays, m.pes, buffer=buffer, xp=xp, uncharged=("index",))
    R, C = m.pes
    B = grid.buffer
    npes = R * C
    rows0 = hierarchical_boundaries(host.shape[0], R)
    cols0 = hierarchical_boundaries(host.shape[1], C)
    res = MeshResult(image=None, grid=grid)
    activity = xp.zeros(host.shape, dtype=np.int32) if track_static else None
    bar = None
    if progress is True:
        from tqdm.auto import tqdm

        bar = tqdm(total=niter, desc="diffuse", unit="it")
    start = time.perf_counter()
    records: dict[str, list[PhaseRecord]] = {"diffusion": [], "balancing": []}
    valid = grid.valid()
    bookkeeping = 0.0
    for it in range(niter):
        if balance_every and it > 0 and it % balance_every == 0:
            with m.phase("balancing") as record:
                reports = balance(
                    grid,
                    machine=m,
                    load="active",
                    axes=balance_axes,
                    limited=limited_buffers,
                    on_cycle=(lambda g: check_grid(g, n)) if check else None,
                )
            records["balancing"].append(record)
            res.balance_reports.append(reports)
            valid = grid.valid()
            if check:
                check_grid(grid, n)
        with m.phase("diffusion") as record:
            values = grid.channels["value"]
            active = grid.channels["active"]
            heights, widths = grid.extents
            act = active & valid
            counts = act.sum(axis=(2, 3))
            # The iteration's one read back (one host sync on a GPU): both counts together.
            busiest, total = (int(v) for v in m.fetch(xp.stack([counts.max(), counts.sum()]))[0])
        records["diffusion"].append(record)
        if total == 0:
            res.converged = True
            break
        res.max_load.append(busiest)
        res.active_fraction.append(total / n)
        if track_static:
            # The emulator's own bookkeeping, not machine work: kept off both clocks.
            t0 = time.perf_counter()
            glob = grid.gather("active")
            static = _block_max(xp, glob, rows0, cols0)
            activity += glob
            # One read back, which also waits for the bookkeeping (kept off the wall clock).
            res.static_max_load.append(int(m.fetch(static)[0]))
            bookkeeping += time.perf_counter() - t0
        with m.phase("diffusion") as record:
            halo = m.halo_exchange(values, heights, widths, width=1, boundary="edge")
            # The busiest PE sets the pace: charge its active count.
            m.charge("local", npes * busiest, ops=UPDATE_OPS[option])
            # Every buffer slot is computed and only the active ones are stored (a fixed-shape
            # masked update: no read back of the active positions).
            v = halo[:, :, 1:-1, 1:-1]
            # Same float32 operations as the dense path (diffusion.dense.pm_update).
            u0 = flux(xp, halo[:, :, 2:, 1:-1] - v, kappa, spacing[0], option) - flux(
                xp, v - halo[:, :, :-2, 1:-1], kappa, spacing[0], option
            )
            u1 = flux(xp, halo[:, :, 1:-1, 2:] - v, kappa, spacing[1], option) - flux(
                xp, v - halo[:, :, 1:-1, :-2], kappa, spacing[1], option
            )
            upd = gamma * (u0 + u1)
            if epsilon > 0:
                ch = act & (xp.abs(upd) >= epsilon)
                values[...] = xp.where(ch, v + upd, values)
                m.charge("local", npes * B * B, ops=FLAG_OPS)
                if freeze:
                    active &= ch | ~act
                else:
                    # Flags travel as bytes (the halo kernels move numbers).
                    changed = ch.astype(np.uint8)
                    hc = m.halo_exchange(changed, heights, widths, width=1, boundary="zero")
                    woke = (
                        hc[:, :, 1:-1, 1:-1]
                        | hc[:, :, :-2, 1:-1]
                        | hc[:, :, 2:, 1:-1]
                        | hc[:, :, 1:-1, :-2]
                        | hc[:, :, 1:-1, 2:]
                    )
                    active[...] = (woke != 0) & valid
            else:
                values[...] = xp.where(act, v + upd, values)
            res.iterations += 1
        records["diffusion"].append(record)
        if bar is not None:
            bar.update(1)
        elif callable(progress):
            progress(it, res)
    else:
        res.converged = (
            niter > 0 and epsilon > 0 and not bool((grid.channels["active"] & valid).any())
        )
    if bar is not None:
        bar.close()
    m.sync()
    for recs in records.values():  # the device has passed every phase's events
        for r in recs:
            if isinstance(r.interval, DeviceInterval):
                r.interval.read_done()
    out = grid.gather("value")
    if xp_in is np:
        out = m.asnumpy(out)
    else:
        out = xp_in.asarray(out)
    res.image = out
    res.elapsed = time.perf_counter() - start - bookkeeping
    res.phases = {name: PhaseStats.of(recs) for name, recs in records.items()}
    if activity is not None:
        res.activity = m.asnumpy(activity)
    return res
