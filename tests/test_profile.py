"""`harness profile`: the ncu command line, the parsing of ncu's raw page
(--csv --page raw --print-units base), one-line errors (ncu missing,
counters not permitted, ncu failing or hanging), and the printed summary.

profile_data/ncu-raw-constructed.csv was written by hand in the layout ncu
prints (a header of metric names, a row of units, a row per kernel, values
with thousands separators, n/a) with the documented metric names this module
requests; its numbers are made up, and it covers two kernels and n/a.
profile_data/ncu-raw-h200-ssm-reference.csv is ncu's raw page of
`harness profile ssm_selective_scan reference/ssm_selective_scan.cu` on an
H200 (ncu of CUDA 13.0, driver 580.159.04), with ncu's short unit names;
profile_data/ncu-raw-h200-mamba3-lookback.csv the same for the tensor-core
kernel now in reference/mamba3_scan.cu, as it was before its split was made
by truncation (then solutions/mamba3_scan/chunk_parallel_lookback.cu).
profile_data/ncu-source-h200-spmv-trimmed.csv is ncu's source page (--page
source --print-source sass) of a warp-tile spmv_csr candidate on an H200
(2026-12-01), trimmed to each kernel's first 12 and 12 most sampled
instructions, with the repeated block ncu prints for each kernel kept. The
gpu-marked test profiles the reference for real."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import profile
from harness.cli import cli
from harness.errors import ExitCode, ToolNotFound

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).with_name("profile_data") / "ncu-raw-constructed.csv"
H200_RUN = Path(__file__).with_name("profile_data") / "ncu-raw-h200-ssm-reference.csv"
H200_SOURCE_PAGE = Path(__file__).with_name("profile_data") / "ncu-source-h200-spmv-trimmed.csv"
H200_TENSOR_CORES = Path(__file__).with_name("profile_data") / "ncu-raw-h200-mamba3-lookback.csv"


def test_a_real_h200_raw_page_is_read_with_its_units():
    (scan,) = profile.parse_raw_csv(H200_RUN.read_text())
    assert scan.name.startswith("void <unnamed>::scan<16, 64, 1>(const float *")
    assert scan.duration_s == pytest.approx(87.232e-6)  # "87,232" in "ns"
    assert (scan.memory_throughput_pct, scan.dram_throughput_pct, scan.sm_throughput_pct) == (68.32, 20.14, 42.09)
    assert (scan.achieved_occupancy_pct, scan.theoretical_occupancy_pct) == (6.26, 18.75)
    assert (scan.registers_per_thread, scan.shared_memory_per_block_bytes, scan.block_size, scan.grid_size) == (158, 43520, 128, 128)
    assert [s.reason for s in scan.stalls] == ["short_scoreboard", "wait", "dispatch_stall"]
    assert scan.warp_instructions == 37_870_080 and scan.issue_active_pct == 42.09
    assert scan.full_issue_s == pytest.approx(87.232e-6 * 0.4209)  # the time at one instruction per scheduler per cycle
    assert [(p.pipe, p.percent_of_peak) for p in scan.pipes] == [("xu", 37.31), ("lsu", 31.50)]  # MUFU, then loads


def test_the_instruction_count_says_when_a_kernel_cannot_reach_a_time():
    """The tensor-core kernel: 109.5 M warp instructions issued in 46.7 % of
    its cycles, so at full issue it would still take 115 us at the clock ncu
    ran it (an 80 us target needs fewer instructions, not only more issue);
    the tensor pipe is not among the busiest, the integer ALU is."""
    (kernel,) = profile.parse_raw_csv(H200_TENSOR_CORES.read_text())
    assert kernel.name.startswith("void <unnamed>::lookback_kernel<64, 64>(")
    assert kernel.warp_instructions == 109_468_717 and kernel.issue_active_pct == 46.66
    assert kernel.full_issue_s == pytest.approx(247.488e-6 * 0.4666)
    assert [(p.pipe, p.percent_of_peak) for p in kernel.pipes] == [("alu", 38.18), ("fmaheavy", 24.41)]


def test_the_raw_page_becomes_a_per_kernel_summary():
    scan, fixup = profile.parse_raw_csv(FIXTURE.read_text())
    assert scan.name.startswith("selective_scan_chunks(") and fixup.name == "carry_fixup(float *, int, int)"
    assert scan.duration_s == pytest.approx(91.328e-6) and fixup.duration_s == pytest.approx(4.512e-6)
    assert scan.memory_throughput_pct == 27.41 and scan.dram_throughput_pct == 24.87 and scan.sm_throughput_pct == 71.36
    assert scan.achieved_occupancy_pct == 45.12 and scan.theoretical_occupancy_pct == 50
    assert (scan.registers_per_thread, scan.shared_memory_per_block_bytes, scan.block_size, scan.grid_size) == (64, 8448, 256, 1024)
    assert scan.dram_bytes == 69_412_352 + 33_619_968
    assert [(s.reason, s.cycles_per_instruction) for s in scan.stalls] == [
        ("math_pipe_throttle", 4.87), ("long_scoreboard", 2.91), ("short_scoreboard", 1.46)
    ]
    assert fixup.dram_throughput_pct is None  # n/a
    assert (scan.warp_instructions, scan.issue_active_pct, scan.full_issue_s, scan.pipes) == (None, None, None, [])  # not on this page
    assert fixup.shared_memory_per_block_bytes == 2048  # static plus dynamic
    assert [s.reason for s in fixup.stalls] == ["long_scoreboard", "barrier", "wait"]
    assert all(s.reason != "selected" for k in (scan, fixup) for s in k.stalls)  # issuing is not a stall


def test_the_source_page_gives_each_kernel_its_most_sampled_instructions():
    spots = profile.parse_source_csv(H200_SOURCE_PAGE.read_text())
    assert list(spots) == ["index_rows", "spmv_warps<1>"]  # by kernel_key; the repeated blocks once
    first, second, third = spots["spmv_warps<1>"].hot_spots
    # the kept rows' samples: 7,527 in all, 2,305 + 3 + ... of them at +0x840 (sorted: largest first)
    assert first.offset == 0x840 and first.sass == "LOP3.LUT R7, R2, 0x7fffffff, RZ, 0xc0, !PT"
    assert first.share_pct == pytest.approx(30.6, abs=0.05) and first.reasons[0] == ("long_sb", 2305)
    assert second.share_pct >= third.share_pct and third.sass == "STS [R26], R34"
    assert len(spots["index_rows"].hot_spots) == profile.TOP_HOT_SPOTS


def raw_page_kernel(name: str) -> profile.KernelProfile:
    """A raw-page kernel of that name and no measurements: what the source page's facts join onto."""
    return profile.KernelProfile(
        name=name, duration_s=1e-4, memory_throughput_pct=None, dram_throughput_pct=None, sm_throughput_pct=None,
        achieved_occupancy_pct=None, theoretical_occupancy_pct=None, registers_per_thread=None,
        shared_memory_per_block_bytes=None, block_size=None, grid_size=None, dram_bytes=None)


