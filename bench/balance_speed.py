"""How long the balancing benchmarks take on this host, and the MIMD engine's events a second
beside SimGrid's, in one run.

1. ``simd-emu bench balance --family zipf --pes 1024 --mean 78`` (79,815 tasks) and
   ``--pes 4096 --mean 73`` (299,909 tasks): every balancer on every machine and the MIMD
   baselines. The whole command's wall time, as a user waits for it (a process of its own:
   imports and loading the compiled engine count; its compilation, once per install, does
   not: an untimed small run comes first), against the goals of 20 s and 60 s; and each
   MIMD baseline's events and events a second.
2. ``simd-emu bench mimd --quick``: its wall time, against the goal of 10 s.
3. The engine beside SimGrid on fine-grained task sets (:mod:`mimd.engine_check`): the
   makespans, their difference, and the same runs' events a second on each simulator.

Run ``python -m bench.balance_speed [--quick] [--without-simgrid] [--out DIR | --save]``.
With ``--quick``: 1,024 processors only, and the quick SimGrid set. SimGrid must be
installed unless ``--without-simgrid`` (one line before any run otherwise). Writes
``balance_speed.json`` (``balance_speed-quick.json``) with the machine and versions, and
``balance_speed.txt``, the tables, to the current folder, ``--out DIR``, or with ``--save``
this source tree's ``bench/results``.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import ROOT
from simd.info import environment
from simd.outputs import (
    StagedOutputs,
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
)

SAVE_DIR = ROOT / "bench" / "results"
#: (processors, mean tasks per processor, goal in seconds) of ``bench balance``.
BALANCE = ((1024, 78, 20.0), (4096, 73, 60.0))
#: The goal of ``bench mimd --quick``, in seconds.
MIMD_QUICK = 10.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.balance_speed", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1,024 processors only")
    parser.add_argument("--backend", default="numpy", choices=("numpy", "cupy", "auto"),
                        help="the emulated machines' backend (numpy)")  # fmt: skip
    parser.add_argument("--without-simgrid", action="store_true",
                        help="leave out the comparison with SimGrid")  # fmt: skip
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    out = output_folder_from_args(parser, args, save_dir=SAVE_DIR)
    if not args.without_simgrid:
        from mimd.on_simgrid import SimGridMissing, require

        try:
            require()
        except SimGridMissing as exc:
            parser.exit(2, f"python -m bench.balance_speed: {exc}; or --without-simgrid\n")
    tag = "-quick" if args.quick else ""
    files = {"json": out / f"balance_speed{tag}.json", "text": out / f"balance_speed{tag}.txt"}
    announce_replace_from_args(parser, args, files.values())
    with StagedOutputs() as stage:
        record = measure(args, stage, files)
        record["environment"] = environment()
        stage.path(files["json"]).write_text(json.dumps(record, indent=1), encoding="utf-8")
    print(f"wrote {files['json']} and the tables beside it")
    return 0


def _command(argv: list[str], timeout: float = 900) -> float:
    """Wall seconds of ``simd-emu ARGV`` in a process of its own."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "simd.cli", *argv], check=True, timeout=timeout,
                   stdout=subprocess.DEVNULL, cwd=tempfile.gettempdir())  # fmt: skip
    return time.perf_counter() - t0


def measure(args: argparse.Namespace, stage: StagedOutputs, files: dict) -> dict[str, Any]:
    """The three parts; their tables printed and written (staged) to ``files["text"]``."""
    log = io.StringIO()

    def say(text: str) -> None:
        print(text, flush=True)
        log.write(text + "\n")

    _command(["bench", "balance", "--family", "zipf", "--pes", "16", "--quiet"])  # compile once
    balance = []
    with tempfile.TemporaryDirectory() as tmp:
        for p, mean, goal in BALANCE[:1] if args.quick else BALANCE:
            out = Path(tmp) / f"balance-{p}.json"
            wall = _command(["bench", "balance", "--family", "zipf", "--pes", str(p), "--mean",
                             str(mean), "--backend", args.backend, "--quiet", "--json",
                             str(out)])  # fmt: skip
            data = json.loads(out.read_text())
            balance.append(_balance_row(data, p, goal, wall))
        mimd_wall = _command(["bench", "mimd", "--quick", "--no-plots", "--out", tmp])
    say("Wall time of the balancing benchmarks on this host")
    say(f"{'command':<52} {'tasks':>8} {'wall s':>7} {'goal s':>7}")
    for r in balance:
        say(f"{r['command']:<52} {r['tasks']:>8,} {r['wall']:>7.1f} {r['goal']:>7.0f}")
    say(f"{'simd-emu bench mimd --quick':<52} {'':>8} {mimd_wall:>7.1f} {MIMD_QUICK:>7.0f}")
    for r in balance:
        say(f"\nThe MIMD baselines of {r['command']}")
        say(f"{'policy':<18} {'events':>11} {'wall s':>7} {'events/s':>10}")
        for b in r["baselines"]:
            say(f"{b['policy']:<18} {b['events']:>11,} {b['wall']:>7.2f} "
                f"{b['events_per_s']:>10.3g}")  # fmt: skip
    record: dict[str, Any] = {
        "benchmark": "balance_speed",
        "quick": args.quick,
        "balance": balance,
        "mimd_quick": {"wall": mimd_wall, "goal": MIMD_QUICK},
    }
    if not args.without_simgrid:
        record["simgrid"] = _simgrid(args.quick, say)
    stage.path(files["text"]).write_text(log.getvalue(), encoding="utf-8")
    return record


def _balance_row(data: dict, p: int, goal: float, wall: float) -> dict[str, Any]:
    (w,) = data["workloads"]
    baselines = []
    for r in w["runs"]:
        if r["clock"] == "simulated":
            events = r["detail"]["events"]
            baselines.append({"policy": r["balancer"], "events": events,
                              "wall": r["wall_seconds"],
                              "events_per_s": events / r["wall_seconds"]})  # fmt: skip
    mean = data["options"]["mean"]
    return {
        "command": f"simd-emu bench balance --family zipf --pes {p} --mean {mean:g}",
        "processors": p,
        "tasks": w["tasks"],
        "wall": wall,
        "goal": goal,
        "runs": len(w["runs"]),
        "baselines": baselines,
    }


def _simgrid(quick: bool, say) -> dict[str, Any]:
    from mimd.engine_check import agreement

    r = agreement(quick=quick)
    say("\nThe engine beside SimGrid, the same runs (cluster network)")
    say(f"{'task set':<14} {'policy':<18} {'engine s':>9} {'SimGrid s':>9} {'diff %':>7} "
        f"{'events':>7} {'engine ev/s':>11} {'SimGrid ev/s':>12}")  # fmt: skip
    for x in r["rows"]:
        say(f"{x['task_set']:<14} {x['policy']:<18} {x['engine']:>9.5f} {x['simgrid']:>9.5f} "
            f"{x['difference_pct']:>+7.2f} {x['events']:>7} "
            f"{x['engine_events_per_s']:>11.3g} {x['simgrid_events_per_s']:>12.3g}")  # fmt: skip
    engine = f"{r['engine_wall']:.3f} s ({r['engine_events_per_s']:.3g} a second)"
    simgrid = f"{r['simgrid_wall']:.2f} s ({r['simgrid_events_per_s']:.3g} a second)"
    say(f"largest difference: {r['max_abs_difference_pct']:.2f} %; all {r['events']:,} "
        f"events: the engine {engine}, SimGrid {simgrid}")  # fmt: skip
    return r


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
