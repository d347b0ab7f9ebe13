"""Grading for CI: planning and sharding, the versioned report (validated
against its schema), JUnit, GitHub annotations, merging shards and the
noise-aware regression gate. Runs real gradings on the emu backend."""

from __future__ import annotations

import json
import time
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import document
from harness.cli import cli
from harness.compare import classify, compare_reports, regressions
from harness.errors import ChallengeError, ExitCode, HarnessError
from harness.github import annotations
from harness import evaluation
from harness.evaluation import evaluate
from harness.grading import Item, Shard, collect, shard_of, with_baselines
from harness.plan import Plan
from harness.results import SolutionResult

REPO = Path(__file__).resolve().parents[1]
NAIVE = REPO / "solutions" / "ssm_selective_scan" / "naive.cu"
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """A folder named after the challenge with a good, a wrong and a broken solution."""
    folder = tmp_path_factory.mktemp("graded") / "ssm_selective_scan"
    folder.mkdir()
    shutil.copy(NAIVE, folder / "good.cu")
    (folder / "wrong.cu").write_text(NAIVE.read_text().replace("+skip[d]*u", "+2*skip[d]*u"))
    (folder / "broken.cu").write_text(NAIVE.read_text().replace("float yt=0;", "float yt=0"))
    return folder


@pytest.fixture(scope="module")
def graded(corpus, tmp_path_factory):
    """One real grading on emu, with every output format."""
    out = tmp_path_factory.mktemp("out")
    result = CliRunner().invoke(
        cli, ["grade", str(corpus), "--backend", "emu", "--report", str(out / "r.json"), "--junit", str(out / "j.xml")]
    )
    return result, json.loads((out / "r.json").read_text()), (out / "j.xml").read_text()


def test_collect_finds_solutions_and_names_their_challenge(corpus):
    items = collect([corpus], REPO)
    assert [i.path.name for i in items] == ["broken.cu", "good.cu", "wrong.cu"]
    assert {i.challenge for i in items} == {"ssm_selective_scan"}


def test_collect_refuses_a_folder_that_names_no_challenge(tmp_path):
    (tmp_path / "mystery").mkdir()
    shutil.copy(NAIVE, tmp_path / "mystery" / "x.cu")
    with pytest.raises(ChallengeError, match="--challenge"):
        collect([tmp_path / "mystery"], REPO)
    assert collect([tmp_path / "mystery"], REPO, "ssm_selective_scan")[0].challenge == "ssm_selective_scan"


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_shards_cover_every_solution_exactly_once(count):
    items = [Item.of("c", Path(f"s{i:02d}.cu"), REPO) for i in range(11)]
    shards = [shard_of(items, Shard(k, count)) for k in range(1, count + 1)]
    flat = [item for shard in shards for item in shard]
    assert sorted(flat, key=lambda i: i.key) == sorted(items, key=lambda i: i.key)
    assert shards == [shard_of(list(reversed(items)), Shard(k, count)) for k in range(1, count + 1)]  # deterministic


@pytest.mark.parametrize("text", ["0/2", "3/2", "a/b", "2"])
def test_bad_shard_specs_are_refused(text):
    with pytest.raises(HarnessError):
        Shard.parse(text)


def test_baselines_add_the_reference_once():
    items = [Item.of("ssm_selective_scan", NAIVE, REPO)]
    extended = with_baselines(items, REPO)
    assert extended[-1] == Item.of("ssm_selective_scan", REPO / "reference" / "ssm_selective_scan.cu", REPO, baseline=True)
    assert extended[-1].label == "reference/ssm_selective_scan.cu"
    assert with_baselines(extended[-1:], REPO) == extended[-1:]  # already listed: not added again


