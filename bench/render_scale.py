"""Memory and time of one frame against the triangle count, from 250k to 16M triangles.

The goal: at most 250 bytes per triangle at the peak of a frame (so that one 80 GB
GPU holds 300 million triangles) and a frame time linear in triangles and pixels. For the
built-in balanced isosurface at 250k, 1m, 2m and 4m triangles (``--quick``: two small
resolutions), in the expand and cost-effective loop forms, at 512x512 (and 1024x1024 for
the sets up to ``--big-image-max``), each (set, form, image) runs in a fresh subprocess:

* the mesh goes onto a ``renderer.Scene`` (so the upload is not part of a frame), one
  warm-up frame (JIT compilation, caches), then ``--frames`` timed frames (the median);
* memory: before each timed frame the process's peak resident set is reset
  (``/proc/self/clear_refs``, Linux) and the allocator trimmed (``malloc_trim``), and the
  frame's peak is ``VmHWM`` after the frame minus ``VmRSS`` before it: everything the
  frame held at once (NumPy arrays, Numba's own allocations inside compiled kernels, the
  allocator's slack), which is what decides whether a frame fits. Blocks of 128 KiB and
  more are mapped on their own (glibc's ``M_MMAP_THRESHOLD``, :func:`_fix_mmap_threshold`;
  ``--dynamic-malloc`` keeps glibc's default, whose heap keeps arrays the frame freed
  resident: about 10 MB more at 250k/1024). Where the peak cannot be
  reset (not Linux) the fresh process's ``ru_maxrss`` growth over the warm-up is used. One
  more, untimed frame runs under ``tracemalloc``, which sees NumPy's buffers only (not
  Numba's allocations inside kernels): the two bracket the frame's own array memory. On
  the ``cupy`` backend the CuPy memory pool's size after a frame is recorded too (host
  RSS does not see device memory);
* the peaks of each form on one rank are split by least squares into bytes per triangle
  and bytes per pixel (:func:`memory_fit`): a small set drawn large spends much of its
  peak on the image's own buffers, so the goal is judged on the per-triangle slope as
  well as on bytes per triangle of each row.

With ``mpiexec`` at hand (and not ``--quick``) the 16m set also runs on 4 ranks
(``load_dataset_slab`` per rank, a sort-last frame on ``Machine(comm=...)``; no Scene on
ranks, so the share's upload is in the frame time) with each rank's peak; the 16m set is
built in slabs and only exists across ranks.

Run ``python -m bench.render_scale [--quick] [--out DIR | --save]``; the JSON (machine and
versions) goes to ``render_scale.json`` (``render_scale-quick.json``) and the plot
(log-log time and bytes per triangle against triangles, with the goal lines) beside it.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench import ROOT, child_environment
from simd.outputs import (
    StagedOutputs,
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
)

SAVE_DIR = ROOT / "bench" / "results"
FORMS = ("expand", "cost-effective")
#: The goal: bytes per triangle at the peak of a frame.
GOAL_BYTES_PER_TRIANGLE = 250
SETS = ("250k", "1m", "2m", "4m")
QUICK_SETS = ("32", "64")


# ---------------------------------------------------------------------- memory probes


def _status_kib(field: str) -> int | None:
    """A ``/proc/self/status`` field in KiB (None off Linux)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak() -> bool:
    """Trim the allocator and reset the peak RSS (VmHWM); False where it cannot be reset."""
    gc.collect()
    try:  # hand freed heap pages back, so a frame's reuse of them shows as growth
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


#: glibc's mallopt parameter for the size from which blocks are mapped on their own.
_M_MMAP_THRESHOLD = -3


def _fix_mmap_threshold(size: int = 128 * 1024) -> bool:
    """Map every block of ``size`` bytes or more on its own (glibc), so that a freed array
    goes back to the system at once; False where that cannot be set.

    glibc's default raises the threshold to the size of each mapped block freed (up to
    32 MiB), after which arrays of that size come from the heap, where freed ones stay
    resident: the peak RSS then holds arrays the frame had already dropped (about 10 MB
    more than the arrays alive at once at 250k/1024), an artefact of the host allocator
    that a GPU's memory pool does not share.
    """
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, size))
    except (OSError, AttributeError):
        return False


