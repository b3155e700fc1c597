"""The three phases of the cost-effective loop (Ahrens & Hansen 1995, Figure 2, section 2.3).

Information gathering (:func:`gather_information`) computes the trial workload of section
2.3; the decision (:func:`decide`) compares its savings with the overestimated cost;
redistribution (:func:`redistribute`) moves the work to the idle processors with a send to
block heads through scan pointers, segmented copy-scans and a segmented add-scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Information", "Redistribution", "decide", "gather_information", "redistribute"]

# Elementwise operations per VP charged to the model clock by each step (hand-counted
# from the array expressions below; the golden test pins their effect).
#: Gathering step 1, ``workload == 0``; step 2, ``workload > avg``.
IDLE_TEST_OPS = 1
ACTIVE_TEST_OPS = 1
#: Gathering steps 4 and 5: the assignment (5) and the ceiling division (4).
ASSIGNMENT_OPS = 9
#: Redistribution step 1: the two ``where`` of the pointers.
POINTER_OPS = 2
#: Packing workload and task index into one two-word message, and unpacking it.
PACK_OPS = 2
#: The segment flags of the blocks: a compare, a compare and an or.
HEAD_OPS = 3
#: Step 4: renumbering, the exact share and the index of idle processors.
RENUMBER_OPS = 5

#: Workloads and task indices below this travel as one two-word message (int64).
PACK_LIMIT = 1 << 31
#: Task indices below this, and workloads below half of it, travel packed in an int32.
PACK_LIMIT_32 = 1 << 16


@dataclass
class Information:
    """The information gathering phase of Ahrens & Hansen (1995), section 2.3 (steps 1 to 5).

    Arrays are backend arrays over the VP set; names follow the paper. ``complete`` is
    False when the gathering stopped early because balancing could not pay (see
    :func:`gather_information`); the arrays are None then.
    """

    num_idle: int
    total: int
    avg: int
    act_mask: Any
    sum_workload: int
    assignment: Any
    new_workload_values: Any
    max_workload: int
    max_new_workload: int
    complete: bool = True

    @property
    def savings(self) -> int:
        """Savings in iterations: ``MAX(workload) - MAX(new_workload_values)``.

        An upper bound when the gathering stopped early (``complete`` False).
        """
        return self.max_workload - self.max_new_workload


@dataclass
class Redistribution:
    """The redistribution phase of Ahrens & Hansen (1995), section 2.3.1 (steps 1 to 4).

    ``pointers_scan`` is the scan of step 1 (0-based, 0 where the processor sends
    nothing) and ``pointers`` the paper's 1-based pointers; ``sent_*`` are the arrays after
    the send of step 2, ``new_workload``, ``copied_parallel_index`` and ``problem_data``
    after the segmented copy-scans of step 3, ``scan_add_new_workload`` and
    ``parallel_index`` after step 4. ``workload`` is the exact number of tasks left on
    every processor afterwards (``new_workload`` except at the end of a block whose
    workload does not divide evenly), and ``heads`` the segment flags of the blocks.
    """

    pointers_scan: Any
    pointers: Any
    sent_new_workload_values: Any
    sent_workload: Any
    sent_parallel_index: Any
    sent_problem_data: Any
    heads: Any
    new_workload: Any
    copied_parallel_index: Any
    problem_data: Any
    scan_add_new_workload: Any
    parallel_index: Any
    workload: Any


def decide(savings: int, overestimate: float) -> bool:
    """The decision phase (Ahrens & Hansen 1995, section 2.1): balance when savings exceed the cost.

    Parameters
    ----------
    savings : int
        ``MAX(workload) - MAX(new_workload)`` in iterations.
    overestimate : float
        Overestimated cost of gathering plus redistribution, in iterations.

    Returns
    -------
    bool
        True when ``savings > overestimate``.

    Examples
    --------
    >>> decide(80, 20), decide(20, 20), decide(3, 2.5)
    (True, False, True)
    """
    return bool(savings > overestimate)


def gather_information(
    workload: Any,
    *,
    machine: Any,
    max_workload: int | None = None,
    threshold: float | None = None,
) -> Information:
    """Information gathering phase of Ahrens & Hansen (1995), section 2.3: the trial workload.

    Steps, for ``n`` processors (one per element of ``workload``):

    1. ``num_idle``: count of processors whose workload is 0.
    2. ``avg = sum(workload) // n`` and ``act_mask = workload > avg``.
    3. ``sum_workload``: sum of the masked workloads.
    4. ``assignment = workload * num_idle // sum_workload + 1`` on masked processors (the
       integer form of the paper's ``workload / sum_workload * num_idle + 1``), 1 on the
       other active processors (they keep their work: the paper's example has none, but
       without them their work would be overwritten by the blocks) and 0 on idle ones.
    5. ``new_workload_values = ceil(workload / assignment)`` (ceil so that no task is lost
       when the division is not exact; the paper's example divides evenly).

    With ``threshold`` (the overestimate of the decision phase) the gathering stops as soon
    as the savings provably cannot exceed it: after step 1, because the heaviest processor
    gets at most ``num_idle`` helpers, ``MAX(new_workload) >= ceil(MAX(workload) /
    (num_idle + 1))``; after step 2, ``MAX(new_workload) >= ceil(sum / n)``; after step 3,
    the heaviest processor's own new workload, computed from the scalars. The record is
    then incomplete (``complete`` False, arrays None) and ``max_new_workload`` holds that
    lower bound, so ``savings`` is an upper bound that the decision rejects: the decisions
    are the paper's, at a fraction of the cost when balancing cannot pay.

    Parameters
    ----------
    workload : 1-D int64 backend array (or int32, its sum below 2**31)
        Tasks left per processor.
    machine : simd.Machine
    max_workload : int, optional
        ``MAX(workload)`` when the front end already knows it (the reduction is skipped).
    threshold : float, optional
        Stop early when the savings cannot exceed this.

    Returns
    -------
    Information
        With ``savings = max_workload - max_new_workload``.

    Examples
    --------
    >>> from simd import Machine
    >>> m = Machine(pes=7, backend="numpy")
    >>> info = gather_information(m.asarray([100, 19, 0, 0, 0, 0, 0]), machine=m)
    >>> info.assignment.tolist(), info.new_workload_values.tolist(), info.savings
    ([5, 1, 0, 0, 0, 0, 0], [20, 19, 0, 0, 0, 0, 0], 80)
    """
    m = machine
    xp = m.xp
    n = int(workload.size)
    if n == 0:
        empty = xp.zeros(0, dtype=np.int64)
        return Information(0, 0, 0, xp.zeros(0, dtype=bool), 0, empty, empty, 0, 0)
    idle = workload == 0
    # On a GPU every scalar of the steps below is computed on the device at once with plain
    # array code (no charge) and read back in one transfer: one host sync per gathering
    # instead of up to four. The decisions and the model clock's charges are those of the
    # step-by-step code below (each read is charged as the instruction it stands for).
    spec = _speculate(m, workload, idle, max_workload is None) if m.backend == "cupy" else None
    if max_workload is None:
        max_workload = _scalar(m, spec, "max_workload", workload, lambda: m.reduce(workload, "max"))

    def stop(bound: int, num_idle: int, total: int = -1) -> Information | None:
        if threshold is None or max_workload - bound > threshold:
            return None
        avg = total // n if total >= 0 else -1
        return Information(
            num_idle, total, avg, None, -1, None, None, max_workload, bound, complete=False
        )

    # Step 1.
    m.charge("elementwise", n, ops=IDLE_TEST_OPS)
    num_idle = _scalar(m, spec, "num_idle", idle, lambda: m.count(idle), label="count")
    early = stop(-(-max_workload // (num_idle + 1)), num_idle)
    if early is not None:
        return early
    # Step 2.
    total = _scalar(m, spec, "total", workload, lambda: m.reduce(workload, "add"))
    avg = total // n
    early = stop(max(-(-max_workload // (num_idle + 1)), -(-total // n)), num_idle, total)
    if early is not None:
        return early
    act_mask = spec.act_mask if spec is not None else workload > avg
    m.charge("elementwise", n, ops=ACTIVE_TEST_OPS)
    # Step 3.
    sum_workload = _scalar(
        m, spec, "sum_workload", workload, lambda: m.reduce(workload, "add", mask=act_mask)
    )
    # The heaviest processor's own share, computed on the front end from the scalars.
    if max_workload > avg:
        helpers = (max_workload * num_idle) // max(sum_workload, 1)
        early = stop(-(-max_workload // (helpers + 1)), num_idle, total)
        if early is not None:
            return early
    # Steps 4 and 5.
    if spec is not None:
        assignment, new_workload_values = spec.assignment, spec.new_workload_values
    else:
        assignment, new_workload_values = _assign(
            xp, workload, act_mask, num_idle, max(sum_workload, 1)
        )
    m.charge("elementwise", n, ops=ASSIGNMENT_OPS)
    max_new = _scalar(
        m,
        spec,
        "max_new_workload",
        new_workload_values,
        lambda: m.reduce(new_workload_values, "max"),
    )
    return Information(
        num_idle=num_idle,
        total=total,
        avg=avg,
        act_mask=act_mask,
        sum_workload=sum_workload,
        assignment=assignment,
        new_workload_values=new_workload_values,
        max_workload=max_workload,
        max_new_workload=max_new,
    )


def _scalar(
    m: Any, spec: Any, name: str, operand: Any, instruction: Any, label: str = "reduce"
) -> int:
    """A scalar of the gathering, as an int: the machine's ``instruction()`` (a reduction
    of ``operand``, or a count) read on the front end, or on a GPU the value ``name`` of the
    speculation ``spec``, read back already and charged as that instruction."""
    if spec is None:
        return int(instruction())
    m.charge("reduce", operand.size, label=label, nbytes=operand.nbytes)
    return getattr(spec, name)


def _assign(xp: Any, workload: Any, act_mask: Any, num_idle: Any, divisor: Any):
    """Steps 4 and 5: the assignment and the new workload values (``divisor`` is
    ``max(sum_workload, 1)``; scalars are front-end ints or 0-d device arrays). Both
    have the workload's dtype (an int32 one: its sum and the number of processors
    together below 2**31, so no sum below overflows)."""
    # the product in 64 bits: an int32 workload times the idle count may not fit 32
    # (divided in place, and each temporary dropped once read: the gathering's peak is
    # the loop's when it runs over a frame's spans)
    wide = xp.multiply(workload, num_idle, dtype=np.int64)
    wide //= divisor
    share = xp.add(wide, 1, out=xp.empty(workload.shape, dtype=workload.dtype))
    del wide
    assignment = xp.where(act_mask, share, workload > 0)
    del share
    new_workload_values = workload + assignment
    new_workload_values -= 1
    new_workload_values //= xp.maximum(assignment, 1)
    new_workload_values = xp.where(assignment > 0, new_workload_values, 0)
    return assignment, new_workload_values


@dataclass
class _Speculation:
    """Every scalar of the gathering, read back at once, with the device arrays of steps
    2 to 5 computed from them on the device."""

    num_idle: int
    total: int
    sum_workload: int
    max_new_workload: int
    max_workload: int
    act_mask: Any
    assignment: Any
    new_workload_values: Any


def _speculate(m: Any, workload: Any, idle: Any, need_max: bool) -> _Speculation:
    """Steps 1 to 5 on the device with plain array code (nothing charged) and one read back
    of their scalars (one host sync), for :func:`gather_information` on a GPU."""
    xp = m.xp
    n = int(workload.size)
    num_idle = xp.count_nonzero(idle).astype(np.int64)
    total = xp.sum(workload).astype(np.int64)
    act_mask = workload > total // n
    sum_workload = xp.sum(xp.where(act_mask, workload, 0)).astype(np.int64)
    assignment, new_workload_values = _assign(
        xp, workload, act_mask, num_idle, xp.maximum(sum_workload, 1)
    )
    scalars = [num_idle, total, sum_workload, xp.max(new_workload_values).astype(np.int64)]
    if need_max:
        scalars.append(xp.max(workload).astype(np.int64))
    (host,) = m.fetch(xp.stack(scalars))
    values = host.tolist() + ([] if need_max else [-1])
    return _Speculation(*values, act_mask, assignment, new_workload_values)


def redistribute(
    workload: Any,
    parallel_index: Any,
    problem_data: Any,
    info: Information,
    *,
    machine: Any,
    steps: bool = True,
) -> Redistribution:
    """Redistribution phase of Ahrens & Hansen (1995), section 2.3.1.

    1. ``pointers``: exclusive add-scan of ``info.assignment`` (block heads).
    2. A send of ``new_workload_values``, ``parallel_index`` and ``problem_data`` to the
       block heads. The block's remaining ``workload`` travels too, in one two-word
       message with ``parallel_index`` (so there are three sends, as in the paper): it
       gives the last processor of a block its exact share when the division is not
       exact.
    3. Segmented copy-scans spread them over every block.
    4. A segmented exclusive add-scan of ``new_workload`` added to ``parallel_index``
       renumbers the task indices.

    Parameters
    ----------
    workload : 1-D int64 (or int32) backend array
        Tasks left per processor.
    parallel_index : 1-D int64 (or int32) backend array
        Next task index per processor, 1-based as in the paper (0 on idle processors).
        The new arrays keep the dtypes of ``workload``, ``parallel_index`` and
        ``problem_data`` (int32 ones: values and their sum below 2**31, as the loops
        keep them).
    problem_data : 1-D backend array
        One datum per processor (any dtype); in :func:`run_loop`, the datum's number.
    info : Information
        The result of :func:`gather_information` on ``workload``.
    machine : simd.Machine
    steps : bool
        Keep the intermediate arrays of the four steps in the result; False: they are
        None, each freed once read (the loops need only the new arrays), and so are
        ``info``'s arrays (``act_mask``, ``assignment``, ``new_workload_values``: set to
        None once read; its scalars stay).

    Returns
    -------
    Redistribution
        The intermediate arrays (``steps``) and the new ``workload``, ``parallel_index``
        and ``problem_data``.

    Examples
    --------
    The example of section 2.3.1: processors 1 to 5 share datum 1.0, processor 6 keeps 2.0.

    >>> from simd import Machine
    >>> m = Machine(pes=7, backend="numpy")
    >>> w = m.asarray([100, 19, 0, 0, 0, 0, 0])
    >>> red = redistribute(w, m.asarray([1, 1, 0, 0, 0, 0, 0]),
    ...                    m.asarray([1.0, 2.0, 0, 0, 0, 0, 0]),
    ...                    gather_information(w, machine=m), machine=m)
    >>> red.pointers.tolist(), red.workload.tolist()
    ([1, 6, 0, 0, 0, 0, 0], [20, 20, 20, 20, 20, 19, 0])
    >>> red.parallel_index.tolist(), red.problem_data.tolist()
    ([1, 21, 41, 61, 81, 1, 0], [1.0, 1.0, 1.0, 1.0, 1.0, 2.0, 0.0])
    """
    state = [workload, parallel_index, problem_data]
    return redistribute_state(state, info, machine=machine, steps=steps)


def redistribute_state(
    state: list, info: Information, *, machine: Any, steps: bool
) -> Redistribution:
    """:func:`redistribute` of ``state = [workload, parallel_index, problem_data]``, which
    it empties: where the caller holds no other reference (the loops hand theirs over),
    each of the three arrays goes once sent, before the new ones are made."""
    workload, parallel_index, problem_data = state
    state.clear()
    m = machine
    xp = m.xp
    n = int(workload.size)
    # Without ``steps`` each intermediate array goes as soon as it has been read: a frame's
    # redistribution of millions of spans holds a few of them at once, not all fifteen.
    kept: dict[str, Any] = {}

    def keep(**arrays: Any) -> None:
        if steps:
            kept.update(arrays)

    if not steps:  # never read here: it goes first
        info.act_mask = None
    # Step 2's message of workload and task index is made first, before the pointers, so
    # that the two arrays it replaces are gone by then (its charge stays in the paper's
    # order, after the first send, below).
    words = _message_words(m, workload, parallel_index)
    w_dtype, pi_dtype = workload.dtype, parallel_index.dtype
    if words is not None:
        limit, word = words
        packed = xp.multiply(workload, limit, dtype=word)
        packed += parallel_index
        del workload, parallel_index
    active = info.assignment > 0
    # Step 1: scan pointers. The scan addition variant (exclusive, initial 0).
    scanned = m.scan(info.assignment, "add", exclusive=True, initial=0)
    # int64 (a NumPy int64 scalar): the machine's sends take their addresses in 64 bits,
    # and would convert an int32 array at every send
    pointers_scan = xp.where(active, scanned, np.int64(0))
    if steps:  # the paper's 1-based pointers, read by nothing else
        kept["pointers"] = xp.where(active, scanned + 1, 0)
    # Where the last block ends: the front end reads one element (on a GPU it stays on the
    # device; nothing on the front end needs it).
    total_assigned = scanned[-1] + info.assignment[-1] if n else 0
    del scanned
    if not steps:  # read
        info.assignment = None
    if m.backend != "cupy" and n:
        total_assigned = int(total_assigned)
    m.charge("elementwise", n, ops=POINTER_OPS)
    # Step 2: general sends to the block heads (no collisions: assignments are >= 1).
    sent_nwv = m.send(info.new_workload_values, pointers_scan, n, mask=active, fill=0)
    if not steps:  # the gathering's arrays are read: they go before the sends' results
        info.new_workload_values = None
    if words is not None:
        m.charge("elementwise", n, ops=PACK_OPS)  # the packing, above
        sent = m.send(packed, pointers_scan, n, mask=active, fill=0)
        del packed
        m.charge("elementwise", n, ops=PACK_OPS)  # the unpacking, after the last send
    else:
        sent_w = m.send(workload, pointers_scan, n, mask=active, fill=0)
        sent_pi = m.send(parallel_index, pointers_scan, n, mask=active, fill=0)
        del workload, parallel_index
    sent_pd = m.send(problem_data, pointers_scan, n, mask=active, fill=0)
    del problem_data
    if words is not None:
        sent_w = xp.floor_divide(sent, limit, out=xp.empty(n, dtype=w_dtype))
        sent_pi = xp.remainder(sent, limit, out=xp.empty(n, dtype=pi_dtype))
        del sent
    keep(pointers_scan=pointers_scan)
    del pointers_scan, active
    # handed over, so that each goes once read
    sent_arrays = [sent_nwv, sent_w, sent_pi, sent_pd]
    del sent_nwv, sent_w, sent_pi, sent_pd
    new_w, new_pi, new_problem_data = _spread_blocks(m, n, sent_arrays, total_assigned, keep)
    fields = ("pointers_scan", "pointers", "sent_new_workload_values", "sent_workload",
              "sent_parallel_index", "sent_problem_data", "heads", "new_workload",
              "copied_parallel_index", "scan_add_new_workload")  # fmt: skip
    return Redistribution(
        **{f: kept.get(f) for f in fields},
        problem_data=new_problem_data,
        parallel_index=new_pi,
        workload=new_w,
    )


def _message_words(m: Any, workload: Any, parallel_index: Any) -> tuple[int, Any] | None:
    """How workload and task index travel in one two-word message (as a CM program sends
    a struct): ``(limit, dtype)``, the message being ``workload * limit + parallel_index``,
    in 32 bits where both fit in 16 (a span's pixels, a triangle's scan lines: what a frame
    balances), else in 64 bits; None where they do not fit in 64 (two sends). Unpacked
    back into the state's integers after the last send, so that at most three of the five
    per-processor arrays handed in or sent out are held at each send."""
    xp = m.xp
    n = int(workload.size)
    if m.backend == "cupy" and n:  # both maxima in one read back (one host sync)
        (highs,) = m.fetch(xp.stack([xp.max(workload), xp.max(parallel_index)]))
        high_w, high_pi = highs.tolist()
    else:
        high_w = int(xp.max(workload)) if n else PACK_LIMIT
        high_pi = int(xp.max(parallel_index)) if n else PACK_LIMIT
    if max(high_w, high_pi) >= PACK_LIMIT:
        return None
    if high_w < PACK_LIMIT_32 // 2 and high_pi < PACK_LIMIT_32:
        return PACK_LIMIT_32, np.int32
    return PACK_LIMIT, np.int64


def _spread_blocks(
    m: Any, n: int, sent: list, total_assigned: Any, keep: Any
) -> tuple[Any, Any, Any]:
    """Steps 3 and 4 on the ``n`` processors' ``sent = [new_workload_values, workload,
    parallel_index, problem_data]`` as the sends left them at the block heads (emptied:
    each array goes once read): the new workload, task index and problem data."""
    xp = m.xp
    sent_nwv, sent_w, sent_pi, sent_pd = sent
    sent.clear()
    # Segments: every block head, plus the first unassigned processor so that the
    # processors after the last block stay idle (processor 7 of the paper's example).
    processor = xp.arange(n, dtype=np.int64)
    heads = (sent_nwv > 0) | (processor == total_assigned)
    del processor
    m.charge("elementwise", n, ops=HEAD_OPS)
    # Steps 3 and 4: segmented copy-scans, and the renumbering's segmented add-scan (the
    # scan addition variant). Each array is used up as soon as it can be, so that a few
    # of them are held at once (the scans are charged alike, whatever their order).
    new_workload = m.scan(sent_nwv, "copy", segments=heads)
    keep(sent_new_workload_values=sent_nwv)
    del sent_nwv
    offset = m.scan(new_workload, "add", exclusive=True, segments=heads, initial=0)
    block_workload = m.scan(sent_w, "copy", segments=heads)
    keep(sent_workload=sent_w)
    del sent_w
    # Exact share of every processor of a block; the last ones may get fewer (or none).
    block_workload -= offset
    new_w = xp.clip(block_workload, 0, new_workload, out=block_workload)
    del block_workload
    keep(new_workload=new_workload, scan_add_new_workload=offset)
    del new_workload
    new_problem_data = m.scan(sent_pd, "copy", segments=heads)
    keep(sent_problem_data=sent_pd)
    del sent_pd
    copied_pi = m.scan(sent_pi, "copy", segments=heads)
    keep(sent_parallel_index=sent_pi)
    del sent_pi
    new_pi = xp.add(copied_pi, offset, out=xp.empty(n, dtype=copied_pi.dtype))
    keep(copied_parallel_index=copied_pi, heads=heads)
    del copied_pi, heads, offset
    new_pi = xp.where(new_w > 0, new_pi, 0)
    m.charge("elementwise", n, ops=RENUMBER_OPS)
    return new_w, new_pi, new_problem_data
