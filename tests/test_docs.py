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
