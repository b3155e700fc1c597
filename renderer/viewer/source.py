"""What a viewer shows: the one mesh it was started with, or the isosurfaces of one volume.

A :class:`Source` makes the surface of each level the page asks for on the viewer's
machine, once: on one process a :class:`renderer.Scene` (the mesh kept on the device for
every frame of it), on MPI ranks this rank's share of the triangles (the ranks extract a
volume's isosurface together). The last few levels are kept, so that a slider moved back
and forth extracts nothing twice; the colour map's value per vertex is kept beside its
surface.

Examples
--------
>>> import numpy as np, renderer
>>> from simd import Machine
>>> x, y, z = np.mgrid[-1:1:15j, -1:1:15j, -1:1:15j]
>>> source = Source.of_volume(renderer.Volume(x * x + y * y + z * z, name="ball"),
...                           Machine(backend="numpy"))
>>> source.choices.levels
(0.0, 3.0)
>>> source.surface(0.5).n_faces > 0, source.surface(0.5) is source.surface(0.5)
(True, True)
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any

import numpy as np

from renderer.scene.mesh import Mesh, as_mesh
from renderer.scene.prepared import Scene
from renderer.stages.shading import vertex_scalars
from renderer.viewer.requests import Choices

__all__ = ["KEPT_LEVELS", "Source", "value_range"]

#: How many levels' surfaces a source keeps (the newest ones).
KEPT_LEVELS = 3

#: Planes of a volume read at once when its range of values is found (a mapped file is
#: read a slab at a time, never whole).
_PLANES = 16


class Source:
    """The surfaces a viewer shows, made on ``machine`` as the page asks for them.

    Parameters
    ----------
    name : str
        Shown on the page.
    machine : simd.Machine
        Every surface is made, and every frame rendered, on it; with ``comm``, across its
        MPI ranks.
    mesh : Mesh, optional
        The surface (on MPI ranks: this rank's share of it).
    volume : Volume, optional
        The volume whose isosurfaces are shown (its samples may be a mapped file).
    up : 3 floats, optional
        The up direction that ``colour_by="height"`` measures along (``render``'s ``up``).

    Use :meth:`of_mesh` and :meth:`of_volume`.
    """

    def __init__(
        self,
        name: str,
        machine: Any,
        *,
        mesh: Mesh | None = None,
        volume: Any = None,
        up: Any = None,
    ) -> None:
        self.name = name
        self.machine = machine
        self.volume = volume
        self.up = up
        self.ranks = getattr(machine, "ranks", None)
        levels = None if volume is None else value_range(volume.array, self.ranks)
        # the distance from the centre needs the whole mesh's box, which no rank has
        colour_by = ("height",) if self.ranks is not None else ("height", "distance")
        self.choices = Choices(levels=levels, colour_by=colour_by)
        self._surfaces: OrderedDict[float | None, Any] = OrderedDict()
        self._scalars: dict[tuple[float | None, str], np.ndarray] = {}
        if mesh is not None:
            self._surfaces[None] = self._prepare(mesh)

    @classmethod
    def of_mesh(cls, mesh: Any, machine: Any, *, up: Any = None, name: str | None = None) -> Source:
        """The viewer of one mesh (a :class:`renderer.Mesh` or anything
        :func:`renderer.as_mesh` takes; on MPI ranks, this rank's share), shown as
        ``name`` (default: the mesh's)."""
        if getattr(machine, "ranks", None) is None:
            mesh = as_mesh(mesh)
        return cls(name or getattr(mesh, "name", "mesh"), machine, mesh=mesh, up=up)

    @classmethod
    def of_volume(cls, volume: Any, machine: Any, *, up: Any = None) -> Source:
        """The viewer of a :class:`renderer.Volume`'s isosurfaces: its range of values is
        found here (a ValueError when it has no finite value)."""
        return cls(volume.name, machine, volume=volume, up=up)

    def __repr__(self) -> str:
        kind = "mesh" if self.volume is None else f"volume, levels {self.choices.levels}"
        return f"Source({self.name!r}, {kind})"

    def surface(self, level: float | None = None) -> Any:
        """The surface at ``level`` (None for a mesh): a :class:`renderer.Scene` on one
        process, this rank's mesh share on MPI ranks. Made on first use, on every rank
        together (a collective call under MPI)."""
        key = None if self.volume is None else float(level)
        found = self._surfaces.get(key)
        if found is not None:
            self._surfaces.move_to_end(key)
            return found
        mesh = self.volume.isosurface(key, machine=self.machine)
        surface = self._prepare(mesh)
        self._surfaces[key] = surface
        while len(self._surfaces) > KEPT_LEVELS:
            old, _ = self._surfaces.popitem(last=False)
            for kept in [k for k in self._scalars if k[0] == old]:
                del self._scalars[kept]
        return surface

    def scalars(self, level: float | None, by: str) -> np.ndarray:
        """The value per vertex that a colour map colours (``"height"`` along ``up``, or
        ``"distance"``) of the surface at ``level``."""
        key = (None if self.volume is None else float(level), by)
        values = self._scalars.get(key)
        if values is None:
            values = vertex_scalars(_mesh(self.surface(level)).vertices, by, up=self.up)
            self._scalars[key] = values
        return values

    def _prepare(self, mesh: Mesh) -> Any:
        """A surface as frames take it: a Scene on one process, the share itself on ranks."""
        return mesh if self.ranks is not None else Scene(mesh, machine=self.machine)


def value_range(array: Any, ranks: Any = None) -> tuple[float, float]:
    """The smallest and largest finite value of a volume's samples, read a slab of planes
    at a time (a mapped file is never read whole at once); on MPI ranks (``ranks``: the
    machine's) each rank reads its share of the planes and the ranks combine theirs.

    Raises
    ------
    ValueError
        No finite value: no level has a surface.

    Examples
    --------
    >>> value_range(np.array([[[np.nan, 2.0], [-1.0, np.inf]]]))
    (-1.0, 2.0)
    """
    array = np.asarray(array) if not hasattr(array, "shape") else array
    if array.ndim != 3 or array.dtype.kind not in "biuf":
        raise ValueError(
            f"a volume must be a 3-D array of numbers, got {array.dtype} {tuple(array.shape)}"
        )
    planes = array.shape[0]
    first, last = 0, planes
    if ranks is not None:
        first, last = planes * ranks.rank // ranks.size, planes * (ranks.rank + 1) // ranks.size
    low, high = math.inf, -math.inf
    for start in range(first, last, _PLANES):
        block = np.asarray(array[start : min(start + _PLANES, last)])
        if block.dtype.kind == "f":
            block = block[np.isfinite(block)]
        if block.size:
            low, high = min(low, float(block.min())), max(high, float(block.max()))
    if ranks is not None:
        from mpi4py import MPI

        low = ranks.comm.allreduce(low, op=MPI.MIN)
        high = ranks.comm.allreduce(high, op=MPI.MAX)
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError("the volume has no finite value, so no level has a surface")
    return (low, high)


def _mesh(surface: Any) -> Mesh:
    """The mesh of a surface (a Scene's, or the share itself)."""
    return surface.mesh if isinstance(surface, Scene) else surface
