"""Data-parallel polygon renderer on the emulated SIMD machine.

The renderer of Ortega, Hansen & Ahrens (Supercomputing '93) with the cost-effective load
balancing of Ahrens & Hansen (1995): transform, clip, scan conversion (one task per scan
line of a polygon), z-buffer (one task per pixel of a span) and shading, following OpenGL's
rasterisation rules so images compare pixel for pixel with Mesa.

>>> import renderer
>>> frame = renderer.render(mesh, view=(45, 45), size=(512, 512))   # doctest: +SKIP
>>> frame.save("frame.png")                                         # doctest: +SKIP

Under ``mpiexec`` the same call renders sort-last over the ranks: give ``render`` a machine
made with ``comm=`` and each rank's share (``mesh_share``, ``load_dataset_slab``); rank 0
gets the frame (see :mod:`renderer.ranks.sortlast`).

Meshes to render come from files (``load_mesh``), the built-in data sets
(``load_dataset``), or volumes: ``isosurface`` extracts a surface by data-parallel
marching cubes on the emulated machine, from an array or a volume file (``read_volume``).

``view`` serves the viewer of ``simd-emu view`` from this process and shows it in a
notebook cell: turn the surface, move a volume's level, watch the balancing work. A
``Frame`` shows itself as its picture in a notebook.
"""

from __future__ import annotations

from renderer.contour.marching_cubes import isosurface
from renderer.contour.volumes import Volume, read_volume
from renderer.datasets.builtin import load_dataset, load_dataset_slab
from renderer.image import save_depth, save_image
from renderer.pipeline import (
    LOOP_FORMS,
    Frame,
    FrameCounts,
    FrameStats,
    LoopWorkloads,
    loop_workloads,
    render,
)
from renderer.scene.camera import Camera, default_camera
from renderer.scene.mesh import DeviceMesh, Mesh, as_mesh, load_mesh, mesh_share
from renderer.scene.prepared import Scene
from renderer.viewer.notebook import view

__all__ = [
    "Camera",
    "DeviceMesh",
    "Frame",
    "FrameCounts",
    "FrameStats",
    "LOOP_FORMS",
    "LoopWorkloads",
    "Mesh",
    "Scene",
    "Volume",
    "as_mesh",
    "default_camera",
    "isosurface",
    "load_dataset",
    "load_dataset_slab",
    "load_mesh",
    "loop_workloads",
    "mesh_share",
    "read_volume",
    "render",
    "save_depth",
    "save_image",
    "view",
]
