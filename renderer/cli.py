"""``simd-emu render``: render an isosurface or a mesh file on the emulated SIMD machine.

Prints, per loop (scan conversion, z-buffer): iterations, maximum and average workload,
balancing decisions and the time of each phase on the model clock and the wall clock, in
the form of Tables 1 and 4 of Ahrens & Hansen (seed 000). ``--compare`` runs the three loop
forms, prints their times and speedups and checks that the images are identical.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

__all__ = ["register", "run"]

FORMS = ("original", "cost-effective", "expand")


def _size(text: str) -> tuple[int, int]:
    try:
        if "x" in text.lower():
            w, h = (int(v) for v in text.lower().split("x"))
        else:
            w = h = int(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"size must be N or WxH, got {text!r}") from err
    if not (1 <= w <= 4096 and 1 <= h <= 4096):
        raise argparse.ArgumentTypeError(f"size must be 1..4096 each way, got {text!r}")
    return w, h


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text!r}")
    return value


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``render`` subcommand to ``subparsers`` (``simd.cli`` calls this)."""
    p = subparsers.add_parser(
        "render",
        help="render an isosurface (or a mesh file) with load-balanced loops",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--mesh",
        metavar="FILE",
        help="mesh file (PLY, OBJ, STL, OFF, GLB, ...); "
        "default: the built-in Marschner-Lobb isosurface",
    )
    p.add_argument(
        "--dataset",
        choices=("balanced", "unbalanced"),
        default="balanced",
        help="built-in data set (default: balanced)",
    )
    p.add_argument(
        "--dataset-size",
        default="250k",
        help="built-in data set size: 250k, 1m, 2m, 4m or a grid resolution",
    )
    p.add_argument(
        "--view",
        nargs=2,
        type=float,
        metavar=("AZ", "EL"),
        default=(45.0, 45.0),
        help="azimuth and elevation in degrees (default: 45 45)",
    )
    p.add_argument(
        "--magnification",
        "-M",
        type=_positive,
        default=1.0,
        help="magnification factor (default: 1)",
    )
    p.add_argument(
        "--size",
        type=_size,
        default=(512, 512),
        metavar="N|WxH",
        help="image size (default: 512, at most 4096)",
    )
    p.add_argument(
        "--loop",
        choices=FORMS,
        default="cost-effective",
        help="loop form (default: cost-effective)",
    )
    p.add_argument(
        "--backend",
        choices=("auto", "numpy", "cupy"),
        default="auto",
        help="machine backend (default: auto)",
    )
    p.add_argument("--pes", type=int, default=512, help="number of processors (default: 512)")
    p.add_argument("--shading", choices=("gouraud", "flat"), default="gouraud")
    p.add_argument(
        "--clock",
        choices=("model", "wall"),
        default="model",
        help="clock the balancer decides with (default: model)",
    )
    p.add_argument("--output", "-o", default="frame.png", help="image file (default: frame.png)")
    p.add_argument(
        "--compare",
        action="store_true",
        help="run all three loop forms, print times and speedups, check the images",
    )
    p.add_argument(
        "--table1",
        action="store_true",
        help="print the maximum and average workloads of both loops in the four "
        "views of Table 1 (for --mesh, or both built-in data sets) and exit",
    )
    p.add_argument("--json", metavar="FILE", help="also write the statistics as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)
    return p


def _load(args: argparse.Namespace) -> Any:
    from renderer.datasets import load_dataset
    from renderer.mesh import load_mesh

    if args.mesh:
        return load_mesh(args.mesh)
    size = args.dataset_size
    return load_dataset(args.dataset, int(size) if str(size).isdigit() else size)


def _loop_table(frame: Any, machine: Any) -> list[str]:
    seconds = machine.cost.seconds if hasattr(machine, "cost") else (lambda c: float("nan"))
    lines = [
        f"{'loop':<16} {'form':<15} {'iter':>6} {'max':>6} {'avg':>7} {'decis':>6} "
        f"{'model cycles':>13} {'model s':>9} {'wall s':>8}"
    ]
    for name, s in frame.stats["loops"].items():
        lines.append(
            f"{name:<16} {frame.loop:<15} {s['iterations']:>6} {s['max_workload']:>6} "
            f"{s['mean_workload']:>7.2f} {s['decisions']:>6} {s['model']:>13.0f} "
            f"{seconds(s['model']):>9.4f} {s['wall']:>8.3f}"
        )
    lines.append("")
    lines.append(f"{'phase':<38} {'calls':>6} {'model cycles':>13} {'model s':>9} {'wall s':>8}")
    for stage, t in frame.stats["phases"].items():
        loop = frame.stats["loops"].get(stage)
        if loop is None:
            lines.append(
                f"{stage:<38} {'':>6} {t['model']:>13.0f} {seconds(t['model']):>9.4f} "
                f"{t['wall']:>8.3f}"
            )
            continue
        lines.append(
            f"{stage:<38} {'':>6} {t['model']:>13.0f} {seconds(t['model']):>9.4f} {t['wall']:>8.3f}"
        )
        for phase, p in loop.get("phases", {}).items():
            lines.append(
                f"  {phase:<36} {p['calls']:>6} {p['model']:>13.0f} "
                f"{seconds(p['model']):>9.4f} {p['wall']:>8.3f}"
            )
    total = frame.stats["total"]
    lines.append(
        f"{'total':<38} {'':>6} {total['model']:>13.0f} "
        f"{seconds(total['model']):>9.4f} {total['wall']:>8.3f}"
    )
    return lines


def run(args: argparse.Namespace) -> int:
    """Handler of ``simd-emu render``; returns the exit status."""
    import numpy as np

    from renderer.pipeline import render
    from simd import Machine

    try:
        t0 = time.perf_counter()
        mesh = _load(args)
        t_load = time.perf_counter() - t0
        machine = Machine(pes=args.pes, backend=args.backend)
    except (ValueError, OSError) as err:
        print(f"simd-emu render: {err}", file=sys.stderr)
        return 2
    width, height = args.size
    if args.table1:
        return _table1(args, mesh, machine)
    print(
        f"mesh     : {mesh.name}, {mesh.n_faces} triangles, {len(mesh.vertices)} vertices "
        f"(loaded in {t_load:.2f} s)"
    )
    print(f"machine  : {machine}")
    print(
        f"view     : ({args.view[0]:g}, {args.view[1]:g}), magnification "
        f"{args.magnification:g}, {width}x{height}"
    )
    forms = FORMS if args.compare else (args.loop,)
    if args.compare:
        _warm_up(args)
    frames = {}
    for form in forms:
        m = machine if len(forms) == 1 else Machine(pes=args.pes, backend=args.backend)
        try:
            frame = render(
                mesh,
                view=tuple(args.view),
                magnification=args.magnification,
                size=(width, height),
                loop=form,
                machine=m,
                shading=args.shading,
                clock=args.clock,
                progress=None if args.no_progress else _auto_bar(mesh.n_faces, width * height),
            )
        except ValueError as err:
            print(f"simd-emu render: {err}", file=sys.stderr)
            return 2
        frames[form] = frame
        print()
        print(f"loop form: {form}")
        print("\n".join(_loop_table(frame, m)))
        counts = frame.stats["counts"]
        print(
            f"triangles {counts['triangles']}, rejected {counts['rejected']}, clipped "
            f"{counts['clipped']}, spans {counts['spans']}, fragments {counts['fragments']}, "
            f"pixels {counts['pixels']}"
        )
    status = 0
    if args.compare:
        print()
        base = frames["original"]
        seconds = machine.cost.seconds
        print(
            f"{'form':<15} {'model cycles':>13} {'model s':>9} {'wall s':>8} "
            f"{'speedup (model)':>16} {'speedup (wall)':>15}"
        )
        for form, f in frames.items():
            t, b = f.stats["total"], base.stats["total"]
            print(
                f"{form:<15} {t['model']:>13.0f} {seconds(t['model']):>9.4f} "
                f"{t['wall']:>8.3f} {b['model'] / t['model']:>16.2f} "
                f"{b['wall'] / t['wall']:>15.2f}"
            )
        same = all(
            np.array_equal(f.image, base.image) and np.array_equal(f.depth, base.depth)
            for f in frames.values()
        )
        print("images identical across loop forms:", "yes" if same else "NO")
        status = 0 if same else 1
    frame = frames[forms[-1]]
    frame.save(args.output)
    print(f"wrote {args.output}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(_jsonable(frames, mesh, args), fh, indent=2)
        print(f"wrote {args.json}")
    return status


def _table1(args: argparse.Namespace, mesh: Any, machine: Any) -> int:
    """Table 1 of seed 000: max and average workload per loop, per data set and view."""
    from renderer.datasets import load_dataset, workload_table

    if args.mesh:
        meshes = {mesh.name: mesh}
    else:
        size = args.dataset_size
        size = int(size) if str(size).isdigit() else size
        meshes = {kind: load_dataset(kind, size) for kind in ("balanced", "unbalanced")}
    print(f"{'data set':<34} {'view':<9} {'scan max':>8} {'scan avg':>8} {'z max':>6} {'z avg':>6}")
    for name, m in meshes.items():
        for row in workload_table(m, size=args.size[0], machine=machine):
            print(
                f"{name:<34} {row['view']:<9} {row['scan_max']:>8} {row['scan_avg']:>8.2f} "
                f"{row['zbuf_max']:>6} {row['zbuf_avg']:>6.2f}"
            )
    return 0


def _warm_up(args: argparse.Namespace) -> None:
    """Render a tiny mesh in every form first, so that one-time costs (kernel compilation
    and loading) do not land on the first form's wall time."""
    import numpy as np

    from renderer.pipeline import render
    from simd import Machine

    quad = (
        np.array([[0.0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]]),
        np.array([[0, 1, 2], [0, 2, 3]]),
    )
    for form in FORMS:
        render(quad, size=8, loop=form, machine=Machine(pes=args.pes, backend=args.backend))


def _auto_bar(n_faces: int, n_pixels: int) -> Any:
    """A tqdm bar over the pipeline stages for long runs (big meshes or images)."""
    if n_faces < 500_000 and n_pixels < 1024 * 1024:
        return None
    return True


def _jsonable(frames: dict, mesh: Any, args: argparse.Namespace) -> dict:
    out: dict[str, Any] = {
        "mesh": mesh.name,
        "triangles": mesh.n_faces,
        "view": list(args.view),
        "magnification": args.magnification,
        "size": list(args.size),
        "forms": {},
    }
    try:
        from simd.info import environment

        out["environment"] = environment()
    except Exception:  # noqa: BLE001 - the report is optional
        pass
    for form, f in frames.items():
        out["forms"][form] = {
            "loops": {
                k: {kk: vv for kk, vv in v.items() if kk != "loop"}
                for k, v in f.stats["loops"].items()
            },
            "phases": f.stats["phases"],
            "counts": f.stats["counts"],
            "total": f.stats["total"],
        }
    return out
