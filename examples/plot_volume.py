"""
An isosurface of a brain scan
=============================

A volume file in, a picture out: :func:`renderer.read_volume` reads a small T1-weighted MRI
of a head (``anatomical.nii``, 33 x 41 x 25 samples 2 mm apart, from nibabel's test data),
:meth:`~renderer.Volume.isosurface` extracts the surface where the signal crosses a level
by marching cubes on the emulated machine, and :func:`renderer.render` draws it. In a T1
scan the fluid is dark: the low level wraps the ventricles, the fluid-filled cavities in
the middle of the brain; the higher level takes in the darker grey tissue around them
too. From the command line: ``simd-emu render anatomical.nii --level 3000`` (the
``volumes`` extra reads NIfTI files).
"""

from pathlib import Path

import matplotlib.pyplot as plt
import nibabel

import renderer
from simd import Machine

path = Path(nibabel.__file__).parent / "tests" / "data" / "anatomical.nii"
volume = renderer.read_volume(path)
machine = Machine(backend="numpy")

fig, axes = plt.subplots(1, 4, figsize=(12, 3.6))
middle = volume.array[:, :, volume.array.shape[2] // 2].T
axes[0].imshow(middle, cmap="gray", origin="lower")
axes[0].contour(middle, levels=[3000, 6000], colors=["tab:orange", "tab:cyan"])
axes[0].set_title("middle slice, levels 3000 and 6000", fontsize=9)
for ax, level, view in zip(axes[1:], (3000, 3000, 6000), ((0, 0), (90, 0), (45, 30)), strict=True):
    mesh = volume.isosurface(level, machine=machine)
    frame = renderer.render(renderer.Scene(mesh, machine=machine), view=view, size=256)
    ax.imshow(frame.image)
    ax.set_title(f"level {level} from {view}: {mesh.n_faces:,} triangles", fontsize=9)
for ax in axes:
    ax.axis("off")
fig.tight_layout()
