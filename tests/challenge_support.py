"""Shared by the per-challenge test files: a challenge as the harness loads it,
its cases' inputs and float64 outputs as the harness builds them, and the
harness's pass rule expressed as a ratio."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness import expressions
from harness.challenge import DTYPES, Tolerance, load_challenge
from harness.testdata import compute_expected, make_inputs
from harness.validation import compare

REPO = Path(__file__).resolve().parents[1]


class ChallengeCases:
    def __init__(self, name: str):
        self.challenge = load_challenge(name, REPO)
        self.tolerance = self.challenge.tolerance
        self._expected: dict[str, np.ndarray] = {}

    def shape_of(self, name: str, sizes: Mapping[str, int]) -> tuple[int, ...]:
        return self.challenge.shape(next(p for p in self.challenge.params if p.name == name), dict(sizes))

    def case_inputs(self, case: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Inputs of a test entry of challenge.toml, as the harness builds them."""
        return make_inputs(self.challenge, self.challenge.test(case["name"]))

    def case_reference(self, case: Mapping[str, Any]) -> np.ndarray:
        """The float64 output of a test entry, as the harness computes it, once."""
        if case["name"] not in self._expected:
            test = self.challenge.test(case["name"])
            outputs = compute_expected(self.challenge, test, make_inputs(self.challenge, test))
            self._expected[case["name"]] = outputs[self.challenge.outputs[0].name]
        return self._expected[case["name"]]

    def worst_ratio(self, out: np.ndarray, ref: np.ndarray, atol: float | None = None, rtol: float | None = None) -> float:
        """max |out - ref| / (atol + rtol*|ref|), by the harness's own comparison:
        <= 1 passes; NaN or inf counts as inf."""
        tolerance = Tolerance(self.tolerance.atol if atol is None else atol, self.tolerance.rtol if rtol is None else rtol)
        ratio = compare(np, "out", out, np.asarray(ref, dtype=np.float64), tolerance).worst_ratio
        return math.inf if ratio is None else ratio

    def check_generated(self, distribution: str, sizes: dict[str, int]) -> None:
        """generate_inputs keeps its contract: every input, in its declared dtype
        and shape, contiguous, finite, within the constraints, and the same for
        the same seed."""
        generate = self.challenge.reference_module.generate_inputs
        inputs = generate(distribution, sizes, np.random.default_rng(7))
        assert set(inputs) == {p.name for p in self.challenge.inputs}
        for param in self.challenge.inputs:
            value = inputs[param.name]
            assert value.dtype == DTYPES[param.dtype].array_name, param.name
            assert value.shape == self.shape_of(param.name, sizes), param.name
            assert value.flags.c_contiguous and np.isfinite(value).all(), param.name
        for constraint in self.challenge.constraints:
            assert bool(expressions.evaluate(constraint, {**sizes, **inputs})), constraint
        again = generate(distribution, sizes, np.random.default_rng(7))
        for name in inputs:
            np.testing.assert_array_equal(inputs[name], again[name])