def test_gpus_take_solutions_from_one_queue_and_each_times_its_own_baseline(monkeypatch):
    """Two GPUs: a slow solution keeps one busy while the other grades the rest;
    every solution is graded once; each GPU times the reference after its share."""
    seconds = {"slow.cu": 0.5, "a.cu": 0.01, "b.cu": 0.01, "c.cu": 0.01, "ssm_selective_scan.cu": 0.01}

    def fake_run(challenge, path, label, built, plan, root, jobs, gpu, on_test):
        time.sleep(seconds[path.name])
        return SolutionResult(solution=path.name, backend="cuda", passed=True)

    monkeypatch.setattr(evaluation, "run_built", fake_run)
    monkeypatch.setattr(evaluation, "prepare_jobs", lambda challenge, plan: None)
    monkeypatch.setattr(evaluation, "build_all", lambda challenge, entries, *args: {path: path for path, _ in entries})
    items = [Item.of("ssm_selective_scan", Path(n), REPO) for n in ("slow.cu", "a.cu", "b.cu", "c.cu")]
    graded = evaluate(items, Plan(gpus=(0, 1), baselines=True), REPO).graded
    solutions = [(g.item.path.name, g.gpu) for g in graded if not g.item.baseline]
    assert sorted(name for name, _ in solutions) == ["a.cu", "b.cu", "c.cu", "slow.cu"]
    slow_gpu = dict(solutions)["slow.cu"]
    assert all(gpu != slow_gpu for name, gpu in solutions if name != "slow.cu")
    assert sorted(g.gpu for g in graded if g.item.baseline) == [0, 1]


@needs_gxx
def test_grading_goes_on_past_failures_and_exits_one(graded):
    result, report, _ = graded
    assert result.exit_code == ExitCode.FAILED
    verdicts = {Path(r["solution"]).name: r["reason"] for r in report["results"]}
    assert verdicts == {"broken.cu": "compile_error", "good.cu": None, "wrong.cu": "wrong_output"}


@needs_gxx
def test_report_validates_against_its_schema(graded):
    jsonschema = pytest.importorskip("jsonschema")
    _, report, _ = graded
    jsonschema.validate(report, json.loads(document.SCHEMA_PATH.read_text()))
    good = next(r for r in report["results"] if r["solution"].endswith("good.cu"))
    assert len(good["solution_sha256"]) == 64 and report["environments"][0]["backend"] == "emu"
    seeds = {t["name"]: t["seed"] for t in report["challenges"]["ssm_selective_scan"]["tests"]}
    assert seeds["odd_sizes"] is not None


@needs_gxx
def test_junit_parses_back_with_a_case_per_solution_and_test(graded):
    _, report, junit = graded
    suite = ET.fromstring(junit).find("testsuite")
    assert suite.get("name") == "ssm_selective_scan"
    cases = suite.findall("testcase")
    tests_per_solution = len(report["challenges"]["ssm_selective_scan"]["tests"]) - 1  # no timing on emu
    assert len(cases) == 2 * tests_per_solution + 1  # broken.cu has one "build" case
    failed = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("failures")) == len(failed)
    build = next(c for c in cases if c.get("name") == "build")
    assert build.find("failure").get("type") == "compile_error"


@needs_gxx
def test_github_annotations_point_at_the_compile_error_line(graded):
    _, report, _ = graded
    lines = annotations(report)
    broken = next(l for l in lines if "broken.cu" in l)
    line = next(i for i, l in enumerate(NAIVE.read_text().splitlines(), 1) if "float yt=0;" in l)
    assert broken.startswith("::error file=") and f"line={line}," in broken
    assert len(lines) == 2


@needs_gxx
def test_shard_reports_merge_into_the_whole(corpus, tmp_path):
    runner = CliRunner()
    for k in (1, 2):
        runner.invoke(cli, ["grade", str(corpus), "--backend", "emu", "--shard", f"{k}/2", "--report", str(tmp_path / f"{k}.json")])
    parts = [json.loads((tmp_path / f"{k}.json").read_text()) for k in (1, 2)]
    assert [p["shard"] for p in parts] == [{"index": 1, "count": 2}, {"index": 2, "count": 2}]
    merged = runner.invoke(cli, ["merge", str(tmp_path / "1.json"), str(tmp_path / "2.json"), "-o", str(tmp_path / "all.json")])
    assert merged.exit_code == ExitCode.FAILED  # the merged set contains failures
    solutions = sorted(Path(r["solution"]).name for r in json.loads((tmp_path / "all.json").read_text())["results"])
    assert solutions == ["broken.cu", "good.cu", "wrong.cu"]
    with pytest.raises(HarnessError, match="1.json and 1-again.json are both shard 1/2"):
        document.merge([parts[0], parts[0]], ["1.json", "1-again.json"])
    unsharded = [{**p, "shard": None} for p in parts]
    with pytest.raises(HarnessError, match="appears in both a.json and b.json"):
        document.merge([unsharded[0], unsharded[0]], ["a.json", "b.json"])
    with pytest.raises(HarnessError, match="not a complete set"):
        document.merge([parts[0]])


