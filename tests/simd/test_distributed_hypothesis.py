"""Scans and sends across MPI ranks on cases drawn by hypothesis (one launch per example).

Hypothesis draws a batch of cases in this process (row counts per rank that rarely divide
evenly and are often zero, operators, dtypes, forms, segment densities, combiners, float
sums of values far apart in magnitude); one
``mpiexec`` launch runs the batch (``tests/mpi/drawn_cases.py``) and compares each
instruction bit for bit with the one-rank machine on the gathered data.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.mpi_support import run_ranks

INTEGERS = ["int32", "int64", "uint8"]


def cases(nranks: int):
    rows = st.lists(st.integers(0, 9), min_size=nranks, max_size=nranks)
    seed = st.integers(0, 2**31)
    exact = st.fixed_dictionaries(
        {
            "kind": st.just("scan"),
            "rows": rows,
            "seed": seed,
            "op": st.sampled_from(["add", "max", "min", "xor", "copy"]),
            "dtype": st.sampled_from(INTEGERS),
            "exclusive": st.booleans(),
            "reverse": st.booleans(),
            "starts": st.sampled_from([0.0, 0.1, 0.5]),
        }
    )
    floats = st.fixed_dictionaries(
        {
            "kind": st.just("scan"),
            "rows": rows,
            "seed": seed,
            "op": st.sampled_from(["add", "max", "min"]),
            "dtype": st.sampled_from(["float32", "float64"]),
            "exclusive": st.booleans(),
            "reverse": st.booleans(),
            "starts": st.sampled_from([0.0, 0.2]),
        }
    )
    sends = st.fixed_dictionaries(
        {
            "kind": st.just("send"),
            "rows": rows,
            "seed": seed,
            "size": st.integers(1, 12),
            "dtype": st.sampled_from([*INTEGERS, "float64"]),
            "combine": st.sampled_from(["overwrite", "add", "max", "min"]),
        }
    )
    sums = st.fixed_dictionaries(
        {
            "kind": st.just("sum"),
            "rows": rows,
            "seed": seed,
            "dtype": st.sampled_from(["float32", "float64"]),
            "spread": st.sampled_from([0, 40, 120]),  # binary exponents apart
        }
    )
    return st.lists(st.one_of(exact, floats, sends, sums), min_size=10, max_size=25)


@pytest.mark.mpi
@pytest.mark.parametrize("nranks", [3, 4])
def test_drawn_scans_sends_and_sums_equal_one_rank(nranks, tmp_path_factory):
    @settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
    @given(batch=cases(nranks))
    def check(batch):
        path = tmp_path_factory.mktemp("cases") / "cases.json"
        path.write_text(json.dumps(batch))
        done = run_ranks(nranks, "drawn_cases.py", str(path), timeout=120)
        assert done.stdout.count("ok ") == nranks, done.stdout

    check()
