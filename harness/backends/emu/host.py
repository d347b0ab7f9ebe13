"""The emu backend as seen from the child process that runs a solution: NumPy
arrays, ctypes calls into the emulated library, and the emulator's own error
report (deadlocks, collective misuse, bad launch configurations)."""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy

from ...challenge import Challenge
from ..library import load_solve

SCHEDULES = {"forward": 0, "reverse": 1, "random": 2}


class EmulationError(RuntimeError):
    reason = "emulation_error"


class EmuRuntime:
    name = "emu"
    device_name = "CPU emulator"
    xp = numpy
    error_types = (EmulationError,)
    # Every passing call is repeated with the threads of each block run in
    # reverse order; a result that only holds for one order is a race.
    recheck_schedules = ("reverse",)

    def __init__(self) -> None:
        self._lib: ctypes.CDLL | None = None

    def load(self, library: Path, challenge: Challenge) -> Callable[[Any], None]:
        """A function that calls solve() for a CallSite, with host pointers."""
        self._lib, solve = load_solve(library, challenge)
        self._lib.harness_emu_error.restype = ctypes.c_char_p
        self._lib.harness_emu_set_schedule.argtypes = [ctypes.c_int, ctypes.c_uint]
        return lambda site: solve(*site.arguments())

    def check(self) -> None:
        assert self._lib is not None
        message = self._lib.harness_emu_error()
        if message:
            self._lib.harness_emu_reset()
            raise EmulationError(message.decode(errors="replace"))

    @contextmanager
    def schedule(self, name: str, seed: int = 0) -> Iterator[None]:
        assert self._lib is not None
        self._lib.harness_emu_set_schedule(SCHEDULES[name], seed)
        try:
            yield
        finally:
            self._lib.harness_emu_set_schedule(SCHEDULES["forward"], 0)
