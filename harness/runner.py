"""Running one built solution: in a worker process, or once per
compute-sanitizer tool under `--sanitize` on cuda (sanitizer_runs.py)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from .backends import Backend
from .build.preload import thread_watch_library
from .builds import Built
from .challenge import Challenge
from .discovery import reference_solution
from .plan import Plan, TestJob, TimingJob, solution_job
from .results import SolutionResult
from .sanitizer_runs import run_under_compute_sanitizer
from .supervision import TestStarted, run_child
from .testdata import cache_dir

PreparedJobs = tuple[tuple[TestJob, ...], TimingJob | None]  # as testdata.prepare_jobs gives them


def run_built(
    challenge: Challenge,
    path: Path,
    label: str,
    built: Built,
    plan: Plan,
    root: Path,
    jobs: PreparedJobs,
    gpu: int,
    on_test: TestStarted | None = None,
) -> SolutionResult:
    """One solution after its build: run its library, or keep its failed build as the result."""
    if isinstance(built, SolutionResult):
        result = replace(built)  # a copy: grading may report one failed build on several GPUs
    else:
        job = solution_job(challenge, root, path, built, plan, *jobs)
        if plan.sanitize and plan.backend == Backend.CUDA:
            result = run_under_compute_sanitizer(challenge, job, label, gpu, on_test)
        else:
            if plan.sanitize:  # emu: the AddressSanitizer runtime must be preloaded
                from .backends.emu import sanitizer_env

                env = sanitizer_env()
            else:
                watch = thread_watch_library(cache_dir())
                env = {"LD_PRELOAD": ":".join(filter(None, (os.environ.get("LD_PRELOAD"), str(watch))))} if watch else {}
            result = run_child(challenge, job, label, env=env, gpu=gpu, on_test=on_test, sanitized=plan.sanitize)
    result.is_reference = path.resolve() == reference_solution(challenge, root).resolve()
    return result
