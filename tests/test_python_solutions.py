"""Python solutions on the CPU: discovery, signature checks, array kinds,
starters and missing packages. Running them needs a GPU (tests/test_gpu_python_solutions.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.backends.python_solution import MissingPackage, array_kind, check_python_signature, exception_reason, load_python_solution
from harness.challenge import load_challenge
from harness.cli import cli
from harness.errors import CompileError, ExitCode, MissingSymbol, SignatureMismatch
from harness.discovery import discover_solutions
from harness.starters import python_starter

REPO = Path(__file__).resolve().parents[1]
PARAMS = "u, delta, A, B, C, skip, y, batch, seq_len, d_model, d_state"


@pytest.fixture(scope="module")
def challenge():
    return load_challenge("ssm_selective_scan", REPO)


def test_python_solutions_are_discovered(challenge):
    found = {p.name for p in discover_solutions(challenge, REPO)}
    assert {"cupy_warp_per_channel.py", "triton_block_of_channels.py"} <= found


def test_repository_python_solutions_match_the_signature(challenge):
    for path in (REPO / "solutions" / "ssm_selective_scan").glob("*.py"):
        check_python_signature(path.read_text(), challenge)


@pytest.mark.parametrize(
    "source, error, message",
    [
        (f"def solve({PARAMS.replace(', d_state', '')}): pass", SignatureMismatch, "takes 10 parameters"),
        (f"def solve({PARAMS.replace('delta', 'dt')}): pass", SignatureMismatch, "parameter 2 is `dt`"),
        ("def solver(): pass", MissingSymbol, "def solve"),
        (f"def solve({PARAMS}):\n    return (", CompileError, "line 2"),
        (f"ARRAYS = 'jax'\ndef solve({PARAMS}): pass", SignatureMismatch, "ARRAYS must be one of"),
    ],
)
def test_signature_problems_are_named(challenge, source, error, message):
    with pytest.raises(error, match=message):
        check_python_signature(source, challenge)


@pytest.mark.parametrize(
    "source, kind",
    [
        ("import cupy as cp", "cupy"),
        ("import triton\nimport triton.language as tl", "torch"),
        ("from torch import nn", "torch"),
        ("import torch\nARRAYS = 'cupy'", "cupy"),
        ("ARRAYS = 'torch'", "torch"),
    ],
)
def test_array_kind(source, kind):
    assert array_kind(ast.parse(source)) == kind


@pytest.mark.parametrize("language", ["cupy", "triton", "torch"])
def test_starters_have_the_signature(challenge, language):
    source = python_starter(challenge, language)
    check_python_signature(source, challenge)
    assert array_kind(ast.parse(source)) == ("cupy" if language == "cupy" else "torch")


def test_a_missing_package_says_what_to_install(challenge, tmp_path):
    path = tmp_path / "needs_package.py"
    path.write_text(f"import surely_not_installed_pkg\n\ndef solve({PARAMS}):\n    pass\n")
    with pytest.raises(MissingPackage, match="pip install surely_not_installed_pkg"):
        load_python_solution(path, challenge)


def test_exception_reasons():
    class CompileException(Exception):
        pass

    class CUDARuntimeError(Exception):
        pass

    assert exception_reason(CompileException()) == "compile_error"
    assert exception_reason(CUDARuntimeError()) == "cuda_error"
    assert exception_reason(ValueError()) == "exception"


def test_init_writes_a_python_starter_by_suffix(tmp_path):
    target = tmp_path / "mine.py"
    assert CliRunner().invoke(cli, ["init", "ssm_selective_scan", str(target)]).exit_code == 0
    assert "cupy.RawModule" in target.read_text() or "RawModule" in target.read_text()
    wrong = CliRunner().invoke(cli, ["init", "ssm_selective_scan", str(tmp_path / "x.cu"), "--lang", "triton"])
    assert wrong.exit_code == ExitCode.USAGE and "needs a .py file" in wrong.output


def test_emu_skips_python_solutions_and_says_so(monkeypatch):
    monkeypatch.setattr("harness.backends.visible_gpus", lambda: [])
    solution = str(REPO / "solutions" / "ssm_selective_scan" / "cupy_warp_per_channel.py")
    only_python = CliRunner().invoke(cli, ["check", "ssm_selective_scan", solution])
    assert only_python.exit_code == ExitCode.FAILED  # not run, and not asked to skip it
    assert "skipped" in only_python.output and "--skip-python" in only_python.output
    asked = CliRunner().invoke(cli, ["check", "ssm_selective_scan", solution, "--skip-python"])
    assert asked.exit_code == ExitCode.OK and "skipped (--skip-python)" in asked.output
