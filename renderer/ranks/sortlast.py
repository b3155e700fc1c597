"""The rank-level steps of a frame rendered sort-last on a machine spread over MPI ranks.

``render(share, machine=m)`` with ``m.ranks`` set (``Machine(..., comm=comm)``) renders
each rank's share of the triangles on a one-process machine of its own (same PEs, backend
and cost model: any loop form), and :class:`SortLast` does what needs the other ranks:

1. the frame's global quantities: the bounding sphere the default camera frames and the
   value range of a colormap, exactly as the one-rank frame computes them on the
   concatenated mesh (minima and maxima are exact under any reduction order);
2. global numbering: the one-rank mesh is the concatenation of the shares in rank order,
   and clipping keeps the order of the faces, so the one-rank drawing index of a rank's
   ``i``-th clipped triangle is ``i`` plus the clipped triangles of the ranks before it;
   every rank keys its fragments with that index and the global :func:`id_bits`;
3. balancing across ranks (:mod:`renderer.ranks.balance`), which keeps that order;
4. compositing (:mod:`renderer.ranks.composite`): the minimum key per pixel by binary swap, with
   the colour and face of the rank whose key won, gathered on rank 0.

Each pixel's colour depends only on the triangle that wins it, so rank 0's composited
image, depth and faces are bit for bit those of the one-rank frame of the concatenated
mesh. Rank 0 returns the :class:`~renderer.Frame`; the other ranks return None.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from renderer.ranks.composite import composite_min
from renderer.stages.zbuffer import id_bits

__all__ = ["GlobalSphere", "SortLast", "RankCounts", "render_sort_last"]


@dataclass(frozen=True)
class GlobalSphere:
    """The bounding sphere of the whole mesh, for :func:`renderer.default_camera`."""

    centre: np.ndarray
    radius: float

    def bounding_sphere(self) -> tuple[np.ndarray, float]:
        return self.centre, self.radius


@dataclass
class RankCounts:
    """Per rank: faces of the share, clipped triangles, and the balancing's work figures."""

    faces: list[int]
    triangles: list[int]
    work_before: list[int] = field(default_factory=list)
    work_after: list[int] = field(default_factory=list)
    balanced: bool = False
    moved: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class SortLast:
    """The rank-level steps of one frame (every method is collective).

    Parameters
    ----------
    machine : simd.Machine
        A machine spread over ranks (``machine.ranks`` set).
    """

    def __init__(self, machine: Any) -> None:
        from simd import Machine

        self.machine = machine
        self.ranks = machine.ranks
        #: The rank's own one-process machine that runs the pipeline's stages and loops.
        self.local = Machine(pes=machine.pes, backend=machine.backend_spec, cost=machine.cost)
        self.first = 0  # global drawing index of this rank's first clipped triangle
        self.total = 0
        self.bits = 1
        self.counts: RankCounts | None = None
        #: The frame's counts summed over the ranks (set by :meth:`composite_stage`).
        self.frame_counts: Any = None

    # ------------------------------------------------------------ global quantities

    def sphere(self, vertices: np.ndarray) -> GlobalSphere:
        """The bounding sphere of the concatenated mesh (as ``camera.bounding_sphere``)."""
        r = self.ranks
        if len(vertices):
            lo, hi = vertices.min(axis=0), vertices.max(axis=0)
        else:
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        lo, hi = r.allreduce(lo, "min"), r.allreduce(hi, "max")
        centre = (lo + hi) / 2.0
        far = ((vertices - centre) ** 2).sum(axis=1).max() if len(vertices) else -np.inf
        radius = float(np.sqrt(r.allreduce(np.array([far]), "max")[0]))
        return GlobalSphere(centre, radius if radius != 0.0 else 1.0)

    def check_faces(self, n_faces: int) -> None:
        """A ValueError on every rank when no rank has a face."""
        if int(self.ranks.allreduce(np.array([int(n_faces)]), "add")[0]) == 0:
            raise ValueError("mesh is empty on every rank (0 faces): nothing to render")

    def value_range(self, values: np.ndarray) -> tuple[float, float]:
        """The range of the whole mesh's vertex values (a colormap's default range)."""
        v = np.asarray(values, dtype=np.float64)
        lo = v.min() if v.size else np.inf
        hi = v.max() if v.size else -np.inf
        return (
            float(self.ranks.allreduce(np.array([lo]), "min")[0]),
            float(self.ranks.allreduce(np.array([hi]), "max")[0]),
        )

    # ------------------------------------------------------------ numbering

    def number(self, n_faces: int, n_tri: int) -> int:
        """Global numbering after clipping; returns this rank's global face offset.

        Sets :attr:`first` (the global drawing index of this rank's first triangle),
        :attr:`total` and :attr:`bits` (the key's index bits of the one-rank frame).
        """
        sizes = self.ranks.allgather((int(n_faces), int(n_tri)))
        faces = [s[0] for s in sizes]
        tris = [s[1] for s in sizes]
        self.counts = RankCounts(faces=faces, triangles=tris)
        self.first = int(sum(tris[: self.ranks.rank]))
        self.total = int(sum(tris))
        self.bits = id_bits(max(self.total, 1))
        return int(sum(faces[: self.ranks.rank]))

    def renumber(self, n_tri: int) -> None:
        """After balancing moved triangles (keeping their order): the new :attr:`first`."""
        sizes = self.ranks.allgather(int(n_tri))
        self.first = int(sum(sizes[: self.ranks.rank]))

    def balance(self, tris: Any, n_faces: int, width: int, height: int, enabled: bool) -> Any:
        """Number the rank's clipped triangles globally, then balance them across the
        ranks (:func:`~renderer.ranks.balance.balance_triangles`, in the machine's open
        phase); returns the rank's triangles, their faces numbered globally.

        Triangles are copied to host rows (their corners' coordinates and attributes)
        only when some move; the work estimate reads them a block at a time.
        """
        from renderer.ranks.balance import balance_triangles
        from renderer.stages.clip import ClippedTriangles

        local = self.local
        face_offset = self.number(n_faces, int(tris.face.shape[0]))
        work = self._work(tris, width, height)

        def rows() -> dict[str, np.ndarray]:
            return {
                "clip": local.asnumpy(tris.clip),
                "attrs": local.asnumpy(tris.attrs),
                "face": local.asnumpy(tris.face) + face_offset,
            }

        # the bytes of one row of rows(), from dtypes and shapes alike on every rank
        row_bytes = (
            3 * 4 * tris.points.dtype.itemsize
            + 3 * int(tris.values.shape[1]) * tris.values.dtype.itemsize
            + np.dtype(np.int64).itemsize
        )
        arrays, report = balance_triangles(
            self.ranks, self.machine, rows, work, enabled=enabled, row_bytes=row_bytes
        )
        self.counts.work_before = report["work_before"]
        self.counts.work_after = report["work_after"]
        self.counts.balanced = report["balanced"]
        self.counts.moved = report["moved"]
        if not report["balanced"]:
            face = tris.face + face_offset
            return ClippedTriangles(
                tris.points, tris.values, tris.corners, face, tris.n_clipped, tris.n_rejected
            )
        self.renumber(arrays["face"].shape[0])
        return ClippedTriangles.from_triangles(
            local.xp,
            local.asarray(arrays["clip"]),
            local.asarray(arrays["attrs"]),
            local.asarray(arrays["face"]),
            tris.n_clipped,
            tris.n_rejected,
        )

    def _work(self, tris: Any, width: int, height: int, block: int = 1 << 18) -> np.ndarray:
        """:func:`~renderer.ranks.balance.triangle_work` of the triangles, ``block`` at a
        time (a block's corner coordinates on the host, not all of them at once)."""
        from renderer.ranks.balance import triangle_work

        t = int(tris.corners.shape[0])
        parts = [
            triangle_work(self.local.asnumpy(tris.points[tris.corners[s : s + block]]), width,
                          height)
            for s in range(0, t, block)
        ]  # fmt: skip
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    # ------------------------------------------------------------ compositing

    def composite(
        self, keys: np.ndarray, image: np.ndarray, face: np.ndarray, writes: np.ndarray | None
    ) -> tuple[np.ndarray, ...] | None:
        """Binary-swap the (key, colour, face) of every pixel by the minimum key; rank 0
        gets the composited arrays (and ``writes`` summed over the ranks), the others None.

        Uncovered pixels carry colour 0 and face -1 on every rank, so the payload of a
        pixel no rank drew is the one-rank frame's whatever rank's record is kept.
        """
        records = np.empty(
            keys.shape[0], dtype=[("key", "<i8"), ("rgb", "u1", (3,)), ("face", "<i8")]
        )
        records["key"], records["rgb"], records["face"] = keys, image, face
        done = composite_min(self.ranks, records)
        total_writes = None
        if writes is not None:
            total_writes = self.ranks.allreduce(np.asarray(writes, dtype=np.int64), "add")
        if done is None:
            return None
        return (
            np.ascontiguousarray(done["key"]),
            np.ascontiguousarray(done["rgb"]),
            np.ascontiguousarray(done["face"]),
            total_writes,
        )

    # ------------------------------------------------------------ stages of a frame

    def rank_balance_stage(self, state: Any) -> Any:
        """The ``rank-balance`` stage: the clipped triangles numbered globally and balanced
        across the ranks (:meth:`balance`); the drawing indices follow."""
        width, height = state.settings.render_size
        with self.machine.phase("rank-balance") as record:
            state.tris = self.balance(
                state.tris, len(state.mesh.faces), width, height, state.settings.rank_balance
            )
        state.bits, state.first = self.bits, self.first
        return record

    def composite_stage(self, state: Any) -> Any:
        """The ``composite`` stage: the ranks' depth keys, colours and faces composited
        (:meth:`composite`); rank 0's state holds the merged frame, the others' none. The
        frame's counts are summed over the ranks first (:attr:`frame_counts`)."""
        from renderer.frame import FrameCounts

        s, m = state, state.machine
        faces, clipped, rejected, tris, degenerate, spans, fragments = self.sum_counts(
            [s.mesh.n_faces, s.tris.n_clipped, s.tris.n_rejected, s.n_tri,
             int(s.setup.n_degenerate), s.n_spans, s.zbuf.total_tasks]
        )  # fmt: skip
        self.frame_counts = FrameCounts(
            triangles=faces, clipped=clipped, rejected=rejected, drawn=tris - degenerate,
            degenerate=degenerate, spans=spans, fragments=fragments, pixels=0,
        )  # fmt: skip
        writes = None if s.writes is None else m.asnumpy(s.writes)
        with self.machine.phase("composite") as record:
            merged = self.composite(
                m.asnumpy(s.zbuffer), m.asnumpy(s.image), m.asnumpy(s.face), writes
            )
        if merged is None:
            s.zbuffer = s.image = s.face = s.writes = None
        else:
            s.zbuffer, s.image, s.face, s.writes = (
                None if a is None else m.asarray(a) for a in merged
            )
        return record

    def finish(self, state: Any) -> None:
        """Rank 0's merged frame: its depths decoded, the background painted, and a
        supersampled frame's samples resolved into pixels (each pixel the nearest sample's
        depth and face)."""
        from renderer.stages.picture import fill_background, resolve
        from renderer.stages.zbuffer import decode_keys

        s, xp, m, opt = state, state.xp, state.machine, state.settings
        covered, _, s.depth = decode_keys(xp, s.zbuffer, self.bits)
        if opt.background is not None:
            s.image = fill_background(xp, m, s.image, covered, opt.background)
        k = opt.supersample
        if k > 1:
            s.face = _nearest(xp, s.zbuffer, s.face, opt.width, opt.height, k)
            s.image, keys = resolve(xp, s.image, s.zbuffer, opt.width, opt.height, k)
            _, _, s.depth = decode_keys(xp, keys, self.bits)
        s.zbuffer = None

    def sum_counts(self, values: list[int]) -> list[int]:
        """Elementwise sums over the ranks of a few integer counts."""
        return [int(v) for v in self.ranks.allreduce(np.asarray(values, np.int64), "add")]


