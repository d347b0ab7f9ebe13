"""Reading sanitizer reports into one line of a verdict: compute-sanitizer's
three tools (logs in the shape they print) and AddressSanitizer's summary."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import ToolNotFound
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
