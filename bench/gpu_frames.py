"""Frames on a GPU against their budgets: what ``python -m bench.gpu_check`` measures of the
renderer and the other programs beyond its smoke test (the step ``frames``).

* ``replayed``: the built-in 241k-triangle set on a :class:`renderer.Scene` at 512x512 in
  every loop form, its frame run as usual (``SIMD_GRAPHS=0``) and replayed as CUDA graphs
  (:mod:`renderer.replays`), each compared with the NumPy frame; ``render(mesh)`` from
  host arrays; budgets: a replayed expand frame at most 0.5 ms, original and
  cost-effective at most 1.5 ms, ``render(mesh)`` at most 3 ms;
* ``redistributing``: a cost-effective frame of the unbalanced set, whose loops really
  redistribute (its decisions reported);
* ``breakdown``: one frame per loop form, per stage the device's time (CUDA events) beside
  the host's time to issue it, and per fused kernel its device time and launches;
* ``scale``: frames of isosurfaces of the Marschner-Lobb signal extracted on the device
  (kept there, :class:`renderer.DeviceMesh`) from about 0.25 to 16 million triangles, at
  512 to 2048 pixels a side, with the memory pool's growth per triangle (the frame's
  peak device bytes);
* ``orbit``: 36 frames of a turntable, frames per second;
* ``view``: ``simd-emu view`` driven by a scripted page (:func:`bench.view.measure`): a
  drag's frames per second (goal on a GPU: at least 60), full frames, level changes; where
  the ``view`` extra's web packages are missing, the viewer's frames without the page;
* ``isosurface``: the extraction at 512^3 and 1024^3 on the device, the whole call with
  the mesh read back to the host (float32 and int32, page-locked), and an extraction
  rendered without leaving the device; budgets: 1024^3 at most 4.3 ms on the device, the
  call with the mesh on the host at most 12 ms at 512^3 and 40 ms at 1024^3;
* ``mesh diffusion``: Perona-Malik diffusion on the 64 x 64 PE mesh with scan-directed
  balancing every 5 iterations;
* ``balance``: ``simd-emu bench balance`` on the wall-clock machine, a Zipf workload of
  1,024 processors.

Each part runs inside a time limit of its own and reports what it got; on the counting
stand-in for CuPy (``--backend counting``, CI's dry run) the sizes are small and the times
meaningless, the code paths the same.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np

__all__ = ["BUDGETS_MS", "measure"]

#: Milliseconds each frame or call may take on an H100 or H200.
BUDGETS_MS = {
    "scene expand": 0.5,
    "scene original": 1.5,
    "scene cost-effective": 1.5,
    "render(mesh)": 3.0,
    "isosurface 1024^3 on the device": 4.3,
    "isosurface 512^3 with the mesh on the host": 12.0,
    "isosurface 1024^3 with the mesh on the host": 40.0,
}

FORMS = ("expand", "cost-effective", "original")


def measure(backend: str, reference: dict | None, key: Callable[[str], None],
            budget: float = 150.0) -> dict[str, Any]:  # fmt: skip
    """Every part, within ``budget`` seconds in all; ``reference``: the NumPy frames of the
    241k set by ``"<form>-image"`` (None: no comparison); ``key`` prints a summary line."""
    parts = {
        "replayed": lambda: replayed(backend, reference, key),
        "redistributing": lambda: redistributing(backend, key),
        "breakdown": lambda: breakdown(backend, key),
        "isosurface": lambda: isosurface(backend, key),
        "orbit": lambda: orbit(backend, key),
        "view": lambda: view(backend, key),
        "mesh_diffusion": lambda: mesh_diffusion(backend, key),
        "balance": lambda: balance(backend, key),
        "scale": lambda: scale(backend, key, deadline=time.monotonic() + budget / 3),
    }
    out: dict[str, Any] = {}
    t0 = time.monotonic()
    for name, part in parts.items():
        if time.monotonic() - t0 > budget:
            out[name] = {"skipped": "no time left"}
            key(f"{name}: skipped, no time left")
            continue
        try:
            out[name] = part()
        except Exception as exc:  # noqa: BLE001 - every part is tried and reported
            import traceback

            traceback.print_exc()
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            key(f"{name} FAILED: {type(exc).__name__}: {exc}")
    return out


@contextlib.contextmanager
def graphs(on: bool) -> Iterator[None]:
    """Frames replayed as CUDA graphs (on) or run as usual (off) within the block."""
    saved = os.environ.get("SIMD_GRAPHS")
    os.environ["SIMD_GRAPHS"] = "1" if on else "0"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SIMD_GRAPHS", None)
        else:
            os.environ["SIMD_GRAPHS"] = saved


def _timed(fn: Callable[[], Any], m: Any, repeat: int = 7) -> tuple[list[float], Any]:
    """Milliseconds of ``repeat`` calls of ``fn`` (the device finished after each)."""
    ms, out = [], None
    for _ in range(repeat):
        m.sync()
        t = time.perf_counter()
        out = fn()
        m.sync()
        ms.append(1e3 * (time.perf_counter() - t))
    return ms, out


def _verdict(name: str, ms: float) -> str:
    budget = BUDGETS_MS.get(name)
    if budget is None or os.environ.get("SIMD_BACKEND") == "counting":  # no GPU: no verdict
        return ""
    return f" (budget {budget} ms: {'met' if ms <= budget else 'NOT met'})"


def _same(frame: Any, reference: dict | None, form: str) -> bool | None:
    if reference is None or f"{form}-image" not in reference:
        return None
    return bool(np.array_equal(frame.image, reference[f"{form}-image"]))


def _said(same: bool | None) -> str:
    return "(not compared)" if same is None else str(same)


def _dataset(kind: str, backend: str) -> Any:
    import renderer

    return renderer.load_dataset(kind, "250k" if backend == "cupy" else 24)


def replayed(backend: str, reference: dict | None, key: Callable[[str], None]) -> dict:
    """A Scene's frame run as usual and replayed as CUDA graphs, per loop form; a frame
    from host arrays."""
    import renderer
    from simd import Machine

    mesh = _dataset("balanced", backend)
    size = 512 if backend == "cupy" else 64
    out: dict[str, Any] = {}
    for form in FORMS:
        m = Machine(backend=backend)
        scene = renderer.Scene(mesh, machine=m)
        with graphs(False):
            renderer.render(scene, size=size, loop=form)
            frame_of = partial(renderer.render, scene, size=size, loop=form)
            usual, _ = _timed(frame_of, m)
        with graphs(True):
            for _ in range(2):  # seen, then captured
                renderer.render(scene, size=size, loop=form)
            ms, frame = _timed(frame_of, m)
        row = {"usual_ms": usual, "replayed_ms": ms, "replayed": frame.stats.replayed,
               "identical_to_numpy": _same(frame, reference, form)}  # fmt: skip
        out[form] = row
        med = statistics.median(ms)
        key(
            f"scene {form}: {statistics.median(usual):.2f} ms run as usual, {med:.2f} ms "
            f"replayed as CUDA graphs{_verdict(f'scene {form}', med)}; replayed "
            f"{frame.stats.replayed}, identical to numpy {_said(row['identical_to_numpy'])}"
        )
    m = Machine(backend=backend)
    renderer.render(mesh, size=size, loop="expand", machine=m)
    ms, frame = _timed(lambda: renderer.render(mesh, size=size, loop="expand", machine=m), m)
    out["render(mesh)"] = {"ms": ms, "identical_to_numpy": _same(frame, reference, "expand")}
    med = statistics.median(ms)
    key(f"render(mesh) expand from host arrays: {med:.2f} ms{_verdict('render(mesh)', med)}")
    return out


def redistributing(backend: str, key: Callable[[str], None]) -> dict:
    """A cost-effective frame of the unbalanced set: its loops' iterations, decisions and
    time, run as usual and replayed."""
    import renderer
    from simd import Machine

    m = Machine(backend=backend)
    scene = renderer.Scene(_dataset("unbalanced", backend), machine=m)
    size = 512 if backend == "cupy" else 64
    out: dict[str, Any] = {}
    for on in (False, True):
        with graphs(on):
            for _ in range(2):
                renderer.render(scene, size=size, loop="cost-effective")
            ms, frame = _timed(
                lambda: renderer.render(scene, size=size, loop="cost-effective"), m, 5
            )
        loops = {n: {"iterations": r.iterations, "decisions": r.decisions}
                 for n, r in frame.stats.loops.items()}  # fmt: skip
        out["replayed" if on else "usual"] = {"ms": ms, "loops": loops}
    decisions = sum(v["decisions"] for v in out["usual"]["loops"].values())
    key(
        f"cost-effective on the unbalanced set: {decisions} redistributions, "
        f"{statistics.median(out['usual']['ms']):.2f} ms run as usual, "
        f"{statistics.median(out['replayed']['ms']):.2f} ms replayed"
    )
    return out


class _StageClock:
    """A progress object for ``render``: the host's time up to the end of each stage."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, float]] = []
        self.name = ""
        self.t0 = time.perf_counter()

    def set_postfix_str(self, name: str) -> None:
        self.name = name

    def update(self, _: int) -> None:
        self.marks.append((self.name, time.perf_counter()))


