"""The pictures of ``simd-emu bench balance``: each balancer's run, and the what-if.

:func:`plot_runs` draws, for one workload, a row per machine: the processors at work in
every iteration and the time spent up to every iteration, a line per balancer.
:func:`plot_sweep` draws where balancing beats not balancing as scans, shifts and the
router cost a factor of the machine's own. Matplotlib is imported when a picture is drawn.
"""

from __future__ import annotations

import os
from typing import Any

from simd.balance.whatif import factor_label

__all__ = ["MACHINE_NAMES", "plot_runs", "plot_sweep"]

#: How the pictures name the machines.
MACHINE_NAMES = {
    "cm5": "idealised CM-5",
    "cm5_calibrated": "calibrated CM-5",
    "mp1": "MasPar MP-1",
    "wall": "this computer's wall clock",
    "cluster": "MIMD cluster (simulated)",
}

#: How the what-if's titles name the kinds of instruction.
_KIND_NAMES = {"scan": "scans", "shift": "shifts", "router": "the router"}

_UNITS = {"model": "model seconds", "wall": "wall seconds", "simulated": "simulated seconds"}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_runs(comparison: Any, path: str | os.PathLike[str], title: str, *, dpi: int = 100) -> None:
    """Active processors and time so far per iteration, a row per machine, a line per
    balancer. The MIMD runs step in task lengths rather than iterations, and their right
    panel is each policy's time to finish every task."""
    plt = _pyplot()
    machines = list(dict.fromkeys(r.machine for r in comparison.runs))
    fig, axes = plt.subplots(
        len(machines), 2, figsize=(11, 3.2 * len(machines)), squeeze=False, layout="constrained"
    )
    for row, machine in zip(axes, machines, strict=True):
        runs = [r for r in comparison.runs if r.machine == machine]
        name = MACHINE_NAMES.get(machine, machine)
        mimd = runs[0].clock == "simulated"
        for r in runs:
            if r.active:
                x = range(1, len(r.active) + 1)
                marker = "o" if len(r.active) < 3 else None  # expand: one step, all at once
                row[0].step(x, r.active, where="post", marker=marker, label=_label(r))
            if r.cumulative and not mimd:
                # cumulative[i]: the time when iteration i + 1 starts its tasks
                x = range(1, len(r.cumulative) + 1)
                row[1].plot(x, r.cumulative, label=_label(r))
        row[0].set_title(f"Processors at work, {name}")
        row[0].set_xlabel("time in task lengths" if mimd else "iteration")
        row[0].set_ylabel("active (virtual) processors")
        row[0].set_yscale("log")
        if mimd:
            _finish_times(row[1], runs, name)
        else:
            row[1].set_title(f"Time so far, {name}")
            row[1].set_xlabel("iteration")
            row[1].set_ylabel(_UNITS.get(runs[0].clock, "seconds"))
            row[1].set_yscale("log")
            row[1].legend(fontsize=7)
        for ax in row if not mimd else row[:1]:
            ax.set_xscale("log")
            ax.set_xlim(left=0.8)
            ax.grid(True, alpha=0.3)
        if mimd:
            row[0].legend(fontsize=7)
    fig.suptitle(title)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def _label(run: Any) -> str:
    return f"{run.balancer} ({run.speedup:.2f}x)" if run.speedup else run.balancer


def _finish_times(ax: Any, runs: list, name: str) -> None:
    """A bar per policy: the simulated time to finish every task."""
    ax.barh([r.balancer for r in runs], [r.model_seconds for r in runs], color="tab:grey")
    ax.invert_yaxis()
    ax.set_title(f"Time to finish every task, {name}")
    ax.set_xlabel(_UNITS["simulated"])
    ax.grid(True, axis="x", alpha=0.3)


def plot_sweep(
    sweeps: Any, path: str | os.PathLike[str], title: str | None = None, *, dpi: int = 100
) -> None:
    """A row per sweep (one, or several of the same workload family), a panel per kind of
    instruction: speed-up over no balancing against the cost factor, a line per balancer,
    shaded where balancing loses."""
    plt = _pyplot()
    from matplotlib import ticker

    sweeps = list(sweeps) if isinstance(sweeps, list | tuple) else [sweeps]
    cols = max(len(s.kinds) for s in sweeps)
    fig, axes = plt.subplots(
        len(sweeps),
        cols,
        figsize=(4.2 * cols, 3.8 * len(sweeps)),
        squeeze=False,
        layout="constrained",
    )
    for row, sweep in zip(axes, sweeps, strict=True):
        machine = MACHINE_NAMES.get(sweep.machine, sweep.machine)
        for ax, kind in zip(row, sweep.kinds, strict=False):
            for b in sweep.balancers:
                ax.plot(sweep.factors, sweep.curve(kind, b), marker="o", ms=3, label=b)
            ax.axhline(1.0, color="black", lw=0.8)
            ax.axvline(1.0, color="grey", lw=0.8, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            low, high = ax.get_ylim()
            ax.axhspan(min(low, 0.5), 1.0, color="red", alpha=0.06)
            ax.set_ylim(low, high)
            ax.set_xticks(sweep.factors)
            ax.set_xticklabels([factor_label(f) for f in sweep.factors], fontsize=7)
            ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(_times)
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
            what = " and ".join(_KIND_NAMES.get(k, k) for k in kind.split("+"))
            ax.set_title(f"Cost of {what}, {machine}", fontsize=10)
            ax.set_xlabel("times the machine's own cost")
            ax.set_ylabel(f"speed-up, {sweep.processors} processors")
            ax.grid(True, alpha=0.3)
        row[0].legend(fontsize=7)
        for ax in row[len(sweep.kinds) :]:
            ax.set_visible(False)
    if title is None:
        s = sweeps[0]
        machine = MACHINE_NAMES.get(s.machine, s.machine)
        title = f"Where balancing pays: {s.workload} on the {machine} ({s.processors} processors)"
    fig.suptitle(f"{title}\nbelow 1 (shaded), balancing loses")
    fig.savefig(path, dpi=dpi)
    plt.close(fig)


def _times(value: float, _position: Any = None) -> str:
    """A speed-up tick: ``0.5x``, ``2x``."""
    return f"{value:g}x"
