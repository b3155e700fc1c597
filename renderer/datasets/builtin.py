"""Built-in data sets: isosurfaces of the Marschner-Lobb test signal, balanced and unbalanced.

Ahrens & Hansen (1995, section 4, Table 1) render a balanced and an unbalanced
isosurface of the same simulation output, made by two isosurface algorithms. Here:

- ``balanced``: the marching-cubes isosurface (:func:`renderer.isosurface`, this
  program's, with VTK's case table) of the Marschner-Lobb signal (Marschner & Lobb, "An
  evaluation of reconstruction filters for volume rendering", Visualization '94) at
  ``resolution``^3 samples, isovalue 0.5. At 128^3 it has 241,498 triangles (the default
  "250k" surface); 256^3 gives 983,434 and 512^3 3,986,802. All triangles are about one
  voxel in size, so every polygon covers a few scan lines.
- ``unbalanced``: the same signal polygonised by marching cubes on a multi-block
  rectilinear grid, as simulation codes write their output, instead of one uniform grid
  (Ahrens & Hansen's unbalanced set likewise comes from another isosurface algorithm on the same
  output). Three blocks share their boundary planes:

  * ``x <= 0``: the full-resolution grid, i.e. exactly the balanced surface's half
    (about 120,000 small triangles at 128^3);
  * ``x >= 0, y <= 1/2``: full resolution along x, but only the block's end planes along
    y and z (two samples each, cells ``h x 3/2 x 2``);
  * ``x >= 0, y >= 1/2``: full resolution along y, only the end planes along x and z.

  In the two coarse blocks the isosurface is a height field over a grid that is fine along
  one horizontal axis and a single cell long along the other, so marching cubes returns
  two triangles per cell: 192 long slivers at 128^3 (one and a half units long along y or
  one unit long along x, one voxel wide) among the small triangles. In views (45, 45) and
  M(45, 45) the slivers along y span hundreds of scan lines while staying a few pixels
  wide, as the tall polygons of the unbalanced set of Table 1 (scan max 169 and 468
  there; here 223 and 341 at 512x512, averages 2 to 5).
  The signal's isosurface is a corrugated sheet only 0.32 units tall (|z| <= 0.16; linear
  interpolation along a two-sample z edge keeps vertices within |z| <= 0.25), so in the
  side views (0, 0) no polygon of it can span more than about 90 scan lines (180
  magnified), far from the paper's 231 and 512; there the slivers along x, seen side on,
  make long spans instead: part of the imbalance moves into the z-buffer loop (max about
  160 and 260 pixels per span, against 9 and 14 in the paper).

- ``oilwell`` and ``oilwell-unbalanced`` (:mod:`renderer.datasets.oilwell`): a perforated rock
  formation drilled by well bores, as the paper's oil-well perforator data, polygonised on
  a uniform grid and on one whose middle is a single tall cell: there each bore wall
  becomes a ring of slivers half the image tall, so the scan conversion maxima of Table 1
  (231 and 512 scan lines side on) come within a factor 1.3 of the paper's; a fracture's
  walls in a cell as long as the fracture make its long spans from (45,45); a column of
  cells three times wider about the middle bore, its z-buffer maxima of 7 to 9 pixels
  per span; rough, steep strata give the paper's polygon count (about 247,000 and 219,000
  triangles at "250k").

Slabs (:func:`load_dataset_slab`): on ``nranks`` MPI ranks each rank samples only its range
of the blocks' planes along x (about an equal share of the samples) and the planes beside it
that the extraction reads, and extracts its share of the surface there
(:func:`renderer.contour.marching_cubes.slab_isosurface`), so a surface too large for one
process never sits in one. The slabs in rank order are the whole surface's triangles in its
order, bit for bit (positions and normals), each slab with the vertices its triangles use
(those of the next slab's first plane repeated), so a frame rendered sort-last is the
one-process frame.

Meshes are cached on disk after the first run, in simd-emu's cache folder
(:func:`kernels.cache.cache_dir`: ``$SIMD_EMU_CACHE_DIR``, else
``$XDG_CACHE_HOME/simd-emu``, else ``~/.cache/simd-emu``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np

from kernels.cache import cache_dir
from renderer.datasets import oilwell
from renderer.scene.mesh import Mesh, as_mesh

log = logging.getLogger("simd_emu.data")

__all__ = [
    "DATASETS",
    "SIZES",
    "VIEWS",
    "cache_dir",
    "load_dataset",
    "load_dataset_slab",
    "marschner_lobb",
    "workload_table",
]

#: Named sizes -> grid resolution (triangles ~ 14.7 n^2).
SIZES = {"250k": 128, "1m": 256, "2m": 362, "4m": 512, "16m": 1040, "64m": 2080}
#: Largest grid resolution one process builds; larger grids only as slabs over MPI ranks.
MAX_RESOLUTION = 1024
#: Largest grid resolution of slabs, and most grid samples one rank's slab may hold.
MAX_SLAB_RESOLUTION = 8192
MAX_SLAB_SAMPLES = MAX_RESOLUTION**3
DATASETS = ("balanced", "unbalanced", "oilwell", "oilwell-unbalanced")
#: The oil-well kinds (:mod:`renderer.datasets.oilwell`): Table 1 of Ahrens & Hansen (1995)
#: in shape.
OILWELL = ("oilwell", "oilwell-unbalanced")
#: The views of Table 1 of Ahrens & Hansen (1995): (azimuth, elevation, magnification); the
#: paper gives no factor, 2 is ours.
VIEWS = {
    "(0,0)": ((0.0, 0.0), 1.0),
    "(45,45)": ((45.0, 45.0), 1.0),
    "M(0,0)": ((0.0, 0.0), 2.0),
    "M(45,45)": ((45.0, 45.0), 2.0),
}
#: The unbalanced variant's block boundary along y, as a fraction of the grid: the blocks of
#: slivers along y and along x meet at y = -1 + 2 * SPLIT_Y (y = 1/2).
SPLIT_Y = 0.75
#: The isovalue of both surfaces.
LEVEL = 0.5
#: Cache format and content version (5: made by renderer.isosurface's marching cubes).
_VERSION = 5
#: The oil-well surfaces' cache version (their own, so the others' caches stay valid; 5:
#: made by renderer.isosurface's marching cubes).
_OILWELL_VERSION = 5


def marschner_lobb(n: int, *, alpha: float = 0.25, f_m: float = 6.0, xp: Any = np) -> Any:
    """The Marschner-Lobb signal sampled on an ``n``^3 grid over [-1, 1]^3 (float32, [0, 1]).

    ``rho(x, y, z) = (1 - sin(pi z / 2) + alpha (1 + cos(2 pi f_M cos(pi r / 2))))
    / (2 (1 + alpha))`` with ``r = sqrt(x^2 + y^2)``; axes ordered (x, y, z). ``xp``: the
    array module that computes it (``cupy``: made on the GPU).

    Examples
    --------
    >>> vol = marschner_lobb(16)
    >>> vol.shape, vol.dtype, bool(0 <= vol.min() and vol.max() <= 1)
    ((16, 16, 16), dtype('float32'), True)
    """
    if n < 4:
        raise ValueError(f"grid resolution must be at least 4, got {n}")
    whole = xp.arange(n)
    return _sample(n, whole, whole, whole, alpha=alpha, f_m=f_m, xp=xp)


def _sample(n: int, xs: Any, ys: Any, zs: Any, *, alpha: float = 0.25, f_m: float = 6.0,
            xp: Any = np) -> Any:  # fmt: skip
    """``marschner_lobb(n)[np.ix_(xs, ys, zs)]`` bit for bit, computing only those samples
    (the transcendental parts on the (x, y) and z index sets, the rest elementwise)."""
    t = xp.linspace(-1.0, 1.0, n, dtype=xp.float32)
    x, y = xp.meshgrid(t[xs], t[ys], indexing="ij")
    r = xp.sqrt(x * x + y * y)
    radial = xp.cos(2.0 * np.pi * f_m * xp.cos(np.pi * r / 2.0))
    zpart = 1.0 - xp.sin(np.pi * t[zs] / 2.0)
    vol = (zpart[None, None, :] + alpha * (1.0 + radial[:, :, None])) / (2.0 * (1.0 + alpha))
    return vol.astype(xp.float32)


def _z_up(v: np.ndarray) -> np.ndarray:
    """Volume axes (x, y, z) -> world (x, z, -y): the signal's z axis becomes the camera's
    up direction (y), so view (45, 45) looks down onto the rings at 45 degrees."""
    return np.stack([v[:, 0], v[:, 2], -v[:, 1]], axis=1)


def _parts(kind: str, n: int) -> list[tuple]:
    """The blocks of the grid the isosurface is made of: (x, y, z sample indices, spacing,
    origin) each; one block for ``balanced``, three for ``unbalanced`` (and the oil-well
    kinds' blocks, :func:`renderer.datasets.oilwell.parts`)."""
    if kind in OILWELL:
        return oilwell.parts(kind, n)
    h = 2.0 / (n - 1)
    whole = np.arange(n)
    if kind == "balanced":
        return [(whole, whole, whole, h, (-1.0, -1.0, -1.0))]
    # unbalanced: three blocks of a rectilinear grid sharing the planes x = 0 and y = 1/2
    mid = (n - 1) // 2  # the plane x = 0 (x = -h/2 for even n)
    ysplit = int(round(SPLIT_Y * (n - 1)))
    last = n - 1
    ends = np.array([0, last])  # z: only the end planes in the coarse blocks
    x0, y0 = -1.0 + mid * h, -1.0 + ysplit * h
    return [
        # fine block: the balanced surface's x <= 0 half
        (np.arange(mid + 1), whole, whole, h, (-1.0, -1.0, -1.0)),
        # slivers along y: fine in x, end planes in y (0, ysplit) and z
        (
            np.arange(mid, n),
            np.array([0, ysplit]),
            ends,
            (h, ysplit * h, last * h),
            (x0, -1.0, -1.0),
        ),
        # slivers along x: end planes in x (mid, last) and z, fine in y
        (
            np.array([mid, last]),
            np.arange(ysplit, n),
            ends,
            ((last - mid) * h, h, last * h),
            (x0, y0, -1.0),
        ),
    ]


def _build(kind: str, n: int, rank: int = 0, nranks: int = 1) -> Mesh:
    """The isosurface of ``kind`` at resolution ``n``, or rank ``rank``'s slab of it: its
    range of the blocks' planes along x (:func:`_slab_planes`), extracted by
    :func:`renderer.contour.marching_cubes.slab_isosurface` from the samples of those planes and the
    planes beside them that the extraction reads."""
    from renderer.contour.marching_cubes import Planes, slab_isosurface
    from simd import Machine

    machine = Machine(backend="numpy")  # the fused CPU kernels: the same bits everywhere
    sample = oilwell.sample if kind in OILWELL else _sample
    blocks = _parts(kind, n)
    parts = []
    for (xs, ys, zs, spacing, origin), (lo, hi) in zip(
        blocks, _slab_planes(blocks, rank, nranks), strict=True
    ):
        first, last = Planes.held(lo, hi, len(xs))
        if last == first:
            continue  # no planes of this block on this rank
        block = sample(n, xs[first:last], ys, zs)  # the samples the whole grid has there
        # float64, as the data sets were first built and their figures pinned
        part = slab_isosurface(block, LEVEL, Planes(first, lo, hi, len(xs)), spacing=spacing,
                               origin=origin, machine=machine, dtype=np.float64)  # fmt: skip
        if part.n_faces:  # else no surface crosses this block's planes
            parts.append(part)
    if kind in OILWELL:
        name = f"{kind}-{n}"
    else:
        name = f"marschner-lobb-{n}" + ("" if kind == "balanced" else "-unbalanced")
    if nranks > 1:
        name += f"-slab{rank}of{nranks}"
    if not parts:
        empty = np.zeros((0, 3))
        return Mesh(empty, np.zeros((0, 3), dtype=np.int64), empty, name)
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    v = np.concatenate([p.vertices for p in parts])
    f = np.concatenate([p.faces.astype(np.int64) + o for p, o in zip(parts, offsets, strict=True)])
    nn = np.concatenate([_unit(p.normals) for p in parts])
    return Mesh(_z_up(v), f, _z_up(nn), name)


def _slab_planes(blocks: list[tuple], rank: int, nranks: int) -> list[tuple[int, int]]:
    """Rank ``rank``'s planes ``[lo, hi)`` along x of each block: the blocks' planes in
    order, split into ``nranks`` contiguous ranges of about equal samples, so that the
    ranks' triangles in rank order are the whole surface's in its order."""
    weights = [len(ys) * len(zs) for _, ys, zs, _, _ in blocks]
    total = sum(len(b[0]) * w for b, w in zip(blocks, weights, strict=True))
    out, before = [], 0
    for (xs, *_), w in zip(blocks, weights, strict=True):
        # the rank of each plane: where its first sample falls in the even split
        owner = (before + w * np.arange(len(xs), dtype=np.int64)) * nranks // total
        lo, hi = np.searchsorted(owner, [rank, rank + 1])
        out.append((int(lo), int(hi)))
        before += len(xs) * w
    return out


def _unit(n: np.ndarray) -> np.ndarray:
    """The extraction's unit normals, with (0, 0, 1) where the gradient vanishes (a zero
    normal)."""
    n = n.copy()
    n[~n.any(axis=1)] = (0.0, 0.0, 1.0)
    return n


def load_dataset(kind: str = "balanced", size: str | int = "250k", *, cache: bool = True) -> Mesh:
    """A built-in isosurface.

    Parameters
    ----------
    kind : {"balanced", "unbalanced", "oilwell", "oilwell-unbalanced"}
    size : {"250k", "1m", "2m", "4m"} or int
        Named size or grid resolution 8..1024 (the balanced surface has about 14.7 n^2
        triangles). The larger "16m" and "64m" only as slabs (:func:`load_dataset_slab`).
    cache : bool
        Read and write the on-disk cache.

    Returns
    -------
    Mesh
    """
    n = _resolution(kind, size)
    if n > MAX_RESOLUTION:
        raise ValueError(
            f"size {size} (a {n}^3 grid) does not fit one process (at most {MAX_RESOLUTION}^3): "
            "build it in slabs over MPI ranks (mpiexec -n N simd-emu render ...)"
        )
    if kind in OILWELL:
        path = cache_dir() / f"{kind}-{n}-v{_OILWELL_VERSION}.npz"
    else:
        path = cache_dir() / f"ml-{kind}-{n}-v{_VERSION}.npz"
    if cache and path.exists():
        try:
            with np.load(path) as d:
                return Mesh(d["vertices"], d["faces"], d["normals"], str(d["name"]))
        except (OSError, KeyError, ValueError):
            pass  # a broken cache file: rebuild it
    if cache:
        log.info("building the built-in data set %s (once: later runs read it from %s)", kind, path)
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


def load_dataset_slab(kind: str, size: str | int, rank: int, nranks: int) -> Mesh:
    """Rank ``rank``'s slab of a built-in isosurface made on ``nranks`` MPI ranks.

    The rank samples the signal on its range of the grid's planes along x only (and the
    planes beside it the extraction reads) and extracts its share of the surface there, so
    no process holds the whole grid or mesh. The slabs in rank order have the triangles of
    :func:`load_dataset` in its order, bit for bit, each with the vertices it uses; a slab
    may be empty (no faces). Not cached. With ``nranks=1`` this is the whole surface.

    Parameters
    ----------
    kind, size
        As for :func:`load_dataset`; resolutions up to ``MAX_SLAB_RESOLUTION`` as long as
        a rank's slab holds at most ``MAX_SLAB_SAMPLES`` samples.
    rank, nranks : int
        This rank and the number of ranks.

    Examples
    --------
    >>> whole = load_dataset("balanced", 16, cache=False)
    >>> slabs = [load_dataset_slab("balanced", 16, r, 3) for r in range(3)]
    >>> corners = np.concatenate([s.vertices[s.faces] for s in slabs])
    >>> bool(np.array_equal(corners, whole.vertices[whole.faces]))
    True
    """
    n = _resolution(kind, size, MAX_SLAB_RESOLUTION)
    if not (isinstance(nranks, int) and nranks >= 1 and isinstance(rank, int)):
        raise ValueError(f"nranks must be a positive whole number, got {nranks!r}")
    if not 0 <= rank < nranks:
        raise ValueError(f"rank must be in 0..{nranks - 1}, got {rank!r}")
    held = _slab_samples(_parts(kind, n), nranks)
    if max(held) > MAX_SLAB_SAMPLES:
        need = nranks * -(-max(held) // MAX_SLAB_SAMPLES)
        raise ValueError(
            f"a {n}^3 grid on {nranks} ranks puts {max(held)} samples on a rank "
            f"(at most {MAX_SLAB_SAMPLES}): run on at least {need} MPI ranks"
        )
    if nranks == 1:
        return as_mesh(_build(kind, n))
    return as_mesh(_build(kind, n, rank, nranks), allow_empty=True)


def _slab_samples(blocks: list[tuple], nranks: int) -> list[int]:
    """The samples each rank's slab holds (its planes and those beside them it reads)."""
    from renderer.contour.marching_cubes import Planes

    held = []
    for rank in range(nranks):
        samples = 0
        for (xs, ys, zs, *_), (lo, hi) in zip(
            blocks, _slab_planes(blocks, rank, nranks), strict=True
        ):
            first, last = Planes.held(lo, hi, len(xs))
            samples += (last - first) * len(ys) * len(zs)
        held.append(samples)
    return held


def _resolution(kind: str, size: str | int, largest: int = MAX_RESOLUTION) -> int:
    """The grid resolution of a named size or a whole number (8..``largest``)."""
    if kind not in DATASETS:
        raise ValueError(f"dataset must be one of {', '.join(DATASETS)}; got {kind!r}")
    if isinstance(size, str):
        key = size.lower()
        if key not in SIZES:
            raise ValueError(
                f"size must be one of {', '.join(SIZES)} or a resolution; got {size!r}"
            )
        return SIZES[key]
    n = int(size)
    if not 8 <= n <= largest:
        raise ValueError(f"grid resolution must be 8..{largest}, got {n}")
    return n


def workload_table(
    mesh: Any,
    *,
    views: dict | None = None,
    size: int | tuple[int, int] = 512,
    machine: Any = None,
) -> list[dict]:
    """Maximum and average workload of the scan conversion and z-buffer loops for each
    view, like Table 1 of Ahrens & Hansen (1995).

    Parameters
    ----------
    mesh : Mesh or anything :func:`renderer.render` takes
    views : dict, optional
        Name -> ((azimuth, elevation), magnification); default :data:`VIEWS`.
    size : int or (width, height)
        Image size.
    machine : simd.Machine, optional

    Returns
    -------
    list of dict
        ``view``, ``scan_max``, ``scan_avg``, ``zbuf_max``, ``zbuf_avg``: the summary of
        :func:`renderer.pipeline.loop_workloads` (the workload arrays themselves) per view.

    Examples
    --------
    >>> from simd import Machine
    >>> rows = workload_table(load_dataset("balanced", 16, cache=False), size=64,
    ...                       views={"(0,0)": ((0, 0), 1.0)},
    ...                       machine=Machine(pes=32, backend="numpy"))
    >>> rows[0]["view"], rows[0]["scan_max"] >= 1, rows[0]["zbuf_avg"] > 0
    ('(0,0)', True, True)
    """
    from renderer.pipeline import loop_workloads

    rows = []
    for name, (view, mag) in (views or VIEWS).items():
        w = loop_workloads(mesh, view=view, magnification=mag, size=size, machine=machine)
        rows.append({"view": name, **w.summary()})
    return rows
