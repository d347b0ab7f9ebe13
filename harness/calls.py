"""One checked call of solve(): guarded buffers in, a verdict out.

Before the call: inputs copied in, outputs poisoned. After it: errors of the
backend, canary words around every array, inputs against their pristine
copies, outputs against the float64 reference. Used for the correctness tests
and for every timed call alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .challenge import DTYPES, Challenge
from .validation import Comparison, GuardedArray, compare


@dataclass
class Verdict:
    passed: bool
    reason: str | None = None
    message: str = ""
    comparisons: list[Comparison] = field(default_factory=list)


class CallSite:
    """Buffers of one size, reused across calls so that every call of a test
    sees the same addresses (that is what defeats caching by pointer)."""

    def __init__(self, xp: Any, challenge: Challenge, sizes: dict[str, int]):
        self.xp = xp
        self.challenge = challenge
        self.sizes = sizes
        self.buffers = {
            p.name: GuardedArray(xp, challenge.shape(p, sizes), getattr(xp, DTYPES[p.dtype].array_name), DTYPES[p.dtype].poison)
            for p in challenge.params
            if p.role != "size"
        }
        self.pristine: dict[str, Any] = {}
        self.expected: dict[str, Any] = {}

    def arguments(self, as_arrays: bool = False) -> list[Any]:
        """solve()'s arguments in signature order: sizes as ints, arrays as
        device pointers (CUDA C) or as the arrays themselves (Python)."""
        return [
            self.sizes[p.name]
            if p.role == "size"
            else (self.buffers[p.name].array if as_arrays else self.buffers[p.name].pointer)
            for p in self.challenge.params
        ]

    def load(self, inputs: dict[str, Any], expected: dict[str, Any]) -> None:
        """Stage one data set (on the backend's side) for the next calls."""
        self.pristine = {name: self.xp.asarray(array) for name, array in inputs.items()}
        self.expected = {name: self.xp.asarray(array) for name, array in expected.items()}

    def prepare(self) -> None:
        for name, array in self.pristine.items():
            self.buffers[name].array[...] = array
        for param in self.challenge.outputs:
            self.buffers[param.name].poison()

    def rehearse(self, inputs: dict[str, Any], expected: dict[str, Any]) -> None:
        """Run every check once on outputs the harness writes itself (right,
        unwritten, wrong), before the solution's clock starts: on a fresh
        machine CuPy compiles the kernels of the checks on first use, which
        took up to 8 s a test on an H200 with an empty cache and must not be
        counted as the solution's time."""
        self.load(inputs, expected)
        for damage in ("none", "unwritten", "wrong"):
            self.prepare()
            if damage != "unwritten":
                for param in self.challenge.outputs:
                    array = self.buffers[param.name].array
                    array[...] = self.expected[param.name].astype(array.dtype)
                    if damage == "wrong":
                        array.reshape(-1)[:1] += 1
            self.verify()
        self.prepare()

    def verify(self) -> Verdict:
        damaged = []
        for name, buffer in self.buffers.items():
            before, after = buffer.guard_damage()
            if before or after:
                damaged.append(f"{name} ({before} words before it, {after} after it)")
        if damaged:
            return Verdict(False, "out_of_bounds_write", "wrote past the bounds of " + ", ".join(damaged))
        modified = [
            name
            for name, array in self.pristine.items()
            if not self.buffers[name].same_bits(array)
        ]
        if modified:
            return Verdict(False, "input_modified", "modified input " + ", ".join(modified))
        comparisons = [
            compare(
                self.xp,
                p.name,
                self.buffers[p.name].array,
                self.expected[p.name],
                self.challenge.tolerance_for(p.name),
                p.axes,
                self.buffers[p.name].unwritten(),
            )
            for p in self.challenge.outputs
        ]
        failed = [c for c in comparisons if not c.passed]
        if not failed:
            return Verdict(True, comparisons=comparisons)
        reason = "unwritten_output" if any(c.unwritten for c in failed) else "wrong_output"
        return Verdict(False, reason, "; ".join(c.describe() for c in failed), comparisons)
