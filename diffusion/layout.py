"""How a process holds the image: the whole of it, or a block of rows with ghost rows.

The iteration loops run on a :class:`Layout`'s block; across MPI ranks the subclass
:class:`diffusion.blocks.Blocks` fills the ghost rows from the neighbour ranks and sums
the counts over the ranks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["Layout"]


class Layout:
    """How this process holds the image: here all of it, one block with no neighbours.

    :class:`diffusion.blocks.Blocks` splits the image in blocks of rows across MPI ranks;
    the iteration loops (:func:`diffusion.dense.pm_diffuse`,
    :func:`diffusion.itk.itk_diffuse`) are the same for both.

    Attributes
    ----------
    shape : tuple of int
        Shape of the whole image.
    size : int
        Points of the whole image.
    local : int
        Rows (along axis 0) of this process's block.
    ghosts : tuple of int
        Ghost rows the block needs below and above (from neighbour blocks): none here.

    Examples
    --------
    >>> import numpy as np
    >>> a = np.zeros((3, 4), np.float32)
    >>> layout = Layout(a.shape)
    >>> layout.size, layout.ghosts, layout.buffer(np, a)[1]
    (12, (0, 0), slice(0, 3, None))
    """

    ghosts: tuple[int, int] = (0, 0)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(int(n) for n in shape)
        self.size = math.prod(self.shape)
        self.local = self.shape[0]

    def buffer(self, xp: Any, block: Any) -> tuple[Any, slice]:
        """A C-contiguous array holding ``block`` (this process's own copy) with room for
        its ghost rows around it, and the slice of the block's rows in it: ``block``
        itself when there are none."""
        below, above = self.ghosts
        if not (below or above):
            return block, slice(0, self.local)
        ext = xp.empty((below + self.local + above, *block.shape[1:]), dtype=block.dtype)
        ext[below : below + self.local] = block
        return ext, slice(below, below + self.local)

    def fill(self, ext: Any, own: slice) -> None:
        """Write the neighbours' face rows into the ghost rows of ``ext`` (whose own rows
        are ``ext[own]``): nothing to do without neighbours."""

    def total(self, counts: np.ndarray) -> np.ndarray:
        """``counts`` (integers) summed over the processes that hold the image."""
        return counts

    def gather_rows(self, values: np.ndarray) -> np.ndarray:
        """Per-row host values of shape ``(k, rows of the block)`` of every block, in row
        order: ``(k, rows of the image)``."""
        return values
