"""Correctness checks: poisoned and guarded buffers, and the elementwise comparison.

Every array parameter lives inside a guarded buffer: GUARD_ELEMENTS of canary
words on each side, checked after every call, so writes past either end are
caught. Outputs are filled with a poison NaN before every call, so an element
the solution never wrote is told apart from a wrong one. The functions take an
array module (`xp`: numpy on the emulator, cupy on a GPU) so the same checks
run where the data is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .challenge import Tolerance

GUARD_ELEMENTS = 4096  # 16 KiB of canaries before and after every array
POISON_BITS = 0x7FC0FFEE  # a quiet NaN no arithmetic produces: marks unwritten outputs
CANARY_BITS = 0x7FCA1A57  # another such NaN: marks the guard words


@dataclass(frozen=True)
class Comparison:
    """How one output compares with the float64 reference."""

    output: str
    passed: bool
    total: int
    mismatches: int
    unwritten: int
    nan_count: int
    max_abs_error: float
    max_rel_error: float
    rel_l2_error: float
    worst_ratio: float | None  # max |err| / (atol + rtol*|ref|): under 1 passes; None if not finite
    worst_index: tuple[int, ...]
    worst_axes: tuple[str, ...]
    worst_actual: float
    worst_expected: float

    def where(self) -> str:
        """The worst element in the challenge's own coordinates, e.g. (b=0, t=17, d=3)."""
        return "(" + ", ".join(f"{a}={i}" for a, i in zip(self.worst_axes, self.worst_index)) + ")"

    def describe(self) -> str:
        if self.unwritten:
            return f"{self.output}: {self.unwritten} of {self.total} elements never written, first at {self.where()}"
        return (
            f"{self.output}: {self.mismatches} of {self.total} elements out of tolerance; "
            f"worst at {self.where()}: got {self.worst_actual:.7g}, expected {self.worst_expected:.7g}; "
            f"max abs err {self.max_abs_error:.3g}, max rel err {self.max_rel_error:.3g}, "
            f"rel L2 err {self.rel_l2_error:.3g}"
        )


