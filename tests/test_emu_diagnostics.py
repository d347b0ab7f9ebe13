"""emu backend: what it reports about broken solutions (deadlocks, races,
out-of-bounds accesses, unsupported features, compile errors)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.backends.emu import build_emu_library, find_nvcc, sanitizer_env
from harness.errors import CompileError, UnsupportedFeature

PROGRAMS = Path(__file__).parent / "emu_programs"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="emu needs g++")

# Runs solve(float32 or int32 array of n values[, n]) in a child process, the
# way the harness does, and prints {"error": ..., "out": [...]} as JSON.
CHILD = textwrap.dedent("""
    import ctypes, json, sys
    import numpy as np
    lib = ctypes.CDLL(sys.argv[1])
    lib.harness_emu_error.restype = ctypes.c_char_p
    dtype, n, pass_n, schedule = sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", int(sys.argv[5])
    lib.harness_emu_set_schedule(schedule, 1)
    rng = np.random.default_rng(0)
    x = rng.integers(1, 100, n).astype(dtype)
    y = np.zeros(n, dtype)
    P = lambda a: a.ctypes.data_as(ctypes.c_void_p)
    args = [P(x)] + ([P(y), ctypes.c_int(n)] if pass_n else [])
    lib.solve(*args)
    err = lib.harness_emu_error()
    print(json.dumps({"error": err.decode() if err else None, "out": (y if pass_n else x).tolist()}))
""")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("emu-cache")


def run_child(library: Path, dtype: str, n: int, pass_n: bool, schedule: int = 0,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", CHILD, str(library), dtype, str(n), "1" if pass_n else "0", str(schedule)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def line_containing(name: str, needle: str) -> int:
    lines = (PROGRAMS / name).read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_barrier_deadlock_is_reported_with_block_and_counts(cache: Path) -> None:
    lib = build_emu_library(PROGRAMS / "divergent_barrier.cu", cache)
    run = run_child(lib, "float32", 256, pass_n=False)
    assert run.returncode == 0, run.stderr
    error = json.loads(run.stdout)["error"]
    inner = line_containing("divergent_barrier.cu", "s[t] += s[t + 64];") + 1
    assert error == (
        f"barrier deadlock in kernel broken, block (0,0,0): 64 of 128 threads wait at "
        f"__syncthreads (divergent_barrier.cu:{inner}), 64 wait at __syncthreads (divergent_barrier.cu:{inner + 2})"
    )


def test_warp_collective_misuse_is_reported(cache: Path) -> None:
    lib = build_emu_library(PROGRAMS / "warp_misuse.cu", cache)
    run = run_child(lib, "int32", 32, pass_n=False)
    assert run.returncode == 0, run.stderr
    error = json.loads(run.stdout)["error"]
    line = line_containing("warp_misuse.cu", "__shfl_down_sync")
    assert error.startswith("deadlock in kernel broken, block (0,0,0): 16 of 32 threads wait at "
                            f"__shfl_down_sync (warp_misuse.cu:{line}, mask 0xffffffff), 16 wait at __syncthreads")


def test_missing_barrier_shows_up_as_schedule_dependence(cache: Path) -> None:
    lib = build_emu_library(PROGRAMS / "missing_sync.cu", cache)
    outs = []
    for schedule in (0, 1, 2):
        run = run_child(lib, "float32", 1000, pass_n=True, schedule=schedule)
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        assert result["error"] is None
        outs.append(result["out"])
    assert outs[0] != outs[1]


def test_sanitizer_reports_out_of_bounds_write_at_cu_line(cache: Path) -> None:
    try:
        env = sanitizer_env()
    except Exception as exc:  # no libasan installed
        pytest.skip(str(exc))
    lib = build_emu_library(PROGRAMS / "out_of_bounds.cu", cache, sanitize=True)
    run = run_child(lib, "float32", 1000, pass_n=True, env=env)
    assert run.returncode != 0
    line = line_containing("out_of_bounds.cu", "out[i] = ")
    assert "heap-buffer-overflow" in run.stderr
    assert f"out_of_bounds.cu:{line}" in run.stderr


def test_sanitized_build_runs_correct_code(cache: Path) -> None:
    try:
        env = sanitizer_env()
    except Exception as exc:
        pytest.skip(str(exc))
    lib = build_emu_library(PROGRAMS / "missing_sync.cu", cache, sanitize=True)
    run = run_child(lib, "float32", 1000, pass_n=True, env=env)
    assert run.returncode == 0, run.stderr[-3000:]


def test_a_cluster_launch_is_refused_with_its_line(cache: Path) -> None:
    lib = build_emu_library(PROGRAMS / "cluster_launch.cu", cache)
    run = run_child(lib, "float32", 64, pass_n=False)
    assert run.returncode == 0, run.stderr
    line = line_containing("cluster_launch.cu", "cudaLaunchKernelEx")
    assert json.loads(run.stdout)["error"] == (
        "not supported on emu: thread block clusters (cudaLaunchAttributeClusterDimension) "
        f"at {PROGRAMS / 'cluster_launch.cu'}:{line}")


def test_inline_ptx_is_unsupported(cache: Path) -> None:
    with pytest.raises(UnsupportedFeature) as info:
        build_emu_library(PROGRAMS / "inline_ptx.cu", cache)
    line = line_containing("inline_ptx.cu", "asm volatile")
    assert str(info.value) == f"not supported on emu: inline PTX assembly (asm): mov.u32 at {PROGRAMS / 'inline_ptx.cu'}:{line}"


@pytest.mark.parametrize("use_nvcc", [True, False])
def test_compile_error_points_at_cu_line(cache: Path, use_nvcc: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if use_nvcc and find_nvcc() is None:
        pytest.skip("nvcc not installed")
    monkeypatch.setenv("HARNESS_EMU_SKIP_NVCC", "0" if use_nvcc else "1")
    with pytest.raises(CompileError) as info:
        build_emu_library(PROGRAMS / "compile_error.cu", cache)
    assert info.value.diagnostics
    first = info.value.diagnostics[0]
    assert first.startswith(f"{PROGRAMS / 'compile_error.cu'}:6: error:"), first
    assert "undeclared_value" in first
