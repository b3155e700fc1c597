"""What NumPy functions and ndarray methods cost on the counting device.

Each call counts as one kernel launch and no sync, except those named here: views and
metadata (no launch), data-dependent output shapes (a few launches and a sync), copies
that only happen when needed, and joins (one launch per input array). The counted
operations of :mod:`kernels.counting.device_array` read these tables.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["JOINS", "METHOD_MODELS", "NEEDED_COPIES", "SPECIAL", "SYNCING", "VIEWS", "copies"]

#: Views and metadata: no launch.
VIEWS = {
    "reshape",
    "transpose",
    "moveaxis",
    "swapaxes",
    "rollaxis",
    "broadcast_to",
    "broadcast_arrays",
    "expand_dims",
    "squeeze",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "shape",
    "ndim",
    "size",
    "result_type",
    "can_cast",
    "min_scalar_type",
    "iscomplexobj",
    "isrealobj",
    "isscalar",
    "empty",
    "empty_like",
    "may_share_memory",
    "shares_memory",
    "split",
    "array_split",
    "hsplit",
    "vsplit",
    "diagonal",
    "flip",
    "fliplr",
    "flipud",
    "real",
}
#: (launches, syncs) of data-dependent shapes.
SYNCING = {
    "nonzero": (3, 1),
    "flatnonzero": (3, 1),
    "argwhere": (3, 1),
    "unique": (4, 1),
    "compress": (3, 1),
    "extract": (3, 1),
    "bincount": (3, 1),
}
#: A launch only where the result is a copy (:func:`copies`), none where it is a view.
NEEDED_COPIES = ("ravel", "ascontiguousarray", "asfortranarray")
#: One launch per input array.
JOINS = ("concatenate", "stack", "hstack", "vstack", "column_stack", "dstack")

#: Every name counted otherwise than as one plain launch.
SPECIAL = VIEWS | set(SYNCING) | set(NEEDED_COPIES) | {"where", "repeat"} | set(JOINS)


def copies(result: Any, inputs: tuple) -> int:
    """One launch if the result does not share memory with the first input (a copy).

    Examples
    --------
    >>> a = np.arange(6).reshape(2, 3)
    >>> copies(a.ravel(), (a,)), copies(a.T.ravel(), (a,))
    (0, 1)
    """
    first = inputs[0] if inputs else None
    if isinstance(result, np.ndarray) and isinstance(first, np.ndarray):
        shared = np.shares_memory(result.view(np.ndarray), first.view(np.ndarray))
        return 0 if shared else 1
    return 1


#: ndarray methods that do not go through a ufunc: counted as the function of that name.
METHOD_MODELS = (
    "all",
    "any",
    "sum",
    "max",
    "min",
    "prod",
    "mean",
    "std",
    "var",
    "argmax",
    "argmin",
    "cumsum",
    "cumprod",
    "take",
    "argsort",
    "repeat",
    "searchsorted",
    "dot",
    "round",
    "clip",
    "flatten",
    "ravel",
    "put",
    "compress",
    "nonzero",
    "copy",
    "fill",
    "sort",
    "conj",
    "trace",
)
