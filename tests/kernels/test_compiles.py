"""Compiles said and left out of the times (:mod:`kernels.compiles`): a compile that runs
past a second is announced while it runs, once; no time a command reports includes one."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from kernels import compiles

ROOT = Path(__file__).resolve().parents[2]


def _announced(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "simd_emu.compile"]


def test_a_long_compile_is_announced_while_it_runs(monkeypatch, caplog):
    monkeypatch.setattr(compiles, "ANNOUNCE_AFTER", 0.01)
    caplog.set_level(logging.INFO, logger="simd_emu.compile")
    with compiles.compiling():
        waited = time.monotonic()
        while not _announced(caplog) and time.monotonic() - waited < 30:
            time.sleep(0.01)  # the compile goes on; the announcement comes meanwhile
        said = _announced(caplog)
    assert said == [compiles.MESSAGE]


def test_a_short_compile_is_not_announced(monkeypatch, caplog):
    monkeypatch.setattr(compiles, "ANNOUNCE_AFTER", 60.0)
    caplog.set_level(logging.INFO, logger="simd_emu.compile")
    with compiles.compiling():
        pass
    assert _announced(caplog) == []


def test_nested_compiles_count_once_and_are_left_out_of_a_stopwatch():
    with compiles.Stopwatch() as clock:
        with compiles.compiling():
            with compiles.compiling():  # a loop compiling the body it inlines
                time.sleep(0.05)
            time.sleep(0.05)
    assert clock.compiled >= 0.1
    assert clock.seconds < clock.compiled  # only the stopwatch's own steps remain


def test_numbas_compiles_are_watched():
    import numba

    compiles.watch()

    def twice(x):  # a new function: Numba compiles it on its first call
        return 2 * x

    compiled = numba.njit(twice)
    before = compiles.compile_seconds()
    assert compiled(21) == 42
    after = compiles.compile_seconds()
    assert after > before
    assert compiled(4) == 8  # compiled already: nothing counted
    assert compiles.compile_seconds() == after


def spy_on_extractions(patch) -> list[float]:
    """The seconds each extraction of a volume's surface (``Volume.isosurface``, which the
    commands time and table) spent compiling, recorded as they run; ``patch(object, name,
    value)`` installs the spy (``setattr``, or pytest's ``monkeypatch.setattr``)."""
    from renderer.contour import volumes

    spied: list[float] = []
    real = volumes.Volume.isosurface

    def spy(self, *args, **kwargs):
        before = compiles.compile_seconds()
        mesh = real(self, *args, **kwargs)
        spied.append(compiles.compile_seconds() - before)
        return mesh

    patch(volumes.Volume, "isosurface", spy)
    return spied


@pytest.mark.parametrize("dtype", [np.float64, np.int16])
def test_the_isosurface_command_compiles_before_the_extraction(tmp_path, monkeypatch, dtype):
    """The kernels are compiled on a tiny volume of the same kind first, so that the
    extraction the command times (and tables) compiles nothing, in a warm process as in a
    cold one (the slow test below starts cold)."""
    from simd.cli import main
    from tests.entry_points import pyproject_commands

    x, y, z = np.mgrid[-4:4:10j, -4:4:10j, -4:4:10j]
    np.save(tmp_path / "ball.npy", (x * x + y * y + z * z).astype(dtype))
    spied = spy_on_extractions(monkeypatch.setattr)
    argv = ["isosurface", str(tmp_path / "ball.npy"), "--level", "5", "-o",
            str(tmp_path / "b.ply"), "--backend", "numpy"]  # fmt: skip
    assert main(argv, commands=pyproject_commands()) == 0
    assert spied == [0.0]


#: Run in a fresh process with empty caches: the isosurface command on a float64 volume,
#: the real extraction spied on for compiles.
SCRIPT = textwrap.dedent(
    """
    import json, sys
    from kernels import compiles
    from simd.cli import main
    from tests.kernels.test_compiles import spy_on_extractions

    spied = spy_on_extractions(setattr)
    status = main(sys.argv[1:])
    print(json.dumps({"status": status, "spied": spied, "total": compiles.compile_seconds()}))
    """
)


@pytest.mark.slow
def test_the_first_float64_isosurface_says_it_compiles_and_reports_no_compile(tmp_path):
    x, y, z = np.mgrid[-1:1:12j, -1:1:12j, -1:1:12j]
    np.save(tmp_path / "ball.npy", x * x + y * y + z * z)  # float64
    env = dict(os.environ, SIMD_EMU_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(ROOT))  # fmt: skip
    argv = ["isosurface", "ball.npy", "--level", "0.5", "-o", "ball.ply", "-v"]
    done = subprocess.run([sys.executable, "-c", SCRIPT, *argv, "--backend", "numpy"],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    *printed, last = done.stdout.splitlines()
    result = json.loads(last)
    assert result["status"] == 0, done.stderr
    assert done.stderr.splitlines() == [f"simd-emu: {compiles.MESSAGE}"]
    assert result["total"] > compiles.ANNOUNCE_AFTER  # it compiled, and said so once
    assert result["spied"] == [0.0]  # the extraction timed and tabled compiled nothing
    assert printed[-1].startswith("wrote ball.ply: ")
