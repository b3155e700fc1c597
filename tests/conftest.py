"""Shared test configuration: hypothesis profiles, the GPU fixtures and the OpenGL one.

Tests marked ``gpu`` run only where CuPy reaches a GPU; elsewhere they are skipped, and
with ``REQUIRE_GPU=1`` the skip becomes a failure (so a GPU run cannot pass vacuously).
With ``--gpu-standin`` they run instead on the counting stand-in for CuPy
(:mod:`kernels.counting`: CuPy's API on NumPy, the CUDA kernels emulated), so that every
``gpu`` test is exercised without a GPU; a test that needs real CUDA says so and skips
there (``tests.gpu_standin``). Tests using the ``gl`` fixture likewise skip where no
headless OpenGL context can be made, and fail instead with ``REQUIRE_GL=1`` (as CI sets);
tests using the ``chromium`` fixture skip where Debian's Chromium or Playwright's Python
package is missing, and fail instead with ``REQUIRE_BROWSER=1`` (as CI sets).

The tests write nothing outside temporary folders, and leave none behind: the data sets and
GPU kernels they make, Numba's compiled CPU kernels and the temporary files of the test
processes and of the MPI ranks they start (``TMPDIR``) go to a folder of the run's own,
made by its first process (with ``-n 2``, the one that starts the workers, which share it)
and removed when the run ends. A cache set by the user (``SIMD_EMU_CACHE_DIR``,
``NUMBA_CACHE_DIR``) is used instead, and kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings


def _run_caches() -> str | None:
    """The run's cache folder, made here in the run's first process (its workers find it
    in their environment and return None), set before any test imports Numba."""
    if "SIMD_EMU_TESTS_CACHE" in os.environ:
        return None
    folder = tempfile.mkdtemp(prefix="simd-emu-tests-")
    os.environ["SIMD_EMU_TESTS_CACHE"] = folder
    os.environ.setdefault("SIMD_EMU_CACHE_DIR", os.path.join(folder, "simd-emu"))
    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(folder, "numba"))
    # and what others leave in the temporary folder (Open MPI's session folders, the
    # workers' and the ranks' files) goes with it
    os.makedirs(os.path.join(folder, "tmp"))
    os.environ["TMPDIR"] = os.path.join(folder, "tmp")
    return folder


#: The folder this process made (and removes at the end of the run), or None.
_CACHES = _run_caches()

settings.register_profile(
    "default",
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    deadline=None,
    max_examples=500,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _required(name: str) -> bool:
    """Whether the environment variable ``name`` (``REQUIRE_GPU``, ``REQUIRE_GL``) is set."""
    return os.environ.get(name, "") not in ("", "0")


def pytest_addoption(parser):
    parser.addoption(
        "--gpu-standin",
        action="store_true",
        help="run the gpu tests with CuPy served by the counting stand-in (no GPU needed)",
    )


def pytest_unconfigure(config):
    if _CACHES is not None:
        shutil.rmtree(_CACHES, ignore_errors=True)


def pytest_configure(config):
    if config.getoption("--gpu-standin"):
        from tests import gpu_standin

        gpu_standin.install()


def pytest_runtest_setup(item):
    """Skip ``gpu`` tests without a GPU, or fail them when ``REQUIRE_GPU=1``."""
    if "gpu" not in item.keywords:
        return
    from simd.backend import cupy_status

    ok, reason = cupy_status()
    if ok:
        return
    if _required("REQUIRE_GPU"):
        pytest.fail(f"REQUIRE_GPU=1 but no GPU is usable: {reason}")
    pytest.skip(f"no GPU: {reason} (REQUIRE_GPU=1 makes this a failure)")


@pytest.fixture
def gpu_machine():
    """A ``Machine(backend="cupy")`` on 512 PEs (tests using it must be marked ``gpu``)."""
    from simd import Machine

    return Machine(pes=512, backend="cupy")


@pytest.fixture
def cpu_machine():
    """A ``Machine(backend="numpy")`` on 512 PEs."""
    from simd import Machine

    return Machine(pes=512, backend="numpy")


@pytest.fixture(scope="session")
def gl():
    """``renderer.opengl`` with a working headless OpenGL context (Mesa's llvmpipe through
    moderngl + EGL); skips without one, or fails when ``REQUIRE_GL=1``."""
    from renderer import opengl

    try:
        opengl.gl_context()
    except opengl.GLUnavailable as err:
        if _required("REQUIRE_GL"):
            pytest.fail(f"REQUIRE_GL=1 but no OpenGL context can be made: {err}")
        pytest.skip(f"no OpenGL context: {err} (REQUIRE_GL=1 makes this a failure)")
    return opengl


#: The browser the viewer's tests drive: Debian's chromium package (.ci/run installs it).
CHROMIUM = "/usr/bin/chromium"

#: Chromium's flags for the tests: headless, no sandbox (CI runs as root), no GPU and none
#: of the browser's own network traffic.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture(scope="module")
def chromium():
    """A headless Chromium driven by Playwright (one per test module: Playwright's
    synchronous API keeps an event loop running in the thread while it lives); skips without
    Chromium or Playwright, or fails when ``REQUIRE_BROWSER=1``."""
    problem = None
    if not os.path.exists(CHROMIUM):
        problem = f"no {CHROMIUM} (apt-get install chromium)"
    else:
        try:
            from playwright.sync_api import sync_playwright
        except ImportError:
            problem = "Playwright's Python package is not installed (pip install '.[test]')"
    if problem:
        if _required("REQUIRE_BROWSER"):
            pytest.fail(f"REQUIRE_BROWSER=1 but {problem}")
        pytest.skip(f"no browser: {problem} (REQUIRE_BROWSER=1 makes this a failure)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=list(CHROMIUM_FLAGS))
        yield browser
        browser.close()
