"""The machine's GPU kernels against their floors: a device copy of the same bytes, and the
library kernel for the same job, timed with CUDA events in one run.

Every kernel is timed on the device alone: a short spin kernel holds the stream while the
host queues ``REPS`` calls between two events, so the calls run back to back whatever the
host's speed (the host's time per call is the business of ``bench.primitives
--host-overhead``). Each time is the median of ``SAMPLES`` such runs, per call.

Jobs and what each is set beside (``n`` elements; bytes are what the job must move):

==================  ========================  ==========================================
job                 bytes                     beside it
==================  ========================  ==========================================
scan (int32, int64, 2 n itemsize             the copy; CUB's scan through CuPy's CUB
float32)                                      accelerator (``cupy.cuda.cub``, in place);
                                              ``cupy.cumsum``; ``cuda.compute`` of
                                              cuda-cccl where installed
segmented scan add  9 n (flags 1 byte)        the copy
and copy (int32)
shift (int32 grid)  8 n                       the copy; ``cupy.roll``
get (int32)         16 n (random indices)     a plain gather kernel; CuPy's ``take``
send add (int32)    20 n (random addresses,   a plain scatter-add kernel;
                    an atomic read and write)  ``cupyx.scatter_add``
==================  ========================  ==========================================

Get and send address a permutation whose neighbours lie far apart (``i -> (a i + c) mod
n``), so that every access of a warp falls in a cache line of its own, as at random.
The copy of ``b`` bytes is an int32 device copy of ``b / 8`` elements (read and write):
the floor of a job that reads and writes its bytes once. The goals (the project's, for
sizes from 2**20 to 2**28): scans at least 0.85 of the copy and at least as fast as CUB;
segmented scans 0.75 of the copy; the shift 0.85; get and send 0.8 of the plain kernels.

Run ``python -m bench.kernel_floors [--backend cupy|counting] [--budget S] [--quick]
[--out DIR | --save]``; :func:`measure` is the same for a script that runs it among others
(``bench.gpu_check``). ``--backend counting`` runs everything on the counting stand-in for
CuPy (:mod:`kernels.counting`): its times mean nothing, it checks the code path. Prints a
table and writes ``kernel-floors-<backend>-<host>.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import ROOT
from kernels.fastpaths import emulates
from simd.outputs import (
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
    write_text,
)

__all__ = ["GOALS", "SIZES", "main", "measure"]

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"

#: Sizes of every job on a GPU, as powers of two.
SIZES = (20, 22, 24, 26, 28)
#: Calls between two events, and how many such runs a time is the median of.
REPS = 5
SAMPLES = 3
#: The project's goals: the least ratio of each kind of job to what it is set beside.
GOALS = {"scan": ("copy", 0.85), "scan_vs_cub": ("cub", 1.0), "segmented": ("copy", 0.75),
         "shift": ("copy", 0.85), "get": ("plain", 0.8), "send": ("plain", 0.8)}  # fmt: skip

_PLAIN_SOURCE = r"""
extern "C" __global__ void plain_gather(const int *src, const long long *index, int *out,
                                        long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    out[i] = src[index[i]];
}

extern "C" __global__ void plain_scatter_add(const int *values, const long long *index,
                                             int *out, long long n) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    atomicAdd(out + index[i], values[i]);
}