def test_hot_spots_join_the_raw_page_kernels_by_name_without_the_source_pages_casts():
    """The raw page says spmv_warps<1>, the source page spmv_warps<(bool)1>."""
    raw, other = raw_page_kernel("void spmv_warps<1>(const int *, const int *)"), raw_page_kernel("carry_fixup(float *)")
    joined = profile.with_source_facts([raw, other], profile.parse_source_csv(H200_SOURCE_PAGE.read_text()))
    assert joined[0].hot_spots[0].offset == 0x840 and joined[1].hot_spots == []


def test_kernels_that_differ_only_in_name_keep_their_own_hot_spots():
    """Recorded on the H200: mamba3_scan_backward's two kernels in one anonymous
    namespace with the same template arguments. Keyed by the word before the
    first parenthesis ("void", since the source page writes (int)64), both
    kernels were given the first one's hot spots."""
    page = (Path(__file__).with_name("profile_data") / "ncu-source-h200-mamba3-backward-trimmed.csv").read_text()
    spots = profile.parse_source_csv(page)
    assert sorted(spots) == ["{anonymous}::grad_kernel<64, 64>", "{anonymous}::state_kernel<64, 64>"]
    raw = raw_page_kernel("void <unnamed>::state_kernel<64, 64>(<unnamed>::Problem, int)")
    grad = raw_page_kernel("void <unnamed>::grad_kernel<64, 64>(<unnamed>::Problem, int)")
    state_spots, grad_spots = (k.hot_spots for k in profile.with_source_facts([raw, grad], spots))
    assert state_spots[0].sass == "UMOV UR4, 0x400" and state_spots[0].reasons[0] == ("barrier", 1727)
    assert grad_spots[0].sass == "BSSY B0, 0x7fc9e77c1610" and grad_spots[0].reasons[0] == ("barrier", 7722)


