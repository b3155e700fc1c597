"""Numba's CUDA target, imported so that it compiles with the NumPy at hand.

numba-cuda up to 0.30.4 (the newest release checked) registers ``numpy.row_stack`` when it
first compiles a kernel; NumPy 2.5 removed that name (an alias of ``numpy.vstack`` since
NumPy 1.x), so every compilation raises ``AttributeError`` there. :func:`cuda_module`
puts the alias back, only where it is missing, before handing out ``numba.cuda``. It also
turns off Numba's low-occupancy warning, once: small meshes and frames launch small grids
legitimately, and a warning filter around every launch would cost host time. Every module
of this project that uses Numba's CUDA target gets it from here.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

__all__ = ["cuda_module", "restore_row_stack"]


def restore_row_stack() -> bool:
    """Give NumPy back ``row_stack`` (as ``vstack``) where it lacks it; True if it did.

    Examples
    --------
    >>> import numpy as np
    >>> restore_row_stack() in (True, False)
    True
    >>> hasattr(np, "row_stack")
    True
    """
    if hasattr(np, "row_stack"):
        return False
    setattr(np, "row_stack", np.vstack)  # noqa: B010 - the very function it aliased
    return True


def cuda_module() -> ModuleType:
    """``numba.cuda``, able to compile under any NumPy this project supports (the CUDA
    simulator's under ``NUMBA_ENABLE_CUDASIM=1``)."""
    restore_row_stack()
    from numba import cuda

    try:  # numba-cuda's own configuration (its warning class is not numba.core's)
        from numba.cuda.core import config
    except ImportError:  # older numba-cuda: Numba's
        from numba.core import config
    config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    return cuda
