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
