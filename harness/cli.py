"""The `harness` command line. Commands parse, call one library function and print."""

from __future__ import annotations

import functools
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from . import __version__
from .backends import BACKENDS, resolve_backend
from .challenge import Challenge, challenge_names, load_challenge, repository_root
from .errors import ExitCode, HarnessError
from .report import failure_lines, leaderboard, to_json
from .runner import Options, discover_solutions, evaluate, reference_solution
from .timing.criteria import CRITERIA
from .timing.loop import Budget

stdout = Console()
if not stdout.is_terminal:
    stdout = Console(width=200)  # logs and CI: rich would otherwise assume 80 columns
stderr = Console(stderr=True)


class UsageFailure(click.ClickException):
    exit_code = ExitCode.USAGE


def library_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Library errors become one line on stderr and ExitCode.USAGE, in one place."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except HarnessError as error:
            raise UsageFailure(str(error)) from None

    return wrapper


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout instead of tables.")(command)


def evaluation_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--backend", type=click.Choice(("auto", *BACKENDS)), default="auto", show_default=True, help="cuda: an NVIDIA GPU; emu: the CPU emulator (correctness only); auto: cuda when a GPU is visible."),
        click.option("--timeout", "timeout_s", type=float, default=300.0, show_default=True, help="Seconds a solution may run (building excluded) before it is killed."),
        click.option("--arch", default=None, help="nvcc target, e.g. sm_90 (default: read from the GPU)."),
        click.option("--nvcc-flags", default="-O3", show_default=True, help="Flags passed to nvcc, space separated."),
        click.option("--gpu", type=int, default=0, show_default=True, help="Index of the GPU to run on."),
        click.option("--sanitize", is_flag=True, help="emu: build with AddressSanitizer; out-of-bounds accesses are reported with file:line."),
        json_option,
    ]
    for option in reversed(options):
        command = option(command)
    return command


def timing_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--budget", "budget_s", type=float, default=5.0, show_default=True, help="Seconds of timed calls per solution, once --min-samples are in."),
        click.option("--min-samples", type=click.IntRange(1), default=5, show_default=True, help="Timed calls never fewer than this."),
        click.option("--max-samples", type=click.IntRange(1), default=2000, show_default=True, help="Timed calls never more than this."),
        click.option("--criterion", type=click.Choice(sorted(CRITERIA)), default="rse", show_default=True, help="When to stop: rse (relative standard error of the mean under 0.5%) or fixed (100 calls)."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def cli() -> None:
    """Compile, validate and time GPU kernel solutions against float64 references."""


@cli.command("list")
@json_option
@library_errors
def list_command(as_json: bool) -> None:
    """List the challenges."""
    challenges = [load_challenge(name) for name in challenge_names()]
    if as_json:
        click.echo(json.dumps([{"name": c.name, "title": c.title, "summary": c.summary} for c in challenges], indent=2))
        return
    table = Table("challenge", "title", "performance size")
    for ch in challenges:
        perf = ch.tests_of("performance")[0]
        table.add_row(ch.name, ch.title, ", ".join(f"{k}={v}" for k, v in perf.sizes.items()))
    stdout.print(table)


@cli.command()
@click.argument("name")
@json_option
@library_errors
def show(name: str, as_json: bool) -> None:
    """Show a challenge: its spec, or with --json its metadata."""
    challenge = load_challenge(name)
    if as_json:
        document = {**challenge.metadata, "signature": challenge.signature()}
        click.echo(json.dumps(document, indent=2))
        return
    stdout.print(Markdown(challenge.spec_path.read_text()))


@cli.command()
@click.argument("name")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@library_errors
def init(name: str, path: Path, force: bool) -> None:
    """Write the starter solution of challenge NAME to PATH."""
    challenge = load_challenge(name)
    if path.exists() and not force:
        raise UsageFailure(f"{path} exists; use --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(challenge.starter_path, path)
    stderr.print(f"wrote {path}: fill in solve(), then `harness run {name} {path}`")


def _evaluate_and_report(
    challenge: Challenge,
    solutions: list[Path],
    *,
    check: bool,
    time: bool,
    backend: str,
    as_json: bool,
    **settings: Any,
) -> None:
    chosen, note = resolve_backend(backend)
    if note:
        stderr.print(note)
    if settings.get("sanitize") and chosen == "cuda":
        raise UsageFailure("--sanitize runs on the emu backend (--backend emu --sanitize)")
    if chosen != "cuda" and time and not check:
        raise UsageFailure("timing needs a GPU: the emu backend checks correctness only")
    if chosen != "cuda" and time:
        stderr.print("emu: correctness only, the performance-size test is skipped")
    budget = Budget(settings.pop("min_samples", 5), settings.pop("max_samples", 2000), settings.pop("budget_s", 5.0))
    options = Options(
        backend=chosen,
        check=check,
        time=time and chosen == "cuda",
        budget=budget,
        nvcc_flags=tuple(settings.pop("nvcc_flags").split()),
        **settings,
    )
    root = repository_root()
    with stderr.status("starting") as status:

        def progress(label: str, what: str) -> None:
            status.update(f"{label}: {what}" if label else what)

        results = evaluate(challenge, solutions, options, root, progress)
    if as_json:
        click.echo(json.dumps(to_json(challenge, results, chosen), indent=2))
    else:
        stdout.print(leaderboard(challenge, results, chosen))
        for line in failure_lines(results):
            stdout.print(line, markup=False, highlight=False, soft_wrap=True)
        for result in results:
            if result.reason == "compile_error":
                stdout.print(f"{result.solution}:\n{result.message}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(ExitCode.OK if all(r.passed for r in results) else ExitCode.FAILED)


def _solutions(challenge: Challenge, given: tuple[Path, ...]) -> list[Path]:
    if given:
        missing = [str(p) for p in given if not p.is_file()]
        if missing:
            raise UsageFailure("no such solution file: " + ", ".join(missing))
        return list(given)
    found = discover_solutions(challenge, repository_root())
    if not found:
        raise UsageFailure(f"no solutions found for {challenge.name}")
    return found


solution_paths = click.argument("solutions", nargs=-1, type=click.Path(path_type=Path))


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@timing_options
@library_errors
def run(name: str, solutions: tuple[Path, ...], **settings: Any) -> None:
    """Check and time solutions of NAME: the given files, or every file in
    solutions/NAME/ plus reference/NAME.cu. Prints a leaderboard."""
    challenge = load_challenge(name)
    _evaluate_and_report(challenge, _solutions(challenge, solutions), check=True, time=True, **settings)


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@library_errors
def check(name: str, solutions: tuple[Path, ...], **settings: Any) -> None:
    """Correctness only: the example and functional tests."""
    challenge = load_challenge(name)
    _evaluate_and_report(challenge, _solutions(challenge, solutions), check=True, time=False, **settings)


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@timing_options
@click.option("--no-baseline", is_flag=True, help="Do not time reference/NAME.cu beside the given solutions.")
@library_errors
def bench(name: str, solutions: tuple[Path, ...], no_baseline: bool, **settings: Any) -> None:
    """Timing only (every timed call still verified), at the performance size.
    The reference solution is timed in the same run as the baseline."""
    challenge = load_challenge(name)
    chosen = _solutions(challenge, solutions)
    reference = reference_solution(challenge, repository_root())
    if not no_baseline and reference.is_file() and all(p.resolve() != reference.resolve() for p in chosen):
        chosen.append(reference)
    _evaluate_and_report(challenge, chosen, check=False, time=True, **settings)


def main() -> None:
    cli()
