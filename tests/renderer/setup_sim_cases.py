"""Cases for the fused setup kernel in Numba's CUDA simulator (run as a script).

``tests/renderer/test_setup_cudasim.py`` runs this file in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (the simulator is chosen when ``numba.cuda`` is first imported;
see ``tests/kernels/test_numba_shift_cudasim.py`` for why a subprocess). Each case runs
:func:`renderer.setup_cuda.setup_device` on host arrays (the simulator copies them in and
back) and compares every field, bit for bit, with the array code
:func:`renderer.scan.setup_triangles_arrays`. Prints one JSON line
``{case: null | "error message"}``.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

# (triangles, width, height, threads per block, grid cap): a capped grid makes every
# thread's grid-stride loop take several triangles
CASES = {
    "random-64x48": (192, 64, 48, 32, None),
    "grid-stride-17x5": (150, 17, 5, 16, 2),
    "one-pixel": (40, 1, 1, 32, None),
    "empty": (0, 8, 8, 32, None),
}


def case_names() -> list[str]:
    return list(CASES)


def run_case(name: str) -> None:
    from numba import config

    from renderer import setup_cuda
    from renderer.scan import TriangleSetup, setup_triangles_arrays
    from tests.renderer.test_setup_fused import FIELDS, assert_same_setup, random_triangles

    assert config.ENABLE_CUDASIM, "run with NUMBA_ENABLE_CUDASIM=1"
    n, width, height, threads, grid = CASES[name]
    clip = random_triangles(max(n, 8), seed=len(name))[:n]
    saved = setup_cuda._THREADS, setup_cuda._MAX_GRID
    setup_cuda._THREADS = threads
    setup_cuda._MAX_GRID = grid or saved[1]
    try:
        got = setup_cuda.setup_device(np, clip, width, height)
    finally:
        setup_cuda._THREADS, setup_cuda._MAX_GRID = saved
    got = TriangleSetup(**{f: np.asarray(got[f]) for f in FIELDS})
    assert_same_setup(got, setup_triangles_arrays(np, clip, width, height))


def main() -> None:
    results = {}
    for name in case_names():
        try:
            run_case(name)
            results[name] = None
        except Exception:  # reported per case by the test
            results[name] = traceback.format_exc()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
