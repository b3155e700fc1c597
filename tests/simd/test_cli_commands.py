"""``simd.cli`` finds the programs' subcommands through entry points and names none itself."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

import simd.cli
import simd.programs
from simd.cli import GROUP, build_parser, command_entry_points, main
from tests.entry_points import pyproject_commands

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ("renderer", "diffusion", "mimd")


def test_pyproject_declares_the_programs_commands():
    commands = pyproject_commands()
    assert commands == {
        "render": "renderer.cli.render:register",
        "isosurface": "renderer.cli.isosurface:register",
        "view": "renderer.cli.view:register",
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
    monkeypatch.setattr(simd.programs, "__file__", str(tmp_path / "simd" / "programs.py"))
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


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"], commands={})
    assert exc.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out == f"simd-emu {simd.cli.version()}"
    assert simd.cli.version() == simd.__version__


def test_version_without_installed_metadata_is_simd_version(monkeypatch):
    def not_found(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_found)
    assert simd.cli.version() == simd.__version__


#: Packages that ``--help`` must not import (each takes from 0.1 s to seconds to import).
HEAVY = (
    "numba",
    "llvmlite",
    "scipy",
    "skimage",
    "matplotlib",
    "trimesh",
    "cupy",
    "PIL",
    "tqdm",
    "imageio",
    "pydicom",
    "SimpleITK",
    "moderngl",
)


def test_building_the_parser_imports_nothing_heavy():
    script = (
        "import sys\n"
        "from simd.cli import build_parser\n"
        "from tests.entry_points import pyproject_commands\n"
        "build_parser(pyproject_commands()).format_help()\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.fixture
def needy_program(tmp_path, monkeypatch):
    """``needy.cli`` registers ``needy`` and ``group sub``, which need a missing package."""
    pkg = tmp_path / "needy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cli.py").write_text(
        "CALLS = []\n"
        "REQUIRES = {'data': ('no_such_dependency_xyz', 'json', 'no_such_either_xyz')}\n"
        "def run(args):\n"
        "    CALLS.append(args)\n"
        "    return 0\n"
        "def register(sub):\n"
        "    sub.add_parser('needy').set_defaults(func=run)\n"
        "    group = sub.add_parser('group').add_subparsers(dest='g', required=True)\n"
        "    group.add_parser('sub').set_defaults(func=run)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield {"needy": "needy.cli:register"}
    for name in ("needy", "needy.cli"):
        sys.modules.pop(name, None)


def test_missing_requirement_stops_the_command_before_its_handler(needy_program, capsys):
    for argv, name in ((["needy"], "simd-emu needy"), (["group", "sub"], "simd-emu group sub")):
        assert main(argv, commands=needy_program) == 2
        assert sys.modules["needy.cli"].CALLS == []
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [
            f"'{name}' needs the packages 'no_such_dependency_xyz' and 'no_such_either_xyz', "
            "which are not installed: pip install 'simd-emu[data]'"
        ]
    # --help still works: the check is on running, not on asking
    with pytest.raises(SystemExit) as exc:
        main(["needy", "--help"], commands=needy_program)
    assert exc.value.code == 0


def test_requirements_present_run_the_handler(needy_program, monkeypatch):
    monkeypatch.setattr(simd.programs, "_installed", lambda name: True)
    assert main(["group", "sub"], commands=needy_program) == 0
    assert len(sys.modules["needy.cli"].CALLS) == 1


def _data_extra_distributions() -> set[str]:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = set()
    for requirement in project["optional-dependencies"]["data"]:
        names.add(re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower())
    return names


@pytest.mark.parametrize("module", ["renderer.cli.render", "diffusion.cli", "mimd.cli"])
def test_each_program_declares_packages_of_the_data_extra(module):
    requires = importlib.import_module(module).REQUIRES
    assert set(requires) == {"data"} and requires["data"]
    owners = importlib.metadata.packages_distributions()
    data = _data_extra_distributions()
    for name in requires["data"]:
        assert name in owners, f"{name} is not installed here"
        assert {d.lower() for d in owners[name]} & data, f"{name} is not in the data extra"


@pytest.mark.parametrize(
    "argv",
    [["render"], ["render", "--table1"], ["diffuse"], ["bench", "mimd", "--quick"]],
)
def test_each_command_without_the_data_extra_says_so_in_one_line(
    argv, monkeypatch, tmp_path, capsys
):
    monkeypatch.chdir(tmp_path)
    missing = ("skimage", "PIL", "matplotlib")  # what the data extra brings
    monkeypatch.setattr(simd.programs, "_installed", lambda name: name not in missing)
    assert main(argv, commands=pyproject_commands()) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert f"'simd-emu {' '.join(a for a in argv if not a.startswith('-'))}' needs" in err
    assert err.strip().endswith("pip install 'simd-emu[data]'")
    assert list(tmp_path.iterdir()) == []  # nothing was written


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["render", "--bogus"], "simd-emu render: error: unrecognized arguments: --bogus (see "
         "simd-emu render --help)"),
        (["bench", "mimd", "--bogus"], "simd-emu bench mimd: error: unrecognized arguments: "
         "--bogus (see simd-emu bench mimd --help)"),
    ],
)  # fmt: skip
def test_an_unknown_option_points_to_its_commands_help(argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv, commands=pyproject_commands())
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == says


def test_an_out_folder_that_is_a_file_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("")
    for out in ("afile", "afile/sub"):
        assert main(["bench", "mimd", "--quick", "--out", out], commands=pyproject_commands()) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith("'afile' is a file, not a folder"), err


def test_info_shows_the_cache_folder_its_size_and_how_to_clear_it(tmp_path, monkeypatch, capsys):
    import json

    from renderer.datasets.builtin import load_dataset

    cache = tmp_path / "cache"
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(cache))
    assert main(["info"], commands={}) == 0
    assert f"cache   : {cache} (empty)\n" in capsys.readouterr().out
    load_dataset("balanced", 12)  # a data set built into the cache
    stored = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    assert stored > 0
    assert main(["info"], commands={}) == 0
    line = f"cache   : {cache} ({stored / 1e6:.1f} MB of data sets and GPU kernels; delete the "
    assert line + "folder to clear it)\n" in capsys.readouterr().out
    assert main(["info", "--json"], commands={}) == 0
    assert json.loads(capsys.readouterr().out)["cache"] == {"folder": str(cache), "bytes": stored}


def test_only_diffuse_needs_scikit_image(tmp_path, monkeypatch, capsys):
    """The built-in data sets are the machine's own marching cubes: rendering, and the
    benchmarks on the renderer's workloads, run without scikit-image (whose built-in images
    only ``diffuse`` reads)."""
    import sys

    from tests.entry_points import pyproject_commands

    monkeypatch.setitem(sys.modules, "skimage", None)  # not importable, as if not installed
    monkeypatch.chdir(tmp_path)
    commands = pyproject_commands()
    render = ["render", "--dataset-size", "16", "--size", "16", "--pes", "16", "--no-progress"]
    assert main([*render, "--backend", "numpy"], commands=commands) == 0
    mimd = ["bench", "mimd", "--quick", "--only", "gradient", "--no-plots"]
    assert main(mimd, commands=commands) == 0
    assert "skimage" not in capsys.readouterr().err
    assert main(["diffuse"], commands=commands) == 2
    assert "'simd-emu diffuse' needs the package 'skimage'" in capsys.readouterr().err
