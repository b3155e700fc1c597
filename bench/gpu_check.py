"""Check a GPU machine end to end in at most 8 minutes: what works, what it draws, how fast.

Run from the source tree's root on the GPU machine, as the first thing there::

    python -m bench.gpu_check --out gpu-out

It needs nothing installed beyond what the GPU machine has (NumPy, CuPy, Numba with its CUDA
target, pytest, scikit-image, Pillow); the project runs from the checkout. Steps, in order of
value, each in a process of its own with a time limit, all within ``--budget`` seconds:

1. ``env``: the device, ``simd-emu info`` (text and JSON), a Numba CUDA compile-and-launch
   probe, NVVM's version; the built-in 250k-triangle data set made (or read from the cache).
2. ``warm``, three processes side by side: every CuPy scan kernel compiled by NVRTC (CuPy
   keeps them on disk for every later process), the NumPy backend's reference frames of
   every loop form, and ``simd-emu warmup`` (what the main jobs compile, timed); then
   ``simd-emu render`` on the GPU, its kernels cached, writing a PNG.
3. ``smoke``: one 250k-triangle frame per loop form on the GPU, compared pixel for pixel
   (image, depth, face) with the NumPy frames, the CLI's PNG too; then frame times, for a
   bare mesh and for a :class:`renderer.Scene`, with the host time spent inside the Numba
   launches; the host cost of single instructions.
4. ``frames``: the frames against their budgets (:mod:`bench.gpu_frames`): a Scene's frames
   replayed as CUDA graphs, a redistributing frame, each stage's device and host time,
   the isosurface at 512^3 and 1024^3 (on the device, with the mesh on the host, drawn
   where it lies), an orbit, the diffusion on the PE mesh, frames from 0.25 to 16 million
   triangles and 512 to 2048 pixels a side.
5. ``tests``: the ``gpu`` tests, highest value first, stopped when the time left is needed
   for step 6.
6. ``timings``: the primitives at 2^26 elements against a device copy and ``cupy.cumsum``,
   dense diffusion at 8192 x 8192 against its memory floor, and the kernels against their
   floors (:mod:`bench.kernel_floors`: scans, segmented scans, shift, get and send from
   2^20 to 2^28 beside a device copy, a plain gather or scatter and CUB).

It writes 9 files to ``--out``: ``summary.txt`` (one line a step and the key numbers),
``results.json`` (everything measured, with the machine's description), ``env.log``,
``warm.log``, ``smoke.log``, ``frames.log``, ``tests.log``, ``tests.xml`` (JUnit) and
``timings.log``; and
exits with status 1 if a step failed (a frame unlike NumPy's, a failed test, ...).

``--backend counting`` is the dry run without a GPU: the same steps on the counting stand-in
for CuPy (smaller primitives, the ``gpu`` tests with ``--gpu-standin``), as CI runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT

#: The loop forms drawn on the GPU and compared with NumPy.
FORMS = ("expand", "cost-effective", "original")

#: Seconds kept for the timings (step 5) when the tests are capped.
RESERVE = 75

#: The ``gpu`` tests, highest value first: the renderer's images and every fast path
#: against NumPy, then every instruction, then the long and the multi-process cases.
TESTS = (
    "tests/renderer/test_forms.py",
    "tests/renderer/test_isosurface_backends.py",
    "tests/kernels/test_numba_shift_gpu.py",
    "tests/balance/test_cost_effective.py",
    "tests/balance/test_compare.py",
    "tests/diffusion/test_cuda_source.py",
    "tests/diffusion/test_dense.py",
    "tests/simd/test_rules.py",
    "tests/kernels/test_gpu_instructions.py",
    "tests/simd/test_distributed.py",
)

LOGS = ("env.log", "warm.log", "smoke.log", "frames.log", "tests.log", "timings.log")

#: Seconds the frames step (bench.gpu_frames) may take.
FRAMES_LIMIT = 150


# --------------------------------------------------------------------------- orchestration


class Lease:
    """The run's clock, folders and summary."""

    def __init__(self, out: Path, work: Path, backend: str, budget: float) -> None:
        self.out, self.work, self.backend, self.budget = out, work, backend, budget
        self.t0 = time.monotonic()
        self.failed: list[str] = []

    def left(self, keep: float = 0.0) -> float:
        return self.budget - (time.monotonic() - self.t0) - keep

    def note(self, line: str) -> None:
        print(line, flush=True)
        with open(self.out / "summary.txt", "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def command(self, step: str) -> list[str]:
        return [
            sys.executable,
            "-m",
            "bench.gpu_check",
            "--step",
            step,
            "--work",
            str(self.work),
            "--backend",
            self.backend,
        ]

    def start(self, argv: list[str], log: str, env: dict[str, str] | None = None) -> Any:
        f = open(self.out / log, "a", encoding="utf-8")  # noqa: SIM115 - closed in finish()
        f.write(f"\n=== {' '.join(argv[1:] if argv[0] == sys.executable else argv)}\n")
        f.flush()
        proc = subprocess.Popen(
            argv,
            stdout=f,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env={**_environment(self.backend), **(env or {})},
            start_new_session=True,
        )
        proc.log_file, proc.started = f, time.monotonic()
        return proc

    def finish(self, proc: Any, name: str, limit: float) -> int:
        """Wait for ``proc`` at most ``limit`` seconds from its start (SIGINT, then kill)."""
        remaining = max(1.0, limit - (time.monotonic() - proc.started))
        try:
            rc = proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)  # pytest writes its report on SIGINT
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc = proc.wait()
            rc = f"{rc} (stopped at its {limit:.0f} s limit)"
        proc.log_file.close()
        if rc != 0:
            self.failed.append(name)
        self.note(f"step {name}: rc={rc} in {time.monotonic() - proc.started:.0f} s")
        self.merge()
        return rc if isinstance(rc, int) else 124

    def run(self, argv: list[str], name: str, log: str, limit: float, **kw: Any) -> int:
        return self.finish(self.start(argv, log, **kw), name, limit)

    def merge(self) -> None:
        """Gather the steps' JSON files into ``results.json`` (after every step, so a run
        stopped early keeps what it measured)."""
        results: dict[str, Any] = {"backend": self.backend, "budget_seconds": self.budget}
        for path in sorted(self.work.glob("result-*.json")):
            results[path.stem.removeprefix("result-")] = json.loads(path.read_text())
        results["seconds"] = round(time.monotonic() - self.t0, 1)
        tmp = self.out / "results.json.tmp"
        tmp.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
        os.replace(tmp, self.out / "results.json")