def breakdown(backend: str, key: Callable[[str], None]) -> dict:
    """Per loop form, one frame: each stage's device time (its CUDA events) and the host's
    time to issue it; each fused kernel's launches and device time."""
    import renderer
    from simd import Machine

    mesh = _dataset("balanced", backend)
    size = 512 if backend == "cupy" else 64
    out: dict[str, Any] = {}
    for form in FORMS:
        m = Machine(backend=backend)
        scene = renderer.Scene(mesh, machine=m)
        with graphs(False):
            renderer.render(scene, size=size, loop=form)
            clock = _StageClock()
            with _kernel_events(m) as kernels:
                frame = renderer.render(scene, size=size, loop=form, progress=clock)
        host, last = {}, clock.t0
        for name, t in clock.marks:
            host[name] = 1e3 * (t - last)
            last = t
        device = {name: 1e3 * r.wall for name, r in frame.stats.stages.items()}
        out[form] = {"host_ms": host, "device_ms": device, "kernels": kernels}
        key(
            f"{form} frame, device / host ms per stage: "
            + ", ".join(f"{k} {device.get(k, 0):.2f}/{host.get(k, 0):.2f}" for k in device)
        )
    return out


@contextlib.contextmanager
def _kernel_events(m: Any) -> Iterator[dict]:
    """Within the block, every fused kernel launch timed by two CUDA events: its name's
    launches and device milliseconds (a GPU only; empty on the stand-in)."""
    from kernels import fastpaths

    timed: dict[str, dict[str, float]] = {}
    original = fastpaths.launch
    cuda = m.xp.cuda
    pairs: list[tuple[str, Any, Any]] = []

    def launch(xp: Any, kernel: str, *args: Any) -> None:
        if not hasattr(cuda, "get_elapsed_time") or hasattr(xp, "launch_emulated"):
            return original(xp, kernel, *args)
        start, stop = cuda.Event(), cuda.Event()
        start.record()
        original(xp, kernel, *args)
        stop.record()
        pairs.append((kernel, start, stop))
        return None

    fastpaths.launch = launch
    try:
        yield timed
    finally:
        fastpaths.launch = original
        m.sync()
        for kernel, start, stop in pairs:
            row = timed.setdefault(kernel, {"launches": 0, "device_ms": 0.0})
            row["launches"] += 1
            row["device_ms"] += cuda.get_elapsed_time(start, stop)


