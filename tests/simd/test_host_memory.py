"""The host's freed memory kept for reuse: counted in the operating system's page faults."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="glibc's allocator on Linux only",
)

_CHILD = """
import json, resource
import numpy as np
from simd import Machine
Machine(backend="numpy")
faults = []
for _ in range(4):  # a frame's worth of work arrays, made and freed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = [np.ones(n) for n in (700_000, 500_000, 300_000, 1_500_000)]
    del arrays
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps(faults))
"""


def _faults(pool: str) -> list[int]:
    env = {**os.environ, "SIMD_HOST_POOL": pool}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True,
        timeout=120,
    )  # fmt: skip
    return json.loads(out.stdout.splitlines()[-1])


def test_a_numpy_machine_reuses_the_freed_pages_of_its_work_arrays():
    pages = (700_000 + 500_000 + 300_000 + 1_500_000) * 8 // 4096  # about 5,900
    kept, defaults = _faults("1"), _faults("0")
    assert max(kept[1:]) < pages // 20, kept  # the second round on: the same pages again
    assert min(defaults[1:]) > pages // 4, defaults  # glibc's defaults: many fresh pages