def _pool(machine: Any) -> Any:
    if machine.backend != "cupy":
        return None
    import cupy

    return cupy.get_default_memory_pool()


def frame_memory(run: Any, machine: Any) -> dict[str, Any]:
    """Run ``run()`` once; its wall time and peak memory growth (bytes)."""
    resettable = _reset_peak()
    rss0 = (_status_kib("VmRSS") or 0) * 1024
    pool = _pool(machine)
    if pool is not None:
        pool.free_all_blocks()
    t0 = time.perf_counter()
    out = run()
    machine.sync()
    wall = time.perf_counter() - t0
    row: dict[str, Any] = {"wall_s": wall}
    if resettable:
        row["peak_growth_bytes"] = (_status_kib("VmHWM") or 0) * 1024 - rss0
        row["peak_total_bytes"] = (_status_kib("VmHWM") or 0) * 1024
    if pool is not None:
        row["device_pool_bytes"] = int(pool.total_bytes())
    del out
    return row


def _maxrss_bytes() -> int:
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def _frames(render_one: Any, machine: Any, frames: int, barrier: Any = None) -> dict[str, Any]:
    """Warm-up, ``frames`` timed frames with their memory, one traced frame."""
    base = _maxrss_bytes()
    rss0 = (_status_kib("VmRSS") or 0) * 1024
    render_one()  # warm-up: JIT compilation, caches
    warm_growth = _maxrss_bytes() - max(base, rss0)
    rows = []
    for _ in range(frames):
        if barrier is not None:
            barrier()
        rows.append(frame_memory(render_one, machine))
    gc.collect()
    tracemalloc.start()
    render_one()
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    peaks = [r["peak_growth_bytes"] for r in rows if "peak_growth_bytes" in r]
    record = {
        "frames_s": [r["wall_s"] for r in rows],
        "median_s": statistics.median(r["wall_s"] for r in rows),
        # the largest of the frames: what has to fit
        "peak_bytes": max(peaks) if peaks else warm_growth,
        "peak_method": "VmHWM reset per frame" if peaks else "ru_maxrss over the warm-up",
        "peak_total_bytes": max((r.get("peak_total_bytes", 0) for r in rows), default=0),
        "tracemalloc_peak_bytes": traced,
    }
    if any("device_pool_bytes" in r for r in rows):
        record["device_pool_bytes"] = max(r.get("device_pool_bytes", 0) for r in rows)
    return record


# ---------------------------------------------------------------------- workers


def _size(text: str) -> str | int:
    """A named size ("250k") or a grid resolution ("48")."""
    return int(text) if text.isdigit() else text


def child(args: argparse.Namespace) -> None:
    """One (set, form, image) in this fresh process; its record to ``args.child``."""
    fixed = not args.dynamic_malloc and _fix_mmap_threshold()
    import renderer
    from simd import Machine

    machine = Machine(backend=args.backend)
    mesh = renderer.load_dataset("balanced", _size(args.set))
    scene = renderer.Scene(mesh, machine=machine)
    del mesh
    size = (args.image, args.image)
    counts: dict[str, int] = {}

    def one() -> Any:
        frame = renderer.render(scene, view=(45, 45), size=size, loop=args.form)
        # what the per-span and per-task arrays scale with (spans grow with the image)
        counts.update(spans=frame.stats.counts.spans, fragments=frame.stats.counts.fragments)
        return frame

    record = _frames(one, machine, args.frames)
    record.update(
        set=args.set, form=args.form, image=args.image, triangles=scene.n_faces, ranks=1,
        backend=machine.backend, **counts,
        malloc="mmap threshold 128 KiB" if fixed else "glibc default",
    )  # fmt: skip
    Path(args.child).write_text(json.dumps(record))