def isosurface(backend: str, key: Callable[[str], None]) -> dict:
    """The extraction on the device, the whole call with the mesh on the host, and an
    extraction rendered where it lies."""
    import renderer
    from renderer.datasets.builtin import marschner_lobb
    from simd import Machine

    m = Machine(backend=backend)
    out = []
    for n in (512, 1024) if backend == "cupy" else (48,):
        volume = marschner_lobb(n, xp=m.xp).astype(np.float32)
        renderer.isosurface(volume, 0.5, machine=m)  # warm
        extract = partial(renderer.isosurface, volume, 0.5, machine=m)
        ms, mesh = _timed(extract, m, 5)
        host_ms, _ = _timed(lambda e=extract: e().vertices, m, 5)
        m.reset_stats()
        renderer.isosurface(volume, 0.5, machine=m)
        m.sync()
        phases = {k: 1e3 * m.stats[k].wall for k in ("classify", "scan", "emit")}
        size = 512 if backend == "cupy" else 64
        draw_ms, _ = _timed(lambda e=extract, s=size: renderer.render(e(), size=s), m, 3)
        row = {"n": n, "triangles": mesh.n_faces, "device_call_ms": ms, "host_mesh_ms": host_ms,
               "phases_ms": phases, "rendered_ms": draw_ms}  # fmt: skip
        out.append(row)
        on_device = sum(phases.values())
        key(
            f"isosurface {n}^3: {on_device:.2f} ms on the device ({n**3 / on_device / 1e6:.0f} G "
            f"voxels/s){_verdict(f'isosurface {n}^3 on the device', on_device)}; "
            f"{statistics.median(host_ms):.1f} ms with its {mesh.n_faces} triangles on the host"
            f"{_verdict(f'isosurface {n}^3 with the mesh on the host', statistics.median(host_ms))}"
            f"; extracted and drawn at {size}x{size} {statistics.median(draw_ms):.1f} ms"
        )
        volume = mesh = extract = None  # the next size's room on the device
    return {"sizes": out}


def orbit(backend: str, key: Callable[[str], None]) -> dict:
    """A turntable of 36 frames of the 241k set at 512x512: frames per second."""
    import renderer
    from renderer.orbit import orbit as turntable
    from simd import Machine

    m = Machine(backend=backend)
    scene = renderer.Scene(_dataset("balanced", backend), machine=m)
    size = 512 if backend == "cupy" else 64
    out = {}
    for form in FORMS:
        list(turntable(scene, 2, size=size, loop=form))  # warm
        m.sync()
        t = time.perf_counter()
        list(turntable(scene, 36, size=size, loop=form))
        m.sync()
        fps = 36 / (time.perf_counter() - t)
        out[form] = {"frames_per_second": fps}
        key(f"orbit of 36 frames, {form}: {fps:.1f} frames/s")
    return out


