"""Compiling CUDA sources for sm_90 with NVRTC in tests, without a GPU.

NVRTC writes its log, PTX and CUBIN into buffers the caller provides. They must be fresh,
mutable ``bytearray`` objects: the common ``b" " * size`` idiom hands it an immutable
``bytes``, and for ``size == 1`` (an empty log) that is CPython's shared one-byte ``b" "``
object, which NVRTC would overwrite with a NUL, corrupting every later space written
through an encoder in the process.
"""

from __future__ import annotations

from tests import gpu_compile
from tests.gpu_compile import require_installed

require_installed("cuda.bindings.nvrtc", "cuda-bindings (NVRTC)")
from cuda.bindings import nvrtc  # noqa: E402

__all__ = ["compile_sm90", "nvrtc", "nvrtc_unavailable"]


def nvrtc_unavailable() -> str | None:
    """Why NVRTC cannot run here, or None when it can (a failure with
    ``REQUIRE_GPU_COMPILE=1``, see :mod:`tests.gpu_compile`)."""
    why = _nvrtc_unavailable()
    if why is not None and gpu_compile.required():
        gpu_compile.skip(why)  # fails
    return why


def _nvrtc_unavailable() -> str | None:
    try:
        err, *_ = nvrtc.nvrtcVersion()
    except (OSError, RuntimeError) as exc:  # libnvrtc missing: the wheel is not installed
        return f"NVRTC library not loadable: {exc}"
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return f"nvrtcVersion failed: {err}"
    return None


def _read(size_fn, read_fn, prog) -> bytes:
    _, size = size_fn(prog)
    buffer = bytearray(size)
    read_fn(prog, buffer)
    return bytes(buffer)


def compile_sm90(
    source: str, name: str = "kernel.cu", include_dirs=(), options=()
) -> tuple[str, str, bytes]:
    """Compile ``source`` for a real sm_90 target; return (PTX, log, CUBIN).

    Fails the calling test, with NVRTC's log, if the compilation fails.
    """
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    opts = [b"--gpu-architecture=sm_90", b"-std=c++17", *[o.encode() for o in options]]
    opts += [f"-I{d}".encode() for d in include_dirs]
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        log = _read(nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog, prog)
        log_text = log.decode(errors="replace").rstrip("\x00 ")
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, f"NVRTC failed:\n{log_text[:4000]}"
        ptx = _read(nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX, prog)
        cubin = _read(nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN, prog)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return ptx.decode(errors="replace"), log_text, cubin