# --------------------------------------------------------------------------- the driver


def render_sort_last(
    mesh: Any, opt: Any, machine: Any, view: dict, picture: dict, progress: Any = None
) -> Any:
    """:func:`renderer.render` on a machine spread over MPI ranks: every rank runs the
    stages on its share (on a one-process machine of its own), with the rank-level stages
    ``rank-balance`` (after clipping) and ``composite`` (after shading) of :class:`SortLast`;
    rank 0 finishes the frame (background, supersampling) and returns it, the others None.
    ``view`` and ``picture``: the camera's and the colours' options of ``render``."""
    import time

    from renderer.driver import frame_view, read_back, run_stages
    from renderer.stages.shading import surface_colours
    from renderer.steps import STAGES, FrameState

    sortlast = SortLast(machine)
    sortlast.check_faces(mesh.n_faces)
    if picture["values"] is not None and picture["value_range"] is None:
        picture = {**picture, "value_range": sortlast.value_range(picture["values"])}
    with machine.ranks.collective_errors():  # the whole mesh's colours, as on one rank
        base = surface_colours(len(mesh.vertices), **picture)
    cam, mvp, light = frame_view(sortlast.sphere(mesh.vertices), opt, **view)
    state = FrameState(opt, sortlast.local, mesh, None, mvp, light, base=base, sort_last=True)
    rank_stages = {
        "rank-balance": sortlast.rank_balance_stage,
        "composite": sortlast.composite_stage,
    }
    stages = []
    for name, stage in STAGES:
        stages.append((name, stage))
        if name == "clip":
            stages.append(("rank-balance", rank_stages["rank-balance"]))
    stages.append(("composite", rank_stages["composite"]))
    t_start = time.perf_counter()
    run_stages(state, tuple(stages), progress)
    if state.image is None:
        return None  # rank 0 holds the frame
    sortlast.finish(state)
    return read_back(
        state, cam, t_start, counts=sortlast.frame_counts, ranks=sortlast.counts.to_dict()
    )


def _nearest(xp: Any, keys: Any, face: Any, width: int, height: int, k: int) -> Any:
    """The face of the nearest sample (smallest key) of each ``k`` x ``k`` block, as
    :func:`~renderer.stages.picture.resolve` picks its key (keys of distinct triangles differ)."""
    blocks = keys.reshape(height, k, width, k).transpose(0, 2, 1, 3).reshape(-1, k * k)
    faces = face.reshape(height, k, width, k).transpose(0, 2, 1, 3).reshape(-1, k * k)
    pick = xp.argmin(blocks, axis=1)
    return xp.take_along_axis(faces, pick[:, None], axis=1)[:, 0]
