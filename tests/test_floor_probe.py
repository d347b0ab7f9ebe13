"""reference/ssm_selective_scan_floor.cu: the command its header and the notes
give must build (its numbers are measured on a GPU; this only keeps it buildable)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NVCC = shutil.which("nvcc") or (shutil.which("/usr/local/cuda/bin/nvcc"))


@pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
def test_floor_probe_builds_without_warnings(tmp_path):
    source = REPO / "reference" / "ssm_selective_scan_floor.cu"
    assert "nvcc -O3 -arch=sm_90 reference/ssm_selective_scan_floor.cu" in source.read_text()
    result = subprocess.run(
        [NVCC, "-O3", "-arch=sm_90", "-Werror", "all-warnings", str(source), "-o", str(tmp_path / "floor")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "floor").is_file()