def test_a_source_page_without_samples_gives_no_hot_spots():
    page = '"Kernel Name","k()",\n"Address","Source","Warp Stall Sampling (All Samples)","stall_long_sb"\n"0x10","  EXIT","0","0"\n'
    assert profile.parse_source_csv(page) == {"k": profile.SourceFacts(hot_spots=[], instruction_mix=[])}


def test_the_source_page_sums_each_kernels_executed_instructions_by_opcode():
    """A whole kernel's block as recorded on the H200 (mamba3_scan_backward's
    head_sums_kernel, 264 SASS instructions, 2,400 warp instructions run)."""
    page = (Path(__file__).with_name("profile_data") / "ncu-source-h200-mamba3-head-sums.csv").read_text()
    mix = profile.parse_source_csv(page)["{anonymous}::head_sums_kernel"].instruction_mix
    assert [(o.opcode, o.warp_instructions) for o in mix] == [
        ("FADD", 352), ("ISETP", 224), ("IMAD", 224), ("LDG", 192), ("BRA", 176), ("IADD3", 160)
    ]
    assert mix[0].share_pct == pytest.approx(100 * 352 / 2400)


def test_an_opcode_counts_its_guarded_and_modified_forms():
    header = '"Address","Source","Instructions Executed"\n'
    page = ('"Kernel Name","k()"\n' + header + '"0x10","@!P0 BRA 0x40","5"\n"0x20","  BRA 0x10","3"\n'
            '"0x30","LDS.128 R4, [R1]","2"\n"0x40","LDS R2, [R3]","2"\n"0x50","EXIT","0"\n')
    mix = profile.parse_source_csv(page)["k"].instruction_mix
    assert [(o.opcode, o.warp_instructions, round(o.share_pct, 1)) for o in mix] == [("BRA", 8, 66.7), ("LDS", 4, 33.3)]


def test_units_other_than_base_are_scaled():
    lines = FIXTURE.read_text().splitlines()
    lines[2] = lines[2].replace('"nsecond"', '"usecond"')
    lines[3] = lines[3].replace('"91,328"', '"91.328"')
    scan = profile.parse_raw_csv("\n".join(lines))[0]
    assert scan.duration_s == pytest.approx(91.328e-6)


@pytest.mark.parametrize("text", ["==PROF== Disconnected\n", FIXTURE.read_text().split("\n")[0] + "\n" + "\n".join(FIXTURE.read_text().splitlines()[1:3])])
def test_output_without_kernels_is_a_clear_error(text):
    with pytest.raises(profile.ProfileError, match="no kernels"):
        profile.parse_raw_csv(text)


def test_the_command_profiles_only_the_marked_range_with_the_chosen_sections(tmp_path):
    command = profile.ncu_command(Path("/opt/ncu"), tmp_path / "r.ncu-rep", ["python", "-m", "harness.profile_target", "job.json"])
    assert command[0] == "/opt/ncu" and command[-4:] == ["python", "-m", "harness.profile_target", "job.json"]
    joined = " ".join(command)
    assert "--profile-from-start off" in joined and "--cache-control all" in joined and "--clock-control none" in joined
    assert [command[i + 1] for i, a in enumerate(command) if a == "--section"] == list(profile.SECTIONS)
    assert command[command.index("--export") + 1] == str(tmp_path / "r.ncu-rep")
    metrics = command[command.index("--metrics") + 1].split(",")
    assert "gpu__time_duration.sum" in metrics and any(m.startswith("regex:smsp__average_warps_issue_stalled_") for m in metrics)
    assert profile.import_command(Path("/opt/ncu"), tmp_path / "r.ncu-rep")[1:] == [
        "--import", str(tmp_path / "r.ncu-rep"), "--csv", "--page", "raw", "--print-units", "base"
    ]


