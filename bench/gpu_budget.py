"""What one frame would cost a GPU: launches, host syncs and transfers, counted without one.

Renders the built-in balanced isosurface (``renderer.load_dataset("balanced")``: 241,498
triangles) at 512x512 in each loop form on the counting backend (``kernels.counting``, the
CuPy code path run on NumPy) and prints, per pipeline stage and per frame: kernel launches,
device-to-host synchronisations, host-to-device and device-to-host bytes, elementwise
traffic, and the host-side Python time with the device work stubbed out (every call into
the stand-in is timed from entry to return as device time, the stand-in's own Python
included: it stands for CuPy's host time per call, which the table's last line estimates
from the launches and which comes on top on a GPU; the timing wrapper's own cost per
call, ``counting.call_overhead()``, calibrated when the run starts, is taken off too).
Two frames per form: a one-off frame from the mesh (uploads it), and a later frame of a
``renderer.Scene`` of the same view (the mesh and camera already made; the least host
time of ``--repeat`` frames, its host code run every time), and the same frame replayed
as CUDA graphs (:mod:`renderer.replays`: captured by the scene's second frame of its kind,
then launched graph by graph with its reads back). The original form also runs on the
unbalanced set, as in the paper's tables.

Run ``python -m bench.gpu_budget [--quick] [--repeat N] [--no-pool] [--out DIR | --save]``;
``--quick`` uses a small resolution of the same surface (``load_dataset("balanced", 48)``) and a
128x128 image. The process keeps freed memory as CuPy's memory pool does
(:func:`kernels.counting.pool_host_memory`), so that the host time does not include
NumPy's returning the pages of dead arrays to the system; ``--no-pool`` measures with it.
The scene's frames are also measured with the device work replayed from a recording of one
of them (:class:`kernels.counting.Tape`): no NumPy work runs, so the host's Python runs on
caches that the emulated device work has not flushed, as on a GPU (``host_seconds_replayed``;
the inline ``host_seconds`` counts those cache misses as host time, about twice as much).
Writes JSON with the machine and versions to ``gpu_budget.json`` (``gpu_budget-quick.json``)
in the current folder, in ``--out DIR``, or with ``--save`` in this source tree's
``bench/results``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from typing import Any

import renderer
from bench import ROOT
from kernels import counting
from simd import Machine
from simd.info import environment
from simd.outputs import (
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
    write_text,
)

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"

FORMS = ("expand", "cost-effective", "original")
#: CuPy's host time per kernel launch on real hardware (Python, Cython and driver), in us:
#: not measured here (the stand-in's calls are timed as device time), estimated from it.
CUPY_LAUNCH_US = (5, 10)
OUTSIDE = "(outside phases)"


def measure_frame(
    target: Any, loop: str, size: int, machine: Machine, tape: counting.Tape | None = None
) -> dict[str, Any]:
    """Render once on ``machine`` (a counting one) and return the counts of the frame;
    with ``tape``, the device work replayed from it (:func:`kernels.counting.replaying`)."""
    device = counting.replaying(tape) if tape is not None else contextlib.nullcontext()
    with device, counting.measure() as c:  # the replay's set-up is not the frame's time
        frame = renderer.render(target, size=size, loop=loop, machine=machine)
    stages = {(name or OUTSIDE): counts.to_dict() for name, counts in c.stages().items()}
    total = c.total.to_dict()
    total["host_seconds"] = c.host_seconds
    total["api_calls"] = c.calls  # each less counting.call_overhead() in host_seconds
    total["wall_seconds"] = c.wall_seconds
    return {
        "loop": loop,
        "triangles": frame.stats.counts.triangles,
        "pixels": frame.stats.counts.pixels,
        "iterations": {name: res.iterations for name, res in frame.stats.loops.items()},
        "total": total,
        "stages": stages,
    }


def _scene_frames(scene: Any, loop: str, size: int, m: Machine, repeat: int) -> dict[str, Any]:
    """A Scene's later frame: its counts and the least host time of ``repeat``, inline and
    with the device work replayed from a tape."""
    renderer.render(scene, size=size, loop=loop)  # the scene's first frame
    with counting.recording() as tape:  # the device's answers to a later frame
        renderer.render(scene, size=size, loop=loop)
    # Later frames count the same; their host time is the least of several (the
    # others include the time this process waited for the CPU).
    rows = [measure_frame(scene, loop, size, m) for _ in range(repeat)]
    row = min(rows, key=lambda r: r["total"]["host_seconds"])
    row["total"]["host_seconds_all"] = [r["total"]["host_seconds"] for r in rows]
    # The same frames with the device work replayed from the tape: the host's time on
    # caches that no emulated device work has flushed, as on a GPU.
    replayed = [measure_frame(scene, loop, size, m, tape)["total"] for _ in range(repeat)]
    if any(r["launches"] != row["total"]["launches"] for r in replayed):
        raise RuntimeError("a replayed frame counted other launches than the recorded one")
    host = [r["host_seconds"] for r in replayed]
    row["total"]["host_seconds_replayed"] = min(host)
    row["total"]["host_seconds_replayed_all"] = host
    row.update(dataset="balanced", frame="scene (second frame)")
    return row


def _replayed_frames(scene: Any, loop: str, size: int, m: Machine, repeat: int) -> dict:
    """A Scene's frame replayed as CUDA graphs (renderer.replays): captured by the second
    frame of its kind, then replayed; the least host time of ``repeat`` replays."""
    for _ in range(2):  # seen (replays on), then captured
        renderer.render(scene, size=size, loop=loop)
    rows = [measure_frame(scene, loop, size, m) for _ in range(repeat)]
    row = min(rows, key=lambda r: r["total"]["host_seconds"])
    row["total"]["host_seconds_all"] = [r["total"]["host_seconds"] for r in rows]
    row.update(dataset="balanced", frame="scene (replayed as CUDA graphs)")
    return row


@contextlib.contextmanager
def _graphs_off():
    """Frames run their host code every time (``SIMD_GRAPHS=0``) within the block."""
    saved = os.environ.get("SIMD_GRAPHS")
    os.environ["SIMD_GRAPHS"] = "0"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SIMD_GRAPHS"]
        else:
            os.environ["SIMD_GRAPHS"] = saved


def print_frame(title: str, row: dict[str, Any]) -> None:
    its = ", ".join(f"{k} {v}" for k, v in row["iterations"].items())
    print(f"\n{title}: {row['triangles']:,} triangles, {row['pixels']:,} pixels; iterations {its}")
    header = (
        f"{'stage':<20} {'launches':>9} {'syncs':>6} {'H2D MB':>9} {'D2H kB':>9} {'traffic MB':>11}"
    )
    print(header)
    print("-" * len(header))
    rows = list(row["stages"].items()) + [("frame", row["total"])]
    for name, c in rows:
        print(
            f"{name:<20} {c['launches']:>9,} {c['syncs']:>6,} {c['h2d_bytes'] / 1e6:>9.3f}"
            f" {c['d2h_bytes'] / 1e3:>9.1f} {c['traffic_bytes'] / 1e6:>11.1f}"
        )
    t = row["total"]
    replayed = t.get("host_seconds_replayed")
    print(
        f"host Python time with device work stubbed: {t['host_seconds'] * 1e3:.2f} ms"
        + (f", {replayed * 1e3:.2f} ms replayed" if replayed is not None else "")
        + f" (wall {t['wall_seconds']:.2f} s); syncs by cause: "
        + ", ".join(f"{k} {v}" for k, v in sorted(t["sync_ops"].items(), key=lambda kv: -kv[1]))
    )
    launches = t["launches"] + t.get("graph_launches", 0)
    lo, hi = (launches * us / 1e3 for us in CUPY_LAUNCH_US)
    graphs = f" (of them {t['graph_launches']} of CUDA graphs)" if t.get("graph_launches") else ""
    print(
        f"not in it: CuPy's own host time per launch, {CUPY_LAUNCH_US[0]}-{CUPY_LAUNCH_US[1]} us"
        f" x {launches:,} launches{graphs} = {lo:.2f}-{hi:.2f} ms on a GPU"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.gpu_budget", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small mesh and image")
    add_output_arguments(parser, save_dir=SAVE_DIR)
    parser.add_argument("--forms", default=",".join(FORMS), help="loop forms, comma-separated")
    parser.add_argument(
        "--no-unbalanced", action="store_true", help="skip the original form on the unbalanced set"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="frames of a Scene measured after its first"
    )
    parser.add_argument(
        "--no-pool",
        action="store_true",
        help="let NumPy return freed memory to the system (its cost then counts as host time)",
    )
    args = parser.parse_args(argv)
    forms = [f for f in args.forms.split(",") if f]
    unknown = [f for f in forms if f not in FORMS]
    if unknown:
        parser.error(f"unknown loop forms {unknown}; choose from {list(FORMS)}")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {args.repeat}")
    out = output_folder_from_args(parser, args, save_dir=SAVE_DIR) / (
        "gpu_budget-quick.json" if args.quick else "gpu_budget.json"
    )
    announce_replace_from_args(parser, args, out)
    args.pool = not args.no_pool and counting.pool_host_memory()
    doc = measure(args, forms)
    write_text(out, json.dumps(doc, indent=1, default=str) + "\n")
    print(f"\nwrote {out}")
    return 0


def measure(args: argparse.Namespace, forms: list[str]) -> dict[str, Any]:
    """Count every frame and print the tables; returns the record for the JSON."""
    resolution = 48 if args.quick else "250k"
    size = 128 if args.quick else 512
    t0 = time.perf_counter()
    balanced = renderer.load_dataset("balanced", resolution)
    results: list[dict[str, Any]] = []
    for loop in forms:
        m = Machine(backend="counting")
        row = measure_frame(balanced, loop, size, m)
        row.update(dataset="balanced", frame="mesh (one-off, uploads the mesh)")
        print_frame(f"{loop}, balanced set, one-off frame from the mesh", row)
        results.append(row)
        scene = renderer.Scene(balanced, machine=m)
        with _graphs_off():  # the frame's own host code, run as it is every time
            row = _scene_frames(scene, loop, size, m, args.repeat)
        print_frame(f"{loop}, balanced set, second frame of a Scene", row)
        results.append(row)
        row = _replayed_frames(scene, loop, size, m, args.repeat)
        print_frame(f"{loop}, balanced set, a Scene's frame replayed as CUDA graphs", row)
        results.append(row)
    if "original" in forms and not args.no_unbalanced:
        unbalanced = renderer.load_dataset("unbalanced", resolution)
        row = measure_frame(unbalanced, "original", size, Machine(backend="counting"))
        row.update(dataset="unbalanced", frame="mesh (one-off, uploads the mesh)")
        print_frame("original, unbalanced set, one-off frame from the mesh", row)
        results.append(row)

    return {
        "benchmark": "gpu_budget",
        "quick": args.quick,
        "image": [size, size],
        "resolution": resolution,
        "backend": "counting (kernels.counting: the CuPy code path on NumPy)",
        "host_memory_pool": args.pool,
        # the timing wrapper's own cost per API call, taken off host_seconds per call
        "call_overhead_seconds": counting.call_overhead(),
        "environment": environment(),
        "seconds": time.perf_counter() - t0,
        "frames": results,
    }


if __name__ == "__main__":
    raise SystemExit(main())
