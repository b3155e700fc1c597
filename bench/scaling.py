"""Strong and weak scaling of the machine across MPI ranks, and a model of 64-1024 GPUs.

For 1, 2, ... ranks (``--ranks 1 2 3 4``), this script launches itself under ``mpiexec``
and measures, on the slowest rank, the wall time of each part split into communication (the
time inside MPI calls, from the phase records) and the rest (compute):

* ``scan``: an add-scan of int64 (carries all-gathered) and of float32 (carries chained rank
  to rank, to stay bit for bit the one-rank result), ``--scan-size`` elements in all
  (strong) or per rank (weak);
* ``render``: one sort-last frame of the built-in isosurface (each rank renders its slab,
  binary-swap compositing of depth keys);
* ``diffusion``: dense Perona-Malik diffusion of an image split in row blocks, with a halo
  exchange per iteration.

It also measures the cost of one message between two ranks (ping-pong over sizes from 8 B
to 4 MB, fitted as latency + bytes / bandwidth) and, from that and the one-rank compute
rates, models the parts on 64 to 1024 ranks (one GPU each): compute divided by the ranks
plus the messages each part sends (the scan's carry all-gather or chain, the binary swap's
log2(P) rounds, two faces per diffusion iteration). On this 2-core machine more than two
ranks share cores, so measured times past two ranks show oversubscription, not the
method; the counts of messages and bytes are exact everywhere.

Run ``python -m bench.scaling [--quick] [--out DIR | --save]``; results go to
``scaling.json`` (``scaling-quick.json``) and ``scaling.png`` beside it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import ROOT, child_environment
from simd.outputs import (
    StagedOutputs,
    add_output_arguments,
    announce_replace_from_args,
    output_folder_from_args,
)

SAVE_DIR = ROOT / "bench" / "results"
PARTS = ("scan", "render", "diffusion")
#: Rank counts of the model (one GPU per rank).
MODEL_RANKS = (64, 128, 256, 512, 1024)


# ---------------------------------------------------------------------- worker (on ranks)


def _timed(m: Any, name: str, fn: Any, repeats: int) -> dict[str, float]:
    """Run ``fn`` ``repeats`` times in phase ``name``; the fastest run's wall and MPI time
    on the slowest rank, and its messages and bytes summed over the ranks."""
    best = None
    for _ in range(repeats):
        if m.ranks is not None:
            m.ranks.comm.Barrier()
        with m.phase(name) as record:
            fn()
            m.sync()
        row = np.array([record.wall, record.comm_wall], dtype=np.float64)
        counts = np.array([record.messages, record.message_bytes], dtype=np.int64)
        if m.ranks is not None:
            row = m.ranks.allreduce(row, "max")
            counts = m.ranks.allreduce(counts, "add")
        if best is None or row[0] < best[0][0]:
            best = (row, counts)
    (wall, comm), (messages, nbytes) = best
    return {
        "wall_s": float(wall),
        "comm_s": float(comm),
        "compute_s": float(max(wall - comm, 0.0)),
        "messages": int(messages),
        "message_bytes": int(nbytes),
    }


def _scan_part(m: Any, n_total: int, repeats: int) -> dict[str, Any]:
    lo, hi = m.ranks.bounds(n_total)[m.rank : m.rank + 2] if m.ranks else (0, n_total)
    rng = np.random.default_rng(1 + m.rank)
    ints = m.asarray(rng.integers(0, 100, size=int(hi - lo), dtype=np.int64))
    floats = m.asarray(rng.random(int(hi - lo), dtype=np.float32))
    return {
        "elements": n_total,
        "int64": _timed(m, "scan-int64", lambda: m.scan(ints, "add"), repeats),
        "float32": _timed(m, "scan-float32", lambda: m.scan(floats, "add"), repeats),
    }


def _render_part(m: Any, size: str, image: int, repeats: int, weak: bool) -> dict[str, Any]:
    from renderer import load_dataset_slab, render
    from renderer.datasets.builtin import SIZES

    resolution = SIZES.get(size) or int(size)
    if weak:  # triangles grow with the surface: the square of the grid's resolution
        resolution = round(resolution * np.sqrt(m.nranks))
    share = load_dataset_slab("balanced", resolution, m.rank, m.nranks)
    frame = {}

    def one() -> None:
        frame["f"] = render(share, size=image, machine=m)

    result = _timed(m, "render", one, repeats)
    # The per-pixel stages (shading, compositing) do not shrink with more ranks: the model
    # keeps them whole and divides the rest.
    pixel_s = 0.0
    if m.is_root:
        stages = frame["f"].stats.stages
        pixel_s = sum(stages[name].wall for name in ("shading", "composite") if name in stages)
    result["pixel_s"] = float(m.ranks.bcast(np.array([pixel_s]), 0)[0]) if m.ranks else pixel_s
    triangles = (
        m.ranks.allreduce(np.array([len(share.faces)]), "add")[0] if m.ranks else len(share.faces)
    )
    return {"resolution": resolution, "triangles": int(triangles), "image": image, **result}


def _diffusion_part(m: Any, shape: tuple[int, int], niter: int, repeats: int) -> dict[str, Any]:
    from diffusion import anisotropic_diffusion

    rng = np.random.default_rng(5)
    image = (rng.random(shape, dtype=np.float32) * 255) if m.is_root else None
    block = m.scatter(image)
    result = _timed(
        m,
        "diffusion",
        lambda: anisotropic_diffusion(block, niter, kappa=20, gamma=0.2, machine=m),
        repeats,
    )
    return {"shape": list(shape), "niter": niter, **result}


def _ping_pong(m: Any) -> list[dict[str, float]]:
    """One-way time of a message between ranks 0 and 1, by size (empty on one rank)."""
    if m.nranks < 2:
        return []
    comm = m.ranks.comm
    rows = []
    for power in range(3, 23, 2):
        buf = np.zeros(2**power, dtype=np.uint8)
        reps = 50 if power < 16 else 10
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(reps):
            if m.rank == 0:
                comm.Send(buf, dest=1)
                comm.Recv(buf, source=1)
            elif m.rank == 1:
                comm.Recv(buf, source=0)
                comm.Send(buf, dest=0)
        seconds = (time.perf_counter() - start) / (2 * reps)
        rows.append({"bytes": 2**power, "seconds": seconds})
    return rows if m.rank == 0 else []


def worker(args: argparse.Namespace) -> None:
    from simd import Machine
    from simd.launch import world

    m = Machine(pes=512, backend=args.backend, comm=world())
    record: dict[str, Any] = {"ranks": m.nranks, "mode": args.mode}
    scale = m.nranks if args.mode == "weak" else 1
    if "scan" in args.parts:
        record["scan"] = _scan_part(m, args.scan_size * scale, args.repeats)
    if "render" in args.parts:
        record["render"] = _render_part(
            m, args.render_size, args.image, args.repeats, args.mode == "weak"
        )
    if "diffusion" in args.parts:
        rows = args.diffusion_rows * scale
        record["diffusion"] = _diffusion_part(
            m, (rows, args.diffusion_cols), args.niter, args.repeats
        )
    if args.mode == "strong":
        record["ping_pong"] = _ping_pong(m)
    if m.is_root:
        Path(args.worker).write_text(json.dumps(record))


# ---------------------------------------------------------------------- driver


def _mpiexec() -> str:
    from simd.launch import find_mpiexec

    found = find_mpiexec()
    if found is None:
        print("python -m bench.scaling: no mpiexec: pip install 'simd-emu[mpi]'", file=sys.stderr)
        raise SystemExit(2)
    return found


def launch(ranks: int, mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run the worker on ``ranks`` ranks; its record."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "record.json"
        command = [
            _mpiexec(), "--oversubscribe", "-n", str(ranks), sys.executable, "-m", "bench.scaling",
            "--worker", str(out), "--mode", mode, "--parts", *args.parts,
            "--scan-size", str(args.scan_size), "--render-size", args.render_size,
            "--image", str(args.image), "--diffusion-rows", str(args.diffusion_rows),
            "--diffusion-cols", str(args.diffusion_cols), "--niter", str(args.niter),
            "--repeats", str(args.repeats), "--backend", args.backend,
        ]  # fmt: skip
        subprocess.run(command, check=True, timeout=args.timeout, env=child_environment())
        return json.loads(out.read_text())


def fit_messages(rows: list[dict[str, float]]) -> dict[str, float]:
    """Latency (s) and bandwidth (bytes/s) fitted to ping-pong rows by least squares on
    relative errors (so that the small messages, which give the latency, count as much as
    the large ones, which give the bandwidth).

    Examples
    --------
    >>> rows = [{"bytes": b, "seconds": 1e-6 + b / 1e9} for b in (8, 1024, 2**20)]
    >>> fit = fit_messages(rows)
    >>> round(fit["latency_s"] * 1e6, 3), round(fit["bandwidth_Bps"] / 1e9, 3)
    (1.0, 1.0)
    """
    b = np.array([r["bytes"] for r in rows], dtype=np.float64)
    t = np.array([r["seconds"] for r in rows], dtype=np.float64)
    a = np.stack([np.ones_like(b), b], axis=1) / t[:, None]
    (latency, per_byte), *_ = np.linalg.lstsq(a, np.ones_like(t), rcond=None)
    return {
        "latency_s": max(float(latency), 0.0),
        "bandwidth_Bps": 1.0 / max(float(per_byte), 1e-15),
    }


def model(one_rank: dict[str, Any], fit: dict[str, float]) -> dict[str, list[dict[str, float]]]:
    """Strong scaling of each part on 64-1024 ranks: one-rank compute / P (the render's
    per-pixel stages kept whole) + the messages each part sends, at the fitted cost."""
    alpha, beta = fit["latency_s"], 1.0 / fit["bandwidth_Bps"]
    out: dict[str, list[dict[str, float]]] = {}
    for p in MODEL_RANKS:
        rounds = float(np.ceil(np.log2(p)))
        parts: dict[str, tuple[float, float]] = {}
        if "scan" in one_rank:
            compute = one_rank["scan"]["int64"]["compute_s"] / p
            # Carries all-gathered: log2(P) rounds of recursive doubling, 16 B per rank.
            parts["scan int64"] = (compute, rounds * alpha + 16 * p * beta)
            compute = one_rank["scan"]["float32"]["compute_s"] / p
            # Exact float carries go rank to rank: P - 1 messages in sequence.
            parts["scan float32"] = (compute, (p - 1) * alpha)
        if "render" in one_rank:
            r = one_rank["render"]
            pixels = r["image"] ** 2
            # Binary swap: log2(P) rounds halving the region (key, colour and face: 24 B
            # per pixel), then the gather of the final regions on rank 0.
            comm = rounds * alpha + 24 * pixels * (1 - 1 / p) * beta * 2
            pixel_s = r.get("pixel_s", 0.0)
            parts["render"] = ((r["compute_s"] - pixel_s) / p + pixel_s, comm)
        if "diffusion" in one_rank:
            d = one_rank["diffusion"]
            face = 4 * d["shape"][1]
            parts["diffusion"] = (d["compute_s"] / p, d["niter"] * 2 * (alpha + face * beta))
        for name, (compute, comm) in parts.items():
            out.setdefault(name, []).append(
                {"ranks": p, "compute_s": compute, "comm_s": comm, "total_s": compute + comm}
            )
    return out


def _parts_of(record: dict[str, Any]) -> dict[str, dict[str, float]]:
    rows = {}
    if "scan" in record:
        rows["scan int64"] = record["scan"]["int64"]
        rows["scan float32"] = record["scan"]["float32"]
    for name in ("render", "diffusion"):
        if name in record:
            rows[name] = record[name]
    return rows


def table(runs: dict[str, list[dict[str, Any]]]) -> str:
    lines = [
        f"{'mode':<7} {'part':<13} {'ranks':>5} {'wall s':>9} {'compute s':>10} {'MPI s':>9}"
        f" {'messages':>9} {'MB':>8} {'t1/tP':>8}"
    ]
    for mode, records in runs.items():
        base = _parts_of(records[0])
        for record in records:
            for name, row in _parts_of(record).items():
                # Strong scaling: the speedup; weak scaling: the efficiency.
                speedup = base[name]["wall_s"] / row["wall_s"] if row["wall_s"] else float("nan")
                lines.append(
                    f"{mode:<7} {name:<13} {record['ranks']:>5} {row['wall_s']:>9.4f}"
                    f" {row['compute_s']:>10.4f} {row['comm_s']:>9.4f} {row['messages']:>9}"
                    f" {row['message_bytes'] / 1e6:>8.2f} {speedup:>8.2f}"
                )
    return "\n".join(lines)


def plot(runs: dict[str, list[dict[str, Any]]], modelled: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
    for ax, mode in zip(axes[:2], ("strong", "weak"), strict=True):
        records = runs.get(mode, [])
        if not records:
            ax.set_visible(False)
            continue
        names = list(_parts_of(records[0]))
        width = 0.8 / max(len(names), 1)
        for i, name in enumerate(names):
            ranks = (
                np.array([r["ranks"] for r in records], dtype=float) + (i - len(names) / 2) * width
            )
            comp = [_parts_of(r)[name]["compute_s"] for r in records]
            comm = [_parts_of(r)[name]["comm_s"] for r in records]
            bars = ax.bar(ranks, comp, width, label=f"{name}: compute")
            ax.bar(ranks, comm, width, bottom=comp, color=bars[0].get_facecolor(), alpha=0.45,
                   hatch="//", label=f"{name}: MPI")  # fmt: skip
        ax.set_xlabel("ranks")
        ax.set_ylabel("wall seconds (slowest rank)")
        ax.set_xticks([r["ranks"] for r in records])
        ax.set_title(f"{mode} scaling, measured (CPU ranks on this machine)")
        ax.legend(fontsize=7)
    ax = axes[2]
    for name, rows in modelled.items():
        ax.loglog([r["ranks"] for r in rows], [r["total_s"] for r in rows], "o-", label=name)
        ax.loglog([r["ranks"] for r in rows], [r["comm_s"] for r in rows], ":", color="grey")
    ax.set_xlabel("ranks (one GPU each, modelled)")
    ax.set_ylabel("seconds (dotted: MPI part)")
    ax.set_title("model: one-rank compute / P + measured message costs")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def measure(
    args: argparse.Namespace, stage: StagedOutputs, picture: Path, parameters: dict
) -> dict[str, Any]:
    """Launch every rank count in both modes, print the table, stage the plot
    ``picture``; the record for the JSON."""
    _mpiexec()  # before the first launch prints "strong scaling on 1 rank(s) ..."
    start = time.perf_counter()
    runs: dict[str, list[dict[str, Any]]] = {"strong": [], "weak": []}
    for mode in runs:
        for ranks in args.ranks:
            print(f"{mode} scaling on {ranks} rank(s) ...", flush=True)
            runs[mode].append(launch(ranks, mode, args))
    pings = next((r["ping_pong"] for r in runs["strong"] if r.get("ping_pong")), [])
    fit = fit_messages(pings) if pings else {"latency_s": 0.0, "bandwidth_Bps": float("inf")}
    modelled = model(runs["strong"][0], fit)
    text = table(runs)
    print(text)
    print(
        f"message cost (ping-pong, ranks 0-1): latency {fit['latency_s'] * 1e6:.1f} us, "
        f"bandwidth {fit['bandwidth_Bps'] / 1e9:.2f} GB/s"
    )
    plot(runs, modelled, stage.path(picture))
    from simd.info import environment

    return {
        "benchmark": "scaling",
        "quick": args.quick,
        "environment": environment(),
        "parameters": {**parameters, "parts": args.parts, "backend": args.backend},
        "runs": runs,
        "ping_pong": pings,
        "message_fit": fit,
        "model": modelled,
        "table": text,
        "wall_seconds": time.perf_counter() - start,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scaling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 and 2 ranks")
    parser.add_argument("--ranks", type=int, nargs="+", default=None, help="rank counts")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument(
        "--scan-size", type=int, default=None, help="scan elements (per rank: weak)"
    )
    parser.add_argument(
        "--render-size", default=None, help="data set of the render part: 250k, 1m, ... or a grid"
    )
    parser.add_argument("--image", type=int, default=None, help="image side of the render part")
    parser.add_argument("--diffusion-rows", type=int, default=None)
    parser.add_argument("--diffusion-cols", type=int, default=None)
    parser.add_argument("--niter", type=int, default=None, help="diffusion iterations")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per launch")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", default="strong", help=argparse.SUPPRESS)
    add_output_arguments(parser, save_dir=SAVE_DIR)
    args = parser.parse_args(argv)
    quick = args.quick
    defaults = {
        "ranks": [1, 2] if quick else [1, 2, 3, 4],
        "scan_size": 2**18 if quick else 2**22,
        "render_size": "48" if quick else "250k",
        "image": 128 if quick else 512,
        "diffusion_rows": 128 if quick else 1024,
        "diffusion_cols": 128 if quick else 1024,
        "niter": 5 if quick else 20,
        "repeats": 2 if quick else 3,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.worker:
        worker(args)
        return 0
    outdir = output_folder_from_args(parser, args, save_dir=SAVE_DIR)
    stem = "scaling-quick" if quick else "scaling"
    out, picture = outdir / f"{stem}.json", outdir / f"{stem}.png"
    announce_replace_from_args(parser, args, [out, picture])
    with StagedOutputs() as stage:
        record = measure(args, stage, picture, {k: getattr(args, k) for k in defaults})
        stage.path(out).write_text(json.dumps(record, indent=1, default=float))
    print(f"wrote {out} and {picture}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
