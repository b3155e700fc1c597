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

from diffusion.checks import check_count, check_image, check_machine
from diffusion.conduction import flux
from diffusion.mesh_grid import busiest_and_total, initial_grid, static_max_load
from diffusion.settings import PMParameters
from simd.balance.scan_directed import (
    AxisReport,
    TiledGrid,
    balance,
    check_grid,
    hierarchical_boundaries,
)
from simd.stats import DeviceInterval, PhaseRecord, PhaseStats
from simd.transfers import to_host

__all__ = ["FLAG_OPS", "UPDATE_OPS", "MeshResult", "MeshSettings", "mesh_diffusion"]

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


@dataclass(frozen=True, kw_only=True)
class MeshSettings:
    """The settings of one run on the mesh, checked once (:meth:`check`) where the user's
    values enter; the run below takes the object and trusts its fields. Across MPI ranks
    every rank must hold the same settings.

    Attributes
    ----------
    pm : PMParameters
        The Perona-Malik parameters (those of :func:`diffusion.anisotropic_diffusion`).
    buffer : int or None
        Buffer side per PE (None: twice the largest tile side).
    balance_every : int
        Balance every this many iterations (0: never).
    balance_axes : tuple of int
        Axes to balance.
    limited_buffers : bool
        Algorithm 4 (pseudo-load of inactive points) instead of Algorithm 3.
    check_locality : bool
        Check the decomposition from the data after every put/get cycle (for tests).
    track_static : bool
        Also record the busiest PE's load under the unbalanced decomposition.

    Examples
    --------
    >>> pm = PMParameters.check(2, niter=3)
    >>> MeshSettings.check(pm, balance_every=2, balance_axes=[1]).balance_axes
    (1,)
    >>> MeshSettings.check(pm, balance_axes=(2,))
    Traceback (most recent call last):
    ...
    ValueError: balance_axes must name axes 0 and/or 1, got (2,)
    """

    pm: PMParameters
    buffer: int | None = None
    balance_every: int = 0
    balance_axes: tuple[int, ...] = (0, 1)
    limited_buffers: bool = True
    check_locality: bool = False
    track_static: bool = True

    @classmethod
    def check(
        cls,
        pm: PMParameters,
        *,
        buffer: int | None = None,
        balance_every: Any = 0,
        balance_axes: Any = (0, 1),
        limited_buffers: bool = True,
        check: bool = False,
        track_static: bool = True,
    ) -> MeshSettings:
        """The mesh arguments of :func:`mesh_diffusion` validated and normalised (the
        Perona-Malik ones are ``pm``, already checked); ValueError naming the first bad
        one."""
        balance_every = check_count(balance_every, "balance_every")
        balance_axes = tuple(int(a) for a in balance_axes)
        if not balance_axes or any(a not in (0, 1) for a in balance_axes):
            raise ValueError(f"balance_axes must name axes 0 and/or 1, got {balance_axes!r}")
        return cls(
            pm=pm,
            buffer=buffer,
            balance_every=balance_every,
            balance_axes=balance_axes,
            limited_buffers=bool(limited_buffers),
            check_locality=bool(check),
            track_static=bool(track_static),
        )


