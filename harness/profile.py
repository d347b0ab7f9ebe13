"""`harness profile`: a solution's official-size call under Nsight Compute.

The call runs in harness.profile_target after one verified warm-up; ncu
profiles only that call (--profile-from-start off), with the sections below,
keeps the .ncu-rep for the GUI, and its raw page (--csv --page raw, base
units) is parsed into a per-kernel summary: duration, memory and SM
throughput as % of peak, achieved occupancy, registers and shared memory per
block, the top stall reasons, the warp instructions and how often the
schedulers issued them (so the time the kernel would take at one instruction
per scheduler per cycle), the busiest pipes; and the distance from the
challenge's floor (its byte model over the copy bandwidth measured in the
same process). SourceCounters' warp-state sampling, read from the source
page (--page source, SASS), adds per kernel the instructions where its warps
were most often found stalled, with the states they were in.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from .build import nvcc
from .challenge import Challenge
from .errors import HarnessError, ToolNotFound
from .testdata import case_data_path

SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "WarpStateStats", "MemoryWorkloadAnalysis", "SourceCounters")
STALL_METRIC = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")
# Collected beside the sections, so the summary never depends on a section's contents.
METRICS = (
    "gpu__time_duration.sum",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__block_size",
    "launch__grid_size",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "regex:" + STALL_METRIC.pattern,
)
NOT_STALLS = {"selected"}  # "selected" is the cycle a warp issues, not a stall
TOP_STALLS = 3
# From the sections' own metrics (every H200 raw page has them); a page without them shows none.
INSTRUCTIONS_METRIC = "inst_executed"  # warp instructions executed
ISSUE_METRIC = "sm__issue_active.avg.pct_of_peak_sustained_elapsed"
# A pipe's share of its peak: instructions issued to it (lsu, xu, ...) or cycles it was busy (fma, alu,
# tensor, ...). Names of one word only: the compound ones (tensor_op_dmma, cbu_pred_on_any, ...) split a pipe
# that is listed already.
PIPE_METRIC = re.compile(r"sm__(?:inst_executed_pipe_([a-z0-9]+)|pipe_([a-z0-9]+)_cycles_active)\.avg\.pct_of_peak_sustained_elapsed")
TOP_PIPES = 2
# The source page (SourceCounters' warp-state sampling per SASS instruction): its columns.
SAMPLES_COLUMN = "Warp Stall Sampling (All Samples)"
SAMPLED_STALL = re.compile(r"stall_(\w+)")  # the per-reason sample counts ("stall_long_sb"; not the "(Not Issued)" ones)
TOP_HOT_SPOTS = 3
TOP_HOT_SPOT_REASONS = 2
INSTRUCTIONS_COLUMN = "Instructions Executed"  # warp instructions, per SASS instruction
TOP_OPCODES = 6
PERMISSION_ERROR = "ERR_NVGPUCTRPERM"
# ncu's unit names: long ones in older releases, short ones (as ncu 2025 on the H200 prints them) now
UNIT_SCALES = {
    "nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0,
    "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0,
    "byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
    "B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
}


class ProfileError(HarnessError):
    """Profiling failed: ncu's or the solution's failure, in one line."""


class CountersNotPermitted(ProfileError):
    """The driver does not let this user read the GPU performance counters."""


@dataclass(frozen=True)
class Stall:
    reason: str
    cycles_per_instruction: float  # average warp cycles spent in this state per issued instruction


@dataclass(frozen=True)
class PipeUse:
    pipe: str
    percent_of_peak: float


@dataclass(frozen=True)
class HotSpot:
    """A SASS instruction where the kernel's warps were found stalled."""
    offset: int  # bytes from the kernel's first instruction
    sass: str
    share_pct: float  # of the kernel's warp-state samples
    reasons: list[tuple[str, int]]  # the largest sampled states there, with their sample counts


@dataclass(frozen=True)
class OpcodeShare:
    """The warp instructions a kernel executed of one SASS opcode: its
    mnemonic without modifiers (LDS.128 counts as LDS)."""
    opcode: str
    warp_instructions: int
    share_pct: float  # of all the kernel's executed warp instructions


@dataclass(frozen=True)
class SourceFacts:
    """What a kernel's block of the source page says."""
    hot_spots: list[HotSpot]
    instruction_mix: list[OpcodeShare]  # the most executed opcodes, largest first


