"""``simd.cli`` finds the programs' subcommands through entry points and names none itself."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import sys
from pathlib import Path

import pytest

import simd.cli
from simd.cli import GROUP, build_parser, command_entry_points, main
from tests.entry_points import pyproject_commands

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("renderer", "diffusion", "mimd")


def test_pyproject_declares_the_three_programs():
    commands = pyproject_commands()
    assert commands == {
        "render": "renderer.cli:register",
        "diffuse": "diffusion.cli:register",
        "bench": "mimd.cli:register",
    }
    for target in commands.values():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_help_lists_every_declared_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"], commands=pyproject_commands())
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ("info", "render", "diffuse", "bench"):
        assert f"    {command} " in out
    parser = build_parser(pyproject_commands())
    args = parser.parse_args(["bench", "mimd", "--quick"])
    assert args.func.__module__ == "mimd.cli"


def test_installed_metadata_wins_over_the_source_tree(monkeypatch):
    eps = [importlib.metadata.EntryPoint("zeta", "mimd.cli:register", GROUP)]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: eps)
    assert command_entry_points() == {"zeta": "mimd.cli:register"}


def test_without_metadata_the_source_trees_pyproject_is_read(monkeypatch):
    # a checkout run with PYTHONPATH=. (or installed before the group existed)
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [])
    assert command_entry_points() == dict(sorted(pyproject_commands().items()))


def test_without_metadata_or_pyproject_only_info(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [])
    monkeypatch.setattr(simd.cli, "__file__", str(tmp_path / "simd" / "cli.py"))
    assert command_entry_points() == {}
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "info" in out and "render" not in out


@pytest.fixture
def fake_programs(tmp_path, monkeypatch):
    """``needsdep.cli`` imports a package that is not installed; ``nothere`` does not exist."""
    pkg = tmp_path / "needsdep"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text("import no_such_dependency_xyz\n\ndef register(sub):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield {"fancy": "needsdep.cli:register", "ghost": "nothere.cli:register"}
    for name in ("needsdep", "needsdep.cli"):
        sys.modules.pop(name, None)


def test_missing_dependency_keeps_the_command_and_names_the_package(fake_programs, capsys):
    with pytest.raises(SystemExit):
        main(["--help"], commands=fake_programs)
    out = capsys.readouterr().out
    assert "fancy" in out and "no_such_dependency_xyz" in out
    # a program that is not part of this installation at all is left out
    assert "ghost" not in out
    # with or without options, --help included: one line, status 2
    for rest in ([], ["--mesh", "x.ply", "-v"], ["--help"]):
        assert main(["fancy", *rest], commands=fake_programs) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            "'simd-emu fancy' needs the package 'no_such_dependency_xyz', which is not "
            "installed: pip install 'simd-emu[data]'"
        ]


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("package", ["simd", "kernels"])
def test_the_machine_imports_no_program(package):
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for name in _imported_modules(path)
        if name.split(".")[0] in PROGRAMS
    ]
    assert offenders == []
