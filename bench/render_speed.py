"""Frame time of the emulated renderer against Mesa's llvmpipe, side by side in one run.

Renders the built-in balanced isosurface (241,498 triangles; ``--quick``: a small one) at
512x512 in view (45, 45) with ``renderer.render`` in each loop form and with OpenGL
(moderngl on a headless EGL context, depth and face ids read back), alternating so that
both see the same machine load. Both are given the same input: the mesh, the image size
and the model-view-projection matrix (with its light), which our first frame makes from
the view. A third column times our frame from the view itself
(``render(mesh, view=...)``), whose camera frames the mesh's bounding sphere first, work
OpenGL is not given. Each is warmed up once, then timed over several frames; the table
gives the medians and the ratio ours / OpenGL (from the same matrix), which is what to
compare across machines (absolute times only mean something on one host). The machine's
load average before and after goes with them: other work on the machine slows both, and
llvmpipe's several rendering threads differently from our one, so only a run on an
otherwise idle machine compares them fairly.

The goal on the CPU: every loop form's frame at most llvmpipe's time.

Run ``python -m bench.render_speed [--quick] [--frames N] [--out DIR | --save]``; the JSON
goes to the current folder (or ``--out DIR``, or with ``--save`` this source tree's
``bench/results``) as ``render_speed[-quick].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import renderer
from bench import ROOT
from renderer import opengl
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

#: The most our frame may take, as a multiple of OpenGL's (from the same matrix).
GOALS = {"expand": 1.0, "cost-effective": 1.0, "original": 1.0}


def _timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.render_speed", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--quick", action="store_true", help="a small isosurface, 3 frames")
    parser.add_argument("--frames", type=int, default=None, help="timed frames (default 5)")
    parser.add_argument("--size", type=int, default=512, help="image size (default 512)")
    parser.add_argument("--backend", default="auto", help="machine backend (default auto)")
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    frames = args.frames or (3 if args.quick else 5)
    if frames < 1:
        parser.error("--frames must be at least 1")
    path = output_folder_from_args(parser, args, save_dir=SAVE_DIR) / (
        "render_speed-quick.json" if args.quick else "render_speed.json"
    )
    announce_replace_from_args(parser, args, path)
    record = measure(args, frames)
    if record is None:
        return 2
    write_text(path, json.dumps(record, indent=2))
    print(f"wrote {path}")
    return 0


def measure(args: argparse.Namespace, frames: int) -> dict | None:
    """Time both renderers and print the table; returns the record for the JSON (``None``
    where no OpenGL context can be made)."""
    try:
        ctx = opengl.gl_context()
    except opengl.GLUnavailable as err:
        print(f"no OpenGL context, nothing to compare with: {err}", file=sys.stderr)
        return None
    gl_name = ctx.info["GL_RENDERER"]

    mesh = renderer.load_dataset("balanced", 48 if args.quick else "250k")
    size = (args.size, args.size)
    machine = Machine(backend=args.backend)
    print(
        f"{mesh.n_faces} triangles, {size[0]}x{size[1]}, view (45, 45); ours on "
        f"{machine.backend}, OpenGL: {gl_name}; medians of {frames} frames after a warm-up"
    )
    header = (
        f"{'form':<15} {'ours ms':>9} {'OpenGL ms':>10} {'ratio':>7} {'goal':>6} "
        f"{'from view ms':>13}"
    )
    print(header)
    print("-" * len(header))
    rows = []
    load_before = os.getloadavg()
    for form in ("expand", "cost-effective", "original"):

        def from_view(form: str = form):
            return renderer.render(mesh, view=(45, 45), size=size, loop=form, machine=machine)

        first = from_view()  # warm-up (JIT compilation, caches); its matrix and light
        mvp, light = first.mvp, first.camera.light_direction()

        def ours(form: str = form, mvp=mvp, light=light):
            return renderer.render(
                mesh, mvp=mvp, light=light, size=size, loop=form, machine=machine
            )

        def gl(mvp=mvp):
            return opengl.render_gl(mesh, mvp, size)

        ours()
        gl()
        t_ours, t_gl, t_view = [], [], []
        for _ in range(frames):
            t_ours.append(_timed(ours)[0])
            t_gl.append(_timed(gl)[0])
            t_view.append(_timed(from_view)[0])
        ours_s, gl_s = statistics.median(t_ours), statistics.median(t_gl)
        view_s = statistics.median(t_view)
        ratio = ours_s / gl_s
        goal = GOALS.get(form)
        rows.append(
            {
                "form": form,
                "ours_s": t_ours,
                "opengl_s": t_gl,
                "from_view_s": t_view,
                "ours_median_s": ours_s,
                "opengl_median_s": gl_s,
                "from_view_median_s": view_s,
                "ratio": ratio,
                "from_view_ratio": view_s / gl_s,
                "goal_ratio": goal,
            }
        )
        goal_text = "-" if goal is None else ("met" if ratio <= goal else f">{goal:g}x")
        print(
            f"{form:<15} {1e3 * ours_s:>9.1f} {1e3 * gl_s:>10.1f} {ratio:>7.2f} "
            f"{goal_text:>6} {1e3 * view_s:>13.1f}"
        )

    load_after = os.getloadavg()
    print(f"load average (1 min): {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    return {
        "benchmark": "render_speed",
        "environment": environment(),
        "opengl": {k: ctx.info[k] for k in ("GL_VENDOR", "GL_RENDERER", "GL_VERSION")},
        "triangles": mesh.n_faces,
        "size": list(size),
        "view": [45, 45],
        "frames": frames,
        "rows": rows,
        "load_average": {"before": list(load_before), "after": list(load_after)},
    }


if __name__ == "__main__":
    sys.exit(main())
