"""Barker & Chrisochoides' analytic model: the bi-modal approximation and the runtime of
equation 6.

Barker & Chrisochoides predict the run time of an over-decomposed application
balanced by Diffusion (or work stealing) in two steps:

1. **Bi-modal approximation** (section 3, equations 1-5). Sort the task weights
   ``T_1 <= ... <= T_N``; a split ``Gamma`` makes the ``Gamma`` lightest tasks *beta*
   tasks of weight ``T_beta = mean(T_1..T_Gamma)`` and the rest *alpha* tasks of weight
   ``T_alpha = mean(T_Gamma+1..T_N)`` (so the areas of equations 1-3 match), and the
   ``Gamma`` chosen minimises ``Error_alpha + Error_beta`` (equations 4 and 5, sums of
   squared differences; equation 5's upper limit is ``Gamma``, the printed ``P`` is a typo).
2. **Runtime** (section 4, equation 6) of the slowest ("dominating") processor::

       T_total = T_work + T_thread + T_comm^app + T_comm^lb + T_migr^lb + T_decision^lb
                 - T_overlap

   evaluated for an initially overloaded (alpha) and an initially underloaded (beta)
   processor; the larger is the prediction. ``T_locate`` (the time a beta processor takes
   to find an alpha task) has a lower bound (the first neighbourhood asked has work) and an
   upper bound (every comparably underloaded neighbourhood is probed first), which give
   lower and upper bounds on the run time; the "average prediction" is their mean.

Section 4.1 counts load-balancing *rounds*: from ``T_beta`` on, per round every alpha
processor runs one task and donates ``N_beta / N_alpha`` (the paper floors it and adds one;
here the ratio is kept fractional because a round serves every beta processor once
whatever the ratio). The per-migration turn-around (section 4.4) is the request's message,
the wait for the target's polling thread, processing, the reply; our Diffusion asks a whole
neighbourhood and waits for every reply, so the wait of that round is the expected maximum
of ``k`` uniform waits, ``T_quantum * k / (k + 1)`` (``T_quantum / 2`` for one request, as
in the paper).

``predict(..., refine=False)`` is the paper's model: every alpha task weighs ``T_alpha``.
The default ``refine=True`` keeps its rounds and components but uses the task weights it is
given where the bi-modal averaging hides what decides the run time when weights are spread
(linear imbalance): the dominating alpha processor is the one holding the heaviest block,
running the head of its block while its tail is donated, and the last task a beta
processor receives is the first one after that head. For a true two-class task set (step,
bi-modal) both give the same prediction. Against our simulation (Barker & Chrisochoides
Figure 1's runs, ``bench mimd``) the mean error of the average prediction is about 5 % for the
paper's model and under 3 % refined.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .network import Network
from .policies import Diffusion, WorkStealing

__all__ = ["BiModal", "bimodal_fit", "ModelParams", "Prediction", "predict"]


@dataclass(frozen=True)
class BiModal:
    """Bi-modal approximation of a task set (Barker & Chrisochoides equations 1-5).

    Attributes
    ----------
    gamma : int
        Number of beta (light) tasks; the ``gamma`` lightest tasks.
    t_alpha, t_beta : float
        Weights of the alpha and beta tasks (means of the two classes).
    error : float
        ``Error_alpha + Error_beta`` at the chosen ``gamma``.
    n : int
        Number of tasks.
    """

    gamma: int
    t_alpha: float
    t_beta: float
    error: float
    n: int

    @property
    def work(self) -> float:
        """Total work, equal to the original task set's (equation 3)."""
        return (self.n - self.gamma) * self.t_alpha + self.gamma * self.t_beta