def _check_fits(pes: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """ValueError unless every PE of the ``pes`` mesh holds at least one pixel of an image
    of ``shape``."""
    if pes[0] > shape[0] or pes[1] > shape[1]:
        raise ValueError(
            f"the mesh {pes} is larger than the image {shape}: every PE must hold at least "
            "one pixel"
        )


def _new_machine(mesh: Any, backend: str, shape: tuple[int, int]) -> Any:
    """The machine of a run given none: a ``mesh`` of PEs (checked against the image)."""
    from simd import Machine

    mesh = tuple(int(s) for s in mesh)
    if len(mesh) != 2 or min(mesh) < 1:
        raise ValueError(f"mesh must be two positive integers, got {mesh!r}")
    _check_fits(mesh, shape)
    return Machine(pes=mesh, backend=backend)


def mesh_diffusion(  # noqa: PLR0913 (the public signature: medpy's and the mesh's options)
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
        host = to_host(img)
        shape = host.shape
    # Across ranks a bad argument on one rank raises on every rank (none waits).
    with machine.ranks.collective_errors() if across else contextlib.nullcontext():
        pm = PMParameters.check(
            2, niter, kappa, gamma, voxelspacing, option, epsilon=epsilon, freeze=freeze
        )
        settings = MeshSettings.check(
            pm,
            buffer=buffer,
            balance_every=balance_every,
            balance_axes=balance_axes,
            limited_buffers=limited_buffers,
            check=check,
            track_static=track_static,
        )
        m = _new_machine(mesh, backend, shape) if machine is None else machine
        if len(m.pes) != 2:
            raise ValueError(f"mesh diffusion needs a 2-D machine, got pes={m.pes}")
    if across:
        xp_in, host, shape = _image_on_root(m, image, settings)
    _check_fits(m.pes, shape)
    return _MeshRun(m, host, shape, settings).run(progress, xp_in)


class _MeshRun:
    """One run on the mesh: the decomposed image, the phase records and the result, and
    the steps of an iteration (each charged to the machine as :func:`mesh_diffusion`
    describes)."""

    def __init__(
        self, m: Any, host: np.ndarray | None, shape: tuple[int, int], settings: MeshSettings
    ) -> None:
        self.m, self.settings, self.pm = m, settings, settings.pm
        R, C = m.pes
        self.rows0 = hierarchical_boundaries(shape[0], R)
        self.cols0 = hierarchical_boundaries(shape[1], C)
        self.n = shape[0] * shape[1]
        self.npes = R * C
        self.grid = initial_grid(
            m,
            host,
            shape,
            self.rows0,
            buffer=settings.buffer,
            index=settings.check_locality,
            activity=settings.track_static,
        )
        self.res = MeshResult(image=None, grid=self.grid)
        self.records: dict[str, list[PhaseRecord]] = {"diffusion": [], "balancing": []}
        self.valid = None  # the slots holding data, set when the run starts
        self.bookkeeping = 0.0  # seconds of the emulator's own bookkeeping

    def run(self, progress: Any, xp_in: Any) -> MeshResult:
        """The iterations, balancing every ``balance_every``; the image comes back as an
        array of ``xp_in`` (see :func:`_result`)."""
        res, s = self.res, self.settings
        bar = None
        if progress is True and self.m.is_root:
            from tqdm.auto import tqdm

            bar = tqdm(total=self.pm.niter, desc="diffuse", unit="it")
        start = time.perf_counter()
        self.valid = self.grid.valid()
        for it in range(self.pm.niter):
            if s.balance_every and it > 0 and it % s.balance_every == 0:
                self.balance()
            if not self.iterate():
                break
            if bar is not None:
                bar.update(1)
            elif callable(progress):
                progress(it, res)
        else:
            still = self.count_active(self.grid.channels["active"] & self.valid)[1]
            res.converged = self.pm.niter > 0 and self.pm.epsilon > 0 and still == 0
        if bar is not None:
            bar.close()
        self.finish(start, xp_in)
        return res

    def balance(self) -> None:
        """One balancing step (scan-directed, along the settings' axes), in its phase."""
        m, grid, s = self.m, self.grid, self.settings
        check = (lambda g: check_grid(g, self.n, m)) if s.check_locality else None
        with m.phase("balancing") as record:
            reports = balance(
                grid,
                machine=m,
                load="active",
                axes=s.balance_axes,
                limited=s.limited_buffers,
                on_cycle=check,
            )
        self.records["balancing"].append(record)
        self.res.balance_reports.append(reports)
        self.valid = grid.valid()
        if s.check_locality:
            check_grid(grid, self.n, m)

    def iterate(self) -> bool:
        """One iteration: count the active points, then update them; False (the run has
        converged) when none is active."""
        with self.m.phase("diffusion") as record:
            act = self.grid.channels["active"] & self.valid
            busiest, total = self.count_active(act)
        self.records["diffusion"].append(record)
        if total == 0:
            self.res.converged = True
            return False
        self.res.max_load.append(busiest)
        self.res.active_fraction.append(total / self.n)
        if self.settings.track_static:
            self.track_static(act)
        with self.m.phase("diffusion") as record:
            self.update(act, busiest)
            self.res.iterations += 1
        self.records["diffusion"].append(record)
        return True

    def count_active(self, act: Any) -> tuple[int, int]:
        """The busiest PE's and the total count of the active points ``act``."""
        return busiest_and_total(self.m, act.sum(axis=(2, 3)))

    def track_static(self, act: Any) -> None:
        """Record the activity map and the busiest PE's load without balancing: the
        emulator's own bookkeeping, not machine work, kept off both clocks."""
        t0 = time.perf_counter()
        self.grid.channels["activity"] += act
        # One read back, which also waits for the bookkeeping (kept off the wall clock).
        self.res.static_max_load.append(static_max_load(self.m, self.grid, self.rows0, self.cols0))
        self.bookkeeping += time.perf_counter() - t0

    def update(self, act: Any, busiest: int) -> None:
        """Update the active points ``act`` (the busiest PE holds ``busiest``) and wake or
        retire points for the next iteration."""
        m, p, grid, xp = self.m, self.pm, self.grid, self.m.xp
        values, active = grid.channels["value"], grid.channels["active"]
        heights, widths = grid.extents
        halo = m.halo_exchange(values, heights, widths, width=1, boundary="edge")
        # The busiest PE sets the pace: charge its active count.
        m.charge("local", self.npes * busiest, ops=UPDATE_OPS[p.option])
        # Every buffer slot is computed and only the active ones are stored (a fixed-shape
        # masked update: no read back of the active positions).
        v = halo[:, :, 1:-1, 1:-1]
        upd = _pm_update(xp, halo, p)
        if p.epsilon == 0:
            values[...] = xp.where(act, v + upd, values)
            return
        ch = act & (xp.abs(upd) >= p.epsilon)
        values[...] = xp.where(ch, v + upd, values)
        m.charge("local", self.npes * grid.buffer * grid.buffer, ops=FLAG_OPS)
        if p.freeze:
            active &= ch | ~act
            return
        # Flags travel as bytes (the halo kernels move numbers).
        hc = m.halo_exchange(ch.astype(np.uint8), heights, widths, width=1, boundary="zero")
        woke = (
            hc[:, :, 1:-1, 1:-1]
            | hc[:, :, :-2, 1:-1]
            | hc[:, :, 2:, 1:-1]
            | hc[:, :, 1:-1, :-2]
            | hc[:, :, 1:-1, 2:]
        )
        active[...] = (woke != 0) & self.valid

    def finish(self, start: float, xp_in: Any) -> None:
        """Wait for the device, read the phases' times and gather the result (across ranks
        the image and the activity map on rank 0)."""
        m, res = self.m, self.res
        m.sync()
        for recs in self.records.values():  # the device has passed every phase's events
            for r in recs:
                if isinstance(r.interval, DeviceInterval):
                    r.interval.read_done()
        res.image = _result(m, self.grid.gather("value"), xp_in)
        res.elapsed = time.perf_counter() - start - self.bookkeeping
        res.phases = {name: PhaseStats.of(recs) for name, recs in self.records.items()}
        if self.settings.track_static:
            res.activity = m.gather(self.grid.gather("activity"))


def _pm_update(xp: Any, halo: Any, p: PMParameters) -> Any:
    """The update of every buffer slot from the slots and their halo ``halo``, with the
    float32 operations of the dense path (:func:`diffusion.conduction.pm_update`)."""
    v = halo[:, :, 1:-1, 1:-1]
    kappa, (s0, s1), option = p.kappa, p.spacing, p.option
    u0 = flux(xp, halo[:, :, 2:, 1:-1] - v, kappa, s0, option) - flux(
        xp, v - halo[:, :, :-2, 1:-1], kappa, s0, option
    )
    u1 = flux(xp, halo[:, :, 1:-1, 2:] - v, kappa, s1, option) - flux(
        xp, v - halo[:, :, 1:-1, :-2], kappa, s1, option
    )
    return p.gamma * (u0 + u1)


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
            host = to_host(img)
            shape = host.shape
    every = m.ranks.allgather((shape, repr(settings)))
    # Every rank reaches the same verdict from the same gathered data: no rank waits.
    if len({e[1] for e in every}) != 1:
        raise ValueError("the ranks were given different diffusion parameters")
    return xp_in, host, tuple(every[0][0])


def _result(m: Any, rows: Any, xp_in: Any) -> Any:
    """The diffused image: on one process as the input's array type; across ranks
    gathered on rank 0 (None on the other ranks)."""
    if m.ranks is not None:
        whole = m.gather(rows)
        return whole if whole is None or xp_in is np else xp_in.asarray(whole)
    if xp_in is np:
        return m.asnumpy(rows)
    return xp_in.asarray(rows)
