"""The work per processor of a frame's balanced loops, before and after balancing: the
picture in the viewer's panel.

Each of a frame's two balanced loops gives every virtual processor (VP) a workload: the
scan lines of its polygon (scan conversion) or the pixels of its span (z-buffer). The loop
of Figure 1 of Ahrens & Hansen, *Cost-Effective Data-Parallel Load Balancing* (1995) takes
as many iterations as the largest workload; the cost-effective loop of their Figure 2
redistributes the tasks of the busiest processors to idle ones when the savings in
iterations exceed the cost (section 2.3: blocks of processors share a polygon or a span).

The picture lays the VPs over the machine's physical processors in consecutive blocks of
the VP ratio (our layout, for the picture: the model clock counts only the ratio) and
gives each processor the most tasks of any of its VPs, the iterations it stays busy; a
bar is the busiest of a few neighbouring processors. *Before* is the workload as the loop
got it; *after* is the workload the balancer's first redistribution made, at the
iteration it took it. The loop keeps only its decisions, so the redistribution is made
again here from the loop's workload (:func:`simd.balance.gather_information` and
:func:`simd.balance.redistribute` on a NumPy machine of the same size): the same steps
on the same numbers, whose largest new workload is the one the loop recorded. The original
loop never balances, and the expand form runs every task on a processor of its own, so
those have no *after*.

On MPI ranks the frame also balances its triangles across the ranks
(:mod:`renderer.ranks.balance`); the picture then shows each rank's estimated work before
and after that step.

Examples
--------
>>> import numpy as np
>>> per_processor(np.array([100, 19, 0, 0, 0, 0, 0]), pes=7, bars=7).tolist()
[100, 19, 0, 0, 0, 0, 0]
>>> per_processor(np.arange(12), pes=3, bars=3).tolist()    # 4 VPs a processor
[3, 7, 11]
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["BARS", "first_redistribution", "loop_charts", "per_processor", "rank_chart"]

#: The most bars a chart has (each the busiest of its processors).
BARS = 128


def per_processor(workload: Any, pes: int, bars: int = BARS) -> np.ndarray:
    """The most tasks of any VP on each of ``pes`` processors (VPs in consecutive blocks
    of ``ceil(len / pes)``), then the largest of each group of neighbouring processors so
    that there are at most ``bars`` values."""
    w = np.asarray(workload, dtype=np.int64).ravel()
    if pes < 1 or bars < 1:
        raise ValueError(f"pes and bars must be at least 1, got {pes} and {bars}")
    ratio = max(1, -(-w.size // pes))
    busiest = _block_max(w, ratio, pes)
    per_bar = -(-pes // bars)
    return _block_max(busiest, per_bar, -(-pes // per_bar))


def _block_max(values: np.ndarray, block: int, blocks: int) -> np.ndarray:
    """The maximum of each of ``blocks`` consecutive blocks of ``block`` values (zeros
    past the end)."""
    padded = np.zeros(block * blocks, dtype=np.int64)
    padded[: values.size] = values[: block * blocks]
    return padded.reshape(blocks, block).max(axis=1)


def first_redistribution(workload: Any, loop: Any) -> tuple[int, np.ndarray, np.ndarray] | None:
    """The cost-effective loop's first redistribution, made again from ``workload`` (the
    loop's input): (its iteration, the workload then, the workload it made), or None when
    the loop took none (or is not the cost-effective form).

    Examples
    --------
    The example of section 2.3 of Ahrens & Hansen (1995):

    >>> from simd import Machine
    >>> from simd.balance import run_loop
    >>> w = np.array([100, 19, 0, 0, 0, 0, 0])
    >>> loop = run_loop(w, None, machine=Machine(pes=7, backend="numpy"), overestimate=2.0,
    ...                 task_cost=2000)
    >>> k, before, after = first_redistribution(w, loop)
    >>> k, before.tolist(), after.tolist()
    (1, [100, 19, 0, 0, 0, 0, 0], [20, 20, 20, 20, 20, 19, 0])
    """
    from simd import Machine
    from simd.balance import gather_information, redistribute

    if loop.form != "cost-effective" or not loop.events:
        return None
    k = loop.events[0].iteration
    w = np.asarray(workload, dtype=np.int64)
    before = np.maximum(w - (k - 1), 0)
    m = Machine(pes=max(1, w.size), backend="numpy")
    info = gather_information(before, machine=m)
    index = np.where(before > 0, k, 0)  # 1-based task index, as the loop holds it
    red = redistribute(before, index, np.arange(w.size), info, machine=m, steps=False)
    return k, before, np.asarray(red.workload, dtype=np.int64)


def loop_charts(frame: Any, pes: int, bars: int = BARS) -> list[dict[str, Any]]:
    """Per balanced loop of ``frame`` (rendered with ``keep_workloads=True``), the plain
    data the page draws: the loop's name and form, the bars before and after balancing
    (``after`` None where it has none), their largest values and a line that says what
    the picture shows."""
    workloads = frame.stats.workloads
    if workloads is None:
        raise ValueError("the frame keeps no workloads: render it with keep_workloads=True")
    inputs = {"scan-conversion": workloads.scan, "z-buffer": workloads.zbuffer}
    charts = []
    for name, loop in frame.stats.loops.items():
        w = inputs[name]
        found = first_redistribution(w, loop)
        if found is None:
            before, after, note = w, None, _no_after(loop)
        else:
            k, before, after = found
            note = (
                f"at iteration {k} the balancer spread the busiest processors' tasks: "
                f"at most {int(before.max())} tasks a processor before, "
                f"{int(after.max())} after"
            )
        charts.append(_chart(name, loop.form, before, after, note, pes, bars))
    return charts


def _no_after(loop: Any) -> str:
    """What the picture says of a loop that did not redistribute."""
    if loop.form == "original":
        return "the original loop never balances: it runs as long as its busiest processor"
    if loop.form == "expand":
        return (
            f"the expand form runs every task on a processor of its own, in "
            f"{loop.iterations} step{'s' if loop.iterations != 1 else ''}"
        )
    return "no redistribution paid for itself: the savings never exceeded its cost"


def _chart(
    name: str, form: str, before: Any, after: Any, note: str, pes: int, bars: int
) -> dict[str, Any]:
    b = per_processor(before, pes, bars)
    a = None if after is None else per_processor(after, pes, bars)
    return {
        "loop": name,
        "form": form,
        "pes": pes,
        "per_bar": -(-pes // bars),
        "before": b.tolist(),
        "after": None if a is None else a.tolist(),
        "max_before": int(b.max(initial=0)),
        "max_after": None if a is None else int(a.max(initial=0)),
        "note": note,
    }


def rank_chart(ranks: dict[str, Any]) -> dict[str, Any]:
    """The chart of a frame on MPI ranks (``frame.stats.ranks``): each rank's estimated
    work before and after the triangles were balanced across the ranks.

    >>> rank_chart({"work_before": [9, 1], "work_after": [5, 5], "balanced": True,
    ...             "moved": 3})["note"]
    'balancing across the 2 ranks moved 3 triangles'
    """
    before = [int(v) for v in ranks["work_before"]]
    after = [int(v) for v in ranks["work_after"]]
    moved = ranks["moved"] if ranks["balanced"] else 0
    return {
        "loop": "ranks",
        "form": "sort-last",
        "pes": len(before),
        "per_bar": 1,
        "before": before,
        "after": after,
        "max_before": max(before, default=0),
        "max_after": max(after, default=0),
        "note": f"balancing across the {len(before)} ranks "
        + (f"moved {moved} triangles" if moved else "moved nothing"),
    }