@dataclass(frozen=True)
class KernelProfile:
    name: str
    duration_s: float
    memory_throughput_pct: float | None  # of peak, the busiest memory unit
    dram_throughput_pct: float | None
    sm_throughput_pct: float | None
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    registers_per_thread: int | None
    shared_memory_per_block_bytes: int | None  # static plus dynamic
    block_size: int | None
    grid_size: int | None
    dram_bytes: float | None
    stalls: list[Stall] = field(default_factory=list)  # the top ones, largest first
    warp_instructions: int | None = None
    issue_active_pct: float | None = None  # of cycles in which the schedulers issued, averaged over SMs
    # duration x issue share: the kernel's time if every scheduler issued on every cycle (at the clock ncu saw)
    full_issue_s: float | None = None
    pipes: list[PipeUse] = field(default_factory=list)  # the busiest, largest first
    hot_spots: list[HotSpot] = field(default_factory=list)  # the most sampled instructions, largest first
    # where the instructions go: a shared-memory atomic's compare-and-swap loop, scalar staging copies and
    # the like show as a large share of an opcode that the arithmetic does not need
    instruction_mix: list[OpcodeShare] = field(default_factory=list)


@dataclass(frozen=True)
class Profile:
    challenge: str
    solution: str
    device: str
    report_path: str  # the .ncu-rep, for ncu-ui
    csv_path: str  # ncu's raw page, as parsed
    source_csv_path: str  # ncu's source page (SASS with SourceCounters' samples), as parsed
    kernels: list[KernelProfile]
    bytes_moved: float | None  # the challenge's byte model at the performance size
    copy_bandwidth_bytes_per_s: float
    floor_s: float | None  # bytes_moved over the copy bandwidth

    @property
    def kernel_time_s(self) -> float:
        return sum(k.duration_s for k in self.kernels)

    @property
    def times_floor(self) -> float | None:
        return self.kernel_time_s / self.floor_s if self.floor_s else None


def find_ncu() -> Path:
    """ncu from PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, or beside nvcc."""
    candidates = [shutil.which("ncu")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(os.path.join(os.environ["CUDA_HOME"], "bin", "ncu"))
    candidates.append("/usr/local/cuda/bin/ncu")
    try:
        candidates.append(str(nvcc.find_nvcc().parent / "ncu"))
    except ToolNotFound:
        pass
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise ToolNotFound("ncu (NVIDIA Nsight Compute) not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin: install Nsight Compute")


def ncu_command(ncu: Path, report: Path, target: list[str], sections: tuple[str, ...] = SECTIONS) -> list[str]:
    """Profile only the range the target opens with cudaProfilerStart. Caches
    are flushed before each kernel, as the harness's timing flushes the L2;
    clocks are left to the GPU, as when the harness times (ncu would lock
    them to base otherwise)."""
    return [
        str(ncu), "--profile-from-start", "off", "--target-processes", "all",
        "--cache-control", "all", "--clock-control", "none",
        *(arg for s in sections for arg in ("--section", s)),
        "--metrics", ",".join(METRICS),
        "--export", str(report), "--force-overwrite",
        *target,
    ]


def import_command(ncu: Path, report: Path) -> list[str]:
    return [str(ncu), "--import", str(report), "--csv", "--page", "raw", "--print-units", "base"]


def source_command(ncu: Path, report: Path) -> list[str]:
    """The source page: per kernel, per SASS instruction, SourceCounters' samples."""
    return [str(ncu), "--import", str(report), "--csv", "--page", "source", "--print-source", "sass"]


def run_ncu(command: list[str], timeout_s: float, env: dict[str, str] | None = None) -> str:
    """Run ncu; its output (stdout and stderr) on success, else a ProfileError
    of one line: counters not permitted, ncu's own ==ERROR==, or a timeout."""
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True,  # its own process group: a timeout kills the target too
    )
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise ProfileError(f"ncu did not finish within {timeout_s:g} s") from None
    if PERMISSION_ERROR in output:
        raise CountersNotPermitted(
            f"{PERMISSION_ERROR}: this user may not read the GPU performance counters; run as root or with "
            "CAP_PERFMON, or load the nvidia module with NVreg_RestrictProfilingToAdminUsers=0"
        )
    if process.returncode != 0:
        errors = [line for line in output.splitlines() if "==ERROR==" in line]
        raise ProfileError(errors[0].strip() if errors else f"ncu exited with status {process.returncode}: {output.strip()[-300:]}")
    return output


