"""Implementations of the machine's instruction set, one module per backend.

``reference`` is written once against the array namespace ``xp`` and runs on NumPy and
CuPy; it is the CPU path and the oracle of every other implementation. ``cupy_scan``,
``cupy_router`` and ``numba_shift`` (with its device code in ``numba_shift_kernels``) hold
GPU kernels and are imported only when the CuPy backend is used.
``registry`` maps (primitive, backend) to the function that implements it.

This package imports nothing from the packages above it (``simd``, ``renderer``,
``diffusion``).
"""
