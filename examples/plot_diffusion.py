"""
Diffusion on a processor mesh
=============================

Edge-directed diffusion of the camera image on a 64 x 64 MasPar MP-1, as Biagioni & Prins
(1991): points whose update falls below ``epsilon`` stop being computed, the active points
gather in a few tiles, and scan-directed balancing every 5 iterations spreads them over the
mesh. The result is the dense computation's, bit for bit; the run also records the load of
the busiest processor at every iteration and how many iterations computed each pixel.
"""

import matplotlib.pyplot as plt
import skimage.data

from diffusion import mesh_diffusion
from simd import Machine

image = skimage.data.camera().astype("float32")
runs = {
    every: mesh_diffusion(
        image,
        niter=60,
        epsilon=0.25,
        balance_every=every,
        machine=Machine(pes=(64, 64), backend="numpy"),
    )
    for every in (0, 5)
}

fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
axes[0].imshow(image, cmap="gray")
axes[0].set_title("the camera image")
axes[1].imshow(runs[5].image, cmap="gray")
axes[1].set_title("after 60 iterations")
shown = axes[2].imshow(runs[5].activity, cmap="viridis")
axes[2].set_title("iterations each pixel was computed in")
fig.colorbar(shown, ax=axes[2], shrink=0.8)
for ax in axes:
    ax.axis("off")
fig.tight_layout()

# %%
# The busiest processor's load, with and without balancing.
fig, ax = plt.subplots(figsize=(8, 3.5))
for every, res in runs.items():
    label = f"balancing every {every}" if every else "no balancing"
    ax.plot(res.max_load, label=label)
ax.set_xlabel("iteration")
ax.set_ylabel("active points on the busiest processor")
ax.legend()
fig.tight_layout()
