"""``simd-emu bench balance``: which balancing pays on a workload, on which machine, and by
how much; and the hardware what-if.

A thin layer over :func:`~simd.balance.comparison.compare` (with the MIMD policies of
:mod:`mimd.balance_baselines` as baselines) and :func:`simd.balance.whatif.sweep`: the
options name the workloads (:mod:`mimd.balance_sources`), the machines and the balancers;
every workload, option and output path is checked before any run, and a bad one ends the
command with one line and exit status 2. It prints one table per workload, and writes with
``--json FILE`` the runs (per balancer its ``iterations`` and ``model_seconds``) and with
``--plots DIR`` a picture per workload (:mod:`mimd.balance_plots`) and per what-if.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["DESCRIPTION", "add_arguments", "run_args"]

DESCRIPTION = (
    "Which load balancing pays on a workload, on which machine, and by how much. The "
    "workload is a file (.npy, .csv or .txt: one count of tasks per processor, or a 2-D "
    "grid of counts for the mesh), built-in families (uniform, zipf, pareto, bimodal, "
    "linear-2, linear-4, step, hotspot), or the renderer's loops on a mesh and a view. "
    "Balancers: none (Figure 1 of Ahrens and Hansen), cost-effective, balance-always and "
    "expand for tasks per processor; scan-directed balancing every k iterations for a grid "
    "(Biagioni and Prins), the Locality Property checked; the MIMD policies as baselines. "
    "Machines: the idealised and calibrated CM-5, the MasPar MP-1, and the wall clock. "
    "Prints a table; --json FILE and --plots DIR write the results and pictures. --sweep "
    "scan,shift,router scales each cost from 1/16 to 16 times the machine's and shows "
    "where balancing beats not balancing."
)

#: The machines run by default.
DEFAULT_MACHINES = "cm5,cm5_calibrated,mp1"
#: The processors of the built-in families and the renderer's loops by default.
DEFAULT_PES = "512"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``bench balance`` (shared with ``bench/balance.py``)."""
    src = p.add_argument_group("workload (default: every built-in family)")
    src.add_argument("file", nargs="?", help="a workload file: .npy, .csv or .txt")
    src.add_argument("--family", metavar="NAMES", help="built-in families, comma-separated, or all")
    src.add_argument("--param", type=float, help="the family's parameter (zipf's exponent, ...)")
    src.add_argument("--mean", type=float, default=16.0, help="tasks per entry (default 16)")
    src.add_argument("--seed", type=int, default=0, help="seed of the random families")
    src.add_argument(
        "--grid",
        type=int,
        metavar="S",
        help="make the families 2-D grids of S x S points per processor of a mesh",
    )
    src.add_argument(
        "--render",
        metavar="MESH",
        help="the renderer's loop on a built-in data set (balanced, unbalanced, oilwell, "
        "oilwell-unbalanced) or a mesh file",
    )
    src.add_argument("--size", default="250k", help="the built-in data set's size (250k)")
    src.add_argument("--view", default="45,45", help="the view's two angles (45,45)")
    src.add_argument("--magnification", type=float, default=1.0, help="of the view (1)")
    src.add_argument("--image", type=int, default=512, help="the image's side in pixels (512)")
    src.add_argument("--loop", choices=("scan", "zbuffer"), default="scan",
                     help="the renderer's scan-conversion or z-buffer loop (scan)")  # fmt: skip
    run = p.add_argument_group("machines and balancers")
    run.add_argument(
        "--pes",
        metavar="LIST",
        help="processors, comma-separated (a mesh as 64x64); default one per entry of a "
        f"file, {DEFAULT_PES} otherwise",
    )
    run.add_argument("--machines", default=DEFAULT_MACHINES, metavar="LIST", help="cm5, "
                     f"cm5_calibrated, mp1, wall (default {DEFAULT_MACHINES})")  # fmt: skip
    run.add_argument(
        "--balancers",
        metavar="LIST",
        help="none, cost-effective, balance-always, expand, scan-directed, and the MIMD "
        "policies (farmer, gradient, extended-gradient, diffusion, work-stealing, or mimd "
        "for all); default all that fit the workload",
    )
    run.add_argument("--every", default="1,2,5,10,20", metavar="LIST", help="the mesh's "
                     "balancing intervals (1,2,5,10,20)")  # fmt: skip
    run.add_argument("--task-cost", type=float, default=32.0, help="operations a task (32)")
    run.add_argument("--overestimate", type=float, help="the cost-effective loop's cost of a "
                     "redistribution in iterations (default: measured as it runs)")  # fmt: skip
    run.add_argument("--mimd-task-seconds", type=float, default=1e-2, help="a task's time on "
                     "the MIMD cluster (0.01)")  # fmt: skip
    run.add_argument("--backend", choices=("numpy", "cupy", "auto"), default="numpy",
                     help="the array backend the emulated machines run on (numpy); the model "
                     "times are the same on every backend, the wall times are not")  # fmt: skip
    what = p.add_argument_group("the what-if and the outputs")
    what.add_argument("--sweep", metavar="KINDS", help="scale scan, shift, router (or "
                      "scan+shift) costs, one at a time")  # fmt: skip
    what.add_argument("--sweep-machine", help="the preset scaled (default mp1 for a grid, "
                      "cm5_calibrated otherwise)")  # fmt: skip
    what.add_argument("--factors", default="1/16,1/8,1/4,1/2,1,2,4,8,16", metavar="LIST",
                      help="the factors of the preset's costs the what-if runs at "
                      "(1/16,1/8,1/4,1/2,1,2,4,8,16)")  # fmt: skip
    what.add_argument("--json", metavar="FILE", help="write the results to FILE (.json)")
    what.add_argument("--plots", metavar="DIR", help="write the pictures to DIR")
    what.add_argument("--force", action="store_true", help="replace output files that exist")
    what.add_argument("--quiet", action="store_true", help="no progress bar (there is none "
                      "either when stderr is not a terminal)")  # fmt: skip


