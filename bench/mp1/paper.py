"""Figure 8 of Biagioni & Prins (1991) beside ours on the emulated 64 x 64 MasPar MP-1.

Figure 8 of Biagioni & Prins (1991) plots, for their diffusion on the MP-1, "the ratio of the
cost using load balancing to the cost without load balancing" with scan-directed balancing
"every iteration ..., every other iteration, every fifth iteration, and so on", for the
maximum load and for the time. The paper does not say which of its image sizes (512 x 512,
400 x 448, 256 x 256) the figure shows; ours shows the 512 x 512 images, balanced every 1,
2, 5, 10 and 20 iterations (10 and 20 are ours). **The figure's values cannot be
read**: the paper's text holds the caption and the discussion but not the plotted
points (the figure is an image the text does not carry),
and the paper gives no number for any ratio. What it does state about Figures 8 to 10
(section 5, the paragraphs after the figures) is the shape, and that is what we compare,
claim by claim (:data:`PAPER_CLAIMS`), with our per-interval ratios printed beside a
"not in the text" paper cell rather than a guessed value.

The MP-1 preset's constants and where each comes from: :data:`MP1_SOURCES`
(``simd.cost.CostModel.mp1``; the reasoning in ``simd/cost.py``'s module docstring).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

INTERVALS = (1, 2, 5, 10, 20)

#: The paper's Figure 8 cells per balancing interval: none is stated in the text.
PAPER_FIGURE8 = {k: {"load_ratio": None, "time_ratio": None} for k in INTERVALS}
PAPER_FIGURE8_NOTE = (
    "Biagioni & Prins (1991) state no value of Figure 8 in their text (the plotted points are "
    "in the "
    "figure image only); its cells are left empty, not read off approximately"
)

#: The MP-1 preset (CostModel.mp1): constant -> (value, source).
MP1_SOURCES = {
    "pes": ("64 x 64 = 4096", "Biagioni & Prins (1991), section 5: 4096 PEs in a 64 x 64 mesh"),
    "clock_hz": (
        "12.5 MHz",
        "the MP-1's PE clock as simd/cost.py takes it from MasPar's figures; Biagioni & Prins "
        "(1991) give "
        "no clock (it cites the MPL reference manual [10], no timings)",
    ),
    "elementwise": (
        "8 cycles per 32-bit op",
        "Biagioni & Prins (1991), section 5: 4-bit ALUs, so a 32-bit add takes about 8 nibble "
        "steps",
    ),
    "shift_per_vp": (
        "36 cycles",
        "X-Net moving one bit per clock per PE and direction (MasPar's figures, as "
        "simd/cost.py), 32 bits plus set-up; Biagioni & Prins (1991), section 5: 8 neighbours",
    ),
    "router_per_vp": (
        "18 x 36 cycles",
        "assumption: Biagioni & Prins (1991) say only that the mesh's speed and bandwidth are "
        "much "
        "greater than the router's (section 5)",
    ),
    "scan_per_vp + network_per_level": (
        "16 + (36 + 8) per level",
        "Biagioni & Prins (1991), section 6: MP-1 scans run over the mesh: log2(P) X-Net steps",
    ),
}


def _avg(rows: list[dict], key: str, **where: Any) -> dict[int, float]:
    out = {}
    for k in INTERVALS:
        vals = [
            r[key]
            for r in rows
            if r["interval"] == k and all(r.get(f) == v for f, v in where.items())
        ]
        if vals:
            out[k] = float(np.mean(vals))
    return out


def _monotone_load(rows: list[dict]) -> tuple[bool, str]:
    load = _avg(rows, "load_ratio", size="large", dims="2d")
    vals = [load[k] for k in sorted(load)]
    ok = all(a <= b + 1e-12 for a, b in zip(vals, vals[1:], strict=False)) and vals[-1] < 1
    return ok, "average load ratio, every 1 .. 20: " + " ".join(f"{v:.3f}" for v in vals)


def _v_shaped_time(rows: list[dict]) -> tuple[bool, str]:
    time = _avg(rows, "time_ratio", size="large", dims="2d")
    best = min(time, key=time.get)
    ok = best in (2, 5, 10) and time[best] < min(time[min(time)], time[max(time)])
    return ok, f"average time ratio lowest every {best} ({time[best]:.3f})"


def _wide_spread(rows: list[dict]) -> tuple[bool, str]:
    t = [r["time_ratio"] for r in rows if r["size"] == "large" and r["dims"] == "2d"]
    ok = min(t) < 1 < max(t)
    return ok, f"time ratios of single runs {min(t):.3f} .. {max(t):.3f}"


def _large_beats_small(rows: list[dict]) -> tuple[bool, str]:
    out = []
    ok = True
    for key in ("load_ratio", "time_ratio"):
        big = _avg(rows, key, size="large", dims="2d")
        small = _avg(rows, key, size="small", dims="2d")
        if not small:
            return False, "no small images run"
        ok &= all(big[k] < small[k] for k in big)
        out.append(f"{key} large/small every 5: {big[5]:.3f}/{small[5]:.3f}")
    return ok, "; ".join(out)


def _one_dimension(rows: list[dict]) -> tuple[bool, str]:
    load1, time1 = (_avg(rows, k, size="large", dims="1d") for k in ("load_ratio", "time_ratio"))
    load2, time2 = (_avg(rows, k, size="large", dims="2d") for k in ("load_ratio", "time_ratio"))
    if not load1:
        return False, "no one-dimensional runs"
    ok = all(time1[k] < time2[k] and load1[k] > load2[k] for k in (1, 2, 5))
    detail = f"every 1: 1-D time {time1[1]:.3f} vs 2-D {time2[1]:.3f}, "
    return ok, detail + f"load {load1[1]:.3f} vs {load2[1]:.3f}"


#: What Biagioni & Prins (1991) states about Figures 8 to 10 (section 5), and how we test it on our
#: runs.
PAPER_CLAIMS: dict[str, tuple[str, Callable[[list[dict]], tuple[bool, str]]]] = {
    "load falls monotonically with more frequent balancing (Figure 8)": (
        "the average load decreases monotonically as the algorithm is applied more and "
        "more frequently; on average it is quite effective in reducing the load",
        _monotone_load,
    ),
    "time is a shallow V, lowest near every 5 (Figure 8)": (
        "the average time is a shallow V-shaped curve ... the optimal ratio of diffusion "
        "to load balancing cycles is in the neighborhood of five",
        _v_shaped_time,
    ),
    "a wide spread of single runs (Figure 8)": (
        "a very wide spectrum of performances, from abysmal to very good",
        _wide_spread,
    ),
    "large images better than small in load and time (Figure 9)": (
        "both the time and the load are better on the large images",
        _large_beats_small,
    ),
    "one dimension: better time, higher load (Figure 10)": (
        "better time performance on the one-dimensional load balancing ... the average "
        "load is higher in the one-dimensional case",
        _one_dimension,
    ),
}


def compare_figure8(rows: list[dict]) -> dict[str, Any]:
    """Our Figure 8 averages per interval beside the paper's (empty: see
    :data:`PAPER_FIGURE8_NOTE`), and each of the paper's stated claims checked on ours.

    Examples
    --------
    >>> rows = [{"size": "large", "dims": "2d", "interval": k, "load_ratio": 0.7 + k / 100,
    ...          "time_ratio": 1.0 + (k - 5) ** 2 / 400} for k in INTERVALS]
    >>> res = compare_figure8(rows)
    >>> [c["ours"]["load_ratio"] for c in res["cells"]][:2], res["claims"][0]["holds"]
    ([0.71, 0.72], True)
    """
    load = _avg(rows, "load_ratio", size="large", dims="2d")
    time = _avg(rows, "time_ratio", size="large", dims="2d")
    cells = []
    for k in INTERVALS:
        if k not in load:
            continue
        paper = PAPER_FIGURE8[k]
        ours = {"load_ratio": load[k], "time_ratio": time[k]}
        ratio = {key: None if paper[key] is None else ours[key] / paper[key] for key in ours}
        cells.append({"interval": k, "ours": ours, "paper": paper, "ours_over_paper": ratio})
    claims = []
    for name, (quote, check) in PAPER_CLAIMS.items():
        try:
            holds, detail = check(rows)
        except (KeyError, ValueError):
            holds, detail = False, "not enough runs to tell"
        claims.append({"claim": name, "paper": quote, "holds": bool(holds), "ours": detail})
    return {
        "cells": cells,
        "paper_note": PAPER_FIGURE8_NOTE,
        "claims": claims,
        "mp1_constants": {k: {"value": v, "source": s} for k, (v, s) in MP1_SOURCES.items()},
    }


def print_figure8(res: dict[str, Any]) -> None:
    """Print the comparison: cells, claims, the MP-1 constants and their sources."""
    print("\nFigure 8 (512 x 512, both dimensions, average over images) beside Biagioni & Prins's:")
    print(f"  paper: {res['paper_note']}")
    print(
        f"  {'every':>5}  {'load ours':>9} {'paper':>6} {'ratio':>6}  {'time ours':>9} "
        f"{'paper':>6} {'ratio':>6}"
    )
    for c in res["cells"]:
        row = f"  {c['interval']:>5}"
        for key in ("load_ratio", "time_ratio"):
            p, r = c["paper"][key], c["ours_over_paper"][key]
            row += f"  {c['ours'][key]:>9.3f} {'-' if p is None else f'{p:.2f}':>6} "
            row += f"{'-' if r is None else f'{r:.2f}':>6}"
        print(row)
    print("  what the paper states, checked on ours:")
    for c in res["claims"]:
        print(f"    [{'yes' if c['holds'] else 'NO '}] {c['claim']}: {c['ours']}")
    print("  MP-1 preset (simd.cost.CostModel.mp1), value and source:")
    for name, c in res["mp1_constants"].items():
        print(f"    {name}: {c['value']} ({c['source']})")