def view(backend: str, key: Callable[[str], None]) -> dict:
    """The viewer's frames per second with a scripted page (bench.view), 2 s a part on a
    GPU (a tenth of a second on the stand-in, which only tries the code)."""
    from bench import view as viewer

    on_gpu = backend == "cupy"
    record = viewer.measure(backend, seconds=2.0 if on_gpu else 0.1, quick=not on_gpu)
    drag = record["page"].get("drag") or record["frames_only"]["drag"]
    goal = viewer.GOALS["drag_fps_gpu"]
    verdict = "" if not on_gpu else f": {'met' if drag['fps'] >= goal else 'NOT met'}"
    key(f"view: a drag at {drag['fps']:.1f} frames/s (goal {goal:g}{verdict})")
    for line in viewer.table(record):
        key(f"view: {line}")
    return record


def mesh_diffusion(backend: str, key: Callable[[str], None]) -> dict:
    """Perona-Malik on the 64 x 64 PE mesh, scan-directed balancing every 5 iterations."""
    from diffusion import mesh_diffusion as run
    from diffusion.images import builtin_image
    from simd import Machine

    side = 1024 if backend == "cupy" else 128
    image = builtin_image("camera", size=(side, side)).astype(np.float32)
    m = Machine(pes=(64, 64), backend=backend)
    run(image, niter=2, machine=m, balance_every=5, kappa=20, gamma=0.1, track_static=False)
    m.sync()
    t = time.perf_counter()
    res = run(image, niter=50, machine=m, balance_every=5, kappa=20, gamma=0.1,
              track_static=False)  # fmt: skip
    m.sync()
    wall = time.perf_counter() - t
    key(
        f"mesh diffusion {side}x{side} on 64x64 PEs, 50 iterations balanced every 5: "
        f"{wall:.2f} s ({1e3 * wall / 50:.1f} ms an iteration), "
        f"{len(res.balance_reports)} balancing steps, "
        f"model {m.cost.seconds(res.cycles['total']):.3f} s"
    )
    return {"side": side, "iterations": 50, "seconds": wall,
            "balance_steps": len(res.balance_reports)}  # fmt: skip


def balance(backend: str, key: Callable[[str], None]) -> dict:
    """``simd-emu bench balance`` on the wall-clock machine (the balancers deciding by the
    GPU's own time): a Zipf workload of 1,024 processors, its table's SIMD rows."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "simd.cli", "bench", "balance", "--family", "zipf",
            "--pes", "1024" if backend == "cupy" else "64", "--machines", "wall",
            "--balancers", "none,cost-effective,expand", "--quiet"]  # fmt: skip
    if backend == "cupy":
        argv += ["--backend", "cupy"]
    t = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - t
    lines = proc.stdout.strip().splitlines()
    key(f"bench balance on the wall clock: rc={proc.returncode} in {seconds:.1f} s")
    for line in lines[-6:]:
        key(f"  {line}")
    if proc.returncode:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
    return {"seconds": seconds, "table": lines}


def scale(backend: str, key: Callable[[str], None], deadline: float) -> dict:
    """Frames of isosurfaces extracted on the device, from about 0.25 to 16 million
    triangles and 512 to 2048 pixels a side (expand, run as usual): milliseconds and the
    memory pool's growth per triangle over the frame."""
    import renderer
    from renderer.datasets.builtin import marschner_lobb
    from simd import Machine

    grids = (160, 320, 640, 1280) if backend == "cupy" else (24, 40)
    sides = (512, 1024, 2048) if backend == "cupy" else (64, 128)
    m = Machine(backend=backend)
    pool = m.xp.get_default_memory_pool()
    rows = []
    for n in grids:
        if time.monotonic() > deadline:
            key(f"scale: stopped before the {n}^3 grid, out of time")
            break
        scene = renderer.Scene(renderer.isosurface(marschner_lobb(n, xp=m.xp), 0.5, machine=m))
        for side in sides:
            with graphs(False):
                renderer.render(scene, size=side, loop="expand")  # warm
                pool.free_all_blocks()
                before = pool.total_bytes()
                ms, _ = _timed(partial(renderer.render, scene, size=side, loop="expand"), m, 3)
            grown = pool.total_bytes() - before
            per_triangle = grown / max(scene.n_faces, 1)
            rows.append({"grid": n, "triangles": scene.n_faces, "side": side, "ms": ms,
                         "pool_bytes": grown, "bytes_per_triangle": per_triangle})  # fmt: skip
            key(
                f"scale: {scene.n_faces / 1e6:.2f}M triangles at {side}x{side}: "
                f"{statistics.median(ms):.2f} ms, {per_triangle:.0f} device bytes a triangle"
            )
        scene = None  # the next grid's room on the device
    return {"rows": rows}
