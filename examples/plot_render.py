"""
Render the built-in isosurface
==============================

The built-in data set is the isosurface of the Marschner-Lobb test signal, 241,498
triangles. :func:`renderer.render` draws it on the emulated CM-5 of 512 nodes with the
cost-effective load balancing of Ahrens & Hansen (1995); the frame holds the image, the
depth buffer and the face drawn at every pixel. The same frame comes from
``simd-emu render``.
"""

import matplotlib.pyplot as plt
import numpy as np

import renderer
from simd import Machine

mesh = renderer.load_dataset("balanced")
frame = renderer.render(mesh, view=(45, 45), size=384, machine=Machine(backend="numpy"))

fig, axes = plt.subplots(1, 2, figsize=(9, 4.5))
axes[0].imshow(frame.image)
axes[0].set_title(f"{mesh.n_faces:,} triangles, view (45, 45)")
depth = np.where(np.isnan(frame.depth), np.nan, frame.depth)
shown = axes[1].imshow(depth, cmap="magma")
axes[1].set_title("depth buffer")
fig.colorbar(shown, ax=axes[1], shrink=0.8, label="window depth")
for ax in axes:
    ax.axis("off")
fig.tight_layout()

# %%
# The frame's statistics: the loops' iterations, and the time on the emulated machine
# and on this computer.
print(frame.stats)
