"""CUDA source of the fused Perona-Malik step (the dense path on a GPU).

One thread per point reads its value and its 2k orthogonal neighbours, computes medpy's
update (forward flux minus backward flux per axis, zero flux at the border, summed over
the axes in NumPy axis order, times gamma) and writes the new value into a second buffer:
one read and one write of a float32 per point and iteration, the memory floor of the
method (8 bytes per point per iteration; the neighbours come from cache). This module only
builds source text, so it can be compiled with NVRTC without a GPU;
:mod:`diffusion._cupy` runs it with CuPy.

The algorithm is the update of :func:`diffusion.dense.pm_update` (Perona & Malik, 1990, as
in medpy's ``anisotropic_diffusion``); the exponential is CUDA's ``expf``, so results agree
with NumPy's to float32 rounding, not bit for bit.
"""

from __future__ import annotations

__all__ = ["KERNEL_NAME", "pm_source"]

KERNEL_NAME = "pm_step"

_TEMPLATE = r"""
#define OPTION {option}
#define NDIM {ndim}

// c(d) * d through one face: options 1 (exponential), 2 (rational), 3 (Tukey; kappa is
// kappa * sqrt(2) there).
__device__ __forceinline__ float pm_flux(float d, float kappa, float sp) {{
    float q = d / kappa;
#if OPTION == 1
    return (expf(-(q * q)) / sp) * d;
#elif OPTION == 2
    return (1.0f / (1.0f + q * q) / sp) * d;
#else
    float r = 1.0f - q * q;
    float top = 0.5f * (r * r) / sp;
    return (fabsf(d) <= kappa ? top : 0.0f) * d;
#endif
}}

// Forward flux minus backward flux along one axis; no flux through the border faces.
__device__ __forceinline__ float pm_axis(const float* __restrict__ in, long long i,
                                         long long pos, long long size, long long stride,
                                         float v, float kappa, float sp) {{
    float fwd = (pos + 1 < size) ? in[i + stride] - v : 0.0f;
    float bwd = (pos > 0) ? v - in[i - stride] : 0.0f;
    return pm_flux(fwd, kappa, sp) - pm_flux(bwd, kappa, sp);
}}

extern "C" __global__ void {name}(const float* __restrict__ in, float* __restrict__ out,
                                  long long n0, long long n1, long long n2, float kappa,
                                  float gamma, float s0, float s1, float s2) {{
    long long total = n0 * n1 * n2;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {{
        long long x2 = i % n2;
        long long t = i / n2;
        long long x1 = t % n1;
        long long x0 = t / n1;
        float v = in[i];
        float acc;
#if NDIM == 3
        acc = pm_axis(in, i, x0, n0, n1 * n2, v, kappa, s0);
        acc = acc + pm_axis(in, i, x1, n1, n2, v, kappa, s1);
#else
        acc = pm_axis(in, i, x1, n1, n2, v, kappa, s1);
#endif
        acc = acc + pm_axis(in, i, x2, n2, 1, v, kappa, s2);
        out[i] = v + gamma * acc;
    }}
}}
"""


def pm_source(option: int, ndim: int) -> str:
    """CUDA source of the fused step for conduction ``option`` and ``ndim`` (2 or 3).

    Examples
    --------
    >>> "expf" in pm_source(1, 2), "NDIM 3" in pm_source(2, 3)
    (True, True)
    """
    if option not in (1, 2, 3):
        raise ValueError(f"option must be 1, 2 or 3, got {option!r}")
    if ndim not in (2, 3):
        raise ValueError(f"ndim must be 2 or 3, got {ndim!r}")
    return _TEMPLATE.format(option=int(option), ndim=int(ndim), name=KERNEL_NAME)
