"""The PNG plots of ``simd-emu bench mimd``: the runs of Barker & Chrisochoides' Figures 1,
2 and 3, and the farmer's scaling with and without link contention."""

from __future__ import annotations

from pathlib import Path

__all__ = ["plots"]


def plots(results: dict, out: Path, tag: str) -> list[str]:
    """Draw the plots of the parts in ``results`` into ``out``; return the files written.

    ``results`` is what :func:`mimd.report.run` collects (a part's result under its name);
    the files are ``mimd{tag}-farmer.png``, ``-figure1.png``, ``-figure2.png`` and
    ``-figure3.png``, each drawn only when its part ran.
    """
    import matplotlib

    matplotlib.use("Agg")
    files = []
    if "farmer" in results:
        files.append(_farmer(results["farmer"]["rows"], out / f"mimd{tag}-farmer.png"))
    if "figure1" in results:
        files.append(_figure1(results["figure1"]["rows"], out / f"mimd{tag}-figure1.png"))
    for key, title in (
        ("figure2", "bi-modal imbalance (Figure 2)"),
        ("figure3", "linear imbalance (Figure 3)"),
    ):
        if key in results:
            files.append(_parametric(results[key], title, out / f"mimd{tag}-{key}.png"))
    return files


def _farmer(rows: list[dict], f: Path) -> str:
    """The farmer's hand-out rate against processors, with and without link contention."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, grain in zip(axes, ("fine", "coarse"), strict=True):
        for cont, style, label in (
            (True, "ko-", "links as resources"),
            (False, "bs--", "no contention"),
        ):
            rr = [r for r in rows if r["grain"] == grain and r["contention"] == cont]
            ax.plot(
                [r["processors"] for r in rr],
                [r["handouts_per_s"] for r in rr],
                style,
                label=label,
            )
        r0 = rows[0]
        ax.axhline(r0["cpu_bound_per_s"], color="g", ls=":", label="farmer CPU bound")
        ax.axhline(r0["link_bound_per_s"], color="r", ls=":", label="4 links bound")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.set_xlabel("processors")
        ax.set_ylabel("tasks handed out per second")
        ax.set_title(f"{grain} tasks (mean {rr[0]['mean_task'] * 1e3:g} ms)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Farmer on transputer tori: hand-out rate, with and without link contention")
    fig.tight_layout()
    fig.savefig(f, dpi=90)
    plt.close(fig)
    return str(f)


def _figure1(rows: list[dict], f: Path) -> str:
    """Simulated run time against the model's, by tasks per processor (Barker &
    Chrisochoides' Figure 1's runs)."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(2, 3, figsize=(13, 7), sharex=True)
    for i, p in enumerate((32, 64)):
        for j, name in enumerate(("linear-2", "linear-4", "step")):
            ax = axes[i, j]
            rr = [r for r in rows if r["processors"] == p and r["workload"] == name]
            k = [r["tasks_per_proc"] for r in rr]
            ax.plot(k, [r["simulated"] for r in rr], "ko-", label="simulated")
            ax.plot(k, [r["average"] for r in rr], "b^--", label="model average")
            ax.plot(
                k,
                [r["average_paper"] for r in rr],
                "g.:",
                label="paper's model (pure bi-modal)",
            )
            ax.fill_between(
                k,
                [r["lower"] for r in rr],
                [r["upper"] for r in rr],
                color="b",
                alpha=0.15,
                label="model bounds",
            )
            ax.set_title(f"{name}, {p} processors")
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            if i == 1:
                ax.set_xlabel("tasks per processor")
            if j == 0:
                ax.set_ylabel("run time (s)")
    axes[0, 0].legend()
    fig.suptitle("Diffusion: run time as the model predicts it and as simulated")
    fig.tight_layout()
    fig.savefig(f, dpi=90)
    plt.close(fig)
    return str(f)


def _parametric(res: dict, title: str, f: Path) -> str:
    """Barker & Chrisochoides' Figure 2 or 3: the model's run time by each parameter,
    simulated points beside it."""
    import matplotlib.lines
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    procs = res["processors"]
    fig, axes = plt.subplots(len(procs), 3, figsize=(13, 3.3 * len(procs)), squeeze=False)
    simulated = False
    xlabels = {
        "tasks_per_proc": "tasks per processor",
        "quantum": "quantum (s)",
        "neighbours": "neighbourhood size",
    }
    for i, p in enumerate(procs):
        for j, param in enumerate(("tasks_per_proc", "quantum", "neighbours")):
            ax = axes[i, j]
            for c, lvl in zip(("C0", "C1", "C3"), res["levels"], strict=False):
                s = next(
                    s
                    for s in res["series"]
                    if s["processors"] == p and s["level"] == lvl and s["param"] == param
                )
                x = [pt["value"] for pt in s["points"]]
                ax.plot(x, [pt["average"] for pt in s["points"]], "-", color=c, label=lvl)
                sims = [
                    (pt["value"], pt["simulated"])
                    for pt in s["points"]
                    if pt["simulated"] is not None
                ]
                if sims:
                    ax.plot(*zip(*sims, strict=True), "o", color=c, mfc="none")
                    simulated = True
            ax.set_xscale("log", base=2 if param != "quantum" else 10)
            if param != "quantum":
                # whole numbers of tasks and neighbours: 2, 4, 8, not 2.0 or 2^1
                ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
                ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_title(f"{p} processors, by {xlabels[param]}", fontsize=9)
            ax.set_xlabel(xlabels[param])
            if j == 0:
                ax.set_ylabel("run time (s)")
    # level colours, plus what lines (and circles, where any are drawn) mean
    handles, labels = axes[0, 0].get_legend_handles_labels()
    handles.append(matplotlib.lines.Line2D([], [], color="k", ls="-"))
    labels.append("model average")
    if simulated:
        handles.append(matplotlib.lines.Line2D([], [], color="k", ls="", marker="o", mfc="none"))
        labels.append("simulated")
    axes[0, 0].legend(handles, labels, fontsize=8)
    drawn = "model (lines), simulation (circles)" if simulated else "model predictions"
    fig.suptitle(f"Barker & Chrisochoides parametric study, {title}: {drawn}")
    fig.tight_layout()
    fig.savefig(f, dpi=80)
    plt.close(fig)
    return str(f)
