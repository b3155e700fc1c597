"""Agreement of the emulated renderer with a real OpenGL implementation (Mesa llvmpipe).

Renders the built-in isosurfaces (balanced 250k and unbalanced) in the four views of
Table 1 of Ahrens & Hansen with ``renderer.render`` and with moderngl (headless EGL context), from
the same ``Frame.mvp`` and viewport, and reports per case: pixels covered, the fraction of
covered pixels whose coverage differs (goal: under 0.1% on the 250k isosurface at
512x512), the fraction of pixels showing a different face, and the largest depth
difference (all pixels covered by both; and where both show the same face).

Needs a GL context: on Debian/Ubuntu ``apt-get install libegl1 libegl-mesa0
libgl1-mesa-dri libgbm1`` (moderngl itself is a pip package).

Run ``python -m bench.opengl_agreement [--quick] [--size N] [--out DIR | --save]``; the
results go to ``opengl_agreement.json`` (``opengl_agreement-quick.json`` with ``--quick``)
in the current folder, in ``--out DIR``, or with ``--save`` in this source tree's
``bench/results``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import renderer
from bench import ROOT
from renderer import opengl
from renderer.datasets.builtin import VIEWS, load_dataset
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.opengl_agreement", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help="the 250k surface in view (45, 45) only"
    )
    parser.add_argument("--size", type=int, default=512, help="image size (default 512)")
    parser.add_argument("--dataset-size", default="250k", help="isosurface size (250k, 1m, ...)")
    parser.add_argument("--backend", default="auto", help="machine backend (default auto)")
    parser.add_argument("--loop", default="expand", help="loop form (default expand)")
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    path = output_folder_from_args(parser, args, save_dir=SAVE_DIR) / (
        "opengl_agreement-quick.json" if args.quick else "opengl_agreement.json"
    )
    announce_replace_from_args(parser, args, path)
    record = measure(args)
    if record is None:
        return 2
    write_text(path, json.dumps(record, indent=2))
    print(f"wrote {path}")
    return 0 if record["goal_met"] else 1


def measure(args: argparse.Namespace) -> dict | None:
    """Render every case both ways and print the table; returns the record for the JSON
    (``None`` where no OpenGL context can be made)."""
    try:
        ctx = opengl.gl_context()
    except opengl.GLUnavailable as err:
        print(f"no OpenGL context, nothing to compare: {err}", file=sys.stderr)
        return None
    info = {k: ctx.info[k] for k in ("GL_VENDOR", "GL_RENDERER", "GL_VERSION")}
    print(f"OpenGL: {info['GL_RENDERER']} / {info['GL_VERSION']}")

    kinds = ("balanced",) if args.quick else ("balanced", "unbalanced")
    views = {"(45,45)": VIEWS["(45,45)"]} if args.quick else VIEWS
    size = (args.size, args.size)
    rows = []
    header = (
        f"{'dataset':<11} {'view':<9} {'triangles':>9} {'covered':>8} {'cov diff':>9} "
        f"{'cov diff %':>10} {'face diff %':>11} {'max dz':>9} {'max dz same':>11} "
        f"{'ours s':>7} {'GL s':>6}"
    )
    print(header)
    print("-" * len(header))
    for kind in kinds:
        mesh = load_dataset(kind, args.dataset_size)
        for vname, (view, mag) in views.items():
            t0 = time.perf_counter()
            frame = renderer.render(
                mesh,
                view=view,
                magnification=mag,
                size=size,
                loop=args.loop,
                machine=Machine(backend=args.backend),
            )
            t_ours = time.perf_counter() - t0
            t0 = time.perf_counter()
            gl = opengl.render_gl(mesh, frame.mvp, size)
            t_gl = time.perf_counter() - t0
            r = opengl.compare(frame, gl)
            row = {
                "dataset": kind,
                "view": vname,
                "triangles": mesh.n_faces,
                **r,
                "ours_wall_s": t_ours,
                "gl_wall_s": t_gl,
            }
            rows.append(row)
            print(
                f"{kind:<11} {vname:<9} {mesh.n_faces:>9} {r['covered']:>8} "
                f"{r['coverage_diff']:>9} {100 * r['coverage_diff_fraction']:>9.4f}% "
                f"{100 * r['face_diff_fraction']:>10.4f}% {r['max_depth_diff']:>9.2e} "
                f"{r['max_depth_diff_same_face']:>11.2e} {t_ours:>7.2f} {t_gl:>6.2f}"
            )
    worst = max(r["coverage_diff_fraction"] for r in rows)
    goal = worst < 1e-3
    print(
        f"worst coverage difference: {100 * worst:.4f}% of covered pixels "
        f"(goal < 0.1%: {'met' if goal else 'NOT met'})"
    )

    return {
        "benchmark": "opengl_agreement",
        "environment": environment(),
        "opengl": info,
        "size": list(size),
        "loop": args.loop,
        "rows": rows,
        "worst_coverage_diff_fraction": worst,
        "goal_met": goal,
    }


if __name__ == "__main__":
    sys.exit(main())
