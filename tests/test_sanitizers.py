"""Reading sanitizer reports into one line of a verdict: compute-sanitizer's
three tools (logs in the shape they print on an H200) and AddressSanitizer's
summary; and how sanitizer_runs turns three tool runs into one verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import sanitizer_runs
from harness.backends import Backend
from harness.plan import Job
from harness.errors import ToolNotFound
from harness.results import SolutionResult
from harness.sanitizers import asan_summary, compute_sanitizer_command, find_compute_sanitizer, parse_compute_sanitizer

MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at scribble(float *)+0x70 in /src/illegal_address.cu:5
=========     by thread (3,0,0) in block (0,0,0)
=========     Address 0x10 is out of bounds
=========     and is 140 bytes before the nearest allocation at 0x7f00 of size 1024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2dd8f] in libcuda.so.1
=========
========= Program hit cudaErrorLaunchFailure (error 719) due to "unspecified launch failure" on CUDA API call to cudaDeviceSynchronize.
=========
========= ERROR SUMMARY: 2 errors
"""

RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at scan(const float *, int)+0x60 in /src/race.cu:10
=========     and Read access at scan(const float *, int)+0x1f0 in /src/race.cu:23 [508 hazards]
=========     and Read access at scan(const float *, int)+0x200 in /src/race.cu:23 [16 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

INITCHECK = """\
========= COMPUTE-SANITIZER
========= Uninitialized __global__ memory read of size 4 bytes
=========     at scan(const float *)+0x2a0 in /src/uninitialized_read.cu:21
=========     by thread (0,0,0) in block (0,0,0)
=========     Address 0x7f0000001000
=========
========= ERROR SUMMARY: 32 errors
"""


def test_memcheck_finding_keeps_what_where_and_which_thread():
    findings = parse_compute_sanitizer(MEMCHECK)
    assert findings is not None and findings.errors == 2
    assert findings.describe("memcheck") == (
        "compute-sanitizer memcheck: Invalid __global__ write of size 4 bytes at /src/illegal_address.cu:5 "
        "in scribble by thread (3,0,0) in block (0,0,0) (2 errors in all)"
    )


def test_racecheck_finding_names_both_accesses_once():
    findings = parse_compute_sanitizer(RACECHECK)
    assert findings is not None and findings.errors == 1
    assert findings.first == (
        "Error: Race reported between Write access at /src/race.cu:10 in scan "
        "and Read access at /src/race.cu:23 in scan [508 hazards]"
    )


def test_initcheck_finding_and_count():
    findings = parse_compute_sanitizer(INITCHECK)
    assert findings is not None and findings.errors == 32
    assert findings.first.startswith("Uninitialized __global__ memory read of size 4 bytes at /src/uninitialized_read.cu:21")


@pytest.mark.parametrize("log", [
    "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n",
    "========= COMPUTE-SANITIZER\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
    "",  # no log at all: the child never reached the tool's report
])
def test_a_clean_report_has_no_findings(log):
    assert parse_compute_sanitizer(log) is None


def test_lines_of_the_solution_itself_are_not_findings():
    """The solution's own output never starts with the tool's prefix."""
    assert parse_compute_sanitizer("Invalid __global__ write (printed by solve)\nERROR SUMMARY: 3 errors\n") is None


def test_command_puts_each_tool_in_its_own_log(tmp_path):
    command = compute_sanitizer_command(Path("/cuda/bin/compute-sanitizer"), "racecheck", tmp_path / "racecheck.log")
    assert command[:3] == ["/cuda/bin/compute-sanitizer", "--tool", "racecheck"]
    assert command[command.index("--log-file") + 1] == str(tmp_path / "racecheck.log")


def test_compute_sanitizer_is_found_next_to_nvcc_or_named_as_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    bin_dir = tmp_path / "cuda" / "bin"
    bin_dir.mkdir(parents=True)
    nvcc = bin_dir / "nvcc"
    nvcc.write_text("")
    with pytest.raises(ToolNotFound, match="needs compute-sanitizer"):
        find_compute_sanitizer(nvcc)
    tool = tmp_path / "cuda" / "compute-sanitizer" / "compute-sanitizer"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_compute_sanitizer(nvcc) == tool


def test_asan_summary_carries_the_emulators_thread_note():
    stderr = (
        "==1==ERROR: AddressSanitizer: heap-buffer-overflow\n"
        "harness emu: in kernel scan (launched at far.cu:30), block (0,0,0), thread (3,0,0)\n"
        "SUMMARY: AddressSanitizer: heap-buffer-overflow far.cu:12 in scan\n"
    )
    assert asan_summary(stderr) == (
        "AddressSanitizer: heap-buffer-overflow far.cu:12 in scan "
        "(in kernel scan (launched at far.cu:30), block (0,0,0), thread (3,0,0))"
    )
    assert asan_summary("plain output\n") is None


# --- one verdict from the three tools (sanitizer_runs), with the child runs replaced ---

CLEAN = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n"


def run_tools(monkeypatch, tmp_path, outcomes: dict[str, tuple[str | None, str]]) -> tuple[SolutionResult, list[str]]:
    """Evaluate under compute-sanitizer where each tool's child run ends with
    outcomes[tool] = (reason or None for a pass, the log the tool writes)."""
    ran: list[str] = []

    def fake_child(challenge, job, label, *, prefix, **_):
        tool, log = prefix[prefix.index("--tool") + 1], Path(prefix[prefix.index("--log-file") + 1])
        assert job.unpooled, "a memory checker needs every array in its own allocation"
        assert job.timing is None, "nothing is timed under a memory checker"
        ran.append(tool)
        reason, text = outcomes[tool]
        log.write_text(text)
        result = SolutionResult(solution="s.cu", backend="cuda", passed=reason is None)
        return result if reason is None else result.fail(reason, f"{reason} under {tool}")

    monkeypatch.setattr(sanitizer_runs, "run_child", fake_child)
    monkeypatch.setattr(sanitizer_runs.sanitizers, "find_compute_sanitizer", lambda nvcc: Path("/cuda/bin/compute-sanitizer"))
    monkeypatch.setattr(sanitizer_runs.nvcc, "toolchain", lambda: sanitizer_runs.nvcc.Toolchain(nvcc=Path("/cuda/bin/nvcc"), version="13.0"))
    job = Job("c", str(tmp_path), Backend.CUDA, "s.so", "s.cu", (), None, startup_limit_s=10.0)
    return sanitizer_runs.run_under_compute_sanitizer(None, job, "s.cu", gpu=0), ran


def test_clean_under_every_tool(monkeypatch, tmp_path):
    result, ran = run_tools(monkeypatch, tmp_path, {t: (None, CLEAN) for t in ("memcheck", "racecheck", "initcheck")})
    assert ran == ["memcheck", "racecheck", "initcheck"]
    assert result.passed and result.message == "compute-sanitizer memcheck, racecheck, initcheck: no findings"


def test_first_tool_with_findings_gives_the_verdict(monkeypatch, tmp_path):
    result, ran = run_tools(monkeypatch, tmp_path, {"memcheck": ("cuda_error", MEMCHECK), "racecheck": (None, CLEAN), "initcheck": (None, CLEAN)})
    assert ran == ["memcheck"]
    assert result.reason == "sanitizer" and result.message.startswith("compute-sanitizer memcheck: Invalid __global__ write")


def test_a_wrong_answer_is_explained_by_a_later_tool(monkeypatch, tmp_path):
    """A race that makes the output wrong under memcheck's schedule: racecheck names it."""
    outcomes = {"memcheck": ("wrong_output", CLEAN), "racecheck": (None, RACECHECK), "initcheck": (None, CLEAN)}
    result, ran = run_tools(monkeypatch, tmp_path, outcomes)
    assert ran == ["memcheck", "racecheck"]
    assert result.reason == "sanitizer" and "racecheck: Error: Race reported" in result.message


def test_a_failure_no_tool_explains_stays_the_verdict_and_a_timeout_stops(monkeypatch, tmp_path):
    unexplained = {"memcheck": ("wrong_output", CLEAN), "racecheck": (None, CLEAN), "initcheck": ("wrong_output", CLEAN)}
    result, ran = run_tools(monkeypatch, tmp_path, unexplained)
    assert ran == ["memcheck", "racecheck", "initcheck"]
    assert result.reason == "wrong_output" and result.message == "wrong_output under memcheck"
    result, ran = run_tools(monkeypatch, tmp_path, {"memcheck": ("timeout", ""), "racecheck": (None, CLEAN), "initcheck": (None, CLEAN)})
    assert ran == ["memcheck"] and result.reason == "timeout"
