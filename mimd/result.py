"""The outcome of one simulated MIMD run: times, counts and the Table 1 line."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["SimResult"]


@dataclass
class SimResult:
    """Outcome of one simulated run (times in simulated seconds).

    Attributes
    ----------
    policy : str
    processors : int
    tasks : int
    makespan : float
        Time at which the last task finished (Muniz & Zaluska Table 1 line 1).
    work : float
        Sum of task costs (the single-processor time without overheads).
    processor_seconds : float
        ``processors * makespan`` (Table 1 line 2).
    utilisation : float
        ``work / processor_seconds`` (Table 1 line 3 with the control run's time as work).
    runs : numpy.ndarray
        How many times each task was started (1 everywhere in a correct run).
    finish, start : numpy.ndarray
        Per task finish and start time; ``runner``: processor that ran it.
    busy, overhead : numpy.ndarray
        Per processor time spent on tasks and on balancing (CPU debt paid).
    migrations : int
        Number of units of work moved between processors (tasks or bundles).
    messages : int
        Control messages (requests, replies, handshakes) sent.
    events : int
        Events simulated.
    wall : float
        Host seconds the simulation took.
    extra : dict
        ``contention`` (links shared), ``link_busy_max`` (the longest time a link carried
        a message), ``link_wait`` (the time messages took beyond their time alone).
    """

    policy: str
    processors: int
    tasks: int
    makespan: float
    work: float
    processor_seconds: float
    utilisation: float
    runs: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    runner: np.ndarray
    busy: np.ndarray
    overhead: np.ndarray
    migrations: int
    messages: int
    events: int
    wall: float = 0.0
    extra: dict = field(default_factory=dict)

    def row(self) -> dict:
        """The Table 1 line of this run as a dict."""
        return {
            "policy": self.policy,
            "processors": self.processors,
            "tasks": self.tasks,
            "time": self.makespan,
            "processor_seconds": self.processor_seconds,
            "utilisation": self.utilisation,
            "migrations": self.migrations,
            "messages": self.messages,
            "events": self.events,
            "wall": self.wall,
        }