def run_args(args: argparse.Namespace, prog: str = "simd-emu bench balance") -> int:
    """Run the benchmark with parsed options; returns the exit status: 0, 2 for a bad
    option or workload (one line, before any run), 130 when interrupted (Ctrl-C: the
    rows done are kept in ``--json``)."""
    from simd.errors import SimdError
    from simd.launch import launched_rank, world
    from simd.outputs import OutputError, announce_replace

    from .balance_runner import Progress, Runner

    def fail(exc: object) -> int:
        if launched_rank() == 0:  # one line, from rank 0 only
            print(f"{prog}: {exc}", file=sys.stderr)
        return 2

    try:
        job = _Job(args)
        files = job.check_outputs()
        # every rank applies the rule (the files are the same for all), rank 0 says it
        say = print if launched_rank() == 0 else (lambda line: None)
        announce_replace(files, force=args.force, echo=say)
        comm = world()
    except (ValueError, RuntimeError, OutputError, SimdError) as exc:  # SimdError: a backend
        return fail(exc)
    runner = Runner(comm, Progress(quiet=args.quiet or launched_rank() > 0))
    interrupted = False
    try:
        job.load_render(runner)
        job.run(runner)
    except (ValueError, OSError) as exc:
        runner.progress.close()
        return fail(exc)
    except KeyboardInterrupt:
        interrupted = True
    runner.progress.close()
    if runner.root:
        if interrupted:
            print(f"{prog}: interrupted", file=sys.stderr)
        job.write(interrupted)
    return 130 if interrupted else 0


def _split(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def _pes(text: str) -> list[int | tuple[int, int]]:
    out: list[int | tuple[int, int]] = []
    for item in _split(text):
        m = re.fullmatch(r"(\d+)(?:x(\d+))?", item)
        if not m or int(m.group(1)) < 1 or (m.group(2) and int(m.group(2)) < 1):
            raise ValueError(f"--pes: {item!r} is not a number of processors or a mesh (64x64)")
        out.append((int(m.group(1)), int(m.group(2))) if m.group(2) else int(m.group(1)))
    if not out:
        raise ValueError("--pes names no processors")
    return out


def _numbers(text: str, option: str, kind: type = float) -> list:
    out = []
    for item in _split(text):
        try:
            num, _, den = item.partition("/")
            value = kind(num) / kind(den) if den else kind(num)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"{option}: {item!r} is not a number") from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{option}: {item!r} must be above 0")
        out.append(value)
    if not out:
        raise ValueError(f"{option} lists nothing")
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "workload"


