"""What a call costs the host, counted in calls: for tests that bound a launch's host work."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable


def calls_of(fn: Callable[[], object]) -> dict[str, int]:
    """The Python-level (``call``) and C-level (``c_call``) function calls made by ``fn()``."""
    events = {"call": 0, "c_call": 0}

    def profile(frame, event, arg):
        if event in events:
            events[event] += 1

    # A collection inside fn() would run other objects' finalizers and count their calls.
    collecting = gc.isenabled()
    gc.disable()
    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
        if collecting:
            gc.enable()
    return events