def test_compare_rule_on_synthetic_samples():
    steady = [100e-6 * (1 + 0.01 * (i % 3 - 1)) for i in range(30)]
    assert classify(steady, steady)[0] == "same"
    assert classify(steady, [t * 0.8 for t in steady])[0] == "faster"
    assert classify(steady, [t * 1.3 for t in steady])[0] == "slower"
    noisy = [100e-6 * (1 + 0.1 * (i % 5 - 2)) for i in range(30)]  # 80..120 us: cv ~ 14%
    assert classify(steady, [t * 1.05 for t in noisy])[0] == "same"  # a shift inside the noise


def fake_report(samples: dict[str, list[float]], failing: tuple[str, ...] = ()) -> dict:
    results = [
        {"challenge": "c", "solution": name, "baseline": False, "passed": name not in failing, "timing": {"gpu_time_s": s}}
        for name, s in samples.items()
    ]
    return {"results": results}


def test_regressions_are_slowdowns_beyond_threshold_and_new_failures():
    base = fake_report({"a.cu": [1.0, 1.01, 0.99], "b.cu": [1.0, 1.01, 0.99], "c.cu": [1.0, 1.0, 1.0]})
    new = fake_report({"a.cu": [1.2, 1.21, 1.19], "b.cu": [1.03, 1.04, 1.02], "c.cu": [1.0, 1.0, 1.0]}, failing=("c.cu",))
    changes = {c.key: c for c in compare_reports(base, new)}
    assert changes["c/a.cu"].status == "slower" and changes["c/b.cu"].status == "slower"
    assert changes["c/c.cu"].status == "now failing"
    assert {c.key for c in regressions(list(changes.values()), threshold=0.05)} == {"c/a.cu", "c/c.cu"}


def test_compare_command_exits_one_on_a_regression(tmp_path):
    def write(name: str, scale: float) -> Path:
        doc = {"schema": "harness-report", "schema_version": 1, **fake_report({"a.cu": [scale * x for x in (1.0, 1.01, 0.99)]})}
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path

    runner = CliRunner()
    assert runner.invoke(cli, ["compare", str(write("base.json", 1.0)), str(write("same.json", 1.0))]).exit_code == ExitCode.OK
    slower = runner.invoke(cli, ["compare", str(write("base.json", 1.0)), str(write("slow.json", 1.5))])
    assert slower.exit_code == ExitCode.FAILED and "slower" in slower.output


def test_reports_are_strict_json_even_for_nan_outputs():
    record = {"comparisons": [{"max_abs_error": float("inf"), "rel_l2_error": float("nan"), "worst_ratio": None, "total": 4}]}
    text = json.dumps(document.strict_json(record), allow_nan=False)  # raises on inf or NaN
    assert json.loads(text)["comparisons"][0] == {"max_abs_error": None, "rel_l2_error": None, "worst_ratio": None, "total": 4}


def test_the_schema_lists_every_reason_and_stop_reason():
    from harness.results import Reason
    from harness.timing.loop import StopReason

    schema = json.loads(document.SCHEMA_PATH.read_text())
    result = schema["properties"]["results"]["items"]["properties"]
    assert set(result["reason"]["enum"]) == {r.value for r in Reason} | {None}
    assert set(result["tests"]["items"]["properties"]["reason"]["enum"]) == {r.value for r in Reason} | {None}
    assert set(result["timing"]["properties"]["stop_reason"]["enum"]) == {s.value for s in StopReason}
