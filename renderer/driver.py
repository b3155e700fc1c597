"""What drives a frame's stages: its view (camera, matrix, light), the loop over the stages
with a progress bar, and the read-back of the results as a :class:`~renderer.frame.Frame`.
:func:`renderer.render` and the sort-last driver of :mod:`renderer.ranks.sortlast` share them.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from renderer.frame import Frame, FrameCounts, FrameStats, LoopWorkloads
from renderer.scene.camera import Camera, default_camera, unit_vector
from renderer.scene.prepared import Scene
from renderer.settings import FrameSettings
from renderer.steps import FrameState

__all__ = ["MVP_LIGHT", "frame_view", "read_back", "run_stages"]

#: The light of a frame given by its matrix (``mvp=``): a fixed world direction.
MVP_LIGHT = np.array([0.3, 0.5, 1.0]) / np.linalg.norm([0.3, 0.5, 1.0])


def frame_view(
    framed: Any,
    opt: FrameSettings,
    *,
    view: tuple[float, float],
    magnification: float,
    camera: Camera | None,
    mvp: Any,
    light: Any,
    camera_options: dict[str, Any],
) -> tuple[Camera | None, np.ndarray, np.ndarray]:
    """The frame's camera, model-view-projection matrix and light: from ``mvp`` (the light
    then a world direction), ``camera``, or the default camera of ``framed`` (a Scene keeps
    the camera of its last view; a mesh, or on MPI ranks the whole mesh's bounding sphere)."""
    width, height = opt.render_size
    if mvp is not None:
        mvp = np.asarray(mvp, dtype=np.float64)
        if mvp.shape != (4, 4) or not np.isfinite(mvp).all():
            raise ValueError(f"mvp must be a finite 4x4 matrix, got shape {mvp.shape}")
        return camera, mvp, MVP_LIGHT if light is None else unit_vector(light, "light")
    aspect = width / height
    if camera is not None:
        cam = camera
    elif isinstance(framed, Scene):
        cam = framed.default_camera(view, magnification, aspect=aspect, **camera_options)
    else:
        cam = default_camera(framed, view, magnification, aspect=aspect, **camera_options)
    if light is None:
        return cam, cam.mvp(aspect), cam.light_direction()
    return cam, cam.mvp(aspect), cam.light_direction(tuple(unit_vector(light, "light")))


def run_stages(state: FrameState, stages: tuple, progress: Any = None) -> None:
    """Run ``stages``, (name, stage) pairs, in order over ``state``, keeping each one's
    record under its name (``progress``: a tqdm bar over them, as :func:`render` takes it)."""
    bar, own_bar = progress_bar(progress, len(stages))
    try:
        for name, stage in stages:
            if bar is not None:
                bar.set_postfix_str(name)
            state.stages[name] = stage(state)
            if bar is not None:
                bar.update(1)
    finally:
        if own_bar:
            bar.close()


def progress_bar(progress: Any, total: int) -> tuple[Any, bool]:
    """The bar to update (and whether it is the frame's own, to close): ``True`` makes a
    tqdm bar, an object with ``update`` and ``set_postfix_str`` is used as it is."""
    if progress is True:
        from tqdm.auto import tqdm

        return tqdm(total=total, desc="render", unit="stage", leave=False), True
    if progress not in (None, False) and hasattr(progress, "update"):
        return progress, False
    return None, False


def read_back(state: FrameState, cam: Camera | None, t_start: float,
              counts: FrameCounts | None = None, ranks: dict | None = None) -> Frame:  # fmt: skip
    """The frame's results to the host in one read back (one host sync on a GPU, which
    also reports the machine's deferred address checks: ``Machine.fetch``), as a Frame.
    ``counts``: the pipeline's counts when known otherwise (summed over MPI ranks)."""
    host = state.machine.fetch(*frame_results(state))
    return frame_of(state, host, cam, t_start, counts, ranks)


def frame_results(state: FrameState) -> list:
    """The arrays a frame reads back, in order: image, depth, face (rows top down), the
    frame's counters, then the writes and the workloads when asked for. Drops the state's
    own references to the first three (a read back of a replayed frame reads these)."""
    s, m, opt = state, state.machine, state.settings
    width, height = opt.render_size

    # GL window rows go up from the bottom; images go down from the top. The rows are
    # reversed by the read back's own copy on the device (views here, Machine.fetch).
    def top_down(a: Any, w: int, h: int, *shape: int) -> Any:
        return a.reshape(h, w, *shape)[::-1]

    image = top_down(s.image, opt.width, opt.height, 3)
    depth = top_down(s.depth, opt.width, opt.height)
    face = top_down(s.face, opt.width, opt.height)
    s.image = s.depth = s.face = None
    if m.backend != "cupy":
        # On the host the read back is the flip's copy: made here one array at a time, each
        # original going as its copy is made (not all three held twice at the peak).
        image = np.ascontiguousarray(image)
        depth = np.ascontiguousarray(depth)
        face = np.ascontiguousarray(face)
    results = [image, depth, face, s.setup.n_degenerate if s.counters is None else s.counters]
    if s.writes is not None:
        results.append(top_down(s.writes, width, height))
    if opt.keep_workloads:
        results += [s.scan_workload, s.span_lengths]
    return results


def frame_of(state: FrameState, host: tuple, cam: Camera | None, t_start: float,
             counts: FrameCounts | None = None, ranks: dict | None = None) -> Frame:  # fmt: skip
    """The Frame of ``state`` from its results on the host (:func:`frame_results`, read)."""
    s, m, opt = state, state.machine, state.settings
    image, depth, face = host[:3]
    if s.counters is None:
        n_degenerate = int(host[3])
        # face is -1 or a face index; counting the -1s is the cheaper test on the host
        pixels = face.size - int(np.count_nonzero(face == -1))
    else:
        n_degenerate, pixels = host[3].tolist()
    if counts is None:
        counts = FrameCounts(
            triangles=s.mesh.n_faces,
            clipped=s.tris.n_clipped,
            rejected=s.tris.n_rejected,
            drawn=s.n_tri - n_degenerate,
            degenerate=n_degenerate,
            spans=s.n_spans,
            fragments=s.zbuf.total_tasks,  # the sum of the span lengths, read by run_loop
            pixels=pixels,
        )
    else:
        counts.pixels = pixels
    workloads = None
    if opt.keep_workloads:
        workloads = LoopWorkloads(scan=host[-2].astype(np.int64), zbuffer=host[-1].astype(np.int64))
    stats = FrameStats(
        stages=s.stages,
        loops={"scan-conversion": s.scan, "z-buffer": s.zbuf},
        counts=counts,
        machine=m.stats,
        wall=time.perf_counter() - t_start,
        workloads=workloads,
        ranks=ranks,
    )
    return Frame(
        image=image,
        depth=depth,
        face=face,
        mvp=s.mvp,
        camera=cam,
        loop=opt.loop,
        stats=stats,
        writes=host[4] if s.writes is not None else None,
    )