class _Job:
    """One command: its checked options and workloads, the runs, and the outputs."""

    def __init__(self, args: argparse.Namespace) -> None:
        from simd.balance.comparison import GRID_BALANCERS, LOOP_BALANCERS

        from .policies import POLICIES

        self.args = args
        if args.backend != "numpy":
            from simd.backend import resolve_backend

            resolve_backend(args.backend)  # unavailable: one line now, not after the runs
        self.machines = _split(args.machines)
        self.every = [int(k) for k in _numbers(args.every, "--every", int)]
        self.factors = _numbers(args.factors, "--factors")
        self.kinds = _split(args.sweep)
        names = _split(args.balancers)
        if "mimd" in names:
            names = [n for n in names if n != "mimd"] + [n for n in POLICIES if n not in names]
        simd_names = set(LOOP_BALANCERS) | set(GRID_BALANCERS)
        for name in names:
            if name not in simd_names and name not in POLICIES:
                known = ", ".join(sorted(simd_names | set(POLICIES)))
                raise ValueError(f"unknown balancer {name!r}; choose from {known}, mimd")
        self.simd = [n for n in names if n in simd_names] if names else None
        self.mimd = [n for n in names if n in POLICIES and n != "none"] if names else None
        if args.mimd_task_seconds <= 0:
            raise ValueError("--mimd-task-seconds must be above 0")
        costs = (("--task-cost", args.task_cost), ("--overestimate", args.overestimate))
        for option, value in costs:
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{option} must be a finite number >= 0, got {value:g}")
        if args.sweep_machine is not None:
            from simd.balance.whatif import sweep_preset

            sweep_preset(args.sweep_machine)  # unknown or a wall clock: one line now
        self.sources = self.read_sources()
        self.plans = [self.plan(s) for s in self.sources]
        self.comparisons: list[Any] = []
        self.sweeps: list[Any] = []

    def read_sources(self) -> list[Any]:
        """The file's or the families' workloads, checked (the renderer's come later)."""
        from .balance_sources import family_sources, file_source

        args = self.args
        given = [x for x in (args.file, args.family, args.render) if x]
        if len(given) > 1:
            raise ValueError("give one workload: a file, --family or --render")
        pes = _pes(args.pes) if args.pes else None
        if args.file:
            if pes and len(pes) > 1:
                raise ValueError("a workload file runs on one --pes")
            return [file_source(args.file, pes[0] if pes else None)]
        if args.render:
            if pes and (len(pes) > 1 or not isinstance(pes[0], int)):
                raise ValueError("the renderer's loop runs on one number of processors (--pes)")
            self.render_pes = pes[0] if pes else int(DEFAULT_PES)
            return []
        from simd.balance.workloads import FAMILIES

        families = _split(args.family) or ["all"]
        families = list(FAMILIES) if families == ["all"] else families
        if args.grid is not None and args.grid < 1:
            raise ValueError("--grid must be at least 1 point per processor side")
        return family_sources(
            families,
            pes or _pes(DEFAULT_PES),
            mean=args.mean,
            param=args.param,
            seed=args.seed,
            grid=args.grid,
        )

    def plan(self, source: Any) -> Any:
        """The source's comparison, its options checked (no run yet); its MIMD simulations
        checked to fit in memory."""
        from simd.balance.comparison import plan_comparison

        from .balance_baselines import baselines, check_memory

        mimd = []
        if source.counts.ndim == 1 and (self.mimd is None or self.mimd):
            mimd = baselines(self.mimd, self.args.mimd_task_seconds)
        plan = plan_comparison(
            source.counts,
            name=source.name,
            processors=source.processors,
            machines=self.machines,
            balancers=self.simd,
            every=self.every,
            task_cost=self.args.task_cost,
            overestimate=self.args.overestimate,
            backend=self.args.backend,
            baselines=mimd,
        )
        if mimd:
            check_memory(int(plan.counts.sum()), plan.shape[0], source.name)
        return plan

    def sweep_plan(self, source: Any, plan: Any) -> Any:
        """The source's what-if, its options checked (no run yet)."""
        from simd.balance.whatif import plan_sweep

        return plan_sweep(
            plan.counts,
            name=source.name,
            processors=source.processors,
            machine=self.sweep_machine(source),
            kinds=self.kinds,
            factors=self.factors,
            every=self.every,
            task_cost=self.args.task_cost,
            backend=self.args.backend,
        )

    def sweep_machine(self, source: Any) -> str:
        """The preset the what-if scales: the MP-1 for a grid, the calibrated CM-5 else."""
        if self.args.sweep_machine:
            return self.args.sweep_machine
        return "mp1" if source.counts.ndim == 2 else "cm5_calibrated"

    def picture_names(self, name: str, processors: str, grid: bool) -> list[Path]:
        """The pictures of one workload: its runs, and its what-if."""
        stem = f"{_slug(name)}-{processors}"
        names = [Path(f"balance-{stem}.png")]
        if self.kinds:
            machine = self.args.sweep_machine or ("mp1" if grid else "cm5_calibrated")
            names.append(Path(f"whatif-{stem}-{machine}.png"))
        return names

    def pictures(self) -> list[tuple[str, str, bool]]:
        """(name, processors, grid) of every workload, the renderer's before it is measured."""
        if self.args.render:
            from .balance_sources import render_name

            return [(render_name(self.args.render, self.args.loop), str(self.render_pes), False)]
        return [
            (s.name, p.processors, s.counts.ndim == 2)
            for s, p in zip(self.sources, self.plans, strict=True)
        ]

    def check_outputs(self) -> list[Path]:
        """The output paths, checked before any work; returns the files to be written."""
        from simd.balance.whatif import KINDS
        from simd.outputs import check_output_file, check_output_folder

        for kind in self.kinds:
            for part in kind.split("+"):
                if part not in KINDS:
                    raise ValueError(f"--sweep: unknown kind {part!r}; choose from scan, shift, "
                                     "router (or join them: scan+shift)")  # fmt: skip
        self.sweep_plans = [self.sweep_plan(s, p) if self.kinds else None
                            for s, p in zip(self.sources, self.plans, strict=True)]  # fmt: skip
        files = []
        if self.args.json:
            files.append(check_output_file(self.args.json, (".json",), example="balance.json"))
        if self.args.plots:
            folder = check_output_folder(self.args.plots)
            for picture in self.pictures():
                files += [folder / n for n in self.picture_names(*picture)]
        return files

    def load_render(self, runner: Any) -> None:
        """The renderer's workload, measured on its frame (after the outputs' checks) by
        rank 0 and shared with the others."""
        args = self.args
        if not args.render:
            return
        from .balance_sources import render_source

        try:
            view = tuple(float(v) for v in _split(args.view))
        except ValueError:
            raise ValueError(f"--view: {args.view!r} is not two angles (45,45)") from None
        if len(view) != 2:
            raise ValueError(f"--view: {args.view!r} is not two angles (45,45)")
        source = None
        if runner.root:
            source = render_source(args.render, size=args.size, view=view,
                                   magnification=args.magnification, image=args.image,
                                   loop=args.loop, processors=self.render_pes)  # fmt: skip
        source = runner.share(source)
        self.sources = [source]
        self.plans = [self.plan(source)]
        self.sweep_plans = [self.sweep_plan(source, self.plans[0]) if self.kinds else None]

    def run(self, runner: Any) -> None:
        """Every comparison and what-if, each row printed as soon as it is known."""
        say = runner.progress.write if runner.root else (lambda text: None)
        for source, plan, sweep_plan in zip(self.sources, self.plans, self.sweep_plans,
                                            strict=True):  # fmt: skip
            self.compare(runner, source, plan, say)
            if sweep_plan is not None:
                self.what_if(runner, sweep_plan, say)

    def compare(self, runner: Any, source: Any, plan: Any, say: Any) -> None:
        from simd.balance.comparison import Comparison, with_speedups

        layout = plan.table()
        say(_describe(source))
        say(layout.header())
        comparison = Comparison([], layout)
        self.comparisons.append(comparison)

        def row(i: int, run: Any) -> None:
            comparison.runs.append(run)
            with_speedups(comparison.runs)
            say(layout.row(run))

        runner.run(plan.jobs(), row)
        say("")

    def what_if(self, runner: Any, plan: Any, say: Any) -> None:
        say(plan.describe())
        first = runner.share(runner.run(plan.first_jobs()))
        second = runner.run(plan.second_jobs(first))
        if runner.root:
            s = plan.sweep(first, second)
            self.sweeps.append(s)
            for kind in s.kinds:
                for line in s.rows(kind):
                    say(line)
        say("")

    def write(self, interrupted: bool) -> None:
        """The JSON and (unless interrupted) the pictures, all written or none."""
        from simd.outputs import StagedOutputs

        from .balance_plots import plot_runs, plot_sweep

        args = self.args
        with StagedOutputs() as stage:
            if args.json:
                text = json.dumps(self.results(interrupted), indent=1, default=_plain)
                stage.path(args.json).write_text(text, encoding="utf-8")
            if args.plots and not interrupted:
                folder = Path(args.plots)
                sweeps = iter(self.sweeps)
                for source, plan, result in zip(
                    self.sources, self.plans, self.comparisons, strict=True
                ):
                    names = self.picture_names(
                        source.name, plan.processors, source.counts.ndim == 2
                    )
                    title = f"Balancing {source.name} on {plan.processors} processors"
                    plot_runs(result, stage.path(folder / names[0]), title)
                    if self.kinds:
                        plot_sweep(next(sweeps), stage.path(folder / names[1]))
        if args.json:
            kept = sum(len(c) for c in self.comparisons)
            print(f"wrote {args.json}" + (f" ({kept} runs done before the interruption)"
                                          if interrupted else ""))  # fmt: skip
        if args.plots:
            print(
                "no pictures: interrupted" if interrupted else f"wrote the pictures to {args.plots}"
            )

    def results(self, interrupted: bool = False) -> dict[str, Any]:
        """The JSON: the environment, the user's options, every workload's runs and
        what-ifs (as far as they went, if interrupted)."""
        from simd.info import environment

        workloads = []
        for source, result in zip(self.sources, self.comparisons, strict=False):
            counts = source.counts
            summary = {
                f"{r.machine}/{r.balancer}": {
                    "iterations": r.iterations,
                    "model_seconds": r.model_seconds,
                    "speedup": r.speedup,
                }
                for r in result
            }
            workloads.append(
                {
                    "name": source.name,
                    "shape": list(counts.shape),
                    "processors": result.runs[0].processors if result.runs else None,
                    "tasks": int(counts.sum()),
                    "max": int(counts.max()),
                    "mean": float(counts.mean()),
                    "balancers": summary,
                    "runs": result.to_dict()["runs"],
                }
            )
        return {
            "benchmark": "balance",
            "environment": environment(),
            "options": user_options(self.args),
            "interrupted": interrupted,
            "workloads": workloads,
            "sweeps": [s.to_dict() for s in self.sweeps],
        }


def user_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options of ``bench balance`` the user could give, from ``args`` (not what the
    command line's machinery keeps beside them).

    >>> p = argparse.ArgumentParser()
    >>> add_arguments(p)
    >>> args = p.parse_args(["--family", "zipf"])
    >>> args.func = print
    >>> sorted(user_options(args))[:3], "func" in user_options(args)
    (['backend', 'balancers', 'every'], False)
    """
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    names = {a.dest for a in parser._actions}
    return {k: v for k, v in vars(args).items() if k in names}


def _describe(source: Any) -> str:
    c = source.counts
    size = f"{c.size:,} grid points ({source.shape})" if c.ndim == 2 else f"{c.size:,} entries"
    return (
        f"{source.name}: {size}, {int(c.sum()):,} tasks, max {int(c.max()):,}, mean {c.mean():.3g}"
    )


def _plain(value: Any) -> Any:
    """JSON for NumPy numbers."""
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)
