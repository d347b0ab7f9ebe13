"""The one evaluation path, behind every command and the tests alike: test
data first, then every build (in parallel), then the solutions, one worker
thread per GPU taking the next from a shared queue, so one slow solution does
not hold up the others. Every item given ends with a result: run, failed to
build, skipped (with the reason) or interrupted."""

from __future__ import annotations

import itertools
import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import lifecycle
from .builds import Built, build_all
from .challenge import Challenge, load_challenge, with_secret_seeds
from .errors import ExitCode, HarnessError
from .grading import Item, with_baselines
from .lifecycle import Cancellation
from .plan import Plan
from .results import Reason, SolutionResult
from .rounds import merged
from .runner import PreparedJobs, run_built
from .testdata import prepare_jobs

Notify = Callable[[str], None]  # one line saying what the run is doing now


@dataclass(frozen=True)
class Graded:
    item: Item
    gpu: int
    result: SolutionResult


@dataclass
class Evaluation:
    plan: Plan
    root: Path
    challenges: dict[str, Challenge]
    graded: list[Graded] = field(default_factory=list)
    interrupted_by: int | None = None  # the signal that cancelled the run

    @property
    def passed(self) -> bool:
        return all(g.result.counts_as_passed for g in self.graded)

    def exit_code(self) -> int:
        """128 + signal when interrupted; INTERNAL_ERROR when a worker failed;
        else OK or FAILED."""
        if self.interrupted_by is not None:
            return 128 + self.interrupted_by
        if any(g.result.reason == Reason.INTERNAL_ERROR for g in self.graded):
            return ExitCode.INTERNAL_ERROR
        return ExitCode.OK if self.passed else ExitCode.FAILED


def check_test_name(challenge: Challenge, plan: Plan) -> None:
    """--test NAME: a test of the challenge that this command runs."""
    if plan.only_test is None:
        return
    case = challenge.test(plan.only_test)  # ChallengeError names the known tests' challenge
    if case.kind == "performance" and not plan.time:
        raise HarnessError(f"{case.name} is the performance test, which only run and bench time (on cuda)")
    if case.kind != "performance" and not plan.check:
        raise HarnessError(f"{case.name} is a correctness test: bench runs only the performance test")


def evaluate(
    items: list[Item], plan: Plan, root: Path, notify: Notify | None = None, cancellation: Cancellation | None = None
) -> Evaluation:
    """Run every item under `plan`. SIGINT, SIGTERM and SIGHUP (or
    `cancellation`) stop the run within a poll interval: what finished is
    kept, the rest is marked interrupted."""
    say = notify or (lambda text: None)
    if plan.baselines:
        items = with_baselines(items, root)
    challenges = {name: load_challenge(name, root) for name in sorted({i.challenge for i in items})}
    if plan.secret_seeds:
        challenges = {name: with_secret_seeds(c, plan.secret_seeds) for name, c in challenges.items()}
    for challenge in challenges.values():
        check_test_name(challenge, plan)
    evaluation = Evaluation(plan, root, challenges)
    with lifecycle.cancelling(cancellation) as cancel:
        jobs: dict[str, PreparedJobs] = {}
        for name, challenge in challenges.items():
            say(f"{name}: preparing test data (float64 reference)")
            jobs[name] = prepare_jobs(challenge, plan)
        built = _build_items(challenges, items, plan, say) if not cancel.is_set else {}
        evaluation.graded = _run_items(challenges, items, built, plan, root, jobs, say, cancel)
        evaluation.interrupted_by = cancel.signal if cancel.is_set else None
    return evaluation


def evaluate_files(challenge: Challenge, paths: list[Path], plan: Plan, root: Path) -> list[SolutionResult]:
    """`evaluate` for the files of one challenge, as `harness check FILES` runs them."""
    items = [Item.of(challenge.name, path, root) for path in paths]
    return [g.result for g in evaluate(items, plan, root).graded]


def _build_items(challenges: dict[str, Challenge], items: list[Item], plan: Plan, say: Notify) -> dict[tuple[str, Path], Built]:
    """Every solution compiled once, up front, challenges in parallel."""
    counter = itertools.count(1)

    def build(name: str) -> dict[Path, Built]:
        chosen = [(i.path, i.label) for i in items if i.challenge == name]
        return build_all(challenges[name], chosen, plan, say, counter, len(items))

    with ThreadPoolExecutor(max_workers=max(1, len(challenges))) as pool:
        per_challenge = dict(zip(challenges, pool.map(build, challenges)))  # a missing tool is raised here
    return {(name, path): result for name, libraries in per_challenge.items() for path, result in libraries.items()}


def _run_items(
    challenges: dict[str, Challenge],
    items: list[Item],
    built: dict[tuple[str, Path], Built],
    plan: Plan,
    root: Path,
    jobs: dict[str, PreparedJobs],
    say: Notify,
    cancel: Cancellation,
) -> list[Graded]:
    """A challenge's baseline runs last on every GPU that graded solutions of
    it, so each speedup compares numbers from one device. With timing rounds,
    the lane then times everything it timed again, in the same order, once
    per further round."""
    timing_only = replace(plan, check=False) if plan.timing_rounds > 1 else plan  # later rounds time only
    pending: queue.SimpleQueue[Item] = queue.SimpleQueue()
    for item in items:
        if not item.baseline:
            pending.put(item)
    started = itertools.count(1)

    def time_again(entry: Graded, round_number: int) -> SolutionResult:
        """Another round of timing for a solution that passed the earlier ones."""
        item = entry.item
        say(f"timing round {round_number} of {plan.timing_rounds}: {item.label}")
        challenge = challenges[item.challenge]
        _, timing = jobs[item.challenge]
        later = run_built(challenge, item.path, item.label, built[(item.challenge, item.path)], timing_only, root, ((), timing), entry.gpu)
        return merged(entry.result, later, round_number)

    def run_lane(gpu: int) -> list[Graded]:
        done: list[Graded] = []

        def run(item: Item) -> None:
            key = (item.challenge, item.path)
            if cancel.is_set or key not in built:
                result = SolutionResult(solution=item.label, backend=plan.backend)
                result.fail(Reason.INTERRUPTED, "the run was interrupted before this solution ran")
            else:
                number = next(started)

                def on_test(test: str, index: int, count: int) -> None:
                    say(f"running {number} of {len(items)}: {item.label}, test {index} of {count} ({test})")

                say(f"running {number} of {len(items)}: {item.label}")
                result = run_built(challenges[item.challenge], item.path, item.label, built[key], plan, root, jobs[item.challenge], gpu, on_test)
            done.append(Graded(item, gpu, result))

        while True:
            try:
                item = pending.get_nowait()
            except queue.Empty:
                break
            run(item)
        graded_here = {g.item.challenge for g in done}
        for baseline in (item for item in items if item.baseline and item.challenge in graded_here):
            run(baseline)
        for round_number in range(2, plan.timing_rounds + 1):
            for index, entry in enumerate(done):
                if not cancel.is_set and entry.result.passed and entry.result.timing is not None:
                    done[index] = Graded(entry.item, gpu, time_again(entry, round_number))
        return done

    with ThreadPoolExecutor(max_workers=len(plan.gpus)) as pool:
        lanes = list(pool.map(run_lane, plan.gpus))
    graded = [entry for lane in lanes for entry in lane]
    order = {item.key: i for i, item in enumerate(items)}
    graded.sort(key=lambda g: (order[g.item.key], g.gpu))
    return graded
