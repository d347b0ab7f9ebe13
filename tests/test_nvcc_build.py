"""Building with nvcc: command line, diagnostics, cache and symbol checks.
The compile tests need nvcc (no GPU) and skip without it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from harness.build import nvcc
from harness.errors import CompileError, MissingSymbol

REPO = Path(__file__).resolve().parents[1]
needs_nvcc = pytest.mark.skipif(
    not any(shutil.which(p) for p in ("nvcc", "/usr/local/cuda/bin/nvcc")), reason="nvcc is not installed"
)


def test_compile_command_builds_a_shared_library_for_the_arch():
    command = nvcc.compile_command(Path("/cuda/nvcc"), [Path("a.cu"), Path("shim.cu")], Path("out.so"), "sm_90", ("-O3",))
    assert command[:2] == ["/cuda/nvcc", "-O3"]
    assert "-arch=sm_90" in command and "-shared" in command
    assert command[command.index("-Xcompiler") + 1] == "-fPIC"
    assert command[-2:] == ["a.cu", "shim.cu"] and command[command.index("-o") + 1] == "out.so"


def test_an_architecture_specific_target_is_built_for_itself_alone():
    """sm_90a (wgmma): nvcc 13's -arch=sm_90a also emits compute_90 PTX, which
    ptxas rejects for wgmma; the gencode form targets sm_90a only."""
    command = nvcc.compile_command(Path("/cuda/nvcc"), [Path("a.cu")], Path("out.so"), "sm_90a", ("-O3",))
    assert "-gencode=arch=compute_90a,code=sm_90a" in command
    assert not any(part.startswith("-arch") for part in command)


@needs_nvcc
def test_wgmma_compiles_for_sm_90a(tmp_path: Path):
    source = tmp_path / "w.cu"
    source.write_text('__global__ void k() { asm volatile("wgmma.fence.sync.aligned;"); }\n')
    command = [str(nvcc.find_nvcc()), "-c", *nvcc.arch_flags("sm_90a"), "-o", str(tmp_path / "w.o"), str(source)]
    assert subprocess.run(command, capture_output=True, check=False).returncode == 0


def test_diagnostics_are_file_line_message():
    log = (
        'sol.cu(12): error: identifier "x" is undefined\n'
        "sol.cu:30:5: error: expected ';' before '}' token\n"
        "1 error detected in the compilation of \"sol.cu\".\n"
    )
    assert nvcc.parse_diagnostics(log) == [
        'sol.cu:12: error: identifier "x" is undefined',
        "sol.cu:30: error: expected ';' before '}' token",
    ]


def test_build_key_changes_with_every_input():
    base = nvcc.build_key(b"src", ("-O3",), "sm_90", "13.0.88")
    assert base == nvcc.build_key(b"src", ("-O3",), "sm_90", "13.0.88")
    assert len({base, nvcc.build_key(b"src2", ("-O3",), "sm_90", "13.0.88"), nvcc.build_key(b"src", ("-O2",), "sm_90", "13.0.88"),
                nvcc.build_key(b"src", ("-O3",), "sm_80", "13.0.88"), nvcc.build_key(b"src", ("-O3",), "sm_90", "12.8.0")}) == 5


@needs_nvcc
def test_starter_builds_and_is_cached(tmp_path):
    starter = REPO / "challenges" / "ssm_selective_scan" / "starter.cu"
    library = nvcc.build_library(starter, tmp_path, "sm_90")
    assert library.is_file()
    mtime = library.stat().st_mtime_ns
    assert nvcc.build_library(starter, tmp_path, "sm_90") == library and library.stat().st_mtime_ns == mtime


@needs_nvcc
def test_compile_error_points_at_the_solution_line(tmp_path):
    broken = tmp_path / "broken.cu"
    broken.write_text('extern "C" void solve(float* y, int n) {\n    y[0] = undefined_name;\n}\n')
    with pytest.raises(CompileError) as caught:
        nvcc.build_library(broken, tmp_path, "sm_90")
    assert f"{broken}:2: error" in caught.value.diagnostics[0]
    assert "undefined_name" in str(caught.value)


@needs_nvcc
def test_mangled_solve_is_a_missing_symbol_with_a_hint(tmp_path):
    mangled = tmp_path / "mangled.cu"
    mangled.write_text("void solve(float* y, int n) { y[0] = n; }\n")
    with pytest.raises(MissingSymbol, match='extern "C"'):
        nvcc.build_library(mangled, tmp_path, "sm_90")


def test_a_solution_is_built_for_the_devices_own_target_with_its_specific_instructions():
    """An H200 (9.0) builds for sm_90a, so that wgmma code needs no flag; a GPU
    without an "a" target keeps its plain one."""
    from harness.backends import GpuInfo

    def gpu(capability: str) -> GpuInfo:
        return GpuInfo(index=0, name="GPU", uuid="GPU-0", compute_capability=capability, driver="580")

    assert gpu("9.0").arch == "sm_90a" and gpu("10.0").arch == "sm_100a"
    assert gpu("8.0").arch == "sm_80" and gpu("8.9").arch == "sm_89"
