"""What a user meets on the first run of a machine, GPU or not: ``simd-emu warmup``, the
one-time work said once, the MPI layer without an MPI library, and the automatic backend
that says why it is not the GPU."""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import simd.cli
from kernels import counting
from simd import backend
from simd.errors import GPUUnavailableWarning
from tests.entry_points import pyproject_commands
from tests.mpi_support import run_ranks

ROOT = Path(__file__).resolve().parents[2]


def test_warmup_runs_every_programs_warm_up(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(tmp_path))
    assert simd.cli.main(["warmup", "--backend", "counting"], commands={}) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "warming up on cupy (the counting stand-in)"
    assert [line.split()[0] for line in out[1:-1]] == ["bench", "diffuse", "render"]
    assert "241498 triangles" in out[3] and out[-1].startswith("ready in ")
    assert any(p.name.startswith("ml-balanced-128") for p in tmp_path.iterdir())


def test_the_warm_ups_are_declared_and_exist():
    import importlib

    from simd.cli import entry_points
    from simd.warmup import GROUP

    found = entry_points(GROUP)
    assert set(found) == {"render", "diffuse", "bench"}
    for target in found.values():
        module, _, function = target.partition(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_warmup_refuses_an_unknown_backend(capsys):
    assert simd.cli.main(["warmup", "--backend", "tpu"], commands={}) == 2
    assert "unknown backend 'tpu'" in capsys.readouterr().err


@pytest.fixture
def one_time_notes():
    """The CLI's reporting of one-time work, as while a command runs."""
    with simd.cli._user_reporting(say_once=True):
        yield


def test_one_time_work_is_said_once(one_time_notes, capsys):
    from kernels import compiles

    for _ in range(3):
        logging.getLogger("simd_emu.compile").info(compiles.MESSAGE)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "simd-emu: compiling kernels for this machine (once: later runs load them from the cache)"
    ]


def test_building_a_data_set_is_said_once(one_time_notes, monkeypatch, tmp_path, capsys):
    from renderer.datasets.builtin import load_dataset

    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(tmp_path))
    load_dataset("balanced", 10)
    load_dataset("balanced", 10)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("simd-emu: building the built-in data set")


def test_mpi4py_without_an_mpi_library_is_a_note_not_a_crash():
    script = (
        "import sys\n"
        "sys.modules['mpi4py.MPI'] = None  # mpi4py installed, its MPI library not loadable\n"
        "import mpi4py\n"
        "from simd.cli import main\n"
        "from simd.launch import mpi_status\n"
        "print(mpi_status())\n"
        "raise SystemExit(main(['info']))\n"
    )
    pytest.importorskip("mpi4py")
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "(False, " in done.stdout
    assert "mpi     : none (mpi4py is installed but cannot load an MPI library" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.mpi
def test_info_under_mpiexec_reports_every_rank_once():
    done = run_ranks(3, "-m simd.cli", "info", timeout=120)
    assert done.stdout.count("backend :") == 1
    assert "3 rank(s) in this launch" in done.stdout


@pytest.fixture
def stand_in_cupy(monkeypatch):
    """``import cupy`` gives the counting stand-in; the backend's answers forgotten after."""
    import importlib.machinery

    monkeypatch.setattr(counting.cupy, "__spec__", importlib.machinery.ModuleSpec("cupy", None))
    monkeypatch.setitem(sys.modules, "cupy", counting.cupy)
    caches = (backend.cupy_status, backend.cupy_round_trip, backend._say_why_not_gpu)
    for cache in caches:
        cache.cache_clear()
    yield
    for cache in caches:
        cache.cache_clear()


def test_the_gpu_path_needs_numba_cuda_too(stand_in_cupy, monkeypatch):
    why = "Numba's CUDA target cannot compile or run a kernel here: boom"
    monkeypatch.setattr(backend, "numba_cuda_status", lambda: (False, why))
    ok, reason = backend.cupy_status()
    assert not ok and reason.startswith(why)
    monkeypatch.setattr(backend, "numba_cuda_status", lambda: (True, "fine"))
    backend.cupy_status.cache_clear()
    assert backend.cupy_status() == (True, "counting stand-in")


def test_auto_says_once_why_not_the_gpu(stand_in_cupy, monkeypatch):
    monkeypatch.delenv("SIMD_BACKEND", raising=False)
    monkeypatch.setattr(backend, "cupy_status", lambda: (False, "Numba's CUDA target: boom"))
    monkeypatch.setattr(backend, "_driver_missing", lambda: None)  # a GPU machine
    backend._say_why_not_gpu.cache_clear()
    with pytest.warns(GPUUnavailableWarning, match="using NumPy, not the GPU: Numba's CUDA"):
        assert backend.resolve_backend("auto")[0] == "numpy"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backend.resolve_backend("auto")[1] is np  # said once


def test_auto_on_a_machine_without_a_gpu_says_nothing(monkeypatch):
    monkeypatch.delenv("SIMD_BACKEND", raising=False)
    monkeypatch.setattr(backend, "cupy_status", lambda: (False, "no driver"))
    monkeypatch.setattr(backend, "_driver_missing", lambda: "the NVIDIA driver")
    backend._say_why_not_gpu.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert backend.resolve_backend("auto")[0] == "numpy"


def test_a_cli_warning_is_one_line(capsys):
    simd.cli._show_warning(GPUUnavailableWarning("using NumPy,\n  not the GPU"), None, "f", 1)
    assert capsys.readouterr().err == "simd-emu: warning: using NumPy, not the GPU\n"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["render", "--mesh", "MESH", "-o", "out.png"], "reading a mesh file needs the package"),
        (["diffuse", "--builtin", "ct", "-o", "out.png"], "the built-in image 'ct' needs the"),
    ],
)
def test_file_readers_name_their_package_in_one_line(argv, says, monkeypatch, tmp_path, capsys):
    """render and diffuse start without trimesh and pydicom; only the options that read
    files with them need them."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "MESH").write_text("solid x\nendsolid x\n")
    monkeypatch.setitem(sys.modules, "trimesh", None)
    monkeypatch.setitem(sys.modules, "pydicom", None)
    assert simd.cli.main(argv, commands=pyproject_commands()) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and err[0].endswith("pip install 'simd-emu[data]'")
    assert not (tmp_path / "out.png").exists()


def test_a_command_leaves_the_warnings_and_loggers_as_they_were(monkeypatch, tmp_path):
    shown = warnings.showwarning
    monkeypatch.setenv("SIMD_EMU_CACHE_DIR", str(tmp_path))
    assert simd.cli.main(["warmup", "--backend", "numpy"], commands={}) == 0
    assert warnings.showwarning is shown
    assert not logging.getLogger("simd_emu.compile").handlers
    assert not logging.getLogger("simd_emu.data").handlers
