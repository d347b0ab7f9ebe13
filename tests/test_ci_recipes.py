"""The CI recipes under ci/: every harness command they run is a real
command whose options parse (checked against `harness <cmd> --help` and
click's own parser); the GitHub Actions workflow wires shards, merge, the
comparison with main and the artifacts together; and the Slurm scripts run
end to end on emu under stub sbatch, srun and make that run the jobs here."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from harness import document
from harness.cli import cli
from harness.grading import Shard
from harness.html_report import external_references
from harness.results import SolutionResult

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / "ci" / "github" / "grade.yml"
SLURM = REPO / "ci" / "slurm"
CHALLENGE = "ssm_selective_scan"
NAIVE = REPO / "solutions" / CHALLENGE / "naive.cu"

# Sample values for what the recipes leave to the CI engine or the shell.
SAMPLE_VALUES = {
    "matrix.shard": "1", "strategy.job-total": "4",
    "k": "1", "n": "4", "GRADE_OUT": "out", "BASE_REPORT": "base.json",
}


def run_scripts_of_workflow() -> list[str]:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    return [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]


def slurm_scripts() -> list[str]:
    return [path.read_text() for path in sorted(SLURM.iterdir())]


def substitute(text: str) -> str:
    """GitHub expressions and shell variables replaced by sample values;
    one without a sample value is an error of the test, not a silent pass."""

    def value(name: str) -> str:
        assert name in SAMPLE_VALUES, f"no sample value for {name}"
        return SAMPLE_VALUES[name]

    text = re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: value(m.group(1)), text)
    text = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: m.group(2), text)  # ${NAME:-default}
    return re.sub(r"\$\{?(\w+)\}?", lambda m: value(m.group(1)), text)


def harness_commands(script: str) -> list[list[str]]:
    """The argument lists of every harness invocation in a shell script,
    with sample values substituted."""
    commands = []
    text = script.replace("\\\n", " ")
    for line in text.splitlines():
        if line.lstrip().startswith("#") or "harness" not in line:
            continue
        lexer = shlex.shlex(substitute(line), posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = list(lexer)
        for i, token in enumerate(tokens):
            if token == "harness" or token.endswith("/harness"):
                args = []
                for argument in tokens[i + 1:]:
                    if argument in ("||", "|", "&&", ";", ">", "<"):
                        break
                    args.append(argument)
                commands.append(args)
    return commands


ALL_COMMANDS = [(where, args) for where, scripts in (("github", run_scripts_of_workflow()), ("slurm", slurm_scripts())) for script in scripts for args in harness_commands(script)]


def test_the_recipes_run_grade_merge_report_and_compare():
    for where in ("github", "slurm"):
        used = {args[0] for w, args in ALL_COMMANDS if w == where}
        assert {"grade", "merge", "report", "compare"} <= used, where


@pytest.mark.parametrize("where,args", ALL_COMMANDS, ids=[f"{w}-{a[0]}-{i}" for i, (w, a) in enumerate(ALL_COMMANDS)])
def test_every_harness_command_is_real_and_its_options_parse(where, args, tmp_path, monkeypatch):
    name = args[0]
    assert name in cli.commands, f"{where}: no harness command {name!r}"
    shown = CliRunner().invoke(cli, [name, "--help"])
    assert shown.exit_code == 0
    for option in (a.split("=")[0] for a in args if a.startswith("--")):
        assert re.search(rf"(^|[\s,]){re.escape(option)}\b", shown.output, re.M), f"{where}: {name} has no option {option}"
    # click's own parser, with the files the command expects present: types, choices and counts are checked
    monkeypatch.chdir(tmp_path)
    for argument in args[1:]:
        if argument.endswith(".json") and not argument.startswith("--"):
            Path(argument).parent.mkdir(parents=True, exist_ok=True)
            Path(argument).write_text("{}")
    cli.commands[name].make_context(name, args[1:])
    if "--shard" in args:
        Shard.parse(args[args.index("--shard") + 1])


def test_the_workflow_grades_shards_on_gpu_runners_and_reports_once():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    grade, report = workflow["jobs"]["grade"], workflow["jobs"]["report"]
    shards = grade["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and grade["strategy"]["fail-fast"] is False
    assert "gpu" in grade["runs-on"]
    grade_runs = " ".join(s.get("run", "") for s in grade["steps"])
    assert "--shard ${{ matrix.shard }}/${{ strategy.job-total }}" in grade_runs
    uploads = [s for s in grade["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert [u["with"]["name"] for u in uploads] == ["shard-${{ matrix.shard }}"]

    assert report["needs"] == "grade"
    download = next(s for s in report["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"]["pattern"] == "shard-*" and download["with"]["path"] == "shards"
    runs = [s.get("run", "") for s in report["steps"]]
    assert any("merge shards/shard-*.json --output report.json --junit junit.xml" in r for r in runs)
    assert any("report report.json --html report.html" in r for r in runs)
    assert any("compare base/report.json report.json" in r for r in runs)
    published = next(s for s in report["steps"] if s.get("uses", "").startswith("actions/upload-artifact@") and s["with"]["name"] == "report")
    assert set(published["with"]["path"].split()) == {"report.json", "report.html", "junit.xml"}
    fetch = next(r for r in runs if "gh run download" in r)
    assert "--name report --dir base" in fetch  # the artifact this workflow publishes on main
    for step in grade["steps"] + report["steps"]:
        if "uses" in step:
            assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", step["uses"]), step["uses"]


STUB_SBATCH = """#!{python}
# sbatch for tests: runs the job (each array task in turn) at once, here.
import json, os, subprocess, sys
options, script = {{}}, None
for i, arg in enumerate(sys.argv[1:]):
    if not arg.startswith("--"):
        script = arg
        break
    key, _, value = arg[2:].partition("=")
    options[key] = value
