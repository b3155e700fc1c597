"""
Four views, as the paper's tables
=================================

Ahrens & Hansen (1995) render each data set from the side, ``(0, 0)``, and from above at 45
degrees, ``(45, 45)``, each also magnified twice (``M``). The unbalanced set has a few
hundred long slivers among small triangles: from some views they cover hundreds of scan
lines, which is the imbalance the load balancing corrects.
"""

import matplotlib.pyplot as plt

import renderer
from simd import Machine

mesh = renderer.load_dataset("unbalanced")
scene = renderer.Scene(mesh, machine=Machine(backend="numpy"))
views = [((0, 0), 1), ((45, 45), 1), ((0, 0), 2), ((45, 45), 2)]
fig, axes = plt.subplots(1, 4, figsize=(12, 3.4))
for ax, (view, magnification) in zip(axes, views, strict=True):
    frame = renderer.render(scene, view=view, magnification=magnification, size=256)
    scan = frame.stats.loops["scan-conversion"]
    ax.imshow(frame.image)
    name = ("M" if magnification > 1 else "") + f"({view[0]},{view[1]})"
    ax.set_title(f"{name}: at most {scan.max_workload} scan lines", fontsize=9)
    ax.axis("off")
fig.tight_layout()
