"""Figures 8 to 10 of Biagioni & Prins in form, and dense diffusion throughput.

1. Figures 8-10: edge-directed diffusion (Perona-Malik with the fixed point epsilon) of
   real images on the emulated 64 x 64 MasPar MP-1 mesh, without balancing and with
   scan-directed balancing every 1, 2, 5, 10, 20 iterations. For each run: the ratio of
   the cost with balancing to the cost without, for the maximum load (the busiest PE's
   active points averaged over the iterations) and for time (model clock: diffusion plus
   balancing; the emulator's wall time is recorded too).
   * Figure 8: large images (512 x 512, 8 x 8 pixels per PE), both dimensions balanced
     (the paper does not say which sizes its Figure 8 shows; the intervals 10 and 20 are
     ours, continuing its "every fifth iteration, and so on").
   * Figure 9: small (256 x 256, 4 x 4 per PE), medium (400 x 448, 6-7 x 7 per PE) and
     large images compared.
   * Figure 10: balancing in only one dimension (rows) against both, large images.
   Figure 8's averages are printed beside the paper's with what Biagioni & Prins (1991)
   state about Figures 8-10 checked on ours, and the MP-1 constants with their sources
   (``bench/mp1/paper.py``; the paper's text gives the curves' shape, no values).
   Images ship inside packages: scikit-image's camera, moon and coffee, pydicom's CT test
   file 693_J2KI.dcm (512 x 512); medium ones are centre crops, small ones 2x2 block
   means (``diffusion.images.builtin_image``). Nothing is downloaded.
2. Dense throughput (pixels x iterations per second) of ``diffusion.anisotropic_diffusion``
   against medpy's on this machine, and on a GPU (CuPy, when one answers) at 8192 x 8192
   against the memory floor: 8 bytes per pixel per iteration (read and write a float32)
   over the measured device copy bandwidth, timed with CUDA events (kernel alone, whole
   call, and the fused ``epsilon`` path; the goal is 70% of the floor speed).

Run ``python -m bench.diffusion [--quick] [--out DIR | --save]``; the results go to
``diffusion.json`` (``diffusion-quick.json`` with ``--quick``) with the PNG plots beside it,
in the current folder, in ``--out DIR``, or with ``--save`` in this source tree's
``bench/results``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT
from bench.mp1.paper import compare_figure8, print_figure8
from diffusion import anisotropic_diffusion, mesh_diffusion
from diffusion.images import builtin_image
from simd import Machine
from simd.outputs import (
    StagedOutputs,
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
)

#: Where ``--save`` writes: the results committed with the source tree.
SAVE_DIR = ROOT / "bench" / "results"
#: The plots, ``{stem}-{name}.png``.
PLOTS = ("fig8", "fig9", "fig10")

INTERVALS = (1, 2, 5, 10, 20)
SIZES = {"large": (512, 512), "medium": (400, 448), "small": (256, 256)}
IMAGES = ("camera", "moon", "ct", "coffee")
PARAMS = dict(kappa=20.0, gamma=0.2, epsilon=0.25, option=1)


def environment() -> dict[str, Any]:
    try:
        from simd.info import environment as env

        return env()
    except Exception as exc:  # pragma: no cover - the report must still be written
        import platform

        return {"platform": platform.platform(), "numpy": np.__version__, "error": str(exc)}


def load(name: str, size: tuple[int, int]) -> np.ndarray:
    """A bundled image at ``size``, scaled to 0..255 (our choice of range: the paper does not
    give its images' value range)."""
    img = builtin_image(name, size=size).astype(np.float64)
    lo, hi = img.min(), img.max()
    return ((img - lo) / (hi - lo) * 255.0).astype(np.float32)


def run_mesh(
    img: np.ndarray, niter: int, every: int, axes: tuple[int, ...], backend: str
) -> dict[str, Any]:
    m = Machine(pes=(64, 64), backend=backend)
    res = mesh_diffusion(
        img,
        niter=niter,
        machine=m,
        balance_every=every,
        balance_axes=axes,
        track_static=False,
        **PARAMS,
    )
    return {
        "iterations": res.iterations,
        "mean_max_load": res.mean_max_load,
        "cycles": res.cycles,
        "model_seconds": m.cost.seconds(res.cycles["total"]),
        "wall": res.wall["total"],
        "balance_steps": len(res.balance_reports),
        "aborted": res.aborted,
        "mean_active_fraction": float(np.mean(res.active_fraction)) if res.active_fraction else 0.0,
        "max_load": res.max_load,
    }


def figures(images: dict[str, list[str]], niter: int, backend: str) -> list[dict[str, Any]]:
    rows = []
    # Warm-up (JIT compilation, imports) so that the first run's wall time compares.
    rng = np.random.default_rng(0)
    mesh_diffusion(
        (rng.random((8, 8)) * 255).astype(np.float32),
        niter=2,
        machine=Machine(pes=(2, 2), backend=backend),
        balance_every=1,
        **PARAMS,
    )
    for size_name, names in images.items():
        for name in names:
            img = load(name, SIZES[size_name])
            base = run_mesh(img, niter, 0, (0, 1), backend)
            print(
                f"{size_name:>6} {name:<7} {img.shape[0]}x{img.shape[1]}: "
                f"{base['iterations']} iterations, avg max load {base['mean_max_load']:.2f}, "
                f"active {base['mean_active_fraction']:.3f}, model "
                f"{base['model_seconds']:.4f} s, wall {base['wall']:.1f} s",
                flush=True,
            )
            dims = {"2d": (0, 1)}
            if size_name == "large":
                dims["1d"] = (0,)
            for dim, axes in dims.items():
                for every in INTERVALS:
                    r = run_mesh(img, niter, every, axes, backend)
                    row = {
                        "size": size_name,
                        "image": name,
                        "shape": list(img.shape),
                        "dims": dim,
                        "interval": every,
                        "load_ratio": r["mean_max_load"] / base["mean_max_load"],
                        "time_ratio": r["cycles"]["total"] / base["cycles"]["total"],
                        "wall_ratio": r["wall"] / base["wall"],
                        "balancing_share": r["cycles"]["balancing"] / r["cycles"]["total"],
                        "aborted": r["aborted"],
                        "balance_steps": r["balance_steps"],
                        "iterations": r["iterations"],
                        "base_mean_max_load": base["mean_max_load"],
                        "mean_max_load": r["mean_max_load"],
                    }
                    rows.append(row)
                    print(
                        f"    {dim} every {every:>2}: load ratio {row['load_ratio']:.3f}  "
                        f"time ratio {row['time_ratio']:.3f}  wall ratio "
                        f"{row['wall_ratio']:.2f}  (balancing {row['balancing_share']:.0%} "
                        f"of model time, {row['aborted']} aborted)",
                        flush=True,
                    )
    return rows


def _mean(rows: list[dict], key: str, **where: Any) -> dict[int, float]:
    out = {}
    for every in INTERVALS:
        vals = [
            r[key]
            for r in rows
            if r["interval"] == every and all(r[k] == v for k, v in where.items())
        ]
        if vals:
            out[every] = float(np.mean(vals))
    return out


def plots(rows: list[dict], outdir: Path, stem: str, stage: StagedOutputs) -> list[str]:
    """Draw Figures 8-10 as ``{stem}-fig8.png`` ... in ``outdir`` (staged in ``stage``);
    returns the file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    x = list(INTERVALS)

    def finish(fig, ax, name, title):
        for a in ax:
            a.set_xscale("log")
            a.set_xticks(x, [str(v) for v in x])
            a.axhline(1.0, color="grey", lw=0.8, ls=":")
            a.set_xlabel("balancing interval (iterations)")
        ax[0].set_ylabel("max load: with / without balancing")
        ax[1].set_ylabel("time (model): with / without balancing")
        fig.suptitle(title)
        fig.tight_layout()
        path = outdir / f"{stem}-{name}.png"
        fig.savefig(stage.path(path), dpi=100)
        plt.close(fig)
        written.append(path.name)

    # Figure 8: large images, 2-D balancing, every image and the mean.
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    large = [r for r in rows if r["size"] == "large" and r["dims"] == "2d"]
    for name in sorted({r["image"] for r in large}):
        for a, key in zip(ax, ("load_ratio", "time_ratio"), strict=True):
            ys = _mean(large, key, image=name)
            a.plot(list(ys), list(ys.values()), "o-", alpha=0.5, label=name)
    for a, key in zip(ax, ("load_ratio", "time_ratio"), strict=True):
        ys = _mean(large, key)
        a.plot(list(ys), list(ys.values()), "k^-", lw=2, label="average")
    ax[0].legend(fontsize=8)
    finish(fig, ax, "fig8", "Figure 8: scan directed load balancing, 512x512 images, 64x64 MP-1")
    # Figure 9: sizes.
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for size in SIZES:
        sel = [r for r in rows if r["size"] == size and r["dims"] == "2d"]
        if not sel:
            continue
        for a, key in zip(ax, ("load_ratio", "time_ratio"), strict=True):
            ys = _mean(sel, key)
            a.plot(list(ys), list(ys.values()), "o-", label=f"{size} {tuple(sel[0]['shape'])}")
    ax[0].legend(fontsize=8)
    finish(fig, ax, "fig9", "Figure 9: different image sizes (averages)")
    # Figure 10: one dimension against two.
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for dims, label in (("2d", "both dimensions"), ("1d", "one dimension (rows)")):
        sel = [r for r in rows if r["size"] == "large" and r["dims"] == dims]
        if not sel:
            continue
        for a, key in zip(ax, ("load_ratio", "time_ratio"), strict=True):
            ys = _mean(sel, key)
            a.plot(list(ys), list(ys.values()), "o-", label=label)
    ax[0].legend(fontsize=8)
    finish(fig, ax, "fig10", "Figure 10: balancing in only one dimension (512x512, averages)")
    return written


def table(rows: list[dict]) -> str:
    lines = ["size    dims  " + "  ".join(f"k={k:<2} load  time" for k in INTERVALS)]
    for size in SIZES:
        for dims in ("2d", "1d"):
            sel = [r for r in rows if r["size"] == size and r["dims"] == dims]
            if not sel:
                continue
            lo = _mean(sel, "load_ratio")
            ti = _mean(sel, "time_ratio")
            cells = "  ".join(f"    {lo[k]:.3f} {ti[k]:.3f}" for k in INTERVALS if k in lo)
            lines.append(f"{size:<7} {dims:<4} {cells}")
    return "\n".join(lines)


def throughput(quick: bool) -> dict[str, Any]:
    """Dense CPU throughput, ours against medpy's (ours alone, said so, where medpy, an
    oracle of the test extra, is not installed: the run has done minutes of work by now)."""
    runs: list[tuple[str, Any]] = [("ours", anisotropic_diffusion)]
    try:
        from medpy.filter.smoothing import anisotropic_diffusion as medpy_ad

        runs.append(("medpy", medpy_ad))
    except ImportError as exc:
        print(f"dense CPU: ours alone, medpy is not installed ({exc}; pip install medpy)")
    out: dict[str, Any] = {"cpu": []}
    niter = 5 if quick else 10
    for n in (512,) if quick else (512, 2048):
        img = builtin_image("camera", size=(512, 512))
        img = np.tile(img, (n // 512, n // 512))
        best = {}
        for label, fn in runs:
            times = []
            for _ in range(2 if quick else 3):
                t = time.perf_counter()
                fn(img, niter=niter, kappa=20, gamma=0.2)
                times.append(time.perf_counter() - t)
            best[label] = img.size * niter / min(times)
        medpy = best.get("medpy")
        row = {
            "shape": [n, n],
            "iterations": niter,
            "ours_pixels_per_s": best["ours"],
            "medpy_pixels_per_s": medpy,
            "speedup": best["ours"] / medpy if medpy else None,
        }
        out["cpu"].append(row)
        against = f", medpy {medpy / 1e6:.1f} Mpixel/s, ratio {row['speedup']:.2f}" if medpy else ""
        print(f"dense {n}x{n}: ours {best['ours'] / 1e6:.1f} Mpixel/s{against}", flush=True)
    out["gpu"] = gpu_throughput(quick)
    return out


def _event_seconds(cupy: Any, fn: Any, reps: int = 3) -> float:
    """Best of ``reps`` device intervals of ``fn()`` between two CUDA events (no host
    synchronisation inside the interval but what ``fn`` itself does)."""
    best = float("inf")
    for _ in range(reps):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return best


def gpu_throughput(quick: bool) -> dict[str, Any] | None:
    """The fused dense step at 8192 x 8192 against its memory floor, where a GPU answers.

    Floor: 8 bytes a point and iteration (read and write a float32) over the device copy
    bandwidth measured here (``a[...] = b``, read plus write). Times are CUDA event
    intervals over back-to-back iterations: ``kernel`` runs the kernels alone
    (:func:`diffusion.fused.pm_iterate`, the goal is a ratio of at least 0.7),
    ``call`` the whole ``anisotropic_diffusion`` (validation included), and
    ``epsilon`` the fused fixed-point path (one read back every 8 iterations).
    """
    try:
        from simd.backend import cupy_status

        ok, detail = cupy_status()
        if not ok:
            print(f"dense GPU: skipped ({detail})")
            return {"skipped": detail}
        import cupy

        from diffusion.dense import PMParameters
        from diffusion.fused import pm_iterate
    except Exception as exc:  # pragma: no cover - no CuPy at all
        print(f"dense GPU: skipped ({exc})")
        return {"skipped": str(exc)}
    n = 2048 if quick else 8192
    img = cupy.asarray(np.tile(builtin_image("camera"), (n // 512, n // 512)))
    copy = cupy.empty_like(img)
    copy[...] = img  # warm-up
    reps = 20

    def copies() -> None:
        for _ in range(reps):
            copy[...] = img

    bandwidth = 2 * img.nbytes * reps / _event_seconds(cupy, copies)
    floor = 8 * img.size / bandwidth
    niter = 20
    work = img.copy()
    params = dict(kappa=20, gamma=0.2)
    pm_iterate(cupy, work, PMParameters.check(2, 2, **params))  # compile
    anisotropic_diffusion(img, niter=2, epsilon=1e-3, **params)  # compile
    p = PMParameters.check(2, niter, **params)
    kernel = _event_seconds(cupy, lambda: pm_iterate(cupy, work, p))
    call = _event_seconds(cupy, lambda: anisotropic_diffusion(img, niter=niter, **params))
    eps = _event_seconds(
        cupy, lambda: anisotropic_diffusion(img, niter=niter, epsilon=1e-3, **params)
    )
    row = {
        "shape": [n, n],
        "device": detail,  # the device's name, from cupy_status
        "iterations": niter,
        "copy_bandwidth_GBps": bandwidth / 1e9,
        "floor_seconds_per_iteration": floor,
        "kernel_seconds_per_iteration": kernel / niter,
        "call_seconds_per_iteration": call / niter,
        "epsilon_seconds_per_iteration": eps / niter,
        "pixels_per_s": img.size * niter / kernel,
        # Floor over time: 1.0 is the floor, the goal is at least 0.7.
        "kernel_fraction_of_floor": floor * niter / kernel,
        "call_fraction_of_floor": floor * niter / call,
        "epsilon_fraction_of_floor": floor * niter / eps,
    }
    print(
        f"dense GPU {n}x{n} on {row['device']}: floor {floor * 1e3:.3f} ms/iteration "
        f"({bandwidth / 1e9:.0f} GB/s copy); kernel {kernel / niter * 1e3:.3f} ms "
        f"({row['kernel_fraction_of_floor']:.0%} of the floor speed, goal 70%), call "
        f"{call / niter * 1e3:.3f} ms ({row['call_fraction_of_floor']:.0%}), epsilon "
        f"{eps / niter * 1e3:.3f} ms ({row['epsilon_fraction_of_floor']:.0%})"
    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.diffusion", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="one image, large and small")
    parser.add_argument("--niter", type=int, default=None, help="iterations per run")
    parser.add_argument("--backend", default="numpy", help="machine backend")
    parser.add_argument(
        "--skip-figures", action="store_true", help="only the dense throughput, no figures"
    )
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    outdir = output_folder_from_args(parser, args, save_dir=SAVE_DIR)
    stem = "diffusion-quick" if args.quick else "diffusion"
    out = outdir / f"{stem}.json"
    figures_out = [] if args.skip_figures else [outdir / f"{stem}-{n}.png" for n in PLOTS]
    announce_replace_from_args(parser, args, [out, *figures_out])
    with StagedOutputs() as stage:
        record = measure(args, outdir, stem, stage)
        stage.path(out).write_text(json.dumps(record, indent=1, default=float))
    print(f"wrote {out}" + (f" and {len(record['plots'])} plots" if "plots" in record else ""))
    return 0


def measure(
    args: argparse.Namespace, outdir: Path, stem: str, stage: StagedOutputs
) -> dict[str, Any]:
    """Run the figures and the throughput, print the tables, stage the plots; returns the
    record for the JSON."""
    # The balancing pays off in the later iterations, when activity has gathered into
    # regions: even the quick run goes to 100.
    niter = args.niter or 100
    if args.quick:
        images = {"large": ["camera"], "small": ["camera"]}
    else:
        images = {
            "large": ["camera", "moon", "ct"],
            "medium": ["camera", "coffee", "ct"],
            "small": ["camera", "moon", "ct"],
        }
    start = time.perf_counter()
    record: dict[str, Any] = {
        "benchmark": "diffusion",
        "quick": args.quick,
        "environment": environment(),
        "backend": args.backend,
        "parameters": dict(PARAMS, niter=niter, mesh=[64, 64]),
        "intervals": list(INTERVALS),
    }
    if not args.skip_figures:
        rows = figures(images, niter, args.backend)
        record["runs"] = rows
        print()
        print(
            "average ratios, cost with balancing / without (load = avg max load per PE, "
            "time = model clock)"
        )
        tab = table(rows)
        print(tab)
        record["table"] = tab
        # Figure 8 beside Biagioni & Prins's (its text states the curves' shape, not their values)
        record["figure8_vs_paper"] = compare_figure8(rows)
        print_figure8(record["figure8_vs_paper"])
        record["plots"] = plots(rows, outdir, stem, stage)
    record["throughput"] = throughput(args.quick)
    record["wall_seconds"] = time.perf_counter() - start
    return record


if __name__ == "__main__":
    sys.exit(main())
