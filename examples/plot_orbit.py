"""
A turntable
===========

:func:`renderer.orbit.orbit` renders a mesh from a full turn of azimuths, preparing it once on
the machine's device (:class:`renderer.Scene`); ``simd-emu render --orbit 36 -o turn.gif``
writes the same frames as an animation. Here, eight views of the oil-well data set: a rock
formation drilled by well bores and cut by a fracture, whose long slivers load the
scan-conversion loop as the paper's data did.
"""

import matplotlib.pyplot as plt

import renderer
from renderer.orbit import orbit
from simd import Machine

mesh = renderer.load_dataset("oilwell")
frames = list(orbit(mesh, 8, elevation=25, size=200, machine=Machine(backend="numpy")))

fig, axes = plt.subplots(2, 4, figsize=(10, 5.2))
for i, (ax, frame) in enumerate(zip(axes.flat, frames, strict=True)):
    ax.imshow(frame.image)
    ax.set_title(f"azimuth {45 * i} degrees", fontsize=9)
    ax.axis("off")
fig.suptitle(f"{mesh.n_faces:,} triangles")
fig.tight_layout()
