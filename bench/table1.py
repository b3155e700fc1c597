"""Table 1 of Ahrens & Hansen (1995) beside ours, cell by cell, for each data-set family.

For every built-in family, the Marschner-Lobb isosurfaces (``balanced``, ``unbalanced``)
and the oil-well ones (``oilwell``, ``oilwell-unbalanced``; :mod:`renderer.datasets.oilwell`),
renders the four views of Table 1 at 512 x 512 and prints the maximum and average workload
of the scan conversion loop (scan lines per polygon) and the z-buffer loop (pixels per
span) beside the paper's, with the ratio ours/paper per cell, and each column's worst
factor (``max(r, 1/r)``). The paper's averages are whole numbers (rounded), so ratios of
averages near 1 carry that rounding.

Run ``python -m bench.table1 [--quick] [--magnification M] [--out DIR | --save]``:
``table1.json`` (``table1-quick.json``, at grid resolution 48, with ``--quick``;
``table1-M<M>.json`` for another magnification than the views' 2). The magnified views
zoom the image by 2 (the paper gives no factor; 2 is ours), so no magnified maximum
exceeds twice the unmagnified one plus a pixel; the paper's exceed it in five cells (up to
4 times, unbalanced M(45,45) z-buffer), and ``--magnification 4`` shows what a zoom of 4
gives instead (``renderer/datasets/oilwell.py`` says why the views keep 2).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

# PAPER_TABLE1: Table 1 of Ahrens & Hansen (1995), (scan max, scan avg, z-buffer max, z-buffer avg)
# per view.
from bench import ROOT
from bench.cm5.workload import PAPER_TABLE1
from simd import Machine
from simd.info import environment
from simd.outputs import (
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
    write_text,
)

#: Data-set families: name -> (our balanced kind, our unbalanced kind).
FAMILIES = {
    "marschner-lobb": ("balanced", "unbalanced"),
    "oilwell": ("oilwell", "oilwell-unbalanced"),
}
COLUMNS = ("scan_max", "scan_avg", "zbuf_max", "zbuf_avg")
SAVE_DIR = ROOT / "bench" / "results"


def compare(
    family: str,
    size: str | int = "250k",
    image: int = 512,
    backend: str = "numpy",
    magnification: float | None = None,
) -> dict[str, Any]:
    """Table 1 of one family beside the paper's: rows per (paper data set, view) with ours,
    the paper's and the ratio ours/paper per column; ``worst``: per (data set, column) the
    largest factor ``max(r, 1/r)`` over the views; ``triangles`` per data set.
    ``magnification``: the magnified views' factor (default that of
    :data:`renderer.datasets.builtin.VIEWS`, 2)."""
    from renderer.datasets.builtin import VIEWS, load_dataset, workload_table

    views = {
        name: (view, mag if mag == 1.0 or magnification is None else float(magnification))
        for name, (view, mag) in VIEWS.items()
    }

    rows, worst, triangles = [], {}, {}
    for paper_kind, kind in zip(("balanced", "unbalanced"), FAMILIES[family], strict=True):
        mesh = load_dataset(kind, size)
        triangles[kind] = int(mesh.n_faces)
        table = workload_table(
            mesh, views=views, size=image, machine=Machine(pes=512, backend=backend)
        )
        for r in table:
            paper = dict(zip(COLUMNS, PAPER_TABLE1[paper_kind][r["view"]], strict=True))
            ours = {c: r[c] for c in COLUMNS}
            ratio = {c: ours[c] / paper[c] for c in COLUMNS}
            rows.append(
                {
                    "dataset": paper_kind,
                    "kind": kind,
                    "view": r["view"],
                    "ours": ours,
                    "paper": paper,
                    "ratio": ratio,
                }
            )
            for c in COLUMNS:
                f = max(ratio[c], 1 / ratio[c]) if ratio[c] > 0 else float("inf")
                worst[f"{paper_kind}:{c}"] = max(worst.get(f"{paper_kind}:{c}", 1.0), f)
    mags = sorted({mag for _, mag in views.values() if mag != 1.0})
    return {
        "family": family,
        "size": size,
        "magnification": mags[0] if len(mags) == 1 else mags,
        "triangles": triangles,
        "rows": rows,
        "worst": worst,
    }


def print_comparison(res: dict[str, Any]) -> None:
    """One line per (data set, view): ours / paper (ratio) for each column."""
    tri = ", ".join(f"{k} {v} triangles" for k, v in res["triangles"].items())
    print(
        f"\nTable 1, {res['family']} data sets ({tri}; magnification "
        f"{res['magnification']:g}) against Ahrens & Hansen's: ours/paper (ratio)"
    )
    print(f"{'data set':19s} {'view':9s}" + "".join(f"{c:>20s}" for c in COLUMNS))
    for r in res["rows"]:
        cells = "".join(
            f"{r['ours'][c]:>8.4g}/{r['paper'][c]:<4g}({r['ratio'][c]:5.2f})" for c in COLUMNS
        )
        print(f"{r['kind']:19s} {r['view']:9s}{cells}")
    worst = ", ".join(f"{k} {v:.2f}" for k, v in res["worst"].items())
    print(f"worst factor per column: {worst}")


def measure(args: argparse.Namespace, size: str | int) -> dict[str, Any]:
    """Table 1 of every family beside the paper's, printed; returns the record."""
    t0 = time.perf_counter()
    results = []
    for family in FAMILIES:
        res = compare(family, size, backend=args.backend, magnification=args.magnification)
        print_comparison(res)
        results.append(res)
    return {
        "benchmark": "table1",
        "paper": "Ahrens & Hansen (1995), Table 1",
        "environment": environment(),
        "quick": args.quick,
        "families": results,
        "seconds": time.perf_counter() - t0,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.table1", description=__doc__.splitlines()[0].replace("``", "")
    )
    ap.add_argument("--quick", action="store_true", help="grid resolution 48")
    ap.add_argument("--size", default=None, help="data set size (default 250k)")
    ap.add_argument("--backend", default="numpy", help="numpy (default), cupy or auto")
    ap.add_argument(
        "--magnification",
        type=float,
        default=None,
        help="the magnified views' factor (default 2, renderer.datasets.builtin.VIEWS)",
    )
    add_output_arguments(ap, save_dir=SAVE_DIR)
    args = ap.parse_args(argv)
    size = args.size or (48 if args.quick else "250k")
    size = int(size) if str(size).isdigit() else size
    if args.magnification is not None and not (0 < args.magnification < 1e6):
        ap.error(f"--magnification must be a positive number, got {args.magnification:g}")
    name = "table1-quick" if args.quick else "table1"
    if args.magnification not in (None, 2.0):
        name += f"-M{args.magnification:g}"
    out = output_folder_from_args(ap, args, save_dir=SAVE_DIR) / f"{name}.json"
    announce_replace_from_args(ap, args, out)
    record = measure(args, size)
    write_text(out, json.dumps(record, indent=1, default=float))
    print(f"\nwrote {out} ({record['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