class GuardedArray:
    """An array with canary words on both sides inside one allocation. Arrays
    whose bytes do not fill whole words (an odd number of halves) end in
    padding that holds canaries too, so a write one element past the end is
    caught at every element width."""

    def __init__(self, xp: Any, shape: tuple[int, ...], dtype: Any, poison: int = POISON_BITS):
        self.xp = xp
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize
        self.body_words = -(-self.nbytes // 4)
        self.bits = getattr(xp, f"uint{8 * self.dtype.itemsize}")  # the same width, compared bit for bit
        self.poison_bits = poison
        self.words = xp.empty(self.body_words + 2 * GUARD_ELEMENTS, dtype=xp.uint32)
        self.words[:GUARD_ELEMENTS] = CANARY_BITS
        self.words[GUARD_ELEMENTS + self.body_words - (1 if self.padding else 0) :] = CANARY_BITS
        body = self.words[GUARD_ELEMENTS : GUARD_ELEMENTS + self.body_words].view(xp.uint8)
        self.array = body[: self.nbytes].view(self.dtype).reshape(shape)
        self._padding = body[self.nbytes :]
        self._padding_canary = self._padding.copy()

    @property
    def padding(self) -> int:
        return 4 * self.body_words - self.nbytes

    def fill(self, values: Any) -> None:
        self.array[...] = self.xp.asarray(values).reshape(self.array.shape)

    def poison(self) -> None:
        self.array.view(self.bits)[...] = self.poison_bits

    def unwritten(self) -> Any:
        """Mask of elements still holding the poison."""
        return self.array.view(self.bits) == self.poison_bits

    def same_bits(self, other: Any) -> bool:
        """Whether the array holds exactly `other`, bit for bit (NaNs included)."""
        return bool(self.xp.array_equal(self.array.view(self.bits), other.view(self.bits)))

    def guard_damage(self) -> tuple[int, int]:
        """Number of canary words overwritten before and after the array (the
        padding after an odd number of halves counts as one word)."""
        before = int((self.words[:GUARD_ELEMENTS] != CANARY_BITS).sum())
        after = int((self.words[GUARD_ELEMENTS + self.body_words :] != CANARY_BITS).sum())
        if self.padding and not bool(self.xp.array_equal(self._padding, self._padding_canary)):
            after += 1
        return before, after

    @property
    def pointer(self) -> int:
        if hasattr(self.array, "data") and hasattr(self.array.data, "ptr"):
            return int(self.array.data.ptr)  # cupy
        return int(self.array.ctypes.data)  # numpy


def compare(
    xp: Any,
    output: str,
    actual: Any,
    expected: Any,
    tolerance: Tolerance,
    axes: tuple[str, ...] = (),
    unwritten: Any = None,
) -> Comparison:
    """Elementwise |actual - expected| <= atol + rtol*|expected|, written so that
    NaN and inf fail. `unwritten` is the poison mask of `actual`, if known.
    A full-size temporary is 268 MB at prefix_sum's 33.5 M elements: each is
    made once and dropped when done (1.5 s there against 8.5 s with one per
    expression, on 2 CPU cores)."""
    a = actual.astype(xp.float64)
    e = expected
    total = int(a.size)
    diff = a - e
    err = xp.abs(diff)
    abs_e = xp.abs(e)
    bound = abs_e * tolerance.rtol
    bound += tolerance.atol
    mismatches = total - int(xp.count_nonzero(err <= bound))  # NaN compares False, so a NaN output fails
    unwritten_count = int(unwritten.sum()) if unwritten is not None else 0
    nan_count = int(xp.count_nonzero(xp.isnan(a)))
    finite_err = xp.where(xp.isfinite(err), err, xp.inf)
    del err
    # error over bound; an exact tolerance (bound 0) gives 0 where exact, inf elsewhere
    if tolerance.atol > 0:  # bound >= atol everywhere
        ratio = finite_err / bound
    else:
        positive = bound > 0
        ratio = xp.where(positive, finite_err / xp.where(positive, bound, 1.0), xp.where(finite_err > 0, xp.inf, 0.0))
        del positive
    del bound
    worst_ratio = float(ratio.max()) if total else 0.0
    if unwritten_count:
        worst_flat = int(xp.argmax(unwritten.ravel()))
    else:
        worst_flat = int(xp.argmax(ratio.ravel())) if total else 0
    del ratio
    worst_index = tuple(int(i) for i in np.unravel_index(worst_flat, a.shape)) if total else ()
    nonzero = abs_e > 0
    rel = xp.where(nonzero, finite_err / xp.where(nonzero, abs_e, 1.0), 0.0)
    max_rel_error = float(rel.max()) if total else 0.0
    del rel, nonzero, abs_e
    norm_e = float(xp.linalg.norm(e.ravel()))
    diff_norm = float(xp.linalg.norm(xp.where(xp.isfinite(a), diff, xp.inf).ravel())) if total else 0.0
    return Comparison(
        output=output,
        passed=mismatches == 0 and unwritten_count == 0,
        total=total,
        mismatches=mismatches,
        unwritten=unwritten_count,
        nan_count=nan_count,
        max_abs_error=float(finite_err.max()) if total else 0.0,
        max_rel_error=max_rel_error,
        rel_l2_error=diff_norm / norm_e if norm_e > 0 else diff_norm,
        worst_ratio=worst_ratio if np.isfinite(worst_ratio) else None,
        worst_index=worst_index,
        worst_axes=axes or tuple(f"i{k}" for k in range(a.ndim)),
        worst_actual=float(a.ravel()[worst_flat]) if total else 0.0,
        worst_expected=float(e.ravel()[worst_flat]) if total else 0.0,
    )
