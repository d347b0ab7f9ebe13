"""Grading many solutions across challenges: the plan (which solution belongs
to which challenge, which shard runs what) and its execution, one worker
thread per GPU, each taking the next solution from a shared queue."""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from .challenge import Challenge, challenge_names, load_challenge
from .errors import ChallengeError, HarnessError
from .results import SolutionResult
from .runner import (
    SOLUTION_SUFFIXES,
    Options,
    PreparedData,
    build_all,
    effective_options,
    label_of,
    prepare_data,
    reference_solution,
    run_built,
)


@dataclass(frozen=True)
class Item:
    """One solution to grade, and whether it is only there as the baseline."""

    challenge: str
    path: Path
    baseline: bool = False

    @property
    def key(self) -> str:
        return f"{self.challenge}/{self.path.as_posix()}"


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            raise HarnessError(f"--shard takes K/N, e.g. 2/4, not {text!r}") from None
        if not 1 <= index <= count:
            raise HarnessError(f"--shard {text}: K must be between 1 and N")
        return cls(index, count)


def collect(paths: list[Path], root: Path, challenge: str | None = None) -> list[Item]:
    """Solution files under `paths` (files or folders, searched recursively).
    A solution's challenge is its parent folder's name unless `challenge` is given."""
    known = set(challenge_names(root))
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in SOLUTION_SUFFIXES and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise HarnessError(f"no such file or folder: {path}")
    items = []
    for file in files:
        name = challenge or file.parent.name
        if name not in known:
            raise ChallengeError(f"{file}: its folder names no challenge ({name!r}); pass --challenge NAME")
        items.append(Item(name, Path(label_of(file, root))))
    return sorted(set(items), key=lambda item: item.key)


def shard_of(items: list[Item], shard: Shard | None) -> list[Item]:
    """Deterministic split: the i-th item of the sorted list goes to shard i mod N."""
    if shard is None:
        return items
    ordered = sorted(items, key=lambda item: item.key)
    return [item for i, item in enumerate(ordered) if i % shard.count == shard.index - 1]


def with_baselines(items: list[Item], root: Path) -> list[Item]:
    """Each challenge's reference solution, timed beside its solutions (unless listed already)."""
    listed = {(item.challenge, (root / item.path).resolve()) for item in items}
    extra = []
    for name in sorted({item.challenge for item in items}):
        reference = reference_solution(load_challenge(name, root), root)
        if reference.is_file() and (name, reference.resolve()) not in listed:
            extra.append(Item(name, Path(label_of(reference, root)), baseline=True))
    return items + extra


def grade(
    items: list[Item],
    options: Options,
    root: Path,
    gpus: list[int],
    progress: Callable[[str, str], None] | None = None,
) -> tuple[dict[str, Challenge], list[tuple[Item, int, SolutionResult]]]:
    """Evaluate every item, one worker thread per GPU taking the next solution
    from a shared queue, so one slow solution does not hold up the others.
    Test data and builds are made once, first, compilations in parallel. A
    challenge's baseline runs last on every GPU that graded solutions of it,
    so each speedup compares numbers from one device."""
    notify = progress or (lambda label, what: None)
    options = effective_options(options)
    challenges = {name: load_challenge(name, root) for name in sorted({i.challenge for i in items})}
    data: dict[str, PreparedData] = {}
    for name, challenge in challenges.items():
        notify("", f"{name}: preparing test data (float64 reference)")
        data[name] = prepare_data(challenge, options)
    built = build_all_items(challenges, items, options, root, notify)
    pending: queue.SimpleQueue[Item] = queue.SimpleQueue()
    for item in items:
        if not item.baseline:
            pending.put(item)

    def run_lane(gpu: int) -> list[tuple[Item, int, SolutionResult]]:
        done: list[tuple[Item, int, SolutionResult]] = []

        def run(item: Item) -> None:
            path = root / item.path
            on_gpu = replace(options, gpu=gpu)
            result = run_built(challenges[item.challenge], path, built[item.challenge, path], on_gpu, root, data[item.challenge], notify)
            done.append((item, gpu, result))

        while True:
            try:
                item = pending.get_nowait()
            except queue.Empty:
                break
            run(item)
        graded_here = {item.challenge for item, _, _ in done}
        for baseline in (item for item in items if item.baseline and item.challenge in graded_here):
            run(baseline)
        return done

    with ThreadPoolExecutor(max_workers=len(gpus)) as pool:
        finished = list(pool.map(run_lane, gpus))
    graded = [entry for lane in finished for entry in lane]
    order = {item.key: i for i, item in enumerate(items)}
    graded.sort(key=lambda entry: (order[entry[0].key], entry[1]))
    return challenges, graded


def build_all_items(
    challenges: dict[str, Challenge], items: list[Item], options: Options, root: Path, notify: Callable[[str, str], None]
) -> dict[tuple[str, Path], Path | SolutionResult]:
    """Every solution compiled once, up front, challenges in parallel: its
    library, or its failed build as its result, keyed by (challenge, path)."""

    def build(name: str) -> dict[Path, Path | SolutionResult]:
        return build_all(challenges[name], [root / item.path for item in items if item.challenge == name], options, root, notify)

    with ThreadPoolExecutor(max_workers=max(1, len(challenges))) as pool:
        per_challenge = dict(zip(challenges, pool.map(build, challenges)))  # a missing tool is raised here
    return {(name, path): built for name, libraries in per_challenge.items() for path, built in libraries.items()}
