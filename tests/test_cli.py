"""The command line: help everywhere, listing and showing challenges, starters,
and clear one-line errors with the documented exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.errors import ExitCode

REPO = Path(__file__).resolve().parents[1]
COMMANDS = sorted(cli.commands)


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)])
def test_every_command_has_help(runner, command):
    result = runner.invoke(cli, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output


def test_list_shows_the_challenges_and_their_performance_size(runner):
    result = runner.invoke(cli, ["list"])
    assert result.exit_code == 0
    assert "ssm_selective_scan" in result.output and "seq_len=4096" in result.output
    listed = json.loads(runner.invoke(cli, ["list", "--json"]).output)
    assert any(entry["name"] == "ssm_selective_scan" for entry in listed)


def test_show_renders_the_spec_and_json_has_the_tests(runner):
    assert runner.invoke(cli, ["show", "ssm_selective_scan"]).exit_code == 0
    document = json.loads(runner.invoke(cli, ["show", "ssm_selective_scan", "--json"]).output)
    assert document["signature"].startswith('extern "C" void solve(const float* u')
    assert document["tests"]["performance"]["sizes"] == {"batch": 4, "seq_len": 4096, "d_model": 512, "d_state": 16}
    assert len(document["tests"]["functional"]) >= 12


def test_unknown_challenge_is_a_usage_error(runner):
    result = runner.invoke(cli, ["show", "nope"])
    assert result.exit_code == ExitCode.USAGE and "no challenge named 'nope'" in result.output


def test_init_writes_the_starter_and_refuses_to_overwrite(runner, tmp_path):
    target = tmp_path / "mine.cu"
    assert runner.invoke(cli, ["init", "ssm_selective_scan", str(target)]).exit_code == 0
    assert target.read_text() == (REPO / "challenges" / "ssm_selective_scan" / "starter.cu").read_text()
    target.write_text("my work")
    refused = runner.invoke(cli, ["init", "ssm_selective_scan", str(target)])
    assert refused.exit_code == ExitCode.USAGE and "--force" in refused.output
    assert target.read_text() == "my work"
    assert runner.invoke(cli, ["init", "ssm_selective_scan", str(target), "--force"]).exit_code == 0


def test_cuda_backend_without_a_gpu_says_what_needs_one(runner, monkeypatch):
    monkeypatch.setattr("harness.backends.visible_gpus", lambda: [])
    result = runner.invoke(cli, ["run", "ssm_selective_scan", "--backend", "cuda"])
    assert result.exit_code == ExitCode.USAGE
    assert "needs a visible NVIDIA GPU" in result.output


def test_missing_solution_file_is_a_usage_error(runner):
    result = runner.invoke(cli, ["check", "ssm_selective_scan", "no/such/file.cu"])
    assert result.exit_code == ExitCode.USAGE and "no such solution file" in result.output


def test_sanitize_with_bench_is_a_usage_error(runner):
    result = runner.invoke(cli, ["bench", "ssm_selective_scan", "--sanitize", "--backend", "emu"])
    assert result.exit_code == ExitCode.USAGE
    assert "--sanitize runs the correctness tests" in result.output


def test_list_shows_difficulty_and_topics_and_filters(runner):
    listed = json.loads(runner.invoke(cli, ["list", "--json"]).output)
    ssm = next(entry for entry in listed if entry["name"] == "ssm_selective_scan")
    assert ssm["difficulty"] == "hard" and "scan" in ssm["topics"]
    hard = json.loads(runner.invoke(cli, ["list", "--json", "--difficulty", "hard"]).output)
    assert hard and all(entry["difficulty"] == "hard" for entry in hard)
    none = json.loads(runner.invoke(cli, ["list", "--json", "--topic", "no-such-topic"]).output)
    assert none == []
    table = runner.invoke(cli, ["list", "--topic", "scan"]).output
    assert "ssm_selective_scan" in table and "hard" in table
