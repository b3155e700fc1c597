"""What a frame of the renderer gives back: the image and its statistics."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from renderer.scene.camera import Camera
from simd.balance import LoopResult
from simd.stats import PhaseRecord, Stats

__all__ = ["Frame", "FrameCounts", "FrameStats", "LoopWorkloads"]


@dataclass
class FrameCounts:
    """What went through the pipeline: triangles in, clipped, rejected (outside the view),
    drawn and degenerate (no area on screen); spans and fragments of the loops; pixels
    covered."""

    triangles: int
    clipped: int
    rejected: int
    drawn: int
    degenerate: int
    spans: int
    fragments: int
    pixels: int


@dataclass(repr=False)
class FrameStats:
    """The statistics of one frame.

    Printing it gives a short table: the pipeline's counts, each stage's model and wall
    time, and each balanced loop's iterations and workloads.

    Attributes
    ----------
    stages : dict of str to simd.PhaseRecord
        One record per pipeline stage (``STAGES``): calls, bytes, model cycles, wall time.
        The two loop stages are the records of their loops (``loops[name].record``).
    loops : dict of str to simd.balance.LoopResult
        The scan-conversion and z-buffer loops: workloads, iterations, decisions and the
        per-execution records of their balancing phases (Tables 1 and 4 of Ahrens & Hansen (1995)).
    counts : FrameCounts
    machine : simd.Stats
        The machine's phase table after the frame (cumulative over the machine's life).
    wall : float
        Host seconds of the whole ``render`` call up to the image on the host.
    workloads : LoopWorkloads or None
        The two loops' workload arrays (only with ``keep_workloads=True``).
    ranks : dict or None
        On a machine spread over MPI ranks: per rank, the faces of its share, its clipped
        triangles, its estimated work before and after balancing (``work_before``,
        ``work_after``), whether triangles moved (``balanced``) and how many (``moved``).
        The stages then include ``rank-balance`` and ``composite`` with their MPI messages.
    replayed : bool
        The frame ran as the CUDA graphs captured from an earlier frame of its scene with
        the same key (:mod:`renderer.replays`): the same work, so the same records, but
        the stages, run as graphs, were not timed one by one (their wall time is 0);
        ``wall`` is this frame's.
    """

    stages: dict[str, PhaseRecord]
    loops: dict[str, LoopResult]
    counts: FrameCounts
    machine: Stats
    wall: float
    workloads: LoopWorkloads | None = None
    ranks: dict[str, Any] | None = None
    replayed: bool = False

    @property
    def cycles(self) -> float:
        """Model cycles of the whole frame (all stages)."""
        return sum(stage.cycles for stage in self.stages.values())

    def __repr__(self) -> str:
        model = self._seconds(self.cycles)
        return (
            f"FrameStats({self.counts.triangles} triangles, {self.counts.pixels} pixels, "
            f"{'' if model is None else f'{model:.4g} s model, '}{self.wall:.3g} s wall)"
        )

    def __str__(self) -> str:
        c = self.counts
        lines = [
            f"{c.triangles:,} triangles: {c.drawn:,} drawn, {c.clipped:,} clipped, "
            f"{c.rejected:,} outside the view, {c.degenerate:,} of no area; "
            f"{c.spans:,} spans, {c.fragments:,} fragments, {c.pixels:,} pixels covered",
            "",
            f"{'stage':<16} {'model s':>10} {'wall s':>9}",
        ]
        for name, record in self.stages.items():
            lines.append(f"{name:<16} {self._shown(record.cycles)} {record.wall:>9.4f}")
        lines.append(f"{'frame':<16} {self._shown(self.cycles)} {self.wall:>9.4f}")
        lines += ["", f"{'loop':<16} {'form':<15} {'iterations':>10} {'max':>5} {'mean':>6} "
                  f"{'redistributions':>15}"]  # fmt: skip
        for name, loop in self.loops.items():
            lines.append(
                f"{name:<16} {loop.form:<15} {loop.iterations:>10} {loop.max_workload:>5} "
                f"{loop.mean_workload:>6.2f} {loop.decisions:>15}"
            )
        return "\n".join(lines)

    def _seconds(self, cycles: float) -> float | None:
        """Model cycles as seconds of the emulated machine (None: no clock rate known)."""
        return cycles / self.machine.clock_hz if self.machine.clock_hz else None

    def _shown(self, cycles: float) -> str:
        seconds = self._seconds(cycles)
        return f"{'-':>10}" if seconds is None else f"{seconds:>10.5f}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "stages": {name: r.to_dict() for name, r in self.stages.items()},
            "loops": {name: loop.to_dict() for name, loop in self.loops.items()},
            "counts": asdict(self.counts),
            "cycles": self.cycles,
            "wall_seconds": self.wall,
            "replayed": self.replayed,
            **({"ranks": self.ranks} if self.ranks is not None else {}),
        }


@dataclass
class Frame:
    """A rendered frame.

    Attributes
    ----------
    image : (H, W, 3) uint8 ndarray
        RGB, row 0 at the top.
    depth : (H, W) float32 ndarray
        Window-space depth in [0, 1]; 1.0 where nothing was drawn.
    face : (H, W) int64 ndarray
        Index of the mesh face seen at each pixel, -1 where nothing was drawn.
    mvp : (4, 4) float64 ndarray
        Model-view-projection matrix (OpenGL conventions, column vectors); with the viewport
        ``(0, 0, W, H)`` and depth range ``(0, 1)`` any OpenGL renderer draws the same view.
    camera : Camera
    stats : FrameStats
        Per stage and per loop: model cycles, wall time, workloads, balancing decisions;
        the pipeline's counts.
    writes : (H, W) int64 ndarray or None
        Number of fragments sent to each pixel (only with ``count_writes=True``).
    """

    image: np.ndarray
    depth: np.ndarray
    face: np.ndarray
    mvp: np.ndarray
    camera: Camera | None
    loop: str
    stats: FrameStats
    writes: np.ndarray | None = None

    @property
    def coverage(self) -> np.ndarray:
        """(H, W) bool: pixels something was drawn to."""
        return self.face >= 0

    def save(self, path: Any) -> None:
        """Write the image as PNG (or any format Pillow knows from the suffix)."""
        from renderer.image import save_image

        save_image(self.image, path)

    def _repr_png_(self) -> bytes | None:
        """The image as PNG bytes: Jupyter shows a frame that ends a cell as its picture.
        None (Jupyter then shows the text) where Pillow is not installed.

        Examples
        --------
        >>> import numpy as np, renderer
        >>> quad = ([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
        >>> renderer.render(quad, size=8)._repr_png_()[:4]
        b'\\x89PNG'
        """
        try:
            from renderer.image import png_bytes

            return png_bytes(self.image)
        except ImportError:
            return None


@dataclass(frozen=True)
class LoopWorkloads:
    """The workloads of the renderer's two balanced loops for one frame (Ahrens & Hansen 1995).

    Attributes
    ----------
    scan : (T,) int64 ndarray
        Scan lines of each polygon after clipping (0 for a degenerate or culled one): the
        workload of the scan-conversion loop, one datum per polygon.
    zbuffer : (S,) int64 ndarray
        Pixels of each span made by scan conversion (all > 0): the workload of the
        z-buffer loop, one datum per span; ``zbuffer.size <= scan.sum()`` (a scan line
        that covers no pixel centre makes no span).
    """

    scan: np.ndarray
    zbuffer: np.ndarray

    def summary(self) -> dict:
        """Maximum and mean of each loop's workload (mean over all data, zeros included,
        as in Table 1 of Ahrens & Hansen (1995) and :class:`simd.balance.LoopResult`)."""

        def mx(w: np.ndarray) -> int:
            return int(w.max()) if w.size else 0

        def mean(w: np.ndarray) -> float:
            return float(w.sum() / w.size) if w.size else 0.0

        return {
            "scan_max": mx(self.scan),
            "scan_avg": mean(self.scan),
            "zbuf_max": mx(self.zbuffer),
            "zbuf_avg": mean(self.zbuffer),
        }
