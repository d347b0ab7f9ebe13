"""Building solutions, in parallel, before anything runs: a CUDA C file
becomes a library (nvcc for cuda, g++ through the translator for emu); a
Python file is checked against the signature. A failed build, a skipped
solution or a cancelled run becomes that solution's result."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from . import sanitizers
from .backends import Backend
from .backends.python_solution import check_python_signature
from .build import nvcc
from .build.signature import check_signature
from .challenge import Challenge
from .errors import SolutionError
from .lifecycle import Cancelled
from .plan import Plan
from .results import Reason, SolutionResult
from .testdata import cache_dir

Built = Path | SolutionResult  # the library (or the Python file), or the result that replaces running it
Notify = Callable[[str], None]


def build_all(challenge: Challenge, solutions: list[tuple[Path, str]], plan: Plan, notify: Notify, counter: Iterator[int], total: int) -> dict[Path, Built]:
    """Compile (path, label) pairs in parallel. `counter` (from 1) and `total`
    number the builds across challenges for the progress line."""

    def build_one(entry: tuple[Path, str]) -> Built:
        path, label = entry
        notify(f"building {next(counter)} of {total}: {label}")
        failed = SolutionResult(solution=label, backend=plan.backend)
        if path.suffix == ".py" and not plan.runs_python():
            failed.fail(Reason.SKIPPED, plan.python_skip_reason())
            failed.skip_requested = plan.skip_python
            return failed
        try:
            if path.suffix == ".py":
                check_python_signature(path.read_text(errors="replace"), challenge)
                return path  # nothing to build: the worker imports it
            check_signature(path.read_text(errors="replace"), challenge)
            return build_library(path, plan)
        except Cancelled:
            return failed.fail(Reason.INTERRUPTED, "the run was interrupted while this solution was being built")
        except SolutionError as error:
            diagnostics = getattr(error, "diagnostics", [])
            return failed.fail(Reason(error.reason), "\n".join(diagnostics) if diagnostics else str(error))

    workers = max(1, min(len(solutions), os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return dict(zip((path for path, _ in solutions), pool.map(build_one, solutions)))


def build_library(path: Path, plan: Plan) -> Path:
    if plan.backend == Backend.EMU:
        from .backends.emu import build_emu_library

        return build_emu_library(path, cache_dir(), sanitize=plan.sanitize)
    arch = plan.arch or _device_arch(plan.gpu)
    flags = plan.nvcc_flags + ((sanitizers.LINEINFO_FLAG,) if plan.sanitize else ())
    return nvcc.build_library(path, cache_dir(), arch, flags)


def _device_arch(gpu: int) -> str:
    from .backends import visible_gpus

    gpus = visible_gpus()
    if not gpus:
        return nvcc.HOPPER_ARCH  # building without a GPU (e.g. to check compilation)
    return gpus[min(gpu, len(gpus) - 1)].arch
