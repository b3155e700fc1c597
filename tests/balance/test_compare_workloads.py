"""simd.balance.workloads: bad workloads refused in one line, files read, families made."""

from __future__ import annotations

import numpy as np
import pytest

from simd.balance.workloads import (
    FAMILIES,
    MAX_COUNT,
    check_workload,
    family_label,
    generate,
    read_workload,
)
from simd.operands import MAX_PES


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], "is empty"),
        ([3, -2, 1], r"negative count \(-2 at index 1\)"),
        ([1.0, 2.5], r"fractional count \(2.5 at index 1\)"),
        ([1.0, np.nan], "NaN at index 1"),
        ([np.inf, 1.0], "an infinite count at index 0"),
        ([[1, 2], [3, -4]], r"\(-4 at index \(1, 1\)\)"),
        (np.ones((2, 2, 2)), "got 3 dimensions"),
        (["a", "b"], "got text"),
        ([True, False], "got booleans"),
        ([MAX_COUNT + 1], "more than the 2\\*\\*31 - 1 one processor can hold"),
        ([MAX_COUNT, MAX_COUNT], "tasks in all, more than"),
    ],
)
def test_bad_workloads_are_refused_in_one_line(values, message):
    with pytest.raises(ValueError, match=message) as info:
        check_workload(values)
    assert "\n" not in str(info.value)


def test_too_many_processors():
    with pytest.raises(ValueError, match="more than the machine's 16,777,216 processors"):
        check_workload(np.zeros(MAX_PES + 1, dtype=np.int8))


def test_good_workloads():
    assert check_workload([3.0, 0.0]).tolist() == [3, 0]
    out = check_workload(np.array([[1, 2], [3, 4]], dtype=np.uint8))
    assert out.dtype == np.int64 and out.shape == (2, 2)


def test_files(tmp_path):
    np.save(tmp_path / "w.npy", np.array([4, 0, 2]))
    (tmp_path / "w.csv").write_text("# tasks\n1,2\n3,4\n")
    (tmp_path / "col.csv").write_text("5\n6\n7\n")
    (tmp_path / "w.txt").write_text("1 2 3\n")
    assert read_workload(tmp_path / "w.npy").tolist() == [4, 0, 2]
    assert read_workload(tmp_path / "w.csv").tolist() == [[1, 2], [3, 4]]
    assert read_workload(tmp_path / "col.csv").tolist() == [5, 6, 7]
    assert read_workload(tmp_path / "w.txt").tolist() == [1, 2, 3]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("w.dat", "1 2", "unknown format '.dat'; use .npy, .csv or .txt"),
        ("missing.csv", None, "no such file"),
        ("words.csv", "a,b\n", "not a workload file"),
        ("empty.txt", "", "is empty"),
        ("neg.txt", "1 -1\n", "negative count"),
        ("half.csv", "1,2.5\n", "fractional count"),
        ("nan.csv", "1,nan\n", "NaN"),
        ("ragged.csv", "1,2\n3\n", "not a workload file"),
        ("bad.npy", "not numpy", "not a workload file"),
    ],
)
def test_bad_files_are_refused_in_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        read_workload(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_a_pickled_npy_is_refused(tmp_path):
    path = tmp_path / "objects.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="not a workload file"):
        read_workload(path)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("shape", [512, (32, 16)])
def test_families(family, shape):
    counts = generate(family, shape, mean=16, seed=3)
    assert counts.shape == ((shape,) if isinstance(shape, int) else shape)
    assert counts.dtype == np.int64 and counts.min() >= 0
    assert abs(counts.mean() - 16) < 1.5
    assert np.array_equal(counts, generate(family, shape, mean=16, seed=3))


def test_the_shapes_of_barker_and_chrisochoides():
    assert generate("linear-2", 3, mean=4).tolist() == [3, 4, 5]
    step = generate("step", 8, mean=5)
    assert step[-2:].tolist() == [2 * step[0]] * 2
    hot = generate("hotspot", 101)
    assert hot.argmax() == 50 and hot[0] == 0
    assert len(set(generate("bimodal", 1000, mean=10, param=3.0).tolist())) == 2


@pytest.mark.parametrize(
    ("family", "param", "message"),
    [
        ("zipf", 1.0, "exponent above 1"),
        ("pareto", 0.0, "shape above 0"),
        ("bimodal", -1.0, "variance of at least 0"),
        ("hotspot", 0.0, "width above 0"),
        ("gauss", None, "unknown family"),
    ],
)
def test_bad_families(family, param, message):
    with pytest.raises(ValueError, match=message):
        generate(family, 16, param=param)


def test_bad_shapes_and_means():
    with pytest.raises(ValueError, match="shape"):
        generate("uniform", (2, 2, 2))
    with pytest.raises(ValueError, match="mean"):
        generate("uniform", 4, mean=0)


def test_labels():
    assert family_label("zipf") == "zipf" and family_label("zipf", 2.5) == "zipf(2.5)"