def bimodal_fit(weights) -> BiModal:
    """Choose ``Gamma`` by least squares (Barker & Chrisochoides equations 1-5).

    Parameters
    ----------
    weights : array_like of float
        Task weights (any order; they are sorted increasingly first).

    Returns
    -------
    BiModal
        Ties between splits go to the smallest ``Gamma``; a task set of equal weights has
        ``Gamma = 0`` (one class, no imbalance: the footnote of section 3).

    Examples
    --------
    >>> f = bimodal_fit([1, 1, 1, 5, 5])
    >>> f.gamma, f.t_beta, f.t_alpha, f.error
    (3, 1.0, 5.0, 0.0)
    """
    t = np.sort(np.asarray(weights, dtype=np.float64).ravel())
    if t.size == 0:
        raise ValueError("bimodal_fit needs at least one task weight")
    if not np.all(np.isfinite(t)) or t[0] < 0:
        raise ValueError("task weights must be finite and >= 0")
    n = t.size
    if t[0] == t[-1]:
        return BiModal(0, float(t[0]), float(t[0]), 0.0, n)
    # prefix sums give every split's class sums and sums of squares in one pass:
    # Error of a class = sum(T^2) - (sum T)^2 / count  (the least-squares residual)
    c1 = np.cumsum(t)
    c2 = np.cumsum(t * t)
    g = np.arange(1, n)  # beta count, both classes non-empty
    sb, qb = c1[g - 1], c2[g - 1]
    sa, qa = c1[-1] - sb, c2[-1] - qb
    err = (qb - sb * sb / g) + (qa - sa * sa / (n - g))
    err = np.maximum(err, 0.0)
    # smallest Gamma among (numerically) equal minima
    best = float(err.min())
    k = int(np.flatnonzero(err <= best + 1e-12 * max(1.0, abs(c2[-1])))[0])
    gamma = int(g[k])
    return BiModal(gamma, float(sa[k] / (n - gamma)), float(sb[k] / gamma), float(err[k]), n)


@dataclass(frozen=True)
class ModelParams:
    """Inputs of equation 6 (seconds, bytes), normally read off a simulated set-up.

    ``hops`` is the mean hop count of a load-balancing message; ``app_messages`` and
    ``app_bytes`` the application's own messages per task (0 for Barker & Chrisochoides's
    benchmark).
    """

    processors: int
    quantum: float
    poll: float
    ctx: float
    startup: float
    per_byte: float
    per_hop: float
    request_bytes: int
    task_bytes: int
    process: float
    process_reply: float
    decision: float
    pack: float
    unpack: float
    neighbours: int = 4
    hops: float = 1.0
    app_messages: float = 0.0
    app_bytes: int = 0
    stealing: bool = False
    overlap: float = 0.0

    @classmethod
    def from_sim(
        cls, network: Network, policy: Diffusion, *, app_messages: float = 0.0, app_bytes: int = 0
    ) -> ModelParams:
        """Parameters of the simulated machine ``network`` under ``policy``."""
        if not isinstance(policy, Diffusion):
            raise TypeError(
                "the model of Barker & Chrisochoides covers the Diffusion and WorkStealing policies"
            )
        k = max(1, min(policy.neighbours, network.p - 1))
        offs = network.offsets()[:k]
        hops = float(np.mean(np.abs(offs).sum(axis=1))) if len(offs) else 0.0
        return cls(
            processors=network.p,
            quantum=policy.quantum,
            poll=policy.poll,
            ctx=policy.ctx,
            startup=network.startup,
            per_byte=network.per_byte,
            per_hop=network.per_hop,
            request_bytes=network.request_bytes,
            task_bytes=network.task_bytes,
            process=policy.process,
            process_reply=policy.process_reply,
            decision=policy.decision,
            pack=network.pack,
            unpack=network.unpack,
            neighbours=k,
            hops=hops,
            stealing=isinstance(policy, WorkStealing),
            app_messages=app_messages,
            app_bytes=app_bytes,
        )

    def message(self, nbytes: float) -> float:
        """Linear message cost: start-up plus per byte (Barker & Chrisochoides, section 4.3)
        plus per hop (ours: the torus's)."""
        return self.startup + nbytes * self.per_byte + self.hops * self.per_hop


