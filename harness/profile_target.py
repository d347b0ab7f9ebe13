"""The process that Nsight Compute profiles: `python -m harness.profile_target JOB.json`.

It makes one verified warm-up call of solve() at the performance size, measures
the device copy bandwidth (for the floor), then makes the profiled call between
cudaProfilerStart and cudaProfilerStop (ncu runs with --profile-from-start off,
so the warm-up, the copies and the checks are not profiled) and verifies it
too. What happened goes to the job's result file as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .calls import CallSite
from .challenge import load_challenge
from .testdata import load_case_data


def main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text())
    result_path = Path(job["result"])

    def finish(**fields: Any) -> int:
        result_path.write_text(json.dumps(fields))
        return 0

    from .backends.cuda import CudaRuntime

    challenge = load_challenge(job["challenge"], Path(job["root"]))
    runtime = CudaRuntime()
    solve = runtime.load(Path(job["library"]), challenge)
    case = challenge.test(job["test"])
    site = CallSite(runtime.xp, challenge, case.sizes)
    data = load_case_data(Path(job["data"]))
    site.load(data.inputs, data.expected)

    for phase in ("warm-up", "profiled"):
        site.prepare()
        runtime.xp.cuda.Stream.null.synchronize()  # input copies and poisoning finish before the range opens
        if phase == "profiled":
            runtime.xp.cuda.runtime.profilerStart()
        try:
            solve(site)
            runtime.check()
        except runtime.error_types as error:
            return finish(passed=False, phase=phase, reason="cuda_error", message=str(error))
        finally:
            if phase == "profiled":
                runtime.xp.cuda.runtime.profilerStop()
        verdict = site.verify()
        if not verdict.passed:
            return finish(passed=False, phase=phase, reason=verdict.reason, message=verdict.message)
        if phase == "warm-up":
            copy_bandwidth = runtime.copy_bandwidth()
    return finish(passed=True, device=runtime.device_name, copy_bandwidth_bytes_per_s=copy_bandwidth)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
