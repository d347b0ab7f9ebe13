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
from typing import Any

from . import __version__
from .challenge import Challenge
from .errors import HarnessError
from .results import REASONS, SolutionResult
from .stats import summarize

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
        "tests": [
            {"name": t.name, "kind": t.kind, "sizes": t.sizes, "distribution": t.distribution, "seed": t.seed}
            for t in challenge.tests
        ],
    }


def solution_hash(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def result_record(
    challenge: str, result: SolutionResult, root: Path, gpu: int | None, baseline: bool, reference_median: float | None
) -> dict[str, Any]:
    record = result.to_dict()
    record.update(
        challenge=challenge,
        solution_sha256=solution_hash(root / result.solution),
        gpu=gpu,
        baseline=baseline,
        reason_text=REASONS.get(result.reason or "", "") if result.reason else "",
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
) -> dict[str, Any]:
    return strict_json({
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "harness_version": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "shard": {"index": shard[0], "count": shard[1]} if shard else None,
        "environments": [env],
        "challenges": {c.name: challenge_record(c) for c in challenges},
        "passed": all(r["passed"] for r in records),
        "results": records,
    })


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


def merge(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """One report from the reports of shards. Every solution must appear once;
    a challenge's baseline, timed in every shard, is kept per shard."""
    if not documents:
        raise HarnessError("nothing to merge")
    seen: dict[str, int] = {}
    results = []
    challenges: dict[str, Any] = {}
    for number, document in enumerate(documents):
        for name, record in document["challenges"].items():
            if name in challenges and challenges[name]["hash"] != record["hash"]:
                raise HarnessError(f"the reports graded different versions of challenge {name}")
            challenges[name] = record
        for record in document["results"]:
            key = f"{record['challenge']}/{record['solution']}"
            if not record["baseline"]:
                if key in seen:
                    raise HarnessError(f"{key} appears in more than one report (shards {seen[key] + 1} and {number + 1})")
                seen[key] = number
            results.append(record)
    shards = sorted(d["shard"]["index"] for d in documents if d.get("shard"))
    counts = {d["shard"]["count"] for d in documents if d.get("shard")}
    if counts and (len(counts) > 1 or shards != list(range(1, counts.pop() + 1))):
        raise HarnessError(f"the reports are shards {shards}, not a complete set")
    return {
        **documents[0],
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "shard": None,
        "environments": [env for d in documents for env in d["environments"]],
        "challenges": challenges,
        "passed": all(r["passed"] for r in results),
        "results": results,
    }