def rank_worker(args: argparse.Namespace) -> None:
    """One (set, form, image) on the ranks of ``mpiexec``; per-rank peaks to rank 0."""
    if not args.dynamic_malloc:
        _fix_mmap_threshold()
    import numpy as np

    import renderer
    from simd import Machine
    from simd.launch import world

    machine = Machine(backend=args.backend, comm=world())
    rank, nranks = machine.rank, machine.nranks
    share = renderer.load_dataset_slab("balanced", _size(args.set), rank, nranks)
    size = (args.image, args.image)
    comm = machine.ranks.comm if machine.ranks is not None else None

    def one() -> Any:
        return renderer.render(share, view=(45, 45), size=size, loop=args.form, machine=machine)

    record = _frames(one, machine, args.frames, barrier=comm.Barrier if comm else None)
    mine = np.array(
        [share.n_faces, record["peak_bytes"], record["median_s"], record["tracemalloc_peak_bytes"]],
        dtype=np.float64,
    )
    rows = comm.gather(mine.tolist(), root=0) if comm else [mine.tolist()]
    if rank == 0:
        per_rank = [
            {"triangles": int(t), "peak_bytes": int(p), "median_s": s, "traced_bytes": int(m)}
            for t, p, s, m in rows
        ]
        triangles = sum(r["triangles"] for r in per_rank)
        out = {
            "set": args.set, "form": args.form, "image": args.image, "ranks": nranks,
            "triangles": triangles, "frames_s": record["frames_s"],
            "median_s": max(r["median_s"] for r in per_rank),
            # the worst rank against its own share: what each GPU has to hold
            "peak_bytes": max(r["peak_bytes"] for r in per_rank),
            "bytes_per_triangle": max(r["peak_bytes"] / max(r["triangles"], 1) for r in per_rank),
            "peak_method": record["peak_method"] + ", per rank", "per_rank": per_rank,
            "tracemalloc_peak_bytes": max(r["traced_bytes"] for r in per_rank),
            "traced_bytes_per_triangle": max(
                r["traced_bytes"] / max(r["triangles"], 1) for r in per_rank
            ),
            "backend": machine.backend,
        }  # fmt: skip
        Path(args.rank_worker).write_text(json.dumps(out))


# ---------------------------------------------------------------------- driver


def _mpiexec() -> str | None:
    from simd.launch import find_mpiexec

    return find_mpiexec()


