"""Built-in data sets: isosurfaces of the Marschner-Lobb test signal, balanced and unbalanced.

Ahrens & Hansen (seed 000, section 4, Table 1) render a balanced and an unbalanced
isosurface of the same simulation output, made by two isosurface algorithms. Here:

- ``balanced``: the marching-cubes isosurface (scikit-image, Lewiner) of the Marschner-Lobb
  signal (Marschner & Lobb, "An evaluation of reconstruction filters for volume
  rendering", Visualization '94) at ``resolution``^3 samples, isovalue 0.5. At 128^3 it has
  about 242,000 triangles (the default "250k" surface); 256^3 gives about 970,000 and
  512^3 about 3.9 million. All triangles are about one voxel in size, so every polygon
  covers a few scan lines.
- ``unbalanced``: the same surface where half of the volume (x > 0) is polygonised on a
  grid n / 4 times coarser (32 at 128^3). The coarse triangles span tens to hundreds of
  scan lines while the fine ones cover one or two: a few polygons carry most of the
  scan-conversion work, as in the unbalanced data set of Table 1.

Meshes are cached on disk (``$SIMD_EMU_CACHE`` or ``~/.cache/simd-emu``) after the first run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from renderer.mesh import Mesh, as_mesh

__all__ = [
    "DATASETS",
    "SIZES",
    "VIEWS",
    "cache_dir",
    "load_dataset",
    "marschner_lobb",
    "isosurface",
    "workload_table",
]

#: Named sizes -> grid resolution (triangles ~ 14.8 n^2).
SIZES = {"250k": 128, "1m": 256, "2m": 362, "4m": 512}
DATASETS = ("balanced", "unbalanced")
#: The views of Table 1 of seed 000: (azimuth, elevation, magnification).
VIEWS = {
    "(0,0)": ((0.0, 0.0), 1.0),
    "(45,45)": ((45.0, 45.0), 1.0),
    "M(0,0)": ((0.0, 0.0), 2.0),
    "M(45,45)": ((45.0, 45.0), 2.0),
}
#: The unbalanced variant's coarse half uses a grid step of n // COARSE_DIVISOR samples
#: (32 at the default 128^3).
COARSE_DIVISOR = 4
_VERSION = 3


def cache_dir() -> Path:
    """Directory for cached data sets: ``$SIMD_EMU_CACHE`` or ``~/.cache/simd-emu``."""
    root = os.environ.get("SIMD_EMU_CACHE")
    path = Path(root) if root else Path.home() / ".cache" / "simd-emu"
    return path


def marschner_lobb(n: int, *, alpha: float = 0.25, f_m: float = 6.0) -> np.ndarray:
    """The Marschner-Lobb signal sampled on an ``n``^3 grid over [-1, 1]^3 (float32, [0, 1]).

    ``rho(x, y, z) = (1 - sin(pi z / 2) + alpha (1 + cos(2 pi f_M cos(pi r / 2))))
    / (2 (1 + alpha))`` with ``r = sqrt(x^2 + y^2)``; axes ordered (x, y, z).
    """
    if n < 4:
        raise ValueError(f"grid resolution must be at least 4, got {n}")
    t = np.linspace(-1.0, 1.0, n, dtype=np.float32)
    x, y = np.meshgrid(t, t, indexing="ij")
    r = np.sqrt(x * x + y * y)
    radial = np.cos(2.0 * np.pi * f_m * np.cos(np.pi * r / 2.0))
    zpart = 1.0 - np.sin(np.pi * t / 2.0)
    vol = (zpart[None, None, :] + alpha * (1.0 + radial[:, :, None])) / (2.0 * (1.0 + alpha))
    return vol.astype(np.float32)


def isosurface(
    volume: np.ndarray,
    level: float = 0.5,
    *,
    step: int = 1,
    spacing: float = 1.0,
    origin: Any = (0.0, 0.0, 0.0),
) -> tuple[np.ndarray, ...]:
    """Marching cubes (scikit-image, Lewiner) -> (vertices, faces, normals)."""
    from skimage.measure import marching_cubes

    verts, faces, normals, _ = marching_cubes(
        volume,
        level=level,
        spacing=(spacing,) * 3,
        step_size=step,
        allow_degenerate=False,
        method="lewiner",
    )
    verts = verts.astype(np.float64) + np.asarray(origin, dtype=np.float64)
    return verts, faces.astype(np.int64), normals.astype(np.float64)


def _z_up(v: np.ndarray) -> np.ndarray:
    """Volume axes (x, y, z) -> world (x, z, -y): the signal's z axis becomes the camera's
    up direction (y), so view (45, 45) looks down onto the rings at 45 degrees."""
    return np.stack([v[:, 0], v[:, 2], -v[:, 1]], axis=1)


def _build(kind: str, n: int) -> Mesh:
    h = 2.0 / (n - 1)
    vol = marschner_lobb(n)
    if kind == "balanced":
        v, f, nn = isosurface(vol, spacing=h, origin=(-1.0, -1.0, -1.0))
        return Mesh(_z_up(v), f, _z_up(_unit(nn)), f"marschner-lobb-{n}")
    # unbalanced: fine half (x <= 0) and a coarse half (x >= 0), sharing the plane x = 0
    mid = (n - 1) // 2
    fine = vol[: mid + 1]
    step = max(2, n // COARSE_DIVISOR)
    # the coarse grid starts on the shared plane and samples the same field
    coarse = vol[mid::step, ::step, ::step]
    v1, f1, n1 = isosurface(fine, spacing=h, origin=(-1.0, -1.0, -1.0))
    v2, f2, n2 = isosurface(coarse, spacing=h * step, origin=(-1.0 + mid * h, -1.0, -1.0))
    v = np.concatenate([v1, v2])
    f = np.concatenate([f1, f2 + len(v1)])
    nn = _unit(np.concatenate([n1, n2]))
    return Mesh(_z_up(v), f, _z_up(nn), f"marschner-lobb-{n}-unbalanced")


def _unit(n: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(n, axis=1)
    n = n / np.where(length > 0, length, 1.0)[:, None]
    n[length == 0] = (0.0, 0.0, 1.0)
    return n


def load_dataset(kind: str = "balanced", size: str | int = "250k", *, cache: bool = True) -> Mesh:
    """A built-in isosurface.

    Parameters
    ----------
    kind : {"balanced", "unbalanced"}
    size : {"250k", "1m", "2m", "4m"} or int
        Named size or grid resolution (the balanced surface has about 14.8 n^2 triangles).
    cache : bool
        Read and write the on-disk cache.

    Returns
    -------
    Mesh
    """
    if kind not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}; got {kind!r}")
    if isinstance(size, str):
        key = size.lower()
        if key not in SIZES:
            raise ValueError(
                f"size must be one of {', '.join(SIZES)} or a resolution; got {size!r}"
            )
        n = SIZES[key]
    else:
        n = int(size)
        if not 8 <= n <= 1024:
            raise ValueError(f"grid resolution must be 8..1024, got {n}")
    path = cache_dir() / f"ml-{kind}-{n}-v{_VERSION}.npz"
    if cache and path.exists():
        try:
            with np.load(path) as d:
                return Mesh(d["vertices"], d["faces"], d["normals"], str(d["name"]))
        except (OSError, KeyError, ValueError):
            pass  # a broken cache file: rebuild it
    mesh = _build(kind, n)
    if cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}.npz")
            np.savez(
                tmp, vertices=mesh.vertices, faces=mesh.faces, normals=mesh.normals, name=mesh.name
            )
            os.replace(tmp, path)
        except OSError:
            pass  # read-only home: just do not cache
    return as_mesh(mesh)


def workload_table(
    mesh: Any, *, views: dict | None = None, size: int = 512, machine: Any = None
) -> list[dict]:
    """Maximum and average workload of the scan conversion and z-buffer loops for each
    view, like Table 1 of seed 000.

    Returns
    -------
    list of dict
        ``view``, ``scan_max``, ``scan_avg``, ``zbuf_max``, ``zbuf_avg``.
    """
    from renderer.pipeline import render

    rows = []
    for name, (view, mag) in (views or VIEWS).items():
        frame = render(
            mesh, view=view, magnification=mag, size=size, loop="expand", machine=machine
        )
        s, z = frame.stats["loops"]["scan-conversion"], frame.stats["loops"]["z-buffer"]
        rows.append(
            {
                "view": name,
                "scan_max": s["max_workload"],
                "scan_avg": s["mean_workload"],
                "zbuf_max": z["max_workload"],
                "zbuf_avg": z["mean_workload"],
            }
        )
    return rows