def parse_raw_csv(text: str) -> list[KernelProfile]:
    """ncu's raw page as CSV: a header row of metric names, a row of units,
    then one row per profiled kernel. Lines before the header (==PROF== and
    warnings) are skipped; thousands separators and n/a are understood."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ProfileError("no kernels in ncu's output (did solve() launch any?)")
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, units, records = rows[0], rows[1], [r for r in rows[2:] if r]
    if not records:
        raise ProfileError("no kernels in ncu's output (did solve() launch any?)")
    unit_of = dict(zip(header, units))
    kernels = []
    for row in records:
        values = dict(zip(header, row))

        def number(metric: str) -> float | None:
            raw = values.get(metric, "").replace(",", "").strip()
            try:
                return float(raw) * UNIT_SCALES.get(unit_of.get(metric, ""), 1.0)
            except ValueError:
                return None  # absent, or n/a

        def whole(metric: str) -> int | None:
            value = number(metric)
            return int(round(value)) if value is not None else None

        stalls = [
            Stall(match.group(1), value)
            for metric in header
            if (match := STALL_METRIC.fullmatch(metric)) and match.group(1) not in NOT_STALLS and (value := number(metric)) is not None
        ]
        pipes = [
            PipeUse(match.group(1) or match.group(2), value)
            for metric in header
            if (match := PIPE_METRIC.fullmatch(metric)) and (value := number(metric)) is not None
        ]
        issue = number(ISSUE_METRIC)
        shared = [v for v in (whole("launch__shared_mem_per_block_static"), whole("launch__shared_mem_per_block_dynamic")) if v is not None]
        dram = [v for v in (number("dram__bytes_read.sum"), number("dram__bytes_write.sum")) if v is not None]
        duration = number("gpu__time_duration.sum")
        if duration is None:
            raise ProfileError(f"ncu's output has no duration for kernel {values.get('Kernel Name', '?')}")
        kernels.append(KernelProfile(
            name=values.get("Kernel Name", "?"),
            duration_s=duration,
            memory_throughput_pct=number("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
            dram_throughput_pct=number("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
            sm_throughput_pct=number("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            achieved_occupancy_pct=number("sm__warps_active.avg.pct_of_peak_sustained_active"),
            theoretical_occupancy_pct=number("sm__maximum_warps_per_active_cycle_pct"),
            registers_per_thread=whole("launch__registers_per_thread"),
            shared_memory_per_block_bytes=sum(shared) if shared else None,
            block_size=whole("launch__block_size"),
            grid_size=whole("launch__grid_size"),
            dram_bytes=sum(dram) if dram else None,
            stalls=sorted(stalls, key=lambda s: -s.cycles_per_instruction)[:TOP_STALLS],
            warp_instructions=whole(INSTRUCTIONS_METRIC),
            issue_active_pct=issue,
            full_issue_s=duration * issue / 100 if issue else None,
            pipes=sorted(pipes, key=lambda p: -p.percent_of_peak)[:TOP_PIPES],
        ))
    return kernels


# the casts ncu's source page writes into template arguments: spmv_warps<(bool)1>, state_kernel<(int)64, (int)64>
_TEMPLATE_CAST = re.compile(r"\((?:(?:unsigned|signed|long|short)\s+)*(?:bool|char|short|int|long|unsigned)\)")


def kernel_key(kernel: str) -> str:
    """One kernel's name as both pages can be matched on: the qualified name
    with its template arguments, without return type, parameters or the
    casts the source page adds ("spmv_warps<1>" on the raw page against
    "spmv_warps<(bool)1>"). Template arguments stay: two kernels of one
    program may differ only in name, as state_kernel<64, 64> and
    grad_kernel<64, 64> do, or only in arguments."""
    name = _TEMPLATE_CAST.sub("", kernel)
    name = name.replace("<unnamed>", "{anonymous}").replace("(anonymous namespace)", "{anonymous}")
    depth, end, start = 0, len(name), 0
    for i, ch in enumerate(name):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if depth == 0 and ch == "(":
            end = i  # the parameter list
            break
        if depth == 0 and ch == " ":
            start = i + 1  # after the return type
    return name[start:end].strip() or kernel


def parse_source_csv(text: str) -> dict[str, SourceFacts]:
    """ncu's source page as CSV: per kernel a "Kernel Name" line, a header,
    one row per SASS instruction. Returns, per kernel (by kernel_key), its
    most sampled instructions and its most executed opcodes; a kernel printed
    again keeps its first block (ncu 2025 on the H200 printed every kernel's
    block twice)."""
    blocks: list[tuple[str, list[str], list[list[str]]]] = []  # (kernel key, header, instruction rows)
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if row[0] == "Kernel Name" and len(row) > 1:
            blocks.append((kernel_key(row[1]), [], []))
        elif blocks and row[0] == "Address":
            blocks[-1][1][:] = row
        elif blocks and row[0].startswith("0x"):
            blocks[-1][2].append(row)
    facts: dict[str, SourceFacts] = {}
    for name, header, rows in blocks:
        column = {title: i for i, title in enumerate(header)}
        facts.setdefault(name, SourceFacts(hot_spots(column, rows), instruction_mix(column, rows)))
    return facts


def _count(row: list[str], column: dict[str, int], name: str) -> int:
    try:
        return int(row[column[name]].replace(",", "") or 0)
    except (ValueError, IndexError, KeyError):
        return 0


def hot_spots(column: dict[str, int], rows: list[list[str]]) -> list[HotSpot]:
    """One kernel's most sampled instructions, their share of its samples and
    the states most often sampled there."""
    if SAMPLES_COLUMN not in column or not rows:
        return []
    reasons = [name for name in column if SAMPLED_STALL.fullmatch(name) and name[len("stall_"):] not in NOT_STALLS]
    sampled = [(_count(row, column, SAMPLES_COLUMN), row) for row in rows]
    total = sum(samples for samples, _ in sampled)
    if total == 0:
        return []
    first = int(rows[0][0], 16)
    ranked = sorted(sampled, key=lambda pair: -pair[0])[:TOP_HOT_SPOTS]
    spots = []
    for samples, row in ranked:
        if not samples:
            break
        states = [(name[len("stall_"):], _count(row, column, name)) for name in reasons]
        spots.append(HotSpot(
            offset=int(row[0], 16) - first,
            sass=" ".join(row[1].split()),
            share_pct=100.0 * samples / total,
            reasons=sorted((s for s in states if s[1]), key=lambda state: -state[1])[:TOP_HOT_SPOT_REASONS],
        ))
    return spots


def instruction_mix(column: dict[str, int], rows: list[list[str]]) -> list[OpcodeShare]:
    """One kernel's executed warp instructions summed by opcode, the largest
    TOP_OPCODES with their share of all."""
    if INSTRUCTIONS_COLUMN not in column:
        return []
    executed: Counter[str] = Counter()
    for row in rows:
        words = row[1].split()
        if words and words[0].startswith("@"):  # a predicate guard, not the opcode
            words = words[1:]
        if words:
            executed[words[0].split(".")[0]] += _count(row, column, INSTRUCTIONS_COLUMN)
    total = sum(executed.values())
    if total == 0:
        return []
    return [OpcodeShare(op, n, 100.0 * n / total) for op, n in executed.most_common(TOP_OPCODES) if n]


def with_source_facts(kernels: list[KernelProfile], facts: dict[str, SourceFacts]) -> list[KernelProfile]:
    joined = []
    for k in kernels:
        f = facts.get(kernel_key(k.name))
        joined.append(replace(k, hot_spots=f.hot_spots, instruction_mix=f.instruction_mix) if f else k)
    return joined


def profile(
    challenge: Challenge,
    solution: Path,
    library: Path,
    root: Path,
    report: Path,
    gpu: int = 0,
    timeout_s: float = 600.0,
) -> Profile:
    """Profile the performance-size call of a built solution (a library, or
    a Python file); the report is written to `report` (.ncu-rep) and ncu's raw
    CSV beside it."""
    ncu = find_ncu()
    case = challenge.tests_of("performance")[0]
    data = case_data_path(challenge, case, 0)
    report = report.with_suffix(".ncu-rep") if report.suffix != ".ncu-rep" else report
    report.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harness-profile-") as scratch:
        job = Path(scratch) / "job.json"
        result_path = Path(scratch) / "result.json"
        job.write_text(json.dumps({
            "challenge": challenge.name, "root": str(root), "library": str(library), "test": case.name,
            "data": str(data), "result": str(result_path),
        }))
        target = [sys.executable, "-m", "harness.profile_target", str(job)]
        run_ncu(ncu_command(ncu, report, target), timeout_s, env=dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu)))
        if not result_path.exists():
            raise ProfileError("the profiled process ended without a result (crashed?)")
        result = json.loads(result_path.read_text())
    if not result["passed"]:
        raise ProfileError(f"the {result['phase']} call failed ({result['reason']}): {result['message']}")
    if not report.exists():
        raise ProfileError("ncu wrote no report: no kernel ran between cudaProfilerStart and cudaProfilerStop")
    raw = run_ncu(import_command(ncu, report), timeout_s)
    csv_path = report.with_suffix(".csv")
    csv_path.write_text(raw)
    source = run_ncu(source_command(ncu, report), timeout_s)
    source_path = report.with_suffix(".source.csv")
    source_path.write_text(source)
    bytes_moved = challenge.cost_of("bytes", case.sizes)
    bandwidth = result["copy_bandwidth_bytes_per_s"]
    return Profile(
        challenge=challenge.name, solution=str(solution), device=result["device"], report_path=str(report),
        csv_path=str(csv_path), source_csv_path=str(source_path), kernels=with_source_facts(parse_raw_csv(raw), parse_source_csv(source)), bytes_moved=bytes_moved,
        copy_bandwidth_bytes_per_s=bandwidth, floor_s=bytes_moved / bandwidth if bytes_moved else None,
    )