def launch(args: argparse.Namespace, size: str, form: str, image: int, ranks: int = 1) -> dict:
    """Run one case in a fresh process (or ``ranks`` ranks); its record."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "record.json"
        common = [
            "--set", size, "--form", form, "--image", str(image), "--frames", str(args.frames),
            "--backend", args.backend,
        ] + (["--dynamic-malloc"] if args.dynamic_malloc else [])  # fmt: skip
        if ranks == 1:
            command = [sys.executable, "-m", "bench.render_scale", "--child", str(out), *common]
        else:
            command = [
                _mpiexec(), "--oversubscribe", "-n", str(ranks), sys.executable, "-m",
                "bench.render_scale", "--rank-worker", str(out), *common,
            ]  # fmt: skip
        subprocess.run(command, check=True, timeout=args.timeout, env=child_environment())
        record = json.loads(out.read_text())
    record.setdefault("bytes_per_triangle", record["peak_bytes"] / max(record["triangles"], 1))
    record["ns_per_triangle"] = 1e9 * record["median_s"] / max(record["triangles"], 1)
    return record


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'set':>5} {'ranks':>5} {'image':>5} {'triangles':>10} {'form':<15} {'ms/frame':>9}"
        f" {'ns/tri':>7} {'peak MB':>8} {'B/tri':>6} {'traced B/tri':>12} {'goal':>5}"
    ]
    for r in rows:
        traced = r.get("tracemalloc_peak_bytes")
        per = r.get("traced_bytes_per_triangle")  # on ranks: the worst rank's own share
        if per is None and traced is not None:
            per = traced / max(r["triangles"], 1)
        traced_text = "-" if per is None else f"{per:.0f}"
        goal = "met" if r["bytes_per_triangle"] <= GOAL_BYTES_PER_TRIANGLE else "no"
        lines.append(
            f"{r['set']:>5} {r['ranks']:>5} {r['image']:>5} {r['triangles']:>10} {r['form']:<15}"
            f" {1e3 * r['median_s']:>9.1f} {r['ns_per_triangle']:>7.0f}"
            f" {r['peak_bytes'] / 1e6:>8.1f} {r['bytes_per_triangle']:>6.0f}"
            f" {traced_text:>12} {goal:>5}"
        )
    return "\n".join(lines)


def linearity(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per (form, image) on one rank: the log-log slope of time against triangles (1 is
    proportional), the ratio of the largest to the smallest set's time per triangle, and
    the least-squares line time = fixed + per triangle x triangles (linear with a fixed,
    per-pixel part) with its largest relative miss.

    Examples
    --------
    >>> rows = [{"form": "f", "image": 8, "ranks": 1, "triangles": n,
    ...          "median_s": 0.1 + n * 1e-6} for n in (10**5, 10**6, 4 * 10**6)]
    >>> fit = linearity(rows)["f 8"]
    >>> round(fit["fixed_s"], 6), round(fit["ns_per_triangle"], 3), fit["max_miss"] < 1e-9
    (0.1, 1000.0, True)
    """
    import numpy as np

    out = {}
    for key in sorted({(r["form"], r["image"]) for r in rows if r["ranks"] == 1}):
        sel = sorted(
            (r for r in rows if (r["form"], r["image"]) == key and r["ranks"] == 1),
            key=lambda r: r["triangles"],
        )
        if len(sel) < 2:
            continue
        n = np.array([r["triangles"] for r in sel], dtype=np.float64)
        t = np.array([r["median_s"] for r in sel], dtype=np.float64)
        slope = float(np.polyfit(np.log(n), np.log(t), 1)[0])
        per_triangle, fixed = np.polyfit(n, t, 1)
        miss = np.abs(fixed + per_triangle * n - t) / t
        out[f"{key[0]} {key[1]}"] = {
            "slope": round(slope, 3),
            "per_triangle_ratio": float(t[-1] / n[-1] / (t[0] / n[0])),
            "fixed_s": float(fixed),
            "ns_per_triangle": float(1e9 * per_triangle),
            "max_miss": float(miss.max()),
        }
    return out


