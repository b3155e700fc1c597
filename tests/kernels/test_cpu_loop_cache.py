"""kernels.rebind.cpu_loop's disk cache: a loop's cache entry is named by the code it
reaches, so an edited body compiles the loop again, and every process finds the entry."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from kernels.rebind import bind, code_digest, cpu_body, cpu_loop

ROOT = Path(__file__).resolve().parents[2]


def _rows(out):
    for i in range(out.shape[0]):
        out[i] = body(i)


def body(i):  # rebound to a compiled body
    raise NotImplementedError


def _double(i):
    return 2.0 * i


def _triple(i):
    return 3.0 * i


def test_a_loop_with_another_body_is_another_cache_entry():
    # The same loop code bound to two bodies: Numba would key both by the loop's file and
    # code alone, and the second would load the first's machine code.
    loops = [cpu_loop(bind(_rows, body=cpu_body(fn))) for fn in (_double, _triple)]
    names = {loop.py_func.__qualname__ for loop in loops}
    assert len(names) == 2
    outs = [np.zeros(3), np.zeros(3)]
    for loop, out in zip(loops, outs, strict=True):
        loop(out)
    assert outs[0].tolist() == [0.0, 2.0, 4.0] and outs[1].tolist() == [0.0, 3.0, 6.0]


def test_the_digest_is_the_same_in_every_process():
    script = (
        "from renderer.contour import cpu_kernels as c\n"
        "print(c._cpu_kernel('emit').py_func.__qualname__)\n"
    )
    names = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=300, check=True)  # fmt: skip
        names.add(done.stdout.strip())
    assert len(names) == 1 and names.pop().startswith("emit_rows_")


def test_the_digest_follows_a_body_through_the_globals():
    assert code_digest(bind(_rows, body=_double)) != code_digest(bind(_rows, body=_triple))
    assert code_digest(bind(_rows, body=_double)) == code_digest(bind(_rows, body=_double))
