"""Where ``simd-emu bench balance`` takes its workloads from: a file, the built-in families
(:mod:`simd.balance.workloads`), or the renderer's loops on a mesh and a view.

Every source gives a :class:`Source`: a name for the tables and the checked counts. The
files and families are read and made before any run, so that a bad one ends the command in
one line first; the renderer's workloads are measured by rendering the frame.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simd.balance.comparison import mesh_shape
from simd.balance.workloads import FAMILIES, check_workload, family_label, generate, read_workload

__all__ = [
    "RENDER_DATASETS",
    "Source",
    "family_sources",
    "file_source",
    "render_name",
    "render_source",
]

#: The renderer's built-in data sets (``renderer.load_dataset``).
RENDER_DATASETS = ("balanced", "unbalanced", "oilwell", "oilwell-unbalanced")
#: The renderer's two balanced loops: scan conversion (scan lines per polygon) and the
#: z-buffer (pixels per span).
RENDER_LOOPS = ("scan", "zbuffer")


@dataclass(frozen=True)
class Source:
    """A workload to balance: its name in the results, its counts, and (for a grid) the
    mesh it runs on, else the processors."""

    name: str
    counts: np.ndarray
    processors: int | tuple[int, int] | None = None

    @property
    def shape(self) -> str:
        return "x".join(map(str, self.counts.shape))


def file_source(path: str, processors: int | tuple[int, int] | None) -> Source:
    """The workload of a ``.npy``, ``.csv`` or ``.txt`` file (``ValueError`` in one line)."""
    return Source(Path(path).stem, read_workload(path), processors)


def family_sources(
    families: list[str],
    processors: list[int | tuple[int, int]],
    *,
    mean: float = 16.0,
    param: float | None = None,
    seed: int = 0,
    grid: int | None = None,
) -> list[Source]:
    """Each family at each number of processors: one count per processor, or with ``grid``
    a 2-D grid of ``grid x grid`` points per PE of the most nearly square mesh.

    >>> [(s.name, s.shape) for s in family_sources(["step"], [512, (4, 8)], grid=2)]
    [('step', '32x64'), ('step', '8x16')]
    """
    for family in families:
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; choose from {', '.join(FAMILIES)}")
    out = []
    for family in families:
        for p in processors:
            if grid is None:
                if not isinstance(p, int):
                    raise ValueError(f"a mesh ({p[0]}x{p[1]}) needs --grid for the families")
                counts = generate(family, p, mean=mean, param=param, seed=seed)
                out.append(Source(family_label(family, param), counts, p))
            else:
                rows, cols = mesh_shape(p)
                shape = (rows * grid, cols * grid)
                counts = generate(family, shape, mean=mean, param=param, seed=seed)
                out.append(Source(family_label(family, param), counts, (rows, cols)))
    return out


def render_name(mesh: str, loop: str) -> str:
    """How the results name the renderer's loop on ``mesh``.

    >>> render_name("unbalanced", "scan"), render_name("models/bunny.ply", "zbuffer")
    ('unbalanced scan', 'bunny.ply zbuffer')
    """
    return f"{mesh if mesh in RENDER_DATASETS else os.path.basename(mesh)} {loop}"


def render_source(
    mesh: str,
    *,
    size: str = "250k",
    view: tuple[float, float] = (45.0, 45.0),
    magnification: float = 1.0,
    image: int = 512,
    loop: str = "scan",
    processors: int | None = None,
) -> Source:
    """The workload of one of the renderer's loops on a frame of ``mesh`` (a built-in data
    set of :data:`RENDER_DATASETS`, of ``size``, or a mesh file) seen from ``view``.

    One datum per polygon (scan conversion: its scan lines, zeros included, as the
    renderer's loop runs them) or per span (z-buffer: its pixels), several per processor.
    """
    if loop not in RENDER_LOOPS:
        raise ValueError(f"unknown loop {loop!r}; choose from {', '.join(RENDER_LOOPS)}")
    from renderer import load_dataset, load_mesh, loop_workloads
    from simd import Machine

    if mesh in RENDER_DATASETS:
        data = load_dataset(mesh, int(size) if str(size).isdigit() else size)
    else:
        if not Path(mesh).is_file():
            known = ", ".join(RENDER_DATASETS)
            raise ValueError(f"{mesh}: no such mesh file, and not a built-in data set ({known})")
        data = load_mesh(mesh)
    loops = loop_workloads(
        data,
        view=view,
        magnification=magnification,
        size=image,
        machine=Machine(pes=processors or 512, backend="numpy"),
    )
    counts = loops.scan if loop == "scan" else loops.zbuffer
    label = render_name(mesh, loop)
    return Source(label, check_workload(counts, what=label), processors)