def memory_fit(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per form on one rank: the least-squares split of the peak into a part per triangle
    and a part per pixel, ``peak_bytes = per_triangle * triangles + per_pixel * pixels``,
    over every set and image size measured, with its largest relative miss.

    ``per_triangle`` is the slope that decides the goal (at most 250 bytes a triangle,
    so that one 80 GB GPU holds 300 million triangles): on a small set drawn large the
    image's own buffers (depth keys, colours, read back) are a large share of the peak
    whatever the triangles cost. ``triangles_in_80GB`` is what 80 GB holds at 1024x1024 by
    the fit. Needs two image sizes (else the parts cannot be told apart: None).

    Examples
    --------
    >>> rows = [{"form": "f", "ranks": 1, "triangles": t, "image": i,
    ...          "peak_bytes": 200 * t + 30 * i * i} for t, i in ((10**5, 512), (10**6, 512),
    ...                                                            (10**5, 1024))]
    >>> fit = memory_fit(rows)["f"]
    >>> round(fit["per_triangle"], 6), round(fit["per_pixel"], 6), fit["max_miss"] < 1e-9
    (200.0, 30.0, True)
    """
    import numpy as np

    out: dict[str, dict[str, float]] = {}
    for form in sorted({r["form"] for r in rows if r["ranks"] == 1}):
        sel = [r for r in rows if r["form"] == form and r["ranks"] == 1]
        if len({r["image"] for r in sel}) < 2 or len(sel) < 3:
            continue
        a = np.array([[r["triangles"], r["image"] ** 2] for r in sel], dtype=np.float64)
        peak = np.array([r["peak_bytes"] for r in sel], dtype=np.float64)
        (per_triangle, per_pixel), *_ = np.linalg.lstsq(a, peak, rcond=None)
        miss = np.abs(a @ np.array([per_triangle, per_pixel]) - peak) / peak
        out[form] = {
            "per_triangle": float(per_triangle),
            "per_pixel": float(per_pixel),
            "max_miss": float(miss.max()),
            "triangles_in_80GB": float((80e9 - per_pixel * 1024**2) / per_triangle),
            "goal_met": bool(per_triangle <= GOAL_BYTES_PER_TRIANGLE),
        }
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fits = linearity(rows)
    fig, (ax_t, ax_b) = plt.subplots(1, 2, figsize=(13, 5))
    keys = sorted({(r["form"], r["image"]) for r in rows})
    for form, image in keys:
        sel = sorted(
            (r for r in rows if (r["form"], r["image"]) == (form, image)),
            key=lambda r: r["triangles"],
        )
        one = [r for r in sel if r["ranks"] == 1]
        many = [r for r in sel if r["ranks"] > 1]
        label = f"{form}, {image}x{image}"
        (line,) = ax_t.loglog(
            [r["triangles"] for r in one], [r["median_s"] for r in one], "o-", label=label
        )
        ax_b.loglog(
            [r["triangles"] for r in one], [r["bytes_per_triangle"] for r in one], "o-",
            color=line.get_color(), label=label,
        )  # fmt: skip
        for r in many:
            ax_t.loglog(r["triangles"], r["median_s"], "s", color=line.get_color(), mfc="none")
            ax_b.loglog(
                r["triangles"], r["bytes_per_triangle"], "s", color=line.get_color(), mfc="none"
            )
        fit = fits.get(f"{form} {image}")
        if fit:  # the fitted line: a fixed (per-pixel) part + a cost per triangle
            xs = np.geomspace(one[0]["triangles"], max(r["triangles"] for r in sel), 32)
            ys = fit["fixed_s"] + 1e-9 * fit["ns_per_triangle"] * xs
            ax_t.loglog(xs, ys, ":", color=line.get_color(), lw=0.9)
    ax_t.set_xlabel("triangles")
    ax_t.set_ylabel("seconds per frame (median)")
    ax_t.set_title("frame time (dotted: fixed + per-triangle fit; squares: MPI ranks, slowest)")
    ax_t.legend(fontsize=7)
    ax_b.axhline(GOAL_BYTES_PER_TRIANGLE, color="k", ls="--", lw=0.8, label="goal: 250 B")
    ax_b.set_xlabel("triangles")
    ax_b.set_ylabel("peak bytes per triangle (RSS growth in the frame)")
    ax_b.set_title("memory at the frame's peak (squares: worst rank / its share)")
    ax_b.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def measure(args: argparse.Namespace, stage: StagedOutputs, picture: Path) -> dict[str, Any]:
    """Run every case, print the table, stage the plot ``picture``; the record for the
    JSON."""
    from simd.info import environment

    start = time.perf_counter()
    cases = []
    for size in args.sets:
        for image in args.images:
            if image > 512 and size not in args.big_image_sets:
                continue
            for form in args.forms:
                cases.append((size, form, image, 1))
    mpi = bool(args.mpi_set) and _mpiexec() is not None
    if mpi:
        for form in args.forms:
            cases.append((args.mpi_set, form, 512, args.mpi_ranks))
    rows, skipped = [], []
    for size, form, image, ranks in cases:
        print(f"{size}, {form}, {image}x{image}, {ranks} rank(s) ...", flush=True)
        try:
            rows.append(launch(args, size, form, image, ranks))
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            if ranks == 1:
                raise
            # the ranked set may not fit this host's memory or time: say so, keep the rest
            print(f"  skipped: {err}", flush=True)
            skipped.append({"set": size, "form": form, "ranks": ranks, "error": str(err)})
    text = table(rows)
    print(text)
    slopes = linearity(rows)
    for key, fit in slopes.items():
        print(
            f"{key}: time ~ triangles^{fit['slope']:.2f}; time per triangle, largest / "
            f"smallest set: {fit['per_triangle_ratio']:.2f}; line: {1e3 * fit['fixed_s']:.0f} ms"
            f" + {fit['ns_per_triangle']:.0f} ns x triangles (largest miss "
            f"{100 * fit['max_miss']:.0f}%)"
        )
    memory = memory_fit(rows)
    for form, fit in memory.items():
        print(
            f"{form}: peak ~ {fit['per_triangle']:.0f} B x triangles + {fit['per_pixel']:.0f} B"
            f" x pixels (largest miss {100 * fit['max_miss']:.0f}%): the goal of "
            f"{GOAL_BYTES_PER_TRIANGLE} B a triangle is {'met' if fit['goal_met'] else 'not met'}"
            f" on the slope; 80 GB hold {fit['triangles_in_80GB'] / 1e6:.0f}M triangles at "
            "1024x1024"
        )
    plot(rows, stage.path(picture))
    return {
        "benchmark": "render_scale",
        "quick": args.quick,
        "environment": environment(),
        "goal_bytes_per_triangle": GOAL_BYTES_PER_TRIANGLE,
        "parameters": {
            "sets": args.sets,
            "forms": args.forms,
            "images": args.images,
            "big_image_sets": args.big_image_sets,
            "frames": args.frames,
            "backend": args.backend,
            "mpi_set": args.mpi_set if mpi else None,
            "mpi_ranks": args.mpi_ranks,
            "view": [45, 45],
        },  # fmt: skip
        "memory_method": (
            "peak RSS growth of each timed frame in a fresh process (VmHWM reset through "
            "/proc/self/clear_refs after malloc_trim, minus VmRSS before the frame; blocks "
            "from 128 KiB mapped on their own unless --dynamic-malloc): all "
            "the frame holds at once, Numba's allocations included; tracemalloc_peak_bytes: "
            "NumPy's buffers only, one extra frame; memory_fit: peak_bytes = per_triangle x "
            "triangles + per_pixel x pixels, least squares over each form's one-rank rows"
        ),
        "rows": rows,
        "skipped": skipped,
        "linearity": slopes,
        "memory_fit": memory,
        "table": text,
        "wall_seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.render_scale", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="two small sets, 2 frames")
    parser.add_argument("--sets", nargs="+", default=None, help="data set sizes (250k 1m ...)")
    parser.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS))
    parser.add_argument("--images", type=int, nargs="+", default=None, help="image sides")
    parser.add_argument(
        "--big-image-sets", nargs="*", default=None, help="sets also drawn above 512x512"
    )
    parser.add_argument("--frames", type=int, default=None, help="timed frames (default 3)")
    parser.add_argument("--mpi-set", default=None, help="set run across ranks ('' for none)")
    parser.add_argument("--mpi-ranks", type=int, default=4)
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per case")
    parser.add_argument(
        "--dynamic-malloc",
        action="store_true",
        help="keep glibc's dynamic mmap threshold (peaks then include freed heap arrays)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--rank-worker", help=argparse.SUPPRESS)
    parser.add_argument("--set", help=argparse.SUPPRESS)
    parser.add_argument("--form", help=argparse.SUPPRESS)
    parser.add_argument("--image", type=int, help=argparse.SUPPRESS)
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {
        "sets": list(QUICK_SETS if quick else SETS),
        "images": [128] if quick else [512, 1024],
        "big_image_sets": [] if quick else ["250k", "1m"],
        "frames": 2 if quick else 3,
        "mpi_set": "" if quick else "16m",
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.frames < 1:
        parser.error("--frames must be at least 1")
    if args.child:
        child(args)
        return 0
    if args.rank_worker:
        rank_worker(args)
        return 0
    outdir = output_folder_from_args(parser, args, save_dir=SAVE_DIR)
    stem = "render_scale-quick" if quick else "render_scale"
    out, picture = outdir / f"{stem}.json", outdir / f"{stem}.png"
    announce_replace_from_args(parser, args, [out, picture])
    with StagedOutputs() as stage:
        record = measure(args, stage, picture)
        stage.path(out).write_text(json.dumps(record, indent=1, default=float))
    print(f"wrote {out} and {picture}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
