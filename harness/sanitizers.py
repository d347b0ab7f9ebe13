"""Memory and race checkers around a solution's child process, and how their
reports become one line of a verdict.

- emu: the library is built with AddressSanitizer; its SUMMARY line, plus the
  emulator's note of kernel, block and thread, ends the run.
- cuda: the child runs under NVIDIA compute-sanitizer, once per tool
  (memcheck, racecheck, initcheck), with its report in a log file; the
  library is built with -lineinfo so findings carry the .cu file:line.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolNotFound

# memcheck: out-of-bounds and misaligned accesses, device-side faults, API errors;
# racecheck: shared-memory hazards; initcheck: reads of never-written global memory.
CUDA_TOOLS = ("memcheck", "racecheck", "initcheck")
LINEINFO_FLAG = "-lineinfo"
_PREFIX = "========="
_NOT_FINDINGS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application returned")
_ERROR_COUNT = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: .*\((\d+) error")


def asan_summary(stderr: str) -> str | None:
    """AddressSanitizer's one-line summary and the emulator's note of which
    kernel, block and thread made the access, if the child printed them."""
    lines = stderr.splitlines()
    summary = next((l for l in lines if l.startswith("SUMMARY: AddressSanitizer")), None)
    if summary is None:
        return None
    context = next((l.strip() for l in lines if l.startswith("harness emu: in kernel")), "")
    return summary.removeprefix("SUMMARY: ") + (f" ({context.removeprefix('harness emu: ')})" if context else "")


def find_compute_sanitizer(nvcc: Path) -> Path:
    """compute-sanitizer from PATH, next to nvcc, or in the toolkit's own folder."""
    toolkit = nvcc.resolve().parent.parent
    candidates = [shutil.which("compute-sanitizer"), nvcc.parent / "compute-sanitizer",
                  toolkit / "compute-sanitizer" / "compute-sanitizer"]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise ToolNotFound(f"--sanitize on cuda needs compute-sanitizer: not on PATH, next to {nvcc} or under {toolkit}")


def compute_sanitizer_command(executable: Path, tool: str, log: Path) -> list[str]:
    """The prefix that runs a child under one compute-sanitizer tool. racecheck
    keeps its default report (one "Race reported between" analysis per pair of
    accesses): `--racecheck-report hazard` prints every hazard instance, which
    on a racy kernel floods the log and can outlast the timeout."""
    return [str(executable), "--tool", tool, "--log-file", str(log), "--print-limit", "20"]


@dataclass(frozen=True)
class Findings:
    errors: int  # as counted by the tool's summary
    first: str  # the first finding: what, where in the source, which thread

    def describe(self, tool: str) -> str:
        more = f" ({self.errors} errors in all)" if self.errors > 1 else ""
        return f"compute-sanitizer {tool}: {self.first}{more}"


def parse_compute_sanitizer(log: str) -> Findings | None:
    """The errors of a compute-sanitizer log; None when it reports none.

    A finding is a headline ("Invalid __global__ write of size 4 bytes",
    "Error: Race reported between ...", "Uninitialized __global__ memory read
    ...") followed by indented details, of which the source location and the
    thread are kept."""
    findings: list[list[str]] = []
    errors: int | None = None
    for raw in log.splitlines():
        if not raw.startswith(_PREFIX):
            continue
        line = raw[len(_PREFIX):]
        text = line.strip()
        count = _ERROR_COUNT.search(text)
        if count:
            errors = (errors or 0) + int(count.group(1) or count.group(2))
            continue
        if not text or text.startswith(_NOT_FINDINGS):
            continue
        if not line.startswith("  "):  # a headline; details are indented
            findings.append([_short_location(text)])
        elif findings and _is_new_detail(findings[-1], text):
            findings[-1].append(_short_location(text))
    if errors is None:
        errors = len(findings)
    if errors == 0 or not findings:
        return None
    return Findings(errors=errors, first=" ".join(findings[0]))


def _is_new_detail(finding: list[str], text: str) -> bool:
    """Where, by which thread, and (racecheck) the first other access; host
    backtraces, addresses and the rest of a race's accesses are left out."""
    kind = next((k for k in ("at ", "by thread", "and ") if text.startswith(k)), None)
    if kind is None or text.startswith("and is "):
        return False
    return not any(line.startswith(kind) for line in finding[1:])


_LOCATION = re.compile(r"at (?P<function>[^(+]+)(?:\(.*\))?\+0x[0-9a-fA-F]+ in (?P<source>\S+:\d+)")


def _short_location(text: str) -> str:
    """"at scan(const float *, int)+0x1b0 in /src/x.cu:21" -> "at /src/x.cu:21 in scan"."""
    return _LOCATION.sub(lambda m: f"at {m['source']} in {m['function'].strip()}", text)
