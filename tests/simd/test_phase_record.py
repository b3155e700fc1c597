"""The one phase record: what ``with machine.phase(name) as record`` gives, and GPU timing
by CUDA events without stopping the device."""

from __future__ import annotations

import numpy as np
import pytest

from simd import Machine, PhaseRecord, PhaseStats
from simd.stats import DeviceInterval


def test_record_holds_its_own_execution_nested_phases_included():
    m = Machine(pes=4, backend="numpy")
    x = np.arange(16, dtype=np.int64)
    m.scan(x)  # outside: not in the record
    with m.phase("outer") as outer:
        m.scan(x)
        with m.phase("inner") as inner:
            m.send(x, x, 16)
    assert outer.name == "outer" and inner.name == "outer/inner"
    assert outer.calls == {"scan": 1, "send": 1} and inner.calls == {"send": 1}
    scan_cycles = m.cost.cycles("scan", 16)
    assert outer.cycles == scan_cycles + inner.cycles
    assert outer.bytes == 2 * x.nbytes + inner.bytes > inner.bytes > 0
    assert outer.wall >= inner.wall >= 0
    # the machine's table keeps each path's own instructions, summed over executions
    with m.phase("outer") as again:
        m.scan(x)
    stats = m.stats
    assert stats["outer"].entries == 2 and stats["outer"].calls == {"scan": 2}
    assert stats["outer"].cycles == outer.cycles - inner.cycles + again.cycles
    assert stats["outer/inner"].cycles == inner.cycles


def test_sum_of_records():
    m = Machine(pes=4, backend="numpy")
    records = []
    for n in (8, 64):
        with m.phase("step") as record:
            m.reduce(np.ones(n))
        records.append(record)
    total = PhaseStats.of(records)
    assert total.entries == 2 and total.calls == {"reduce": 2}
    assert total.cycles == m.cost.cycles("reduce", 8) + m.cost.cycles("reduce", 64)
    assert total.wall == pytest.approx(records[0].wall + records[1].wall)
    assert total.to_dict()["cycles"] == total.cycles


class _FakeEvent:
    """A CUDA event that logs what is done with it."""

    def __init__(self, log: list, clock: list) -> None:
        self.log, self.clock = log, clock

    def record(self) -> None:
        self.clock[0] += 1
        self.time = self.clock[0]
        self.log.append("record")

    def synchronize(self) -> None:
        self.log.append("synchronize")


class _FakeCuda:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.clock = [0]

    def Event(self) -> _FakeEvent:  # noqa: N802 - CuPy's name
        return _FakeEvent(self.log, self.clock)

    def get_elapsed_time(self, start: _FakeEvent, stop: _FakeEvent) -> float:
        return 1000.0 * (stop.time - start.time)  # milliseconds


def test_device_interval_waits_only_when_read():
    cuda = _FakeCuda()
    interval = DeviceInterval(cuda)
    interval.stop()
    assert cuda.log == ["record", "record"]  # nothing waited for the device
    assert interval.seconds == 1.0
    assert interval.seconds == 1.0  # read once, then kept
    assert cuda.log == ["record", "record", "synchronize"]


def test_gpu_phases_record_events_and_never_synchronise(monkeypatch):
    m = Machine(pes=4, backend="numpy")
    cuda = _FakeCuda()
    synced = []
    # the CuPy backend, as far as phases go: events on the current stream
    monkeypatch.setattr(m, "backend", "cupy")
    monkeypatch.setattr(m, "xp", type("xp", (), {"cuda": cuda})())
    monkeypatch.setattr(m, "sync", lambda: synced.append(1))
    with m.phase("a") as a:
        with m.phase("b"):
            pass
    assert not synced and "synchronize" not in cuda.log
    assert cuda.log.count("record") == 4
    assert isinstance(a, PhaseRecord)
    stats = m.stats  # reading the table waits for the device once, then reads every event
    assert synced == [1] and "synchronize" not in cuda.log
    assert stats["a"].wall == a.wall > stats["a/b"].wall > 0
    # synchronous timing, when asked for, waits at both ends and times on the host
    with m.phase("c", sync=True):
        pass
    assert len(synced) == 3