// Spins for `cycles` clock cycles: holds the stream while the host queues the calls.
extern "C" __global__ void hold_stream(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
"""


@emulates("plain_gather")
def _plain_gather(variant: Any, args: tuple) -> None:
    src, index, out, n = args
    out[...] = src[index]


@emulates("plain_scatter_add")
def _plain_scatter_add(variant: Any, args: tuple) -> None:
    values, index, out, n = args
    np.add.at(out, index, values)


@emulates("hold_stream")
def _hold_stream(variant: Any, args: tuple) -> None:
    pass  # nothing to compute: the stand-in's events time the host


class _Timer:
    """Event-timed calls on the device alone, and the kernels this benchmark brings."""

    def __init__(self, xp: Any, deadline: float, library: bool) -> None:
        self.xp, self.deadline = xp, deadline
        #: Whether the libraries beside the array namespace (CuPy's) can be timed.
        self.library = library
        module = xp.RawModule(code=_PLAIN_SOURCE)
        self.gather = module.get_function("plain_gather")
        self.scatter_add = module.get_function("plain_scatter_add")
        self.hold = module.get_function("hold_stream")
        self.copies: dict[int, tuple] = {}

    def seconds(self, fn: Callable[[], Any]) -> float:
        """Device seconds per call of ``fn``: the median of SAMPLES runs of REPS calls."""
        xp = self.xp
        fn()  # warm-up: compiles, fills the memory pool
        xp.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        fn()
        xp.cuda.get_current_stream().synchronize()
        guess = time.perf_counter() - t0  # host and device, an upper bound of either
        runs = []
        for _ in range(SAMPLES):
            start, stop = xp.cuda.Event(), xp.cuda.Event()
            # hold the stream for about as long as the host takes to queue the calls
            cycles = np.int64(min(2e9 * guess * REPS + 2e6, 4e9))
            self.hold((1,), (1,), (cycles,))
            start.record()
            for _ in range(REPS):
                fn()
            stop.record()
            stop.synchronize()
            runs.append(xp.cuda.get_elapsed_time(start, stop) / 1e3 / REPS)
        return statistics.median(runs)

    def copy(self, nbytes: int) -> float:
        """Seconds of a device copy that reads and writes ``nbytes`` in all."""
        n = max(1, -(-nbytes // 8))
        if n not in self.copies:
            src = self.xp.ones(n, dtype=np.int32)
            dst = self.xp.empty_like(src)
            self.copies.clear()  # one pair at a time: the largest are GiBs
            self.copies[n] = (self.seconds(lambda: self.xp.copyto(dst, src)), src, dst)
        return self.copies[n][0]

    def grid(self, n: int) -> tuple:
        return (max(1, min(-(-n // 256), 65536)),)

    def over(self) -> bool:
        return time.perf_counter() > self.deadline


def _values(xp: Any, n: int, dtype: Any) -> Any:
    """Small integers (sums exact and far from overflow), made on the device."""
    return (xp.arange(n, dtype=np.int64) % 7).astype(dtype)


def _scatter(xp: Any, n: int) -> Any:
    """A permutation of ``range(n)`` (``n`` a power of two) whose neighbours lie far apart:
    ``i -> (a i + c) mod n`` with ``a`` odd, made on the device (int64)."""
    return (xp.arange(n, dtype=np.int64) * 2654435761 + 12345) % n


def _library_scans(xp: Any, backend: str) -> tuple[Any, str]:
    """CUB's in-place scan through CuPy, or why it is not timed."""
    if backend != "cupy":
        return None, "the counting stand-in has no CUB"
    try:
        from cupy.cuda import cub

        if not cub.available:
            return None, "CuPy was built without CUB"
        return cub, "cupy.cuda.cub.cub_scan (CuPy's CUB accelerator)"
    except Exception as exc:  # noqa: BLE001 - reported, the run goes on
        return None, f"CuPy's CUB: {type(exc).__name__}: {exc}"


def _cccl_scan(xp: Any, backend: str) -> tuple[Any, str]:
    """A function ``scan(d_in, d_out, n)`` of cuda.compute (cuda-cccl), or why not."""
    if backend != "cupy":
        return None, "not on the counting stand-in"
    try:
        import cuda.compute as cc
    except ImportError:
        try:
            import cuda.cccl.parallel.experimental as cc
        except ImportError:
            return None, "cuda-cccl's cuda.compute is not installed here"
    scanners: dict[tuple, Any] = {}
    storage: dict[tuple, Any] = {}

    def scan(d_in: Any, d_out: Any, n: int) -> None:
        key = (d_in.dtype, n)
        if key not in scanners:
            scanners[key] = cc.make_inclusive_scan(d_in, d_out, cc.OpKind.PLUS, None)
            storage[key] = None
        scanner = scanners[key]
        for call in (  # the call's form differs between cuda-cccl releases
            lambda tmp: scanner(tmp, d_in, d_out, cc.OpKind.PLUS, n, None),
            lambda tmp: scanner(tmp, d_in, d_out, n, None),
        ):
            try:
                if storage[key] is None:
                    storage[key] = xp.empty(int(call(None)), dtype=np.uint8)
                call(storage[key])
                return
            except TypeError:
                continue
        raise TypeError("no known call form of cuda.compute's scan object")

    return scan, f"cuda.compute (cuda-cccl) {getattr(cc, '__version__', '')}".strip()


def _same(a: Any, b: Any) -> bool:
    """Whether two device arrays are equal (one read back, outside any timing)."""
    return bool((a == b).all())


def _row(job: str, dtype: str, n: int, nbytes: int, ours: float, beside: dict) -> dict:
    row = {"job": job, "dtype": dtype, "n": n, "bytes": nbytes, "ours_seconds": ours,
           "ours_GBps": nbytes / ours / 1e9}  # fmt: skip
    for name, seconds in beside.items():
        row[f"{name}_seconds"] = seconds
        row[f"vs_{name}"] = seconds / ours  # above 1: ours is faster
    return row


def _scans(t: _Timer, sizes: list[int], libs: dict, rows: list, skipped: list) -> None:
    for dtype in ("int32", "int64", "float32"):
        for n in sizes:
            if t.over():
                skipped.append(f"scan {dtype} 2^{n.bit_length() - 1}")
            else:
                rows.append(_scan_row(t, n, dtype, libs))


def _scan_row(t: _Timer, n: int, dtype: str, libs: dict) -> dict:
    from kernels import cupy_scan

    xp = t.xp
    x = _values(xp, n, dtype)
    out = xp.empty_like(x)
    nbytes = 2 * x.nbytes
    ours = t.seconds(lambda: cupy_scan.scan(xp, x, "add"))
    beside = {"copy": t.copy(nbytes), "cumsum": t.seconds(lambda: xp.cumsum(x))}
    cub, cccl = libs["cub"], libs["cccl"]
    if cub is not None:
        beside["cub"] = t.seconds(lambda: cub.cub_scan(out, cub.CUPY_CUB_CUMSUM))
    if cccl is not None:
        try:
            beside["cccl"] = t.seconds(lambda: cccl(x, out, n))
        except Exception as exc:  # noqa: BLE001 - said once, the run goes on
            libs["cccl_note"] = f"cuda.compute failed: {type(exc).__name__}: {exc}"
            libs["cccl"] = None
    row = _row("scan", dtype, n, nbytes, ours, beside)
    if dtype != "float32":  # exact: the same as CuPy's
        row["equal"] = _same(cupy_scan.scan(xp, x, "add"), xp.cumsum(x))
    return row


def _segmented(t: _Timer, sizes: list[int], rows: list, skipped: list) -> None:
    from kernels import cupy_scan

    xp = t.xp
    for op in ("add", "copy"):
        for n in sizes:
            if t.over():
                skipped.append(f"segmented {op} 2^{n.bit_length() - 1}")
                continue
            x = _values(xp, n, np.int32)
            flags = _scatter(xp, n) % 64 == 0  # segments of 64 elements on average
            ours = t.seconds(lambda x=x, f=flags, op=op: cupy_scan.scan(xp, x, op, segments=f))
            beside = {"copy": t.copy(9 * n)}
            rows.append(_row(f"segmented {op}", "int32", n, 9 * n, ours, beside))


def _shifts(t: _Timer, sizes: list[int], rows: list, skipped: list) -> None:
    for n in sizes:
        if t.over():
            skipped.append(f"shift 2^{n.bit_length() - 1}")
        else:
            rows.append(_shift_row(t, n))


def _shift_row(t: _Timer, n: int) -> dict:
    from kernels import numba_shift

    xp = t.xp
    x = _values(xp, n, np.int32).reshape(-1, 4096 if n >= 4096 else n)
    ours = t.seconds(lambda: numba_shift.shift(xp, x, (1, 0), "wrap"))
    beside = {"copy": t.copy(8 * n), "roll": t.seconds(lambda: xp.roll(x, 1, axis=0))}
    row = _row("shift", "int32", n, 8 * n, ours, beside)
    row["equal"] = _same(numba_shift.shift(xp, x, (1, 0), "wrap"), xp.roll(x, 1, axis=0))
    return row


def _router(t: _Timer, sizes: list[int], rows: list, skipped: list) -> None:
    for n in sizes:
        if t.over():
            skipped.append(f"get and send 2^{n.bit_length() - 1}")
        else:
            rows.extend(_router_rows(t, n))


def _router_rows(t: _Timer, n: int) -> list[dict]:
    from kernels import cupy_router

    xp = t.xp
    perm, values = _scatter(xp, n), _values(xp, n, np.int32)
    out = xp.zeros(n, dtype=np.int32)
    args, grid = (values, perm, out, np.int64(n)), t.grid(n)
    ours = t.seconds(lambda: cupy_router.get(xp, values, perm))
    beside = {
        "plain": t.seconds(lambda: t.gather(grid, (256,), args)),
        "take": t.seconds(lambda: values[perm]),
    }
    get = _row("get", "int32", n, 16 * n, ours, beside)
    get["equal"] = _same(cupy_router.get(xp, values, perm), values[perm])
    ours = t.seconds(lambda: cupy_router.send(xp, values, perm, out, "add"))
    beside = {"plain": t.seconds(lambda: t.scatter_add(grid, (256,), args))}
    if t.library:
        import cupyx

        beside["scatter_add"] = t.seconds(lambda: cupyx.scatter_add(out, perm, values))
    send = _row("send add", "int32", n, 20 * n, ours, beside)
    want = xp.zeros(n, dtype=np.int32)
    t.scatter_add(grid, (256,), (values, perm, want, np.int64(n)))
    got = cupy_router.send(xp, values, perm, xp.zeros(n, dtype=np.int32), "add")
    send["equal"] = _same(got, want)
    return [get, send]


def _namespace(backend: str) -> Any:
    if backend == "counting":
        from kernels import counting

        return counting.cupy
    import cupy

    return cupy


def measure(budget_s: float = 60.0, *, backend: str = "cupy", sizes: Any = None) -> dict:
    """Every job timed beside its floor and library kernel, within about ``budget_s``
    seconds (the jobs left when it is spent are listed in ``skipped``); ``backend``
    "cupy" (a GPU) or "counting" (the stand-in: the code path, no meaningful times).

    Returns the results as plain data: ``rows`` (one per job and size: ``ours_seconds``,
    each ``<beside>_seconds`` and ``vs_<beside>``, the time beside over ours, and where
    the result is exact, ``equal``: whether ours equals the library's), ``libraries``
    (what the library columns are, or why one is missing), ``goals``, ``skipped``.
    """
    t0 = time.perf_counter()
    xp = _namespace(backend)
    sizes = [1 << k for k in (SIZES if sizes is None else sizes)]
    timer = _Timer(xp, t0 + budget_s, library=backend == "cupy")
    cub, cub_note = _library_scans(xp, backend)
    cccl, cccl_note = _cccl_scan(xp, backend)
    libs = {"cub": cub, "cccl": cccl}
    rows: list[dict] = []
    skipped: list[str] = []
    _scans(timer, sizes, libs, rows, skipped)
    _segmented(timer, sizes, rows, skipped)
    _shifts(timer, sizes, rows, skipped)
    _router(timer, sizes, rows, skipped)
    timer.copies.clear()
    return {
        "backend": backend,
        "sizes": sizes,
        "reps": REPS,
        "samples": SAMPLES,
        "libraries": {
            "cub": cub_note,
            "cccl": libs.get("cccl_note", cccl_note),
            "cumsum": "cupy.cumsum with CuPy's default accelerators",
        },
        "goals": {k: {"beside": b, "at_least": g} for k, (b, g) in GOALS.items()},
        "rows": rows,
        "skipped": skipped,
        "seconds": time.perf_counter() - t0,
    }


def table(record: dict) -> str:
    """The results as a text table: per job and size, our time and each ratio."""
    lines = [f"{'job':<18}{'dtype':>8}{'n':>6}{'ours':>11}{'GB/s':>8}  ratios (theirs / ours)"]
    for r in record.get("rows", []):
        ratios = "  ".join(f"{k[3:]} {r[k]:.2f}" for k in r if k.startswith("vs_") and r[k] == r[k])
        t = r["ours_seconds"]
        when = f"{t * 1e3:.3f} ms" if t >= 1e-4 else f"{t * 1e6:.1f} us"
        lines.append(
            f"{r['job']:<18}{r['dtype']:>8}{'2^' + str(r['n'].bit_length() - 1):>6}{when:>11}"
            f"{r['ours_GBps']:>8.0f}  {ratios}"
            + ("" if r.get("equal", True) else "  RESULT DIFFERS")
        )
    for name, note in record.get("libraries", {}).items():
        lines.append(f"{name}: {note}")
    if record.get("skipped"):
        lines.append(f"not timed (out of budget): {', '.join(record['skipped'])}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.kernel_floors", description=__doc__.splitlines()[0]
    )
    ap.add_argument(
        "--backend",
        default="cupy",
        choices=("cupy", "counting"),
        help="cupy (a GPU, the default) or counting (the stand-in: a dry run)",
    )
    ap.add_argument("--budget", type=float, default=60.0, help="seconds to spend (default 60)")
    ap.add_argument("--quick", action="store_true", help="sizes 2^10 to 2^14 only")
    add_output_arguments(ap, save_dir=SAVE_DIR)
    args = ap.parse_args(argv)
    outdir = output_folder_from_args(ap, args, save_dir=SAVE_DIR)
    if args.budget <= 0:
        ap.error(f"--budget must be positive, got {args.budget}")
    out = outdir / f"kernel-floors-{args.backend}-{platform.node() or 'host'}.json"
    announce_replace_from_args(ap, args, out)
    sizes = (10, 12, 14) if args.quick else None
    record = measure(args.budget, backend=args.backend, sizes=sizes)
    from bench.primitives import environment

    record["environment"] = environment()
    print(table(record))
    write_text(out, json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
