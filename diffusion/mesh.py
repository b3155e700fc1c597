"""Anisotropic diffusion on the emulated PE mesh, with scan-directed load balancing.

The image is cut into an orthogonal decomposition over an ``R x C`` mesh of PEs (64 x 64
by default, the MasPar MP-1 of Biagioni & Prins (1991)); PE ``(r, c)`` keeps its tile at the
top-left of a buffer of ``b x b`` points. Every iteration:

1. the PEs fetch their 8 neighbours' edge values by X-Net shifts
   (``Machine.halo_exchange``, zero-flux border);
2. every PE updates only its *active* points (Biagioni & Prins 1991: a point whose update
   is below ``epsilon`` keeps its value and sleeps until a neighbour changes), so the mesh waits
   for the PE with the most active points: that count is charged to the model clock;
3. the PEs exchange which points changed and wake their neighbours (or, with
   ``freeze``, retire the points that did not change for good).

Every ``balance_every`` iterations the active points are rebalanced by Biagioni & Prins'
Scan Directed Load Balancing (:mod:`simd.balance.scan_directed`), over both axes or one.
The points are updated with exactly the dense path's float32 operations, so the result
equals :func:`diffusion.anisotropic_diffusion`'s, bit for bit on NumPy, whatever the mesh
and the balancing.

On a machine spread over MPI ranks the mesh's PE rows lie in rank blocks: the halo
exchange, the scans and shifts of the balancing and the iteration's load counts span the
ranks (:mod:`simd.distributed`), the front end's decisions are taken alike on every rank,
and the result, the statistics and the model clock equal the one-rank run's bit for bit.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diffusion.conduction import flux
from diffusion.dense import PMParameters, check_count, check_image, check_machine
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
#: neighbours' changed flags and the worklist of Biagioni & Prins's MP-1 program).
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


def _static_max(m: Any, grid: TiledGrid, row_bounds: np.ndarray, col_bounds: np.ndarray) -> int:
    """Largest active count over the blocks of a fixed decomposition (summed-area table of
    the data rows held here; across ranks the blocks' counts are summed over the ranks)."""
    xp = grid.xp
    active = grid.gather("active")
    start, stop = grid.data_rows()
    s = xp.zeros((active.shape[0] + 1, active.shape[1] + 1), dtype=np.int64)
    s[1:, 1:] = active.astype(np.int64).cumsum(0).cumsum(1)
    r = xp.asarray(np.clip(row_bounds, start, stop) - start)
    c = xp.asarray(col_bounds)
    blocks = (
        s[r[1:, None], c[None, 1:]]
        - s[r[:-1, None], c[None, 1:]]
        - s[r[1:, None], c[None, :-1]]
        + s[r[:-1, None], c[None, :-1]]
    )
    if m.ranks is None:
        return int(m.fetch(blocks.max())[0])
    return int(m.ranks.allreduce(m.asnumpy(blocks), "add").max())


def _host(a: Any) -> np.ndarray:
    """``a`` as a NumPy array (copied from the device when it is a CuPy array)."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def check_grid(grid: TiledGrid, n_points: int, machine: Any = None) -> None:
    """Independent check of a decomposition from where the data physically are.

    Reads the global index carried in every valid buffer slot (channel ``"index"``),
    verifies that every point is held exactly once (nothing lost or duplicated), rebuilds
    the mapping ``mu`` from the slots' PE coordinates and checks the Locality Constraints
    on it. Raises :class:`LocalityError`. Across MPI ranks (``machine`` spread over them)
    every rank's slots are gathered on every rank, which all raise alike.
    """
    xp = grid.xp
    valid = grid.valid()
    index = _host(grid.channels["index"][valid])
    coords = [_host(c) for c in xp.nonzero(valid)[: grid.ndim]]  # every slot's PE
    coords[0] = coords[0] + grid.rows[0]
    if machine is not None and machine.ranks is not None:
        index = machine.gather(index, root=None)
        coords = [machine.gather(c, root=None) for c in coords]
    counts = np.bincount(index, minlength=n_points)
    if counts.size != n_points or np.any(counts != 1):
        lost = int((counts[:n_points] == 0).sum())
        dup = int((counts > 1).sum())
        raise LocalityError(f"data points lost: {lost}, duplicated: {dup}")
    mu = []
    for c in coords:
        m = np.empty(n_points, dtype=np.int64)
        m[index] = c
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
        Input image. On a machine spread over MPI ranks, the whole image on rank 0 (the
        other ranks' ``image`` is ignored: pass None); rank 0 sends each rank the rows of
        its PE rows.
    niter, kappa, gamma, voxelspacing, option, epsilon, freeze
        As in :func:`diffusion.anisotropic_diffusion`.
    machine : simd.Machine, optional
        The machine to run on; its ``pes`` is the mesh. Default: a new
        ``Machine(pes=mesh, backend=backend)``. A machine spread over MPI ranks
        (``Machine(pes=(R, C), comm=...)``) splits the mesh's PE rows in rank blocks (its
        canonical layout); every rank calls with the same arguments, and the result equals
        the one-rank run's bit for bit (image, loads, activity, model clock).
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
        Across ranks ``image`` and ``activity`` are gathered on rank 0 (None on the other
        ranks), ``grid`` holds this rank's PE rows, and the statistics, reports and phase
        cycles are the same on every rank (the phases' wall times and MPI messages are
        this rank's; ``Machine.stats_across_ranks`` combines them).

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
    check_machine(machine)
    across = getattr(machine, "ranks", None) is not None
    if not across:
        xp_in, img = check_image(image, ndims=(2,))
        host = _host(img)
        shape = host.shape
    # Across ranks a bad argument on one rank raises on every rank (none waits).
    with machine.ranks.collective_errors() if across else contextlib.nullcontext():
        p = PMParameters.check(
            2, niter, kappa, gamma, voxelspacing, option, epsilon=epsilon, freeze=freeze
        )
        check_count(balance_every, "balance_every")
        balance_axes = tuple(int(a) for a in balance_axes)
        if not balance_axes or any(a not in (0, 1) for a in balance_axes):
            raise ValueError(f"balance_axes must name axes 0 and/or 1, got {balance_axes!r}")
        if machine is None:
            from simd import Machine

            mesh = tuple(int(s) for s in mesh)
            if len(mesh) != 2 or min(mesh) < 1:
                raise ValueError(f"mesh must be two positive integers, got {mesh!r}")
            if mesh[0] > shape[0] or mesh[1] > shape[1]:
                raise ValueError(
                    f"the mesh {mesh} is larger than the image {shape}: every PE must hold "
                    "at least one pixel"
                )
            machine = Machine(pes=mesh, backend=backend)
        m = machine
        if len(m.pes) != 2:
            raise ValueError(f"mesh diffusion needs a 2-D machine, got pes={m.pes}")
    if across:
        settings = (p, buffer, balance_every, balance_axes, limited_buffers, check, track_static)
        xp_in, host, shape = _image_on_root(m, image, settings)
    if m.pes[0] > shape[0] or m.pes[1] > shape[1]:
        raise ValueError(
            f"the mesh {m.pes} is larger than the image {shape}: every PE must hold at "
            "least one pixel"
        )
    if m.is_root:
        p.warn_if_unstable()
    xp = m.xp
    R, C = m.pes
    rows0 = hierarchical_boundaries(shape[0], R)
    cols0 = hierarchical_boundaries(shape[1], C)
    pe_rows, host = _rows_of_ranks(m, host, shape, rows0)
    n = shape[0] * shape[1]
    start_row = int(rows0[pe_rows[0]])
    arrays = {"value": host, "active": np.ones(host.shape, dtype=bool)}
    uncharged = ["index"] if check else []
    if check:
        first = start_row * shape[1]
        arrays["index"] = np.arange(first, first + host.size, dtype=np.int64).reshape(host.shape)
    if track_static:
        # The activity map travels with the points (balancing moves them between ranks).
        arrays["activity"] = np.zeros(host.shape, dtype=np.int32)
        uncharged.append("activity")
    grid = TiledGrid.from_arrays(
        arrays, m.pes, buffer=buffer, xp=xp, uncharged=uncharged, rows=pe_rows, shape=shape
    )
    B = grid.buffer
    npes = R * C
    res = MeshResult(image=None, grid=grid)
    bar = None
    if progress is True and m.is_root:
        from tqdm.auto import tqdm

        bar = tqdm(total=p.niter, desc="diffuse", unit="it")
    start = time.perf_counter()
    records: dict[str, list[PhaseRecord]] = {"diffusion": [], "balancing": []}
    valid = grid.valid()
    bookkeeping = 0.0
    for it in range(p.niter):
        if balance_every and it > 0 and it % balance_every == 0:
            with m.phase("balancing") as record:
                reports = balance(
                    grid,
                    machine=m,
                    load="active",
                    axes=balance_axes,
                    limited=limited_buffers,
                    on_cycle=(lambda g: check_grid(g, n, m)) if check else None,
                )
            records["balancing"].append(record)
            res.balance_reports.append(reports)
            valid = grid.valid()
            if check:
                check_grid(grid, n, m)
        with m.phase("diffusion") as record:
            values = grid.channels["value"]
            active = grid.channels["active"]
            heights, widths = grid.extents
            act = active & valid
            busiest, total = _busiest_and_total(m, act.sum(axis=(2, 3)))
        records["diffusion"].append(record)
        if total == 0:
            res.converged = True
            break
        res.max_load.append(busiest)
        res.active_fraction.append(total / n)
        if track_static:
            # The emulator's own bookkeeping, not machine work: kept off both clocks.
            t0 = time.perf_counter()
            grid.channels["activity"] += act
            # One read back, which also waits for the bookkeeping (kept off the wall clock).
            res.static_max_load.append(_static_max(m, grid, rows0, cols0))
            bookkeeping += time.perf_counter() - t0
        with m.phase("diffusion") as record:
            halo = m.halo_exchange(values, heights, widths, width=1, boundary="edge")
            # The busiest PE sets the pace: charge its active count.
            m.charge("local", npes * busiest, ops=UPDATE_OPS[p.option])
            # Every buffer slot is computed and only the active ones are stored (a fixed-shape
            # masked update: no read back of the active positions).
            v = halo[:, :, 1:-1, 1:-1]
            # Same float32 operations as the dense path (diffusion.dense.pm_update).
            kappa, (s0, s1), option = p.kappa, p.spacing, p.option
            u0 = flux(xp, halo[:, :, 2:, 1:-1] - v, kappa, s0, option) - flux(
                xp, v - halo[:, :, :-2, 1:-1], kappa, s0, option
            )
            u1 = flux(xp, halo[:, :, 1:-1, 2:] - v, kappa, s1, option) - flux(
                xp, v - halo[:, :, 1:-1, :-2], kappa, s1, option
            )
            upd = p.gamma * (u0 + u1)
            if p.epsilon > 0:
                ch = act & (xp.abs(upd) >= p.epsilon)
                values[...] = xp.where(ch, v + upd, values)
                m.charge("local", npes * B * B, ops=FLAG_OPS)
                if p.freeze:
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
        still = _busiest_and_total(m, (grid.channels["active"] & valid).sum(axis=(2, 3)))[1]
        res.converged = p.niter > 0 and p.epsilon > 0 and still == 0
    if bar is not None:
        bar.close()
    m.sync()
    for recs in records.values():  # the device has passed every phase's events
        for r in recs:
            if isinstance(r.interval, DeviceInterval):
                r.interval.read_done()
    res.image = _result(m, grid.gather("value"), xp_in)
    res.elapsed = time.perf_counter() - start - bookkeeping
    res.phases = {name: PhaseStats.of(recs) for name, recs in records.items()}
    if track_static:
        res.activity = m.gather(grid.gather("activity"))
    return res


def _image_on_root(
    m: Any, image: Any, settings: tuple
) -> tuple[Any, np.ndarray | None, tuple[int, int]]:
    """Across ranks: rank 0's image checked (the error raised on every rank), its shape
    shared, and every rank's ``settings`` compared. Returns the input's array module (None
    off rank 0), the host image (rank 0) and the shape."""
    xp_in, host, shape = None, None, None
    with m.ranks.collective_errors():
        if m.is_root:
            xp_in, img = check_image(image, ndims=(2,))
            host = _host(img)
            shape = host.shape
    every = m.ranks.allgather((shape, repr(settings)))
    # Every rank reaches the same verdict from the same gathered data: no rank waits.
    if len({e[1] for e in every}) != 1:
        raise ValueError("the ranks were given different diffusion parameters")
    return xp_in, host, tuple(every[0][0])


def _rows_of_ranks(
    m: Any, host: np.ndarray | None, shape: tuple[int, int], rows0: np.ndarray
) -> tuple[tuple[int, int], np.ndarray]:
    """This rank's PE rows (the machine's canonical blocks of the mesh's rows) and the
    image rows they hold at the start, sent from rank 0 (one ``Alltoallv``)."""
    R = m.pes[0]
    if m.ranks is None:
        return (0, R), host
    bounds = m.ranks.bounds(R)
    lo, hi = int(bounds[m.rank]), int(bounds[m.rank + 1])
    counts = np.diff(rows0[bounds]) if m.is_root else np.zeros(m.nranks, np.int64)
    send = host if m.is_root else np.zeros((0, shape[1]), np.float32)
    return (lo, hi), m.ranks.alltoallv(send, counts)


def _busiest_and_total(m: Any, counts: Any) -> tuple[int, int]:
    """The largest and the sum of the PEs' active counts (across every rank): the
    iteration's one read back (one host sync on a GPU)."""
    xp = m.xp
    if counts.size:
        busiest, total = (int(v) for v in m.fetch(xp.stack([counts.max(), counts.sum()]))[0])
    else:  # a rank that holds no PE row
        busiest, total = 0, 0
    if m.ranks is None:
        return busiest, total
    both = m.ranks.allgather((busiest, total))
    return max(b for b, _ in both), sum(t for _, t in both)


def _result(m: Any, rows: Any, xp_in: Any) -> Any:
    """The diffused image: on one process as the input's array type; across ranks
    gathered on rank 0 (None on the other ranks)."""
    if m.ranks is not None:
        whole = m.gather(rows)
        return whole if whole is None or xp_in is np else xp_in.asarray(whole)
    if xp_in is np:
        return m.asnumpy(rows)
    return xp_in.asarray(rows)