def fake_ncu(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ncu"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return script


def test_counters_not_permitted_is_one_clear_line(tmp_path):
    ncu = fake_ncu(tmp_path, 'echo "==PROF== Connected to process 1"\n'
                             'echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters on the target device 0." >&2\n'
                             "exit 1")
    with pytest.raises(profile.CountersNotPermitted) as raised:
        profile.run_ncu([str(ncu)], timeout_s=30)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("ERR_NVGPUCTRPERM") and "CAP_PERFMON" in message


def test_an_ncu_failure_reports_its_error_line(tmp_path):
    ncu = fake_ncu(tmp_path, 'echo "==ERROR== The application returned an error code (1)."\nexit 1')
    with pytest.raises(profile.ProfileError, match=r"^==ERROR== The application returned an error code \(1\)\.$"):
        profile.run_ncu([str(ncu)], timeout_s=30)


def test_a_hanging_ncu_is_killed_with_its_children(tmp_path):
    marker = tmp_path / "child.pid"
    ncu = fake_ncu(tmp_path, f"sleep 60 &\necho $! > {marker}\nwait")
    with pytest.raises(profile.ProfileError, match="did not finish within 1 s"):
        profile.run_ncu([str(ncu)], timeout_s=1)
    stat = Path(f"/proc/{int(marker.read_text())}/stat")

    def dead() -> bool:  # gone, or dead and not yet reaped
        try:
            return stat.read_text().split(")")[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    deadline = time.monotonic() + 5  # SIGKILL is delivered asynchronously: on a loaded machine it takes a moment
    while not dead() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert dead()


def ncu_installed() -> bool:
    try:
        profile.find_ncu()
        return True
    except ToolNotFound:
        return False


def test_missing_ncu_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    if ncu_installed():
        pytest.skip("ncu is installed at a fixed location here")
    result = CliRunner().invoke(cli, ["profile", "ssm_selective_scan", str(REPO / "reference" / "ssm_selective_scan.cu")])
    assert result.exit_code == ExitCode.USAGE
    assert "ncu (NVIDIA Nsight Compute) not found" in result.output


def test_profile_without_a_gpu_says_so(tmp_path, monkeypatch):
    fake_ncu(tmp_path / "bin", "exit 0")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("harness.backends.visible_gpus", lambda: [])
    result = CliRunner().invoke(cli, ["profile", "ssm_selective_scan", str(REPO / "reference" / "ssm_selective_scan.cu")])
    assert result.exit_code == ExitCode.USAGE and "profile needs a visible NVIDIA GPU" in result.output


PYTHON_SOLUTION = REPO / "solutions" / "ssm_selective_scan" / "cupy_warp_per_channel.py"  # nothing to build


def profile_from_fixture(monkeypatch, tmp_path, fixture: Path, source_page: Path | None = None) -> dict:
    """`harness profile` with ncu's run replaced by a recorded raw page (and
    a source page whose spmv_warps facts go to the raw page's first kernel);
    what the command passed to the profiler is returned."""
    fake_ncu(tmp_path / "bin", "exit 0")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr("harness.backends.visible_gpus", lambda: ["a GPU"])
    seen = {}

    def fake_profile(challenge, solution, library, root, report, gpu, timeout_s):
        seen.update(solution=solution, library=library, report=report)
        kernels = profile.parse_raw_csv(fixture.read_text())
        if source_page:
            facts = profile.parse_source_csv(source_page.read_text())["spmv_warps<1>"]
            kernels[0] = dataclasses.replace(kernels[0], hot_spots=facts.hot_spots, instruction_mix=facts.instruction_mix)
        return profile.Profile(
            challenge=challenge.name, solution=str(solution), device="NVIDIA H200", report_path=str(report),
            csv_path=str(report.with_suffix(".csv")), source_csv_path=str(report.with_suffix(".source.csv")), kernels=kernels,
            bytes_moved=102.8e6, copy_bandwidth_bytes_per_s=4.0e12, floor_s=102.8e6 / 4.0e12,
        )

    monkeypatch.setattr(profile, "profile", fake_profile)
    monkeypatch.chdir(tmp_path)
    return seen


def test_the_summary_names_each_kernel_and_the_distance_from_the_floor(tmp_path, monkeypatch):
    """The printing path, with the profiling itself replaced by the fixture."""
    seen = profile_from_fixture(monkeypatch, tmp_path, FIXTURE)
    python_solution = PYTHON_SOLUTION
    table = CliRunner().invoke(cli, ["profile", "ssm_selective_scan", str(python_solution)])
    assert table.exit_code == 0, table.output
    assert seen["report"] == tmp_path / "cupy_warp_per_channel.ncu-rep" and seen["library"] == python_solution
    assert "selective_scan_chunks" in table.output and "carry_fixup" in table.output
    assert "math_pipe_throttle 4.87" in table.output and "45.1% of 50.0%" in table.output
    assert "3.73x the floor" in table.output  # (91.328 + 4.512) us over 102.8 MB / 4 TB/s = 25.7 us
    assert "cupy_warp_per_channel.ncu-rep (open with ncu-ui)" in table.output
    document = json.loads(CliRunner().invoke(cli, ["profile", "ssm_selective_scan", str(python_solution), "--json"]).stdout)
    assert document["times_floor"] == pytest.approx((91.328e-6 + 4.512e-6) / (102.8e6 / 4.0e12))
    assert document["kernels"][0]["stalls"][0] == {"reason": "math_pipe_throttle", "cycles_per_instruction": 4.87}


def test_the_summary_lists_where_warps_waited(tmp_path, monkeypatch):
    profile_from_fixture(monkeypatch, tmp_path, FIXTURE, H200_SOURCE_PAGE)
    result = CliRunner().invoke(cli, ["profile", "ssm_selective_scan", str(PYTHON_SOLUTION)], terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "selective_scan_chunks: where its warps were sampled waiting" in result.output
    assert "30.6%  +0x0840  LOP3.LUT R7, R2, 0x7fffffff, RZ, 0xc0, !PT  (long_sb 2305, math 3)" in result.output
    assert "cupy_warp_per_channel.source.csv" in result.output
    assert "executed warp instructions by opcode: LOP3 17.4%, FADD 13.0%, LDC 8.7%" in result.output
    kernel = json.loads(CliRunner().invoke(cli, ["profile", "ssm_selective_scan", str(PYTHON_SOLUTION), "--json"]).stdout)["kernels"][0]
    assert kernel["hot_spots"][0]["offset"] == 0x840 and kernel["hot_spots"][0]["reasons"][0] == ["long_sb", 2305]
    assert kernel["instruction_mix"][0] == {"opcode": "LOP3", "warp_instructions": 524288, "share_pct": pytest.approx(400 / 23)}


def test_the_summary_gives_the_instructions_and_the_time_at_full_issue(tmp_path, monkeypatch):
    profile_from_fixture(monkeypatch, tmp_path, H200_TENSOR_CORES)
    result = CliRunner().invoke(cli, ["profile", "mamba3_scan", str(PYTHON_SOLUTION)], terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "lookback_kernel<64, 64>: 109.47 M warp instructions, issued in 46.7% of cycles" in result.output
    assert "115 us at one per scheduler per cycle; busiest pipes alu 38.2%, fmaheavy 24.4%" in result.output
    kernel = json.loads(CliRunner().invoke(cli, ["profile", "mamba3_scan", str(PYTHON_SOLUTION), "--json"]).stdout)["kernels"][0]
    assert kernel["warp_instructions"] == 109_468_717 and kernel["pipes"][0] == {"pipe": "alu", "percent_of_peak": 38.18}


@pytest.mark.gpu
def test_profiling_the_reference_on_a_gpu(tmp_path):
    if not ncu_installed():
        pytest.skip("ncu (Nsight Compute) is not installed")
    report = tmp_path / "reference.ncu-rep"
    result = CliRunner().invoke(cli, ["profile", "ssm_selective_scan", str(REPO / "reference" / "ssm_selective_scan.cu"), "-o", str(report), "--json"])
    if result.exit_code == ExitCode.USAGE and "ERR_NVGPUCTRPERM" in result.output:
        pytest.skip("this user may not read the GPU performance counters")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert report.exists() and Path(document["csv_path"]).exists()
    assert document["kernels"] and all(k["duration_s"] > 0 for k in document["kernels"])
    assert all(k["registers_per_thread"] and k["stalls"] for k in document["kernels"])
    assert all(k["warp_instructions"] and 0 < k["full_issue_s"] <= k["duration_s"] and k["pipes"] for k in document["kernels"])
    assert all(k["hot_spots"] and 0 < k["hot_spots"][0]["share_pct"] <= 100 for k in document["kernels"])
    # the source page's counts by opcode cover part of the raw page's total
    assert all(k["instruction_mix"] and sum(o["warp_instructions"] for o in k["instruction_mix"]) <= k["warp_instructions"]
               for k in document["kernels"])
    assert report.with_suffix(".source.csv").exists()
    # The reference runs in about 90 us on an H200 against a floor of about 25 us (README).
    assert 1.0 < document["times_floor"] < 50
