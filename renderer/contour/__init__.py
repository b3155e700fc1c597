"""Isosurfaces: volume files read (:mod:`~renderer.contour.volumes`) and their surfaces
extracted by data-parallel marching cubes on the emulated machine
(:mod:`~renderer.contour.marching_cubes`, :func:`renderer.isosurface`).

Marching cubes runs as three phases over the rows of a volume. The phases' scalar bodies
(:mod:`~renderer.contour.row_kernels`) are compiled for the CPU
(:mod:`~renderer.contour.cpu_kernels`) and the GPU (:mod:`~renderer.contour.cuda_kernels`);
their array code (:mod:`~renderer.contour.arrays`) is the reference they are tested
against; :mod:`~renderer.contour.tables` holds the case table,
:mod:`~renderer.contour.parameters` the kernels' scalar arguments, and
:mod:`~renderer.contour.fast_paths` names the kernels in the fast-path registry.
"""
