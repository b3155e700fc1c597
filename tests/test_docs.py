"""README and docs/: links resolve inside the repository; the sample files it names exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve_inside_the_repository(page):
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8"))
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        target = (page.parent / link).resolve()
        assert target.is_relative_to(ROOT), f"{page.name}: {link} leaves the repository"
        assert target.exists(), f"{page.name}: {link} does not exist"


def test_readme_links_the_architecture_page():
    assert "(docs/architecture.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_sample_files(tmp_path, capsys):
    trimesh = pytest.importorskip("trimesh")
    pydicom_data = pytest.importorskip("pydicom.data")
    assert Path(pydicom_data.get_testdata_file("CT_small.dcm")).is_file()
    from simd.cli import main

    mesh = tmp_path / "torus.ply"
    trimesh.creation.torus(1, 0.4).export(mesh)
    out = tmp_path / "torus.png"
    argv = ["render", "--mesh", str(mesh), "--size", "48", "--backend", "numpy", "-o", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {out}: 2048 triangles")


def _python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


#: Pages whose Python blocks run as written in one process (the MPI page's under mpiexec).
RUNNABLE = [ROOT / "README.md", *(ROOT / "docs" / n for n in ("machine.md", "renderer.md",
                                                           "diffusion.md"))]  # fmt: skip


@pytest.mark.parametrize("page", RUNNABLE, ids=lambda p: p.name)
def test_python_blocks_run_as_written(page, tmp_path, monkeypatch):
    pytest.importorskip("skimage")
    monkeypatch.chdir(tmp_path)
    blocks = _python_blocks(page)
    assert blocks, f"{page.name} has no Python block"
    for block in blocks:
        exec(compile(block, f"{page.name} block", "exec"), {"__name__": "__main__"})  # noqa: S102


@pytest.mark.mpi
def test_the_mpi_page_runs_under_mpiexec(tmp_path):
    from tests.mpi_support import run_ranks

    (block,) = _python_blocks(ROOT / "docs" / "mpi.md")
    script = tmp_path / "smooth.py"
    script.write_text(block, encoding="utf-8")
    done = run_ranks(3, f"-m mpi4py {script}", timeout=300, cwd=tmp_path)
    assert done.stdout.split() == ["(512,", "512)", "(512,", "512)"], done.stdout


def test_the_readme_is_for_users():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    commands = re.findall(r"^```bash\n(.*?)```", text, re.S | re.M)[0].splitlines()
    assert commands[0].startswith('pip install ".[data]" && simd-emu render ')
    assert commands[1].startswith('pip install ".[test]" && python -m pytest -n 2 ')


#: What no reader outside the project can know: our file numbers of the papers, and the
#: numbers of our issues. Built here so that this file does not contain them.
PRIVATE = re.compile("|".join([r"[Ss]eed" + r" 00\d", r"seeds/" + r"0", r"\b[Ii]ssue" + r" \d+",
                               r"[Ii]ssue" + r"'s goal"]))  # fmt: skip


def test_no_private_references_anywhere():
    import subprocess

    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    found = []
    for name in files:
        path = ROOT / name
        if path.suffix in (".png", ".gif", ".npz", ".npy") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{name}: {m.group(0)}" for m in PRIVATE.finditer(text)]
    assert not found, found[:20]


# ------------------------------------------------- the program outputs the pages quote

#: Quoted blocks of program output that no test here can produce, and why.
NOT_RUN = {
    ("gpu.md", "backend : cupy"): "what simd-emu info prints on a GPU machine",
    ("view.md", "$ simd-emu view"): "the viewer serves until it is stopped; its lines are "
    "tests/renderer/test_viewer_cli.py's",
}

#: Quoted runs that take more than a few seconds (they build the 250k data sets, or run
#: whole benchmarks): marked slow.
SLOW = {
    "simd-emu render": "builds the 250k data set, renders 512 x 512",
    "simd-emu render --dataset oilwell -o frame.png": "builds the 246k data set",
    "simd-emu warmup": "builds the 250k data set, compiles every kernel",
    "simd-emu bench mimd --quick": "compiles the MIMD engine and the balancers (minutes cold)",
}

#: What differs from run to run, masked in the quote and the output alike: wall times, and
#: per command what depends on the machine.
TIMES = (re.compile(r"\b(in|wall) \d+(\.\d+)? s\b"), r"\1 <time> s")
MASKS = {
    # the machine's own values; the backend is kept (the quote's: no GPU)
    "simd-emu info": [(re.compile(r"^(gpu|cpu|python|mpi|cache)(\s*): .*"), r"\1\2: <machine>")],
    # the wall-clock column, just before the speed-up
    "simd-emu bench balance": [(re.compile(r"\S+(\s+\d+(\.\d+)?x(\s|$))"), r"<time>\1")],
}
#: Lines a command prints only on some machines (CuPy's NVRTC, Numba's CUDA target).
OPTIONAL = {"simd-emu info": re.compile(r"^(nvrtc|numba)\s*:")}


def _text_blocks(page: Path) -> list[tuple[int, list[str]]]:
    text = page.read_text(encoding="utf-8")
    return [
        (text[: m.start()].count("\n") + 1, m.group(1).rstrip("\n").split("\n"))
        for m in re.finditer(r"^```text\n(.*?)^```", text, re.S | re.M)
    ]


def _quoted_runs() -> list:
    runs = []
    for page in PAGES:
        for line, block in _text_blocks(page):
            commands = [b[2:] for b in block if b.startswith("$ simd-emu ")]
            if (page.name, block[0]) in NOT_RUN or not commands:  # the next test says which
                continue
            command = commands[-1]
            marks = [pytest.mark.slow] if command in SLOW else []
            runs.append(pytest.param(page.name, block, id=f"{page.name}:{line}", marks=marks))
    return runs


def test_every_quoted_output_starts_with_its_command():
    """So that the test below runs it; what cannot be run here says why in NOT_RUN."""
    for page in PAGES:
        for line, block in _text_blocks(page):
            if (page.name, block[0]) in NOT_RUN:
                continue
            shown = f"{page.name}:{line}"
            assert block[0].startswith("$ "), f"{shown}: a quoted output without its command"
            simd = [b for b in block if b.startswith("$ simd-emu ")]
            assert len(simd) == 1, f"{shown}: one simd-emu command a block"
            assert block[-1] != simd[0], f"{shown}: no output"


def _masked(lines: list[str], command: str) -> list[str]:
    pattern, replacement = TIMES
    masks = next((m for prefix, m in MASKS.items() if command.startswith(prefix)), [])
    optional = next((o for prefix, o in OPTIONAL.items() if command.startswith(prefix)), None)
    out = []
    for line in lines:
        if optional is not None and optional.match(line):
            continue
        line = pattern.sub(replacement, line)
        for mask, by in masks:
            line = mask.sub(by, line)
        out.append(" ".join(line.split()))  # columns may widen with other times
    while out and not out[-1]:
        out.pop()
    return out


def _quoted_in(quote: list[str], output: list[str]) -> bool:
    """Whether ``output`` is ``quote``, where a line ``...`` stands for any lines.

    >>> _quoted_in(["a", "...", "d"], ["a", "b", "c", "d"]), _quoted_in(["a", "c"], ["a", "b", "c"])
    (True, False)
    """
    pattern = "".join("(?:.*\n)*" if q == "..." else re.escape(q) + "\n" for q in quote)
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in output)) is not None


@pytest.mark.parametrize(("page", "block"), _quoted_runs())
def test_quoted_outputs_are_what_the_program_prints(page, block, tmp_path, monkeypatch, capsys):
    """Every program output the README and the docs quote is what the program prints now,
    the times masked: the setup lines of the block (``$ printf ...``, ``$ python -c ...``)
    run in a shell, then the ``simd-emu`` command, in an empty folder."""
    import os
    import shlex
    import subprocess
    import sys

    from simd.cli import main

    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                                 os.environ.get("PATH", "")]))  # fmt: skip
    at = next(i for i, b in enumerate(block) if b.startswith("$ simd-emu "))
    for setup in block[:at]:
        subprocess.run(setup[2:], shell=True, check=True, cwd=tmp_path, env=env, timeout=300)  # noqa: S602
    command = block[at][2:]
    status = main(shlex.split(command)[1:])
    captured = capsys.readouterr()
    printed = (captured.out if status == 0 else captured.err).splitlines()
    quote, output = _masked(block[at + 1 :], command), _masked(printed, command)
    assert _quoted_in(quote, output), (
        f"{page}: `{command}` printed (masked):\n" + "\n".join(output)
        + "\n\nthe page quotes (masked):\n" + "\n".join(quote)
    )  # fmt: skip
