"""What the viewer's page may ask for (renderer.viewer.requests): views of what the viewer
was started with, each field checked, nothing else."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from renderer.viewer.requests import COLORMAPS, MAGNIFICATION, Choices, ViewRequest

FIELDS = set(ViewRequest.__dataclass_fields__)
MESH = Choices()
VOLUME = Choices(levels=(-1.0, 3.0))


@given(st.dictionaries(st.text(min_size=1).filter(lambda k: k not in FIELDS), st.integers(),
                       min_size=1))  # fmt: skip
def test_a_field_that_is_not_a_views_is_refused(message):
    with pytest.raises(ValueError, match="unknown field"):
        ViewRequest.parse(message, MESH)


@given(
    azimuth=st.floats(-1e6, 1e6),
    elevation=st.floats(-90, 90),
    magnification=st.floats(*MAGNIFICATION),
    level=st.floats(-1.0, 3.0).filter(lambda v: v > -1.0),
    loop=st.sampled_from(VOLUME.loops),
    colormap=st.none() | st.sampled_from(COLORMAPS),
    light=st.tuples(*[st.floats(-5, 5)] * 3).filter(any),
    preview=st.booleans(),
    id=st.integers(0, 2**53 - 1),
)
def test_every_good_view_is_read_as_sent_and_sent_back_the_same(**fields):
    request = ViewRequest.parse(fields, VOLUME)
    for name, value in fields.items():
        got = getattr(request, name)
        assert got == (tuple(value) if name == "light" else value)
    assert ViewRequest.parse(request.to_dict(), VOLUME) == request


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("azimuth", math.nan, "finite"),
        ("azimuth", "45", "must be a number"),
        ("azimuth", True, "must be a number"),
        ("elevation", 95, "within -90 to 90"),
        ("magnification", 0, "within 0.05 to 100"),
        ("loop", "fastest", "loop must be one of original, cost-effective, expand"),
        ("shading", "phong", "shading must be one of gouraud, flat"),
        ("colormap", "../../etc/passwd", "colormap must be one of"),
        ("colour_by", "depth", "colour_by must be one of"),
        ("light", [0, 0, 0], "a direction"),
        ("light", [1, 2], "three numbers"),
        ("preview", 1, "true or false"),
        ("id", -1, "whole number"),
        ("level", 1.0, "a mesh, which has no level"),
    ],
)
def test_a_bad_field_is_one_line_naming_it(field, value, words):
    with pytest.raises(ValueError, match=words) as err:
        ViewRequest.parse({field: value}, MESH)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("level", [-1.0, -2.0, 3.5, None])
def test_a_level_outside_the_volume_has_no_surface(level):
    with pytest.raises(ValueError, match="level|number"):
        ViewRequest.parse({"level": level}, VOLUME)


def test_a_level_at_the_top_of_the_range_is_a_surface():
    # values at or above the level are inside: at the maximum, the largest values are
    assert ViewRequest.parse({"level": 3.0}, VOLUME).level == 3.0


def test_fields_left_out_come_from_the_first_view():
    first = ViewRequest.initial(VOLUME, level=1.0, loop="expand", azimuth=10)
    request = ViewRequest.parse({"azimuth": 20}, VOLUME, first)
    assert (request.azimuth, request.level, request.loop) == (20.0, 1.0, "expand")


def test_the_page_is_told_its_choices():
    data = VOLUME.to_dict()
    assert data["levels"] == [-1.0, 3.0]
    assert data["loops"] == ["original", "cost-effective", "expand"]
    assert data["magnification"] == list(MAGNIFICATION)