@dataclass
class Prediction:
    """Run-time prediction of equation 6 with bounds and components.

    ``components`` holds the terms of equation 6 for the dominating processor of the
    average case; ``alpha`` and ``beta`` the totals of each processor type (lower, upper).
    """

    lower: float
    upper: float
    average: float
    dominating: str
    components: dict
    fit: BiModal
    alpha: tuple[float, float] = (0.0, 0.0)
    beta: tuple[float, float] = (0.0, 0.0)
    detail: dict = field(default_factory=dict)


def _turnaround(prm: ModelParams) -> tuple[float, float, float]:
    """(query round, migration round, task transfer) times of one migration (Barker &
    Chrisochoides, section 4.4).

    A message costs its start-up once (:meth:`ModelParams.message` includes it, as
    :meth:`mimd.Network.message_time` does): the last of ``k`` queries sent one after the
    other leaves after ``k - 1`` start-ups and arrives one message time later; a reply or a
    migration request is one message time after its sender is ready.
    """
    k = prm.neighbours
    req = prm.message(prm.request_bytes)
    if prm.stealing:
        query = 0.0
    else:
        wait_all = prm.quantum * k / (k + 1)  # all k replies: the latest poll of k
        query = (
            (k - 1) * prm.startup
            + req
            + wait_all
            + prm.process
            + req
            + k * prm.process_reply
            + prm.decision
        )
    migrate = req + prm.quantum / 2 + prm.process
    transfer = prm.pack + prm.message(prm.task_bytes) + prm.unpack
    return query, migrate, transfer


def predict(
    weights, prm: ModelParams, *, fit: BiModal | None = None, refine: bool = True
) -> Prediction:
    """Predict the run time of ``weights`` under Diffusion with Barker & Chrisochoides's model.

    Parameters
    ----------
    weights : array_like of float
        Task weights (seconds) in task order; tasks are placed in equal contiguous blocks.
    prm : ModelParams
        Machine and runtime-system constants (see :meth:`ModelParams.from_sim`).
    fit : BiModal, optional
        A bi-modal approximation to use instead of fitting ``weights``.
    refine : bool
        ``False``: the paper's model, every alpha task weighs ``T_alpha``. ``True``
        (default): the same rounds, but the dominating alpha processor is the one with the
        heaviest block of tasks (its own tasks weigh that block's mean) and the last task
        a beta processor receives is the heaviest task, which is what finishes last when
        weights are spread (linear imbalance); identical to the paper's for a true
        bi-modal set (step).

    Returns
    -------
    Prediction

    Examples
    --------
    >>> from mimd import Diffusion, ModelParams, Network, predict
    >>> prm = ModelParams.from_sim(Network.cluster(4), Diffusion())
    >>> p = predict([1.0, 1.0, 3.0, 3.0] * 2, prm)
    >>> p.fit.gamma, p.lower <= p.average <= p.upper
    (4, True)
    """
    w = np.asarray(weights, dtype=np.float64).ravel()
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be a non-empty array of finite numbers > 0")
    P = int(prm.processors)
    if P < 1:
        raise ValueError(f"processors must be >= 1, got {P}")
    f = bimodal_fit(w) if fit is None else fit
    rounds = _Rounds.of(w, prm, f, refine)
    lo = rounds.evaluate(1.0)
    # worst case: every comparably underloaded neighbourhood is probed first (section 4.1)
    worst_rounds = max(1.0, math.ceil(max(rounds.n_beta - 1, 0) / max(prm.neighbours, 1)))
    if prm.stealing:
        worst_rounds = max(1.0, math.ceil(rounds.n_beta))  # random victims: probe the beta ones
    hi = rounds.evaluate(worst_rounds)
    lower, upper = min(lo["total"], hi["total"]), max(lo["total"], hi["total"])
    avg = 0.5 * (lower + upper)
    mid = rounds.evaluate(0.5 * (1.0 + worst_rounds))
    dom = "alpha" if mid["alpha"] >= mid["beta"] else "beta"
    side = dom[0]  # "a" or "b": the dominating processor's terms of equation 6
    comp = {
        "T_work": mid[f"work_{side}"],
        "T_thread": rounds.frac * mid[f"work_{side}"],
        "T_comm_app": mid["app"],
        "T_comm_lb": mid[f"lb_{side}"],
        "T_migr_lb": mid[f"migr_{side}"],
        # only a sink (beta) processor decides where to ask for work (section 4.6)
        "T_decision_lb": mid["dec_b"] if side == "b" else 0.0,
        "T_overlap": prm.overlap,
    }
    return Prediction(
        lower=lower,
        upper=upper,
        average=avg - prm.overlap,
        dominating=dom,
        components=comp,
        fit=f,
        alpha=(lo["alpha"], hi["alpha"]),
        beta=(lo["beta"], hi["beta"]),
        detail={
            "turnaround": rounds.turn,
            "query": rounds.query,
            "migrate": rounds.migrate,
            "transfer": rounds.transfer,
            "n_alpha": rounds.n_alpha,
            "n_beta": rounds.n_beta,
            "worst_rounds": worst_rounds,
        },
    )


