"""
What load balancing does to a loop
==================================

The scan-conversion loop of the unbalanced data set, from view ``(45, 45)``: every polygon
is a datum whose tasks are the scan lines it covers. Without balancing (the *original*
loop, Figure 1 of Ahrens & Hansen) each iteration runs one task of every polygon that has
one left, so the loop runs as many iterations as the longest polygon has scan lines, with
fewer and fewer processors busy. The *cost-effective* loop redistributes the remaining
tasks over all processors whenever its estimate says the saving exceeds the cost; the
*expand* form runs all tasks at once.
"""

import matplotlib.pyplot as plt

import renderer
from simd import Machine
from simd.balance import run_loop

mesh = renderer.load_dataset("unbalanced")
workload = renderer.loop_workloads(mesh, view=(45, 45), size=512).scan

fig, ax = plt.subplots(figsize=(8, 4))
for form in ("original", "cost-effective"):
    machine = Machine(pes=512, backend="numpy")
    busy = []  # tasks run per iteration
    res = run_loop(
        workload,
        lambda items, tasks, busy=busy: busy.append(len(items)),
        machine=machine,
        form=form,
    )
    seconds = machine.cost.seconds(res.record.cycles)
    ax.plot(
        range(1, len(busy) + 1),
        busy,
        label=f"{form}: {res.iterations} iterations, {seconds * 1e3:.1f} ms on the CM-5",
    )
ax.set_yscale("log")
ax.set_xlabel("iteration")
ax.set_ylabel("scan lines converted in the iteration")
ax.set_title(f"{len(workload):,} polygons, {int(workload.sum()):,} scan lines")
ax.legend()
fig.tight_layout()
