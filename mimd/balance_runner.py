"""How ``simd-emu bench balance`` makes its runs: one after the other, or spread over the
ranks of ``mpiexec``, the results always handed on in the order of the table.

:class:`Runner` takes a list of independent jobs (:class:`simd.balance.comparison.Job`,
the same on every rank). On one process it makes them in order; on several ranks, rank 0
hands the next job to whichever rank is free and passes the results on in order as soon as
the ones before them are in, so that the table is the same as on one rank (wall times
aside) and its rows still come as they are known. :class:`Progress` is the bar on stderr:
it counts the jobs' expected seconds, so its estimate of the time left holds when the runs
differ a thousandfold, and a long MIMD simulation moves it as it goes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Progress", "Runner"]

#: Tags of the messages between the ranks.
_JOB, _RESULT = 1, 2


class Progress:
    """A bar over the expected seconds of the jobs (tqdm on stderr), shown for anything
    that takes more than a second, and none with ``quiet`` or when stderr is not a
    terminal. Tables go through :meth:`write`, so that they do not break the bar."""

    def __init__(self, quiet: bool = False) -> None:
        self.bar = None
        if not quiet:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # the data extra brings tqdm; without it, no bar
                tqdm = None
            if tqdm is not None:
                bar = "{l_bar}{bar}| {elapsed}<{remaining}"
                self.bar = tqdm(total=0.0, file=sys.stderr, disable=None, delay=1.0,
                                leave=False, bar_format=bar)  # fmt: skip
        self.done = 0.0

    def expect(self, seconds: float) -> None:
        """More work to come: ``seconds`` of it."""
        if self.bar is not None:
            self.bar.total += seconds
            self.bar.refresh()

    def start(self, label: str, weight: float) -> Callable[[float], None]:
        """A job begins; returns its report of the fraction done."""
        base = self.done
        if self.bar is not None:
            self.bar.set_description_str(label[:50], refresh=False)

        def report(fraction: float) -> None:
            if self.bar is not None:
                self.bar.update(base + weight * min(max(fraction, 0.0), 1.0) - self.bar.n)

        return report

    def finish(self, weight: float) -> None:
        self.done += weight
        if self.bar is not None:
            self.bar.update(self.done - self.bar.n)

    def write(self, text: str) -> None:
        if self.bar is not None and not self.bar.disable:
            self.bar.write(text, file=sys.stdout)
        else:
            print(text, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Runner:
    """Makes jobs on this process or across the ranks of ``comm`` (an mpi4py
    communicator, or None), reporting to ``progress`` (rank 0's)."""

    def __init__(self, comm: Any = None, progress: Progress | None = None) -> None:
        self.comm = comm
        self.progress = progress or Progress(quiet=True)

    @property
    def root(self) -> bool:
        return self.comm is None or self.comm.Get_rank() == 0

    def run(self, jobs: list, on_result: Callable[[int, Any], None] | None = None) -> list:
        """Every job's result, in order (on rank 0; the other ranks return an empty list);
        ``on_result(i, result)`` is called on rank 0 as soon as results 0 to ``i`` are in."""
        if self.comm is None or self.comm.Get_size() == 1:
            return self._here(jobs, on_result)
        if self.root:
            return self._hand_out(jobs, on_result)
        self._work(jobs)
        return []

    def share(self, value: Any) -> Any:
        """Rank 0's ``value`` on every rank."""
        return value if self.comm is None else self.comm.bcast(value, root=0)

    def _here(self, jobs, on_result) -> list:
        self.progress.expect(sum(j.weight for j in jobs))
        out = []
        for i, job in enumerate(jobs):
            out.append(job.run(self.progress.start(job.label, job.weight)))
            self.progress.finish(job.weight)
            if on_result is not None:
                on_result(i, out[-1])
        return out

    def _hand_out(self, jobs, on_result) -> list:
        """Rank 0: the next job to each free rank, the results passed on in order."""
        from mpi4py import MPI

        comm = self.comm
        self.progress.expect(sum(j.weight for j in jobs))
        results: dict[int, Any] = {}
        nxt, shown, busy = 0, 0, 0
        for rank in range(1, comm.Get_size()):
            comm.send(nxt if nxt < len(jobs) else -1, dest=rank, tag=_JOB)
            if nxt < len(jobs):
                self.progress.start(jobs[nxt].label, jobs[nxt].weight)
                nxt, busy = nxt + 1, busy + 1
        status = MPI.Status()
        while busy:
            i, ok, result = comm.recv(source=MPI.ANY_SOURCE, tag=_RESULT, status=status)
            busy -= 1
            if not ok:
                raise RuntimeError(f"a rank failed: {result}")
            results[i] = result
            self.progress.finish(jobs[i].weight)
            comm.send(nxt if nxt < len(jobs) else -1, dest=status.Get_source(), tag=_JOB)
            if nxt < len(jobs):
                nxt, busy = nxt + 1, busy + 1
            while shown in results:
                if on_result is not None:
                    on_result(shown, results[shown])
                shown += 1
        return [results[i] for i in range(len(jobs))]

    def _work(self, jobs) -> None:
        """Another rank: the jobs rank 0 hands it, until it says there are no more."""
        comm = self.comm
        while True:
            i = comm.recv(source=0, tag=_JOB)
            if i < 0:
                return
            try:
                comm.send((i, True, jobs[i].run(None)), dest=0, tag=_RESULT)
            except Exception as exc:  # noqa: BLE001 - rank 0 reports it in one line
                comm.send((i, False, f"{type(exc).__name__}: {exc}"), dest=0, tag=_RESULT)
