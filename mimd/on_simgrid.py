"""The same machine and policies on SimGrid, the oracle of the event engine.

SimGrid (Casanova, Legrand, Quinson et al.) is the simulator the distributed-computing
community validates message-passing algorithms on. Here it runs the machine of
:class:`mimd.Network` as a SimGrid platform -- a host per processor (one flop a second, so
an execution of ``w`` flops takes ``w`` seconds), a link per direction between torus
neighbours with the network's latency per hop and bandwidth ``1 / per_byte``, the
dimension-order routes of :meth:`mimd.Network.link` -- and the policies as actors
(:mod:`mimd.simgrid_actors`). SimGrid's network model is set to CM02, max-min fair sharing
without the correction factors its default model fits to TCP (``network/model:CM02``,
``network/crosstraffic:0``), so that it and the engine model the same machine: where they
differ, it is in how they carry it out.

SimGrid's Python module is not a dependency of the project: Debian ships it for the system
Python (``apt-get install python3-simgrid``; :func:`require` finds it there for a Python of
the same version), the package index only as sources (``pip install simgrid``, a C++ build
of several minutes). SimGrid runs one simulation per process, so every function here runs
its simulation in a child process of its own.
"""

from __future__ import annotations

import glob
import importlib
import importlib.util
import pickle
import subprocess
import sys
from typing import Any

import numpy as np

__all__ = ["SimGridMissing", "arrivals", "available", "require", "simulate", "INSTALL"]

#: The way to install SimGrid's Python module, in one line.
INSTALL = (
    "apt-get install python3-simgrid (Debian; found from any Python "
    f"{sys.version_info.major}.{sys.version_info.minor}) or pip install simgrid (a C++ build "
    "of several minutes)"
)
#: Where Debian's package puts the module.
SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"
#: SimGrid's configuration: the network model the engine implements.
CONFIGURATION = (
    "--cfg=network/model:CM02",
    "--cfg=network/crosstraffic:0",
    "--cfg=network/TCP-gamma:0",
    "--log=root.thresh:critical",
    "--log=xbt_cfg.thresh:critical",
)


class SimGridMissing(RuntimeError):
    """SimGrid's Python module cannot be imported here; the message says how to install it."""


def _locate() -> str | None:
    """The file of SimGrid's module for this Python: installed, or Debian's system copy."""
    spec = importlib.util.find_spec("simgrid")
    if spec is not None and spec.origin:
        return spec.origin
    tag = f"cpython-{sys.version_info.major}{sys.version_info.minor}"
    found = sorted(glob.glob(f"{SYSTEM_PACKAGES}/simgrid.{tag}-*.so"))
    return found[0] if found else None


def available() -> bool:
    """Whether SimGrid's Python module can be loaded (without loading it)."""
    return _locate() is not None


def require() -> str:
    """The file of SimGrid's module, or :class:`SimGridMissing` in one line."""
    path = _locate()
    if path is None:
        raise SimGridMissing(f"SimGrid's Python module is not installed; {INSTALL}")
    return path


def load_simgrid() -> Any:
    """Import SimGrid's module (in the child process that runs a simulation)."""
    if "simgrid" in sys.modules:
        return sys.modules["simgrid"]
    spec = importlib.util.spec_from_file_location("simgrid", require())
    module = importlib.util.module_from_spec(spec)
    sys.modules["simgrid"] = module
    spec.loader.exec_module(module)
    return module


def _in_child(function: str, *args) -> Any:
    """``function(*args)`` (``module:name``) in a fresh Python process (SimGrid runs one
    simulation per process); the arguments and the result cross as pickles."""
    require()
    code = "import mimd.on_simgrid as m; m.child()"
    module, name = function.split(":")
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=pickle.dumps((module, name, args)),
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        raise RuntimeError(f"SimGrid's run failed: {lines[-1] if lines else done.returncode}")
    return pickle.loads(done.stdout)


def child() -> None:
    """The child process of :func:`_in_child`: a call read from stdin, its result to stdout."""
    module, name, args = pickle.loads(sys.stdin.buffer.read())
    result = getattr(importlib.import_module(module), name)(*args)
    sys.stdout.buffer.write(pickle.dumps(result))


def platform(sg: Any, network: Any) -> list:
    """The hosts of ``network`` on a SimGrid platform, one per processor (their list); a
    link per direction between torus neighbours, routes in dimension order.

    The links have no latency: SimGrid's CM02 shares a link's bandwidth in inverse
    proportion to the latency of each flow's route (as TCP favours short round trips), the
    engine equally; the senders wait for the latency themselves.
    """
    engine = sg.Engine(["mimd", *CONFIGURATION])
    zone = sg.NetZone.create_full_zone("torus")
    hosts = [zone.create_host(f"p{i}", 1.0).seal() for i in range(network.p)]
    bandwidth = 1.0 / network.per_byte if network.per_byte > 0 else 1e15
    links = {}
    for q in range(network.p):
        for d in range(4):
            links[4 * q + d] = zone.create_link(f"l{4 * q + d}", bandwidth).seal()
    loop = zone.create_link("loopback", 1e15).seal()
    for a in range(network.p):
        for b in range(network.p):
            hops = int(network.hops(a, b))
            route = [links[int(network.link(a, b, k))] for k in range(hops)] if hops else [loop]
            zone.add_route(hosts[a].netpoint, hosts[b].netpoint, None, None,
                           [sg.LinkInRoute(x) for x in route], False)  # fmt: skip
    zone.seal()
    return engine, hosts


def _arrivals(network, src, dst, nbytes, leave) -> list[float]:
    sg = load_simgrid()
    engine, hosts = platform(sg, network)
    out = [float("nan")] * len(src)

    def sender(i):
        sg.this_actor.sleep_until(leave[i] + network.hops(src[i], dst[i]) * network.per_hop)
        if src[i] == dst[i]:
            out[i] = sg.Engine.clock
            return
        sg.Comm.sendto(hosts[src[i]], hosts[dst[i]], int(round(nbytes[i])))
        out[i] = sg.Engine.clock

    for i in range(len(src)):
        sg.Actor.create(f"m{i}", hosts[src[i]], sender, i)
    engine.run()
    return out


def arrivals(network, src, dst, nbytes, leave) -> np.ndarray:
    """When messages arrive on SimGrid: :meth:`mimd.Network.arrivals` (cut-through only)."""
    if network.store_and_forward:
        raise ValueError("SimGrid's flows are cut-through; store-and-forward has no oracle here")
    src, dst, nbytes, leave = np.broadcast_arrays(src, dst, nbytes, leave)
    args = [np.ravel(x).tolist() for x in (src, dst, nbytes, leave)]
    return np.asarray(_in_child(f"{__name__}:_arrivals", network, *args)).reshape(src.shape)


def simulate(costs, policy, *, network, placement=None, seed: int = 0) -> dict:
    """``costs`` under ``policy`` on SimGrid: the makespan, each task's start, finish and
    processor, the migrations and messages (:mod:`mimd.simgrid_policies`)."""
    from .simulator import _checked

    host, network, owners, bundle = _checked(costs, policy, network, None, placement, None, seed)
    if network.store_and_forward:
        raise ValueError("SimGrid's flows are cut-through; store-and-forward has no oracle here")
    return _in_child("mimd.simgrid_policies:run_policy", host.tolist(), policy, network,
                     owners.tolist(), bundle, seed)  # fmt: skip