@dataclass(frozen=True)
class _Rounds:
    """The load-balancing rounds of section 4.1 for one task set on one machine.

    ``n`` tasks per processor; ``ta``, ``tb`` the alpha and beta tasks' times with the
    polling thread's share ``frac`` and the application's messages ``app``; ``head`` the
    times of the dominating alpha processor's own tasks (``heaviest``, its block's weights)
    and ``ends`` their running sum when they are known (refined model), else every one
    takes ``ta``.
    """

    prm: ModelParams
    fit: BiModal
    n: float
    frac: float
    app: float
    ta: float
    tb: float
    heaviest: np.ndarray | None
    head: np.ndarray | None
    ends: np.ndarray | None
    n_alpha: float
    n_beta: float
    query: float
    migrate: float
    transfer: float

    @classmethod
    def of(cls, w: np.ndarray, prm: ModelParams, f: BiModal, refine: bool) -> _Rounds:
        """The rounds of task weights ``w`` (task order) fitted by ``f``."""
        P = int(prm.processors)
        n = w.size / P  # tasks per processor
        # polling thread: a fixed fraction of every second of work (section 4.2)
        frac = (2 * prm.ctx + prm.poll) / prm.quantum
        # per task (section 4.3): the sender's CPU pays start-up and bytes of each message
        app = prm.app_messages * (prm.startup + prm.app_bytes * prm.per_byte)
        heaviest = head = ends = None
        if refine and f.gamma:
            k_blk = max(1, int(round(n)))
            usable = (w.size // k_blk) * k_blk
            blocks = w[:usable].reshape(-1, k_blk) if usable else w.reshape(1, -1)
            heaviest = blocks[int(np.argmax(blocks.sum(axis=1)))]
            # the dominating alpha processor runs the head of its block (donors give the tail)
            head = heaviest * (1 + frac) + app
            ends = np.cumsum(head)
        n_beta = f.gamma / n  # processors holding beta tasks (block placement)
        query, migrate, transfer = _turnaround(prm)
        return cls(
            prm=prm,
            fit=f,
            n=n,
            frac=frac,
            app=app,
            ta=f.t_alpha * (1 + frac) + app,
            tb=f.t_beta * (1 + frac) + app,
            heaviest=heaviest,
            head=head,
            ends=ends,
            n_alpha=P - n_beta,
            n_beta=n_beta,
            query=query,
            migrate=migrate,
            transfer=transfer,
        )

    @property
    def turn(self) -> float:
        """One successful migration, request to installed."""
        return self.query + self.migrate + self.transfer

    def started(self, t: float) -> float:
        """How many of its own tasks the dominating alpha processor has started by ``t``."""
        if self.ends is None:
            return float(min(self.n, math.floor(t / self.ta) + 1))
        return float(min(self.n, np.searchsorted(self.ends, t, side="right") + 1))

    def own_work(self, k: float) -> float:
        """Time the dominating alpha processor spends on its first ``k`` own tasks."""
        if self.ends is None:
            return k * self.ta
        i = int(math.floor(k))
        done = float(self.ends[i - 1]) if i > 0 else 0.0
        return done + (k - i) * (float(self.head[i]) if i < self.head.size else 0.0)

    def evaluate(self, locate_rounds: float) -> dict:
        """Both processor types' run times (and equation 6's terms) when a beta processor
        takes ``locate_rounds`` query rounds to find work."""
        prm, f, n, ta, app = self.prm, self.fit, self.n, self.ta, self.app
        n_alpha, n_beta, P = self.n_alpha, self.n_beta, int(prm.processors)
        query, migrate, transfer, turn = self.query, self.migrate, self.transfer, self.turn
        t_beta = n * self.tb  # beta processors run dry (section 4.1)
        if n_alpha <= 0 or n_beta <= 0 or f.gamma == 0 or P == 1:
            t = n * ta if n_beta <= 0 else t_beta
            return {
                "alpha": n * ta,
                "beta": t_beta,
                "work_a": n * ta,
                "work_b": t_beta,
                "lb_a": 0.0,
                "lb_b": 0.0,
                "migr_a": 0.0,
                "migr_b": 0.0,
                "dec_b": 0.0,
                "thread": n * (ta - app) * self.frac / (1 + self.frac),
                "app": n * app,
                "donated": 0.0,
                "received": 0.0,
                "total": t,
            }
        # the first request is served after the locate rounds and the migration request;
        # the task is installed one transfer later
        t_served = t_beta + locate_rounds * query + migrate
        t_locate = t_served + transfer - t_beta
        d = n_beta / n_alpha  # requests reaching an alpha processor per round (4.1)
        # rounds: at each, an alpha processor hands one unstarted task to each of its d
        # requesters, who come back one alpha task and one turn-around later; between
        # rounds it starts its own next tasks (section 4.1's round counting, kept discrete)
        own = self.started(t_served)
        pool = n - own
        donated = 0.0
        t = t_served
        rounds = 0
        while pool > 1e-9 and rounds < 10 * n + 10:
            give = min(pool, d)
            pool -= give
            donated += give
            rounds += 1
            nxt = t + ta + turn
            take = min(pool, max(0.0, self.started(nxt) - own))
            own += take
            pool -= take
            t = nxt
        received = donated * n_alpha / n_beta
        # the slowest alpha processor is one that donated a whole task less than the mean
        own_dom = n - math.floor(donated + 1e-9)
        alpha_t = self.own_work(own_dom) + donated * (prm.pack + prm.startup + prm.process)
        rb = math.ceil(received - 1e-9)
        # the last task a beta processor receives: donors give their queue's tail first,
        # so the last one given is the first task after the donor's own (refined model)
        ta_last = ta
        if self.heaviest is not None:
            pos = min(max(int(math.floor(own_dom)), 0), self.heaviest.size - 1)
            ta_last = float(self.heaviest[pos]) * (1 + self.frac) + app
        beta_t = max(
            t_beta, t_served + transfer + max(rb - 1, 0) * (ta + turn) + (ta_last if rb else 0.0)
        )
        return {
            "alpha": alpha_t,
            "beta": beta_t,
            "work_a": own * f.t_alpha,
            "work_b": n * f.t_beta + rb * f.t_alpha,
            "thread": self.frac * max(own * f.t_alpha, n * f.t_beta + rb * f.t_alpha),
            "app": max(own, n + rb) * app,
            "lb_a": donated * prm.process,
            "lb_b": t_locate - transfer + max(rb - 1, 0) * (query + migrate),
            "migr_a": donated * (prm.pack + prm.startup),
            "migr_b": rb * transfer,
            "dec_b": (locate_rounds + max(rb - 1, 0)) * prm.decision,
            "donated": donated,
            "received": rb,
            "total": max(alpha_t, beta_t),
        }
