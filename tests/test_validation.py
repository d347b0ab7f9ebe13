"""The comparison rule and guarded buffers, on NumPy arrays."""

from __future__ import annotations

import numpy as np

from harness.challenge import DTYPES, Tolerance
from harness.validation import GUARD_ELEMENTS, GuardedArray, compare

TOL = Tolerance(atol=1e-3, rtol=1e-3)


def test_within_tolerance_passes_and_reports_errors():
    expected = np.linspace(-2, 2, 24).reshape(2, 3, 4)
    actual = (expected + 5e-4).astype(np.float32)
    result = compare(np, "y", actual, expected, TOL, ("b", "t", "d"))
    assert result.passed and result.mismatches == 0
    assert 4e-4 < result.max_abs_error < 6e-4
    assert 0.2 < result.worst_ratio < 0.5  # 5e-4 against a bound of 1e-3 + 1e-3*|ref| (|ref| <= 2)


def test_worst_element_is_located_in_challenge_coordinates():
    expected = np.ones((2, 3, 4))
    actual = expected.astype(np.float32)
    actual[1, 2, 0] = 1.5
    actual[0, 0, 1] = 1.01
    result = compare(np, "y", actual, expected, TOL, ("b", "t", "d"))
    assert not result.passed and result.mismatches == 2
    assert result.worst_index == (1, 2, 0)
    assert result.where() == "(b=1, t=2, d=0)"
    assert "got 1.5, expected 1" in result.describe()


def test_nan_and_inf_fail():
    expected = np.zeros(4)
    for bad in (np.nan, np.inf, -np.inf):
        actual = np.zeros(4, dtype=np.float32)
        actual[2] = bad
        result = compare(np, "y", actual, expected, TOL)
        assert not result.passed and result.mismatches == 1 and result.worst_index == (2,)


def test_the_bound_is_atol_plus_rtol_times_reference():
    expected = np.array([1000.0])
    assert compare(np, "y", np.array([1000.9], np.float32), expected, TOL).passed  # bound 1.001
    assert not compare(np, "y", np.array([1001.1], np.float32), expected, TOL).passed


def test_guarded_array_detects_unwritten_elements_and_writes_past_either_end():
    buffer = GuardedArray(np, (3, 5), np.float32)
    buffer.poison()
    assert buffer.unwritten().all()
    buffer.array[0, :] = 1.0
    assert buffer.unwritten().sum() == 10
    assert buffer.guard_damage() == (0, 0)
    flat = buffer.words.view(np.float32)
    flat[GUARD_ELEMENTS + 15 + 2] = 0.0  # just past the end
    flat[GUARD_ELEMENTS - 1] = 0.0  # just before the start
    assert buffer.guard_damage() == (1, 1)
    assert buffer.pointer == buffer.array.ctypes.data


def test_unwritten_output_is_reported_as_such():
    buffer = GuardedArray(np, (4,), np.float32)
    buffer.poison()
    buffer.array[:2] = 0.0
    result = compare(np, "y", buffer.array, np.zeros(4), TOL, ("i",), buffer.unwritten())
    assert not result.passed and result.unwritten == 2
    assert "2 of 4 elements never written" in result.describe()


def test_half_arrays_of_odd_length_are_poisoned_and_guarded_to_the_last_element():
    half = DTYPES["float16"]
    guarded = GuardedArray(np, (3, 5), np.float16, half.poison)  # 15 halves: 30 bytes, 2 bytes of padding
    guarded.poison()
    assert guarded.unwritten().all() and np.isnan(guarded.array).all()
    guarded.array[...] = 1.5
    assert not guarded.unwritten().any() and guarded.guard_damage() == (0, 0)
    assert guarded.same_bits(np.full((3, 5), 1.5, dtype=np.float16))
    assert not guarded.same_bits(np.full((3, 5), 2.0, dtype=np.float16))
    one_past = guarded.words[GUARD_ELEMENTS:].view(np.uint8)[30:32].view(np.float16)
    one_past[0] = 0.0  # the element after the last, inside the padding word
    assert guarded.guard_damage() == (0, 1)


def test_half_arithmetic_never_produces_the_half_poison():
    values = np.array([np.inf, -np.inf, 0.0], dtype=np.float16)
    with np.errstate(invalid="ignore"):
        produced = np.concatenate([values - values, values * 0, np.sqrt(np.float16(-1.0))[None]]).view(np.uint16)
    assert DTYPES["float16"].poison not in set(produced.tolist())


def test_an_exact_tolerance_compares_without_dividing_by_zero():
    exact = Tolerance(atol=0.0, rtol=0.0)
    with np.errstate(all="raise"):
        same = compare(np, "out", np.array([0, 3, 5], dtype=np.int32), np.array([0.0, 3.0, 5.0]), exact)
        off = compare(np, "out", np.array([0, 3, 6], dtype=np.int32), np.array([0.0, 3.0, 5.0]), exact)
    assert same.passed and same.worst_ratio == 0.0
    assert not off.passed and off.mismatches == 1 and off.worst_index == (2,) and off.worst_ratio is None
