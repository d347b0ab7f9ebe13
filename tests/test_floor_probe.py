"""The measuring programs in reference/ (ssm_selective_scan_floor.cu and the
phase probes *_phases.cu): the command each header and the notes give must
build (their numbers are measured on a GPU; this only keeps them buildable)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.build import nvcc
from harness.errors import ToolNotFound

REPO = Path(__file__).resolve().parents[1]
# the floor program and every phase probe: a new *_phases.cu is checked without being listed here
PROBES = ["ssm_selective_scan_floor.cu"] + sorted(p.name for p in (REPO / "reference").glob("*_phases.cu"))


@pytest.mark.parametrize("name", PROBES)
def test_probe_builds_without_warnings(tmp_path, name):
    try:
        compiler = nvcc.find_nvcc()
    except ToolNotFound as missing:
        pytest.skip(str(missing))
    source = REPO / "reference" / name
    assert f"nvcc -O3 -arch=sm_90 reference/{name}" in source.read_text()
    command = [str(compiler), "-O3", "-arch=sm_90", "-Werror", "all-warnings", str(source), "-o", str(tmp_path / "probe")]
    succeeded, log = nvcc.run_compiler(command, source)
    assert succeeded, log
    assert (tmp_path / "probe").is_file()