log = os.environ["STUB_LOG"]
job = str(1000 + sum(1 for _ in open(log)) if os.path.exists(log) else 1000)
first, _, last = options.get("array", "").partition("-")
tasks = list(range(int(first), int(last) + 1)) if first else [None]
codes = []
for task in tasks:
    env = dict(os.environ, SLURM_JOB_ID=job, SLURM_SUBMIT_DIR=os.getcwd())
    for item in options.get("export", "ALL").split(",")[1:]:
        name, _, value = item.partition("=")
        env[name] = value
    if task is not None:
        env.update(SLURM_ARRAY_JOB_ID=job, SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT=str(len(tasks)))
    output = options["output"].replace("%a", str(task)).replace("%A", job).replace("%j", job)
    with open(output, "w") as sink:
        codes.append(subprocess.run(["bash", script], env=env, stdout=sink, stderr=subprocess.STDOUT).returncode)
with open(log, "a") as sink:
    sink.write(json.dumps({{"job": job, "options": options, "script": script, "exit_codes": codes}}) + "\\n")
print(job + ";cluster")
"""
STUB_RECORDER = """#!/bin/sh
# {name} for tests: logs its arguments{then}
echo "{name} $*" >> "$STUB_LOG.calls"
{run}
"""


@pytest.fixture
def stub_slurm(tmp_path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text(STUB_SBATCH.format(python=sys.executable))
    (bin_dir / "srun").write_text(STUB_RECORDER.format(name="srun", then=" and runs the command", run='exec "$@"'))
    (bin_dir / "make").write_text(STUB_RECORDER.format(name="make", then=" (the test suite already installed .venv)", run="true"))
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "sbatch.jsonl"))
    return tmp_path


@pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")
@pytest.mark.skipif(not (REPO / ".venv" / "bin" / "harness").exists(), reason="the scripts run .venv/bin/harness: make install first")
def test_the_slurm_recipe_grades_shards_merges_reports_and_compares(stub_slurm):
    corpus = stub_slurm / "graded" / CHALLENGE
    corpus.mkdir(parents=True)
    shutil.copy(NAIVE, corpus / "good.cu")
    (corpus / "wrong.cu").write_text(NAIVE.read_text().replace("+skip[d]*u", "+2*skip[d]*u"))
    # A base report in which both passed: wrong.cu now failing is a regression.
    base = document.build(
        [], [document.result_record(CHALLENGE, SolutionResult(solution=str(corpus / n), backend="emu", passed=True), REPO, None, False, None) for n in ("good.cu", "wrong.cu")],
        document.environment("emu", [], None),
    )
    (stub_slurm / "base.json").write_text(json.dumps(base))
    out = stub_slurm / "out"
    env = dict(os.environ, GRADE_PATHS=str(corpus), GRADE_OUT=str(out), HARNESS_BACKEND="emu", BASE_REPORT=str(stub_slurm / "base.json"))
    submitted = subprocess.run(["bash", str(SLURM / "grade.sh"), "2"], env=env, capture_output=True, text=True, timeout=600)
    assert submitted.returncode == 0, submitted.stderr
    assert f"results in {out}" in submitted.stdout

    jobs = [json.loads(line) for line in (stub_slurm / "sbatch.jsonl").read_text().splitlines()]
    shards, report = jobs
    assert shards["options"]["array"] == "1-2" and shards["script"].endswith("grade-shard.sbatch")
    assert shards["exit_codes"] == [0, 0]  # a failing solution is a result, not a failed task
    assert report["options"]["dependency"] == f"afterany:{shards['job']}"
    assert report["exit_codes"] == [1], (out / "report.log").read_text()  # wrong.cu fails, and is a regression
    calls = (stub_slurm / "sbatch.jsonl.calls").read_text().splitlines()
    assert calls[0] == "make install"
    assert [c.split()[:3] for c in calls[1:]] == [["srun", ".venv/bin/harness", "grade"]] * 2

    merged = json.loads((out / "report.json").read_text())
    assert sorted(Path(r["solution"]).name for r in merged["results"]) == ["good.cu", "wrong.cu"]
    assert {Path(r["solution"]).name: r["passed"] for r in merged["results"]} == {"good.cu": True, "wrong.cu": False}
    assert [json.loads((out / f"shard-{k}.json").read_text())["shard"] for k in (1, 2)] == [{"index": 1, "count": 2}, {"index": 2, "count": 2}]
    assert len(ET.parse(out / "junit.xml").getroot().findall(".//testcase")) > 2
    page = (out / "report.html").read_text()
    assert "good.cu" in page and "wrong_output" in page and external_references(page) == []
    assert "now failing" in (out / "compare.txt").read_text()
