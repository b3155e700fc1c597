"""Throughput of the machine's communication primitives against the memory floor.

For every primitive and size the benchmark measures one instruction through the public
API (``Machine(backend=...)``: validation, accounting and the kernel, which is what users
get) in two ways:

- the *kernel time*: on the CuPy code path, CUDA events around ``BACK_TO_BACK`` calls
  issued back to back (no host sync between them, so Python's per-call overhead overlaps
  the device work unless it is longer), divided by the number of calls; on NumPy the
  ``time.perf_counter`` time of the same calls;
- the *call time*: one call and a wait for the device, timed on the host (what one
  synchronised call costs a user, host overhead included);

and reports, from the kernel time,

- elements per second, and
- the ratio to the memory floor: the bytes the primitive must move (read its inputs once,
  write its output once) over the streaming copy bandwidth measured in the same run (a
  device-to-device copy on the GPU, a NumPy copy on the CPU) on buffers of at least
  ``COPY_ELEMENTS`` int32 (256 MiB each), far beyond any last-level cache (a GPU's L2 of
  50-126 MB, a CPU's L3), so that it is the memory's bandwidth. 1.0 is the floor; the goal
  on a GPU at 2^26 elements and beyond is 0.9 for the add scan and 0.7 for the other forms.
  At sizes that fit in cache a primitive can beat the memory floor (ratio above 1).

It also gives the ratio of our add scan to the array library's own (``numpy.cumsum``, or on a
GPU ``cupy.cumsum``, CUB's scan).

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

``--host-overhead`` measures instead the host overhead per call of every instruction on
the CuPy code path with the device work stubbed: the instructions run on the counting
stand-in for CuPy (``Machine(backend="counting")``, :mod:`kernels.counting`), whose
``host_seconds`` is the caller's Python time without the (NumPy) device work. The goal
is at most ``HOST_GOAL_US`` microseconds per call of our own Python. Per instruction it
also counts the kernel launches and the calls into the array library (on a GPU each
costs CuPy's own host time on top: a few microseconds an allocation or a launch).

Run ``python -m bench.primitives [--quick] [--backend numpy|cupy|counting|auto]
[--host-overhead] [--out DIR | --save]``. Prints a table and writes
``primitives-<backend>-<host>.json`` (``primitives-host-calls-<host>.json`` with
``--host-overhead``) to the current folder, to ``--out DIR``, or with ``--save`` to this
source tree's ``bench/results``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import statistics
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from bench import ROOT
from simd import Machine
from simd.outputs import (
    add_output_arguments,
    announce_replace_from_args,
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


#: Calls issued back to back between the two CUDA events of one kernel-time sample.
BACK_TO_BACK = 10


def _time(m: Machine, fn, *, budget: float, min_reps: int, max_reps: int) -> dict[str, float]:
    """Per call of ``fn``, after a warm-up, medians over samples: ``kernel`` seconds (CUDA
    events around ``BACK_TO_BACK`` back-to-back calls on the CuPy code path, the host clock
    on NumPy), ``call`` seconds (one call and a wait for the device, on the host clock) and
    ``issue`` seconds (the host time to issue one of the back-to-back calls)."""
    fn()  # warm-up: compiles kernels, fills memory pools
    m.sync()
    on_device = m.backend == "cupy"
    reps = BACK_TO_BACK if on_device else 1
    kernel: list[float] = []
    call: list[float] = []
    issue: list[float] = []
    spent = 0.0
    while len(kernel) < min_reps or (spent < budget and len(kernel) < max_reps):
        m.sync()
        t0 = time.perf_counter()
        fn()
        m.sync()
        call.append(time.perf_counter() - t0)
        if on_device:
            cuda = m.xp.cuda
            start, stop = cuda.Event(), cuda.Event()
            start.record()
            h0 = time.perf_counter()
            for _ in range(reps):
                fn()
            issue.append((time.perf_counter() - h0) / reps)
            stop.record()
            stop.synchronize()
            kernel.append(cuda.get_elapsed_time(start, stop) / 1e3 / reps)
            m.sync()  # the deferred checks of the calls, if any
        else:
            kernel.append(call[-1])
            issue.append(call[-1])
        spent += time.perf_counter() - t0
    return {
        "kernel": statistics.median(kernel),
        "call": statistics.median(call),
        "issue": statistics.median(issue),
    }


#: Elements (int32) of each buffer of the copy that measures the memory bandwidth.
COPY_ELEMENTS = 1 << 26


def copy_bandwidth(m: Machine, n: int, *, budget: float) -> float:
    """Streaming copy bandwidth in bytes/s (read ``n`` int32 + write ``n``), median of runs."""
    x = m.xp.ones(n, dtype=np.int32)
    out = m.xp.empty_like(x)
    t = _time(m, lambda: m.xp.copyto(out, x), budget=budget, min_reps=5, max_reps=50)
    return 2 * x.nbytes / t["kernel"]


def _data(m: Machine, n: int, rng: np.random.Generator) -> dict[str, Any]:
    x = rng.integers(-100, 100, n, dtype=np.int32)
    seg = rng.random(n) < 1.0 / 64  # segments of 64 elements on average
    perm = rng.permutation(n).astype(np.int64)
    return {"x": m.asarray(x), "seg": m.asarray(seg), "perm": m.asarray(perm), "n": n}


def run(
    backend: str,
    sizes: list[int],
    *,
    budget: float,
    names: list[str],
    copy_elements: int | None = None,
) -> dict[str, Any]:
    m = Machine(pes=512, backend=backend)
    xp = m.xp
    rng = np.random.default_rng(0)
    rows: list[dict[str, Any]] = []
    cumsum: dict[int, float] = {}
    if copy_elements is None:  # smaller only in tests: then not the memory's bandwidth
        copy_elements = max(COPY_ELEMENTS, max(sizes))
    bandwidth = copy_bandwidth(m, copy_elements, budget=budget)
    print(f"copy bandwidth {bandwidth / 1e9:.1f} GB/s (2 x {copy_elements * 4 >> 20} MiB)")
    print(_HEADER)
    for n in sizes:
        data = _data(m, n, rng)
        x = data["x"]
        # the array library's own prefix sum (numpy.cumsum or cupy.cumsum), beside ours
        cumsum[n] = _time(
            m, lambda x=x: xp.cumsum(x, dtype=x.dtype), budget=budget, min_reps=5, max_reps=200
        )["kernel"]
        for name in names:
            per_elem, fn = PRIMITIVES[name]
            times = _time(
                m, lambda fn=fn, data=data: fn(m, data), budget=budget, min_reps=3, max_reps=200
            )
            t = times["kernel"]
            floor = per_elem * n / bandwidth
            row = {
                "primitive": name,
                "n": n,
                "seconds": t,  # the kernel time
                "kernel_seconds": t,
                "call_seconds": times["call"],
                "issue_seconds": times["issue"],
                "elements_per_s": n / t,
                "bytes_per_element": per_elem,
                "floor_seconds": floor,
                "floor_ratio": floor / t,
            }
            if name == "scan-add" and n in cumsum:
                row["cumsum_seconds"] = cumsum[n]
                row["vs_cumsum"] = cumsum[n] / t  # >1: faster than the library's cumsum
            rows.append(row)
            print(_format_row(row), flush=True)
        del data, x
    return {
        "backend": m.backend,
        "sizes": sizes,
        "copy_bandwidth_bytes_per_s": bandwidth,
        "copy_elements": copy_elements,
        "timing": "kernel: CUDA events over back-to-back calls (perf_counter on NumPy); "
        "call: one synchronised call on the host clock",
        "results": rows,
    }


_HEADER = (
    f"{'primitive':<20}{'n':>12}{'kernel':>12}{'call':>12}{'elem/s':>12}{'floor':>8}"
    f"{'vs cumsum':>11}"
)


def _seconds(t: float) -> str:
    return f"{t * 1e3:.3f} ms" if t >= 1e-4 else f"{t * 1e6:.1f} us"


def _format_row(row: dict[str, Any]) -> str:
    vs = f"{row['vs_cumsum']:.2f}" if "vs_cumsum" in row else "-"
    size = "2^" + str(row["n"].bit_length() - 1)
    return (
        f"{row['primitive']:<20}{size:>12}{_seconds(row['kernel_seconds']):>12}"
        f"{_seconds(row['call_seconds']):>12}"
        f"{row['elements_per_s']:>12.3g}{row['floor_ratio']:>8.2f}{vs:>11}"
    )


#: The goal for the host overhead of one instruction (device work stubbed), in us.
HOST_GOAL_US = 10.0


def _phase(m: Machine) -> None:
    with m.phase("p"):
        pass


#: Instructions of ``--host-overhead``: name -> function(m, data) running one call.
HOST_INSTRUCTIONS: dict[str, Any] = {
    "scan": lambda m, d: m.scan(d["x"], "add"),
    "scan-segmented": lambda m, d: m.scan(d["x"], "add", segments=d["seg"]),
    "scan-exclusive": lambda m, d: m.scan(d["x"], "add", exclusive=True),
    "scan-segmented-exclusive": lambda m, d: m.scan(
        d["x"], "add", segments=d["seg"], exclusive=True
    ),
    "reduce": lambda m, d: m.reduce(d["x8"], "add"),
    "send": lambda m, d: m.send(d["x"], d["perm"], d["n"]),
    "send-add": lambda m, d: m.send(d["x"], d["perm"], d["n"], combine="add"),
    "get": lambda m, d: m.get(d["x"], d["perm"]),
    "shift": lambda m, d: m.shift(d["x"], 1, 0),
    "count": lambda m, d: m.count(d["seg"]),
    "enumerate": lambda m, d: m.enumerate(d["seg"]),
    "pack": lambda m, d: m.pack(d["x"], d["seg"]),
    "phase": lambda m, d: _phase(m),  # entering and leaving a phase
}


@contextlib.contextmanager
def _stand_in_timer() -> Iterator[list[float]]:
    """Time the counting stand-in's own operations: the whole of every outermost counted
    operation (``kernels.counting.device_array.run`` and ``sync``, its wrapper included), summed in
    seconds into the yielded one-element list. Its ``host_seconds`` less this is our own
    Python; the timing wrappers add about 0.2 us per operation to the stand-in's share."""
    from kernels.counting import device_array as counted

    total = [0.0]
    depth = [0]
    saved = counted.run, counted.sync

    def timed(fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return fn(*args, **kwargs)
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                total[0] += time.perf_counter() - t0
                depth[0] -= 1

        return wrapper

    counted.run, counted.sync = timed(saved[0]), timed(saved[1])
    try:
        yield total
    finally:
        counted.run, counted.sync = saved


def host_overhead(*, n: int = 1024, calls: int = 200, rounds: int = 5) -> dict[str, Any]:
    """Host microseconds per call of every instruction on the CuPy code path, device work
    stubbed (the counting backend's ``host_seconds``), median over ``rounds`` rounds of
    ``calls`` calls; with the kernel launches, the calls into the array library (each a
    CuPy call on a GPU, a launch among them) and the host syncs of one call."""
    from kernels import counting

    m = Machine(pes=512, backend="counting")
    rng = np.random.default_rng(0)
    data = _data(m, n, rng)
    data["x8"] = data["x"][:8]
    rows: list[dict[str, Any]] = []
    print(
        f"{'instruction':<26}{'host us/call':>14}{'stand-in':>10}{'ours':>8}"
        f"{'launches':>10}{'calls':>7}{'syncs':>7}  goal (ours)"
    )
    for name, fn in HOST_INSTRUCTIONS.items():
        for _ in range(3):  # warm-up
            fn(m, data)
        per_call: list[float] = []
        for _ in range(rounds):
            with counting.measure() as c:
                for _ in range(calls):
                    fn(m, data)
            per_call.append(c.host_seconds / calls * 1e6)
        us = statistics.median(per_call)
        split: list[tuple[float, float]] = []  # (host, stand-in) us per call, timed apart
        for _ in range(rounds):
            with _stand_in_timer() as stand_in, counting.measure() as c2:
                for _ in range(calls):
                    fn(m, data)
            host = c2.host_seconds / calls * 1e6
            # host_seconds already leaves out the whole of every call into the stand-in
            # (kernels.counting times them from entry to return): what the timer finds
            # beyond device_seconds is at most its own wrappers' share, clamped at 0.
            stand_in_share = (stand_in[0] - c2.total.device_seconds) / calls * 1e6
            split.append((host, max(0.0, min(host, stand_in_share))))
        stand_in_us = statistics.median(s for _, s in split)
        ours = statistics.median(h - s for h, s in split)
        row = {
            "instruction": name,
            "host_us_per_call": us,
            "stand_in_us_per_call": stand_in_us,
            "ours_us_per_call": ours,
            "launches_per_call": c.total.launches / calls,
            "library_calls_per_call": c.calls / calls,
            "syncs_per_call": c.total.syncs / calls,
            "goal_us": HOST_GOAL_US,
            "goal_met": ours <= HOST_GOAL_US,
        }
        rows.append(row)
        print(
            f"{name:<26}{us:>14.1f}{stand_in_us:>10.1f}{ours:>8.1f}"
            f"{row['launches_per_call']:>10.1f}{row['library_calls_per_call']:>7.1f}"
            f"{row['syncs_per_call']:>7.1f}  {'met' if row['goal_met'] else 'not met'}",
            flush=True,
        )
        m.reset_stats()
    return {
        "backend": "counting",
        "n": n,
        "calls": calls,
        "rounds": rounds,
        "goal_us": HOST_GOAL_US,
        "goal_met": all(r["goal_met"] for r in rows),
        "results": rows,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.primitives", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--quick", action="store_true", help="a few small sizes (CPU smoke run)")
    ap.add_argument("--backend", default="auto", help="numpy, cupy or auto (default)")
    ap.add_argument("--max-log2", type=int, default=None, help="largest size as a power of 2")
    ap.add_argument("--only", default=None, help="comma-separated primitives to run")
    add_output_arguments(ap, save_dir=SAVE_DIR)
    ap.add_argument(
        "--host-overhead",
        action="store_true",
        help="host microseconds per call of every instruction on the CuPy code path with "
        "the device work stubbed (the counting backend), against the 10 us goal",
    )
    args = ap.parse_args(argv)
    outdir = output_folder_from_args(ap, args, save_dir=SAVE_DIR)
    host = platform.node() or "host"
    if args.host_overhead:
        out = outdir / f"primitives-host-calls-{host}.json"
        announce_replace_from_args(ap, args, out)
        print(f"host overhead per call, device work stubbed; goal {HOST_GOAL_US:g} us")
        record = host_overhead(calls=50 if args.quick else 200, rounds=3 if args.quick else 5)
        record["environment"] = environment()
        record["quick"] = bool(args.quick)
        write_text(out, json.dumps(record, indent=1, default=float) + "\n")
        print(f"wrote {out}")
        return 0

    probe = Machine(pes=512, backend=args.backend)
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
    announce_replace_from_args(ap, args, out)
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
