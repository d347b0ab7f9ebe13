"""The versioned JSON report: what `--json` prints and `grade --report` writes.

One format for every command, documented by schema/report-v1.schema.json.
Raw timing samples are kept; summaries are added beside them. Reports of
shards merge into one (`harness merge`).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import platform
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .backends import Backend, gpu_snapshot
from .build import nvcc
from .challenge import Challenge
from .errors import HarnessError
from .results import REASONS, SolutionResult
from .stats import summarize

if TYPE_CHECKING:
    from .evaluation import Evaluation

SCHEMA = "harness-report"
SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("schema") / "report-v1.schema.json"


def challenge_record(challenge: Challenge) -> dict[str, Any]:
    return {
        "name": challenge.name,
        "hash": challenge.content_hash,
        "signature": challenge.signature(),
        "tolerance": asdict(challenge.tolerance),
        "output_tolerances": {name: asdict(t) for name, t in challenge.tolerance_overrides.items()},
        "hidden_seeds": challenge.hidden_seeds,  # then no seed is written: they would give the secret data away
        "tests": [
            {"name": t.name, "kind": t.kind, "sizes": t.sizes, "distribution": t.distribution, "seed": None if challenge.hidden_seeds else t.seed}
            for t in challenge.tests
        ],
    }


def solution_hash(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def report_of(evaluation: Evaluation, shard: tuple[int, int] | None = None) -> dict[str, Any]:
    """The report of an evaluation: every result, with its challenge's
    reference median (same GPU) for the speedups."""
    from .report import reference_median

    plan = evaluation.plan
    on_cuda = plan.backend == Backend.CUDA
    medians: dict[tuple[str, int], float | None] = {}
    for g in evaluation.graded:
        key = (g.item.challenge, g.gpu)
        if key not in medians:
            medians[key] = reference_median([h.result for h in evaluation.graded if (h.item.challenge, h.gpu) == key])
    records = [
        result_record(g.item.challenge, g.result, g.item.path, g.gpu if on_cuda else None, g.item.baseline, medians[g.item.challenge, g.gpu])
        for g in evaluation.graded
    ]
    nvcc_info = {"version": nvcc.toolchain().version, "flags": list(plan.nvcc_flags), "arch": plan.arch} if on_cuda else None
    env = environment(plan.backend, gpu_snapshot() if on_cuda else [], nvcc_info)
    return build(list(evaluation.challenges.values()), records, env, shard, interrupted=evaluation.interrupted_by is not None)


def result_record(
    challenge: str, result: SolutionResult, path: Path, gpu: int | None, baseline: bool, reference_median: float | None
) -> dict[str, Any]:
    record = result.to_dict()
    record.update(
        challenge=challenge,
        solution_sha256=solution_hash(path),
        gpu=gpu,
        baseline=baseline,
        reason_text=REASONS[result.reason] if result.reason else "",
    )
    timing = record["timing"]
    if timing is not None and timing["gpu_time_s"]:
        gpu_summary = summarize(timing["gpu_time_s"])
        timing["summary_gpu_time_s"] = asdict(gpu_summary)
        timing["summary_wall_time_s"] = asdict(summarize(timing["wall_time_s"]))
        timing["bytes_per_s"] = timing["bytes_moved"] / gpu_summary.median if timing["bytes_moved"] else None
        timing["speedup_vs_reference"] = reference_median / gpu_summary.median if reference_median else None
    return record


def environment(backend: str, gpus: list[dict[str, str]], nvcc: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "backend": backend,
        "gpus": gpus,
        "nvcc": nvcc,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def build(
    challenges: list[Challenge],
    records: list[dict[str, Any]],
    env: dict[str, Any],
    shard: tuple[int, int] | None = None,
    interrupted: bool = False,
) -> dict[str, Any]:
    return strict_json({
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "harness_version": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "shard": {"index": shard[0], "count": shard[1]} if shard else None,
        "environments": [env],
        "challenges": {c.name: challenge_record(c) for c in challenges},
        "passed": overall_passed(records),
        "interrupted": interrupted,
        "results": records,
    })


def overall_passed(records: list[dict[str, Any]]) -> bool:
    """Every solution passed, or was skipped because the user asked for it."""
    return all(r["passed"] or (r["reason"] == "skipped" and r.get("skip_requested")) for r in records)


def strict_json(value: Any) -> Any:
    """The report as strict JSON: inf and NaN (errors of NaN outputs) become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def load(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise HarnessError(f"cannot read report {path}: {error}") from None
    if document.get("schema") != SCHEMA or document.get("schema_version") != SCHEMA_VERSION:
        raise HarnessError(f"{path} is not a harness report of schema version {SCHEMA_VERSION}")
    return document


def merge(documents: list[dict[str, Any]], names: list[str] | None = None) -> dict[str, Any]:
    """One report from the reports of shards (`names`: their files, for the
    messages). Every solution must appear once; a challenge's baseline, timed
    in every shard, is kept per shard."""
    if not documents:
        raise HarnessError("nothing to merge")
    names = names or [f"report {n + 1}" for n in range(len(documents))]
    by_shard: dict[tuple[int, int], str] = {}
    for name, document in zip(names, documents):
        if document.get("shard"):
            shard = (document["shard"]["index"], document["shard"]["count"])
            if shard in by_shard:
                raise HarnessError(f"{by_shard[shard]} and {name} are both shard {shard[0]}/{shard[1]}: give each shard once")
            by_shard[shard] = name
    seen: dict[str, str] = {}
    results = []
    challenges: dict[str, Any] = {}
    for name, document in zip(names, documents):
        for challenge, record in document["challenges"].items():
            if challenge in challenges and challenges[challenge]["hash"] != record["hash"]:
                raise HarnessError(f"the reports graded different versions of challenge {challenge}")
            challenges[challenge] = record
        for record in document["results"]:
            key = f"{record['challenge']}/{record['solution']}"
            if not record["baseline"]:
                if key in seen:
                    raise HarnessError(f"{key} appears in both {seen[key]} and {name}")
                seen[key] = name
            results.append(record)
    shards = sorted(index for index, _ in by_shard)
    counts = {count for _, count in by_shard}
    if counts and (len(counts) > 1 or shards != list(range(1, counts.pop() + 1))):
        raise HarnessError(f"the reports are shards {shards}, not a complete set")
    return {
        **documents[0],
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "shard": None,
        "environments": [env for d in documents for env in d["environments"]],
        "challenges": challenges,
        "passed": overall_passed(results),
        "interrupted": any(d.get("interrupted") for d in documents),
        "results": results,
    }