def _environment(backend: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    env["SIMD_BACKEND"] = backend
    return env


def lease(out: Path, backend: str, budget: float, force: bool = False) -> int:
    from simd.outputs import OutputError, announce_replace, check_output_folder

    files = [out / name for name in ("summary.txt", "results.json", "tests.xml", *LOGS)]
    try:
        check_output_folder(out)
        announce_replace(files, force=force)
    except OutputError as err:
        sys.exit(f"python -m bench.gpu_check: {err}")
    for file in files:  # written as the steps go: none of an earlier run may stay
        file.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        run = Lease(out, Path(folder), backend, budget)
        run.note(f"gpu_check on {backend}, budget {budget:.0f} s")
        _env(run)
        _warm(run)
        run.run(run.command("smoke"), "smoke", "smoke.log", min(180, max(20, run.left(RESERVE))))
        frames = min(FRAMES_LIMIT, max(20, run.left(RESERVE + 60)))
        run.run(run.command("frames"), "frames", "frames.log", frames)
        _tests(run)
        run.run(run.command("timings"), "timings", "timings.log", max(20, run.left(5)))
        _keys(run)
        run.note(f"total {time.monotonic() - run.t0:.0f} s")
        if run.failed:
            run.note(f"FAILED: {', '.join(run.failed)}")
    return 1 if run.failed else 0


def _env(run: Lease) -> None:
    log = "env.log"
    smi = [
        "nvidia-smi",
        "--query-gpu=name,memory.total,driver_version,clocks.max.sm",
        "--format=csv",
    ]
    try:
        text = subprocess.run(smi, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        text = f"nvidia-smi: {exc}\n"
    with open(run.out / log, "a", encoding="utf-8") as f:
        f.write(text)
    prepare = run.start(run.command("prepare"), log)  # the data set and the Numba probe
    info = [sys.executable, "-m", "simd.cli", "info"]
    run.run(info, "info", log, 60)
    run.run([*info, "--json"], "info --json", log, 60)
    run.finish(prepare, "prepare", 150)


def _warm(run: Lease) -> None:
    log = "warm.log"
    procs = [(run.start(run.command("reference"), log), "reference")]
    if run.backend == "cupy":
        procs.append((run.start(run.command("nvrtc"), log), "nvrtc"))
    cli = [
        sys.executable,
        "-m",
        "simd.cli",
        "render",
        "--dataset-size",
        "250k",
        "--size",
        "512",
        "--loop",
        "expand",
        "--no-progress",
        "-o",
        str(run.work / "cli.png"),
        "--json",
        str(run.work / "cli.json"),
    ]
    warmup = [sys.executable, "-m", "simd.cli", "warmup"]
    run.run(warmup, "simd-emu warmup (compiles)", log, 150)
    for proc, name in procs:
        run.finish(proc, name, 150)
    run.run(cli, "simd-emu render (kernels cached)", log, 60)


def _tests(run: Lease) -> None:
    limit = run.left(RESERVE)
    if limit < 30:
        run.note(f"step tests: skipped, {limit:.0f} s left")
        run.failed.append("tests (no time left)")
        return
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark"]
    argv += ["-m", "gpu", "-rfE"]
    argv += ["-q", "--durations=15", f"--junitxml={run.out / 'tests.xml'}"]
    workers = max(1, min(6, (os.cpu_count() or 2) - 2))
    argv += ["-n", str(workers), "--dist", "load"]
    if run.backend == "counting":
        argv.append("--gpu-standin")
    env = {"REQUIRE_GPU": "1", "SIMD_BACKEND": ""}  # the tests choose their backends
    run.run([*argv, *TESTS], "tests", "tests.log", limit, env=env)
    tail = (run.out / "tests.log").read_text(encoding="utf-8").splitlines()
    for line in [t for t in tail if t.startswith(("FAILED", "ERROR"))][:20] + tail[-1:]:
        run.note(f"  {line}")


def _keys(run: Lease) -> None:
    """The lines the steps marked as key results, into the summary."""
    for name in LOGS:
        path = run.out / name
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.startswith("KEY "):
                    run.note(line[4:])


# --------------------------------------------------------------------------- the steps


def _save(work: Path, name: str, value: Any) -> None:
    tmp = work / f"result-{name}.json.tmp"
    tmp.write_text(json.dumps(value, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, work / f"result-{name}.json")


def _key(text: str) -> None:
    print(f"KEY {text}", flush=True)


def step_prepare(work: Path, backend: str) -> None:
    """The data set (built or from the cache) and a Numba CUDA compile-and-launch probe."""
    import renderer

    t = time.perf_counter()
    mesh = renderer.load_dataset("balanced", "250k")
    renderer.load_dataset("unbalanced", "250k")  # the redistributing frame's (frames)
    made = time.perf_counter() - t
    _key(f"data sets of {mesh.n_faces} triangles ready in {made:.1f} s")
    result: dict[str, Any] = {"dataset_seconds": made}
    result["numba_probe"] = _numba_probe(backend)
    _save(work, "prepare", result)
    if not result["numba_probe"]["ok"]:
        sys.exit("Numba's CUDA target failed its probe")


def _numba_probe(backend: str) -> dict[str, Any]:
    """The GPU path's Numba probe (compile or load, launch, check); without a device, a
    cubin of the probe kernel for sm_90 instead."""
    from kernels import numba_launch

    t = time.perf_counter()
    try:
        if backend == "cupy":
            import cupy

            probe = {"ok": True, "detail": numba_launch.probe(cupy)}
        else:
            kinds = ((np.dtype(np.int32), 1, True),)
            from kernels.numba_cuda import cuda_module
            from kernels.rebind import bind

            kernel = bind(numba_launch._increment, cuda=cuda_module())
            cubin, _ = numba_launch.compile_cubin(kernel, kinds, (9, 0))
            probe = {"ok": cubin[:4] == b"\x7fELF", "detail": numba_launch._toolchain()}
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        probe = {"ok": False, "detail": f"{type(exc).__name__}: {exc}"}
    probe["seconds"] = time.perf_counter() - t
    _key(f"numba cuda probe ok={probe['ok']} in {probe['seconds']:.1f} s: {probe['detail']}")
    return probe


def _compile_scan(key: tuple) -> tuple[tuple, float]:
    import cupy

    from kernels import cupy_scan

    t = time.perf_counter()
    cupy_scan._module(cupy, key, cupy.cuda.Device().id)
    return key, time.perf_counter() - t


def step_nvrtc(work: Path, backend: str) -> None:
    """Every CuPy scan variant compiled, side by side (CuPy caches each on disk)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from kernels import cuda_scan_source

    keys = [(op, np.dtype(dt).str, pairs) for op, dt, pairs in cuda_scan_source.all_variants()]
    workers = max(1, min(12, (os.cpu_count() or 2) - 3))
    t0 = time.perf_counter()
    seconds = []
    with ProcessPoolExecutor(workers, multiprocessing.get_context("spawn")) as pool:
        for key, dt in pool.map(_compile_scan, keys):
            seconds.append(dt)
            print(f"scan {key} {dt:.1f} s", flush=True)
    wall = time.perf_counter() - t0
    _key(
        f"nvrtc: {len(seconds)} scan variants, mean {np.mean(seconds):.1f} s, "
        f"max {max(seconds):.1f} s, {wall:.0f} s on {workers} processes"
    )
    _save(work, "nvrtc", {"variants": len(seconds), "seconds": seconds, "wall": wall})


def _frame_arrays(frame: Any) -> dict[str, Any]:
    out = {}
    for name in ("image", "depth", "face"):
        a = getattr(frame, name)
        out[name] = np.asarray(a.get() if hasattr(a, "get") else a)
    return out


def step_reference(work: Path, backend: str) -> None:
    """The NumPy backend's frames of every loop form, for the comparisons."""
    import renderer
    from simd import Machine

    mesh = renderer.load_dataset("balanced", "250k")
    arrays, times = {}, {}
    for form in FORMS:
        m = Machine(backend="numpy")
        t = time.perf_counter()
        frame = renderer.render(mesh, size=512, loop=form, machine=m)
        first = time.perf_counter() - t
        t = time.perf_counter()
        frame = renderer.render(mesh, size=512, loop=form, machine=m)
        later = time.perf_counter() - t
        times[form] = {"first_seconds": first, "later_seconds": later}
        _key(f"numpy {form}: first frame {first:.1f} s, later {1e3 * later:.0f} ms")
        for name, a in _frame_arrays(frame).items():
            arrays[f"{form}-{name}"] = a
    np.savez(work / "reference.npz", **arrays)
    _save(work, "reference", times)


def _compare(got: Any, expected: Any) -> dict[str, Any]:
    if got.shape != expected.shape or got.dtype != expected.dtype:
        return {
            "equal": False,
            "why": f"{got.shape} {got.dtype} against {expected.shape} {expected.dtype}",
        }
    differ = got != expected
    if got.dtype.kind == "f":
        differ &= ~(np.isnan(got) & np.isnan(expected))
    if differ.ndim == 3:
        differ = differ.any(axis=-1)
    where = np.argwhere(differ)
    return {"equal": not len(where), "pixels_differ": int(len(where)), "first": where[:3].tolist()}


class _LaunchTimer:
    """Counts the Numba CUDA launches and the host time inside them (every module that
    imported ``launch_on_stream`` gets the timed one)."""

    def __init__(self) -> None:
        from kernels import numba_launch

        self.original = numba_launch.launch_on_stream
        self.count, self.seconds = 0, 0.0
        for module in list(sys.modules.values()):
            if getattr(module, "launch_on_stream", None) is self.original:
                module.launch_on_stream = self

    def __call__(self, *args: Any) -> None:
        t = time.perf_counter()
        self.original(*args)
        self.seconds += time.perf_counter() - t
        self.count += 1

    def reset(self) -> None:
        self.count, self.seconds = 0, 0.0


def step_smoke(work: Path, backend: str) -> None:
    """Frames on the GPU against NumPy's; frame times; the host cost of instructions."""
    import kernels.numba_shift  # noqa: F401 - imported for the launch timer
    import renderer
    import renderer.stages.cuda_kernels  # noqa: F401
    import simd.balance.cost_effective.search_kernels  # noqa: F401
    from simd import Machine

    timer = _LaunchTimer()
    path = work / "reference.npz"
    reference = dict(np.load(path)) if path.exists() else None
    mesh = renderer.load_dataset("balanced", "250k")
    results: dict[str, Any] = {}
    for form in FORMS:
        try:
            results[form] = _smoke_form(mesh, form, backend, reference, timer)
        except Exception as exc:  # noqa: BLE001 - every form is tried
            import traceback

            traceback.print_exc()
            results[form] = {"error": f"{type(exc).__name__}: {exc}"}
            _key(f"{form} FAILED on {backend}: {type(exc).__name__}: {exc}")
        _save(work, "smoke", results)
    if reference is not None and (work / "cli.png").exists():
        from PIL import Image

        png = np.asarray(Image.open(work / "cli.png").convert("RGB"))
        results["cli_png"] = _compare(png, reference["expand-image"])
        _key(f"CLI PNG (expand) identical to numpy: {results['cli_png']['equal']}")
    results["per_call_us"] = _per_call(Machine(pes=512, backend=backend))
    _save(work, "smoke", results)
    differ = [
        form
        for form in FORMS
        if "error" in results[form]
        or not all(c["equal"] for c in results[form].get("vs_numpy", {}).values())
    ]
    if differ or not results.get("cli_png", {"equal": True})["equal"]:
        sys.exit(f"frames failed or differ from NumPy's: {differ or ['the CLI PNG']}")


def _smoke_form(mesh: Any, form: str, backend: str, reference: Any, timer: Any) -> dict:
    import renderer
    from simd import Machine

    m = Machine(backend=backend)
    timer.reset()
    t = time.perf_counter()
    frame = renderer.render(mesh, size=512, loop=form, machine=m)
    from kernels.numba_launch import compiled_count

    result: dict[str, Any] = {
        "first_frame_seconds": time.perf_counter() - t,
        "first_frame_numba_launches": timer.count,
        "first_frame_numba_launch_seconds": timer.seconds,
        "kernels_compiled_so_far": compiled_count(),
    }
    if reference is not None:
        got = _frame_arrays(frame)
        result["vs_numpy"] = {k: _compare(got[k], reference[f"{form}-{k}"]) for k in got}
        same = {k: v["equal"] for k, v in result["vs_numpy"].items()}
        _key(
            f"{form} on {backend} identical to numpy: {same}; first frame "
            f"{result['first_frame_seconds']:.2f} s, {compiled_count()} kernels compiled "
            "in this process so far"
        )
    scene = renderer.Scene(mesh, machine=m)
    for what, source, kw in (("mesh", mesh, {"machine": m}), ("scene", scene, {})):
        renderer.render(source, size=512, loop=form, **kw)  # warm
        ms, launches, launch_ms = [], [], []
        for _ in range(7):
            timer.reset()
            t = time.perf_counter()
            frame = renderer.render(source, size=512, loop=form, **kw)
            ms.append(1e3 * (time.perf_counter() - t))
            launches.append(timer.count)
            launch_ms.append(1e3 * timer.seconds)
        result[what] = {
            "frame_ms": ms,
            "median_ms": statistics.median(ms),
            "numba_launches": launches[-1],
            "numba_launch_host_ms": statistics.median(launch_ms),
            "stats": frame.stats.to_dict(),
        }
        _key(
            f"{form} {what}: frame {statistics.median(ms):.2f} ms median of 7; "
            f"{launches[-1]} Numba launches, {statistics.median(launch_ms):.2f} ms host in them"
        )
    return result


def _per_call(m: Any) -> dict[str, float]:
    """Host microseconds per call of single instructions, back to back."""
    x = m.asarray(np.arange(4096, dtype=np.int32))
    dest = x % 97  # made once: the send's own cost alone is timed
    calls = {
        "elementwise x + 1": lambda: x + 1,
        "scan int32": lambda: m.scan(x),
        "shift int32": lambda: m.shift(x, 1, 0),
        "send add": lambda: m.send(x, dest, 97, combine="add"),
    }
    out = {}
    for name, fn in calls.items():
        try:
            for _ in range(20):
                fn()
            m.sync()
            t = time.perf_counter()
            for _ in range(500):
                fn()
            out[name] = 1e6 * (time.perf_counter() - t) / 500
            m.sync()
            # in CuPy's own launches on this host (its cost varies from host to host)
            launches = out[name] / out.get("elementwise x + 1", out[name])
            _key(f"per call {name}: {out[name]:.1f} us ({launches:.2f} x the cost of x + 1)")
        except Exception as exc:  # noqa: BLE001
            _key(f"per call {name} failed: {type(exc).__name__}: {exc}")
    return out


def step_frames(work: Path, backend: str) -> None:
    """Frames against their budgets (bench.gpu_frames): replayed as CUDA graphs, a
    redistributing frame, the per-stage breakdown, the isosurface, an orbit, the mesh
    diffusion, the viewer and the scale of frames; compared with the NumPy frames of the
    241k set where they render it (on a GPU; the stand-in renders a small set)."""
    from bench import gpu_frames

    path = work / "reference.npz"
    reference = dict(np.load(path)) if path.exists() and backend == "cupy" else None
    result = gpu_frames.measure(backend, reference, _key, budget=FRAMES_LIMIT - 20)
    _save(work, "frames", result)
    failed = [name for name, part in result.items() if "error" in part]
    replayed = result.get("replayed", {})
    differ = [name for name, row in replayed.items() if row.get("identical_to_numpy") is False]
    if failed or differ:
        sys.exit(f"parts failed: {failed}; frames differ from NumPy's: {differ}")


def step_timings(work: Path, backend: str) -> None:
    """The primitives at 2^26 against a device copy and cupy.cumsum; dense diffusion at
    8192 x 8192 against its memory floor."""
    from bench import diffusion, primitives

    log2 = 26 if backend == "cupy" else 18
    n = 1 << log2
    record = primitives.run(
        backend, [n], budget=0.25, names=list(primitives.PRIMITIVES), copy_elements=n
    )
    _save(work, "primitives", record)
    for r in record["results"]:
        vs = f", {r['vs_cumsum']:.2f}x cupy.cumsum" if "vs_cumsum" in r else ""
        _key(
            f"{r['primitive']} 2^{log2}: {1e3 * r['kernel_seconds']:.3f} ms, "
            f"{r['floor_ratio']:.2f} of the copy floor{vs}"
        )
    _save(work, "diffusion", diffusion.gpu_throughput(quick=backend != "cupy"))
    from bench import kernel_floors

    if backend == "cupy":
        floors = kernel_floors.measure(60.0)
    else:
        floors = kernel_floors.measure(60.0, backend="counting", sizes=(10, 12))
    _save(work, "kernel_floors", floors)
    lines = kernel_floors.table(floors).splitlines()
    largest = max(floors["sizes"])
    for line in lines[1:]:  # the largest size's rows, any that differ, the notes
        if f"2^{largest.bit_length() - 1} " in line or "DIFFERS" in line or ":" in line:
            _key(f"kernel floors: {' '.join(line.split())}")


STEPS = {
    "prepare": step_prepare,
    "nvrtc": step_nvrtc,
    "reference": step_reference,
    "smoke": step_smoke,
    "frames": step_frames,
    "timings": step_timings,
}


def main(argv: list[str] | None = None) -> int:
    from simd.outputs import add_force_argument

    parser = argparse.ArgumentParser(
        prog="python -m bench.gpu_check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("gpu-out"), help="folder for the 9 files")
    add_force_argument(parser)
    parser.add_argument(
        "--budget", type=float, default=450, help="seconds for all steps (default 450)"
    )
    parser.add_argument(
        "--backend",
        choices=("cupy", "counting"),
        default="cupy",
        help="cupy on a GPU; counting for the dry run without one",
    )
    parser.add_argument("--step", choices=sorted(STEPS), help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.step:
        STEPS[args.step](args.work, args.backend)
        return 0
    return lease(args.out, args.backend, args.budget, args.force)


if __name__ == "__main__":
    sys.exit(main())
