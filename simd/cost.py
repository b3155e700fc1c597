"""The model clock: deterministic cycle counts of the emulated machine.

Every instruction is charged a number of *cycles* of the target machine, computed from the
size of the VP set it runs on, the number of physical processing elements (PEs) ``P`` and
a few constants per machine. The VP ratio ``ceil(n / P)`` is the number of virtual
processors each PE simulates, so an elementwise step costs the VP ratio; a scan or a
reduction adds a network term that grows with ``log2(P)``; a mesh (NEWS / X-Net) shift is
cheap; the general router is expensive. The absolute numbers are approximations; what the
model is for is the *ratios* between instructions and between machine sizes, which decide
when load balancing pays off (seed 000, section 2.1; seed 003, section 5).

Where the constants come from
-----------------------------
CM-5 (Thinking Machines, 1992; the machine of seed 000, Ahrens & Hansen, 32 to 512 nodes):
  * Node clock 32 MHz SPARC with four vector units. Data-parallel (CM Fortran / C*)
    elementwise work runs at roughly one result per cycle per node at high VP ratios:
    ``elementwise = 1`` cycle per VP per operation.
  * Scans and reductions use the control network, a binary tree with hardware combining:
    a local pass over the VPs of each node (about 2 cycles per VP: read, combine, write)
    plus a round trip through ``log2(P)`` tree levels, about 1 microsecond (32 cycles) per
    level up and down: ``scan_per_vp = 2``, ``network_per_level = 64``.
  * Sends and gets go through the data network (a fat tree) at about 5 to 10 MB/s per node
    for irregular traffic, i.e. roughly 1 microsecond per 8-byte word including software
    overhead: ``router_per_vp = 32`` cycles, plus a latency of a few microseconds growing
    with the tree's height: ``router_latency_per_level = 32``.
  * The CM-5 has no NEWS grid; regular shifts still travel the data network but with
    contention-free patterns, about a third of the router's cost: ``shift_per_vp = 10``.

MasPar MP-1 (1990; the machine of seed 003, Biagioni & Prins, a 64 x 64 PE mesh):
  * 12.5 MHz PEs with 4-bit ALUs: a 32-bit add takes about 8 nibble steps:
    ``elementwise = 8`` cycles per VP per operation.
  * The X-Net mesh moves one bit per clock per PE and direction, so a 32-bit word to a
    neighbour costs about 32 cycles plus a little set-up: ``shift_per_vp = 36``.
  * The global router is circuit-switched through a multistage network shared by clusters
    of 16 PEs; seed 003 (section 5) notes that the mesh's bandwidth is much greater. We
    take the X-Net at about 18 times the router's bandwidth: ``router_per_vp = 18 * 36``.
  * Scans on the MP-1 run over the mesh (seed 003, section 6): ``log2(P)`` steps, each an
    X-Net shift and an operation, after a local pass: ``scan_per_vp = 16``,
    ``network_per_level = 36 + 8``.

Examples
--------
>>> cm5 = CostModel.cm5(512)
>>> cm5.vp_ratio(250_000)
489
>>> cm5.cycles("elementwise", 250_000, ops=3)
1467.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

__all__ = ["CostModel"]


@dataclass(frozen=True)
class CostModel:
    """Cycle costs of one emulated machine. See the module docstring for the sources.

    Parameters
    ----------
    name : str
        Label shown in statistics, e.g. ``"CM-5/512"``.
    pes : int
        Number of physical processing elements ``P``.
    clock_hz : float
        Clock rate, to convert cycles into emulated seconds.
    elementwise : float
        Cycles per VP per elementwise operation.
    scan_per_vp, network_per_level : float
        Local cycles per VP of a scan or reduction, and network cycles per tree level
        (``log2(P)`` levels).
    shift_per_vp : float
        Cycles per VP of a nearest-neighbour mesh shift.
    router_per_vp, router_latency_per_level : float
        Cycles per VP of a router send or get, and the router's latency per level.
    """

    name: str
    pes: int
    clock_hz: float
    elementwise: float
    scan_per_vp: float
    network_per_level: float
    shift_per_vp: float
    router_per_vp: float
    router_latency_per_level: float

    @classmethod
    def cm5(cls, nodes: int = 512) -> CostModel:
        """A CM-5 of ``nodes`` processing nodes (seed 000 uses 32 to 512)."""
        _check_pes(nodes)
        return cls(
            name=f"CM-5/{nodes}",
            pes=int(nodes),
            clock_hz=32e6,
            elementwise=1.0,
            scan_per_vp=2.0,
            network_per_level=64.0,
            shift_per_vp=10.0,
            router_per_vp=32.0,
            router_latency_per_level=32.0,
        )

    @classmethod
    def mp1(cls, pes: int = 64 * 64) -> CostModel:
        """A MasPar MP-1 with ``pes`` PEs (64 x 64 = 4096 in seed 003)."""
        _check_pes(pes)
        shift = 36.0
        return cls(
            name=f"MP-1/{pes}",
            pes=int(pes),
            clock_hz=12.5e6,
            elementwise=8.0,
            scan_per_vp=16.0,
            network_per_level=shift + 8.0,
            shift_per_vp=shift,
            router_per_vp=18 * shift,
            router_latency_per_level=shift,
        )

    def with_pes(self, pes: int) -> CostModel:
        """The same machine with another number of PEs."""
        _check_pes(pes)
        base = self.name.split("/")[0]
        return replace(self, pes=int(pes), name=f"{base}/{pes}")

    @property
    def levels(self) -> int:
        """Height of the combining network, ``ceil(log2(P))``."""
        return max(1, math.ceil(math.log2(self.pes))) if self.pes > 1 else 0

    def vp_ratio(self, n: int) -> int:
        """Virtual processors per PE for a VP set of ``n`` elements (at least 1)."""
        return max(1, -(-int(n) // self.pes))

    def cycles(self, kind: str, n: int, *, ops: float = 1.0, distance: int = 1) -> float:
        """Cycles of one instruction of ``kind`` over a VP set of ``n`` elements.

        ``kind`` is one of "elementwise" (``ops`` operations per VP), "local" (the same
        but named for work a program charges itself), "scan", "reduce", "shift" (by
        ``distance`` mesh steps) or "router" (send and get).
        """
        vpr = self.vp_ratio(n)
        if kind in ("elementwise", "local"):
            return float(vpr * self.elementwise * ops)
        if kind in ("scan", "reduce"):
            return float(vpr * self.scan_per_vp + self.levels * self.network_per_level)
        if kind == "shift":
            return float(vpr * self.shift_per_vp * max(1, int(distance)))
        if kind == "router":
            return float(vpr * self.router_per_vp + self.levels * self.router_latency_per_level)
        raise ValueError(
            f"unknown cost kind {kind!r}; expected elementwise, local, scan, reduce, shift "
            "or router"
        )

    def seconds(self, cycles: float) -> float:
        """Emulated seconds for ``cycles`` at this machine's clock."""
        return cycles / self.clock_hz


def _check_pes(pes: int) -> None:
    if not isinstance(pes, int) or isinstance(pes, bool) or pes < 1:
        raise ValueError(f"the number of PEs must be a positive integer, got {pes!r}")
