"""Throughput of the machine's communication primitives against the memory floor.

For every primitive and size the benchmark measures the time of one instruction through
the public API (``Machine(backend=...)``: validation, accounting and the kernel, which is
what users get) and reports

- elements per second, and
- the ratio to the memory floor: the bytes the primitive must move (read its inputs once,
  write its output once) over the streaming copy bandwidth measured in the same run (a
  device-to-device copy on the GPU, a NumPy copy on the CPU) on buffers of at least
  ``COPY_ELEMENTS`` int32 (256 MiB each), far beyond any last-level cache (a GPU's L2 of
  50-126 MB, a CPU's L3), so that it is the memory's bandwidth. 1.0 is the floor; the goal
  on a GPU at 2^26 elements and beyond is 0.9 for the add scan and 0.7 for the other forms.
  At sizes that fit in cache a primitive can beat the memory floor (ratio above 1).

On a GPU it also gives the ratio of our add scan to ``cupy.cumsum`` (CUB's scan).

Primitives (int32 values; flags are 1 byte; indices int64):

==================  ==========================================  ===================
name                instruction                                 bytes per element
==================  ==========================================  ===================
scan-add            ``scan(x, "add")``                          4 + 4
scan-add-seg        ``scan(x, "add", segments=f)``              4 + 1 + 4
scan-copy-seg       ``scan(x, "copy", segments=f)``             4 + 1 + 4
scan-max            ``scan(x, "max")``                          4 + 4
scan-add-reverse    ``scan(x, "add", reverse=True)``            4 + 4
scan-add-exclusive  ``scan(x, "add", exclusive=True)``          4 + 4
shift               ``shift(x, 1, 0)`` (wrap)                   4 + 4
send-add            ``send(x, perm, n, combine="add")``         4 + 8 + 4 (+4 fill)
get                 ``get(x, perm)``                            8 + 4 + 4
==================  ==========================================  ===================

``send`` and ``get`` use a random permutation, so their accesses are scattered; their
floor ratio says how far the router is from streaming bandwidth.

Run ``python bench/primitives.py [--quick] [--backend numpy|cupy|auto] [--out DIR |
--save]``. Prints a table and writes ``primitives-<backend>-<host>.json`` to the current
folder, to ``--out DIR``, or with ``--save`` to this source tree's ``bench/results``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from simd import Machine  # noqa: E402
from simd.outputs import (  # noqa: E402
    add_output_arguments,
    announce_replace,
    output_folder_from_args,
    write_text,
)

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"

#: name -> (bytes per element it must move, function(m, data) running the instruction)
PRIMITIVES: dict[str, tuple[int, Any]] = {
    "scan-add": (8, lambda m, d: m.scan(d["x"], "add")),
    "scan-add-seg": (9, lambda m, d: m.scan(d["x"], "add", segments=d["seg"])),
    "scan-copy-seg": (9, lambda m, d: m.scan(d["x"], "copy", segments=d["seg"])),
    "scan-max": (8, lambda m, d: m.scan(d["x"], "max")),
    "scan-add-reverse": (8, lambda m, d: m.scan(d["x"], "add", reverse=True)),
    "scan-add-exclusive": (8, lambda m, d: m.scan(d["x"], "add", exclusive=True)),
    "shift": (8, lambda m, d: m.shift(d["x"], 1, 0)),
    "send-add": (20, lambda m, d: m.send(d["x"], d["perm"], d["n"], combine="add")),
    "get": (16, lambda m, d: m.get(d["x"], d["perm"])),
}


def environment() -> dict[str, Any]:
    try:
        from simd.info import environment as env

        return env()
    except Exception as exc:  # keep the benchmark usable if the info module breaks
        return {"platform": platform.platform(), "numpy": np.__version__, "error": str(exc)}


def _time(m: Machine, fn, *, budget: float, min_reps: int, max_reps: int) -> float:
    """Median seconds of one call of ``fn`` (device synchronised), after a warm-up."""
    fn()  # warm-up: compiles kernels, fills memory pools
    m.sync()
    times: list[float] = []
    spent = 0.0
    while len(times) < min_reps or (spent < budget and len(times) < max_reps):
        m.sync()
        t0 = time.perf_counter()
        fn()
        m.sync()
        dt = time.perf_counter() - t0
        times.append(dt)
        spent += dt
    return statistics.median(times)


#: Elements (int32) of each buffer of the copy that measures the memory bandwidth.
COPY_ELEMENTS = 1 << 26


def copy_bandwidth(m: Machine, n: int, *, budget: float) -> float:
    """Streaming copy bandwidth in bytes/s (read ``n`` int32 + write ``n``), median of runs."""
    x = m.xp.ones(n, dtype=np.int32)
    out = m.xp.empty_like(x)
    t = _time(m, lambda: m.xp.copyto(out, x), budget=budget, min_reps=5, max_reps=50)
    return 2 * x.nbytes / t


def _data(m: Machine, n: int, rng: np.random.Generator) -> dict[str, Any]:
    x = rng.integers(-100, 100, n, dtype=np.int32)
    seg = rng.random(n) < 1.0 / 64  # segments of 64 elements on average
    perm = rng.permutation(n).astype(np.int64)
    return {"x": m.asarray(x), "seg": m.asarray(seg), "perm": m.asarray(perm), "n": n}


def run(backend: str, sizes: list[int], *, budget: float, names: list[str]) -> dict[str, Any]:
    m = Machine(pes=512, backend=backend)
    xp = m.xp
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    cumsum: dict[int, float] = {}
    copy_elements = max(COPY_ELEMENTS, max(sizes))
    bandwidth = copy_bandwidth(m, copy_elements, budget=budget)
    print(f"copy bandwidth {bandwidth / 1e9:.1f} GB/s (2 x {copy_elements * 4 >> 20} MiB)")
    print(_HEADER)
    for n in sizes:
        data = _data(m, n, rng)
        x = data["x"]
        if m.backend == "cupy":
            cumsum[n] = _time(
                m, lambda x=x: xp.cumsum(x, dtype=x.dtype), budget=budget, min_reps=5, max_reps=200
            )
        for name in names:
            per_elem, fn = PRIMITIVES[name]
            t = _time(
                m, lambda fn=fn, data=data: fn(m, data), budget=budget, min_reps=3, max_reps=200
            )
            floor = per_elem * n / bandwidth
            row = {
                "primitive": name,
                "n": n,
                "seconds": t,
                "elements_per_s": n / t,
                "bytes_per_element": per_elem,
                "floor_seconds": floor,
                "floor_ratio": floor / t,
            }
            if name == "scan-add" and n in cumsum:
                row["cumsum_seconds"] = cumsum[n]
                row["vs_cumsum"] = cumsum[n] / t  # >1: faster than cupy.cumsum
            rows.append(row)
            print(_format_row(row), flush=True)
        del data, x
    return {
        "backend": m.backend,
        "sizes": sizes,
        "copy_bandwidth_bytes_per_s": bandwidth,
        "copy_elements": copy_elements,
        "results": rows,
    }


_HEADER = f"{'primitive':<20}{'n':>12}{'time':>12}{'elem/s':>12}{'floor':>8}{'vs cumsum':>11}"


def _format_row(row: dict[str, Any]) -> str:
    vs = f"{row['vs_cumsum']:.2f}" if "vs_cumsum" in row else "-"
    t = row["seconds"]
    t_text = f"{t * 1e3:.3f} ms" if t >= 1e-4 else f"{t * 1e6:.1f} us"
    size = "2^" + str(row["n"].bit_length() - 1)
    return (
        f"{row['primitive']:<20}{size:>12}{t_text:>12}"
        f"{row['elements_per_s']:>12.3g}{row['floor_ratio']:>8.2f}{vs:>11}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/primitives.py", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a few small sizes (CPU smoke run)")
    ap.add_argument("--backend", default="auto", help="numpy, cupy or auto (default)")
    ap.add_argument("--max-log2", type=int, default=None, help="largest size as a power of 2")
    ap.add_argument("--only", default=None, help="comma-separated primitives to run")
    add_output_arguments(ap, save_dir=SAVE_DIR)
    args = ap.parse_args(argv)
    outdir = output_folder_from_args(ap, args, save_dir=SAVE_DIR)

    probe = Machine(pes=512, backend=args.backend)
    host = platform.node() or "host"
    out = outdir / f"primitives-{probe.backend}-{host}.json"
    gpu = probe.backend == "cupy"
    if args.quick:
        logs = [10, 14, 18]
        budget = 0.05
    else:
        top = args.max_log2 or (28 if gpu else 26)
        logs = list(range(10, top + 1, 2))
        budget = 0.3
    names = list(PRIMITIVES) if args.only is None else args.only.split(",")
    unknown = [name for name in names if name not in PRIMITIVES]
    if unknown:
        ap.error(f"unknown primitives {unknown}; choose from {list(PRIMITIVES)}")
    announce_replace(out)
    print(f"backend {probe.backend}; floor = bytes moved / streaming copy bandwidth")
    record = run(args.backend, [1 << k for k in logs], budget=budget, names=names)
    record["environment"] = environment()
    record["quick"] = bool(args.quick)
    record["goal"] = "GPU at >= 2^26: scan-add floor ratio >= 0.9, other scan forms >= 0.7"
    write_text(out, json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
