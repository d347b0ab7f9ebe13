"""The `harness` command line. Commands parse, call one library function and print."""

from __future__ import annotations

import datetime
import functools
import io
import json
import os
import re
import shutil
import sys
import time
import traceback
from dataclasses import asdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console, RenderableType
from rich.markdown import Markdown
from rich.table import Column, Table

from . import __version__
from . import document, history, html_report
from .backends import BACKENDS, Backend, parse_gpus, resolve_backend
from .challenge import Difficulty, challenge_names, load_challenge, repository_root, select_challenges
from .build import nvcc
from .compare import compare_reports, regressions
from .discovery import SOLUTION_SUFFIXES, discover_solutions
from .errors import ExitCode, HarnessError
from .evaluation import Evaluation, evaluate
from .github import annotations
from .grading import Item, Shard, collect, shard_of
from .junit import junit_xml
from .plan import make_plan
from .repeatability import Repeatability, repeatability
from .report import failure_lines, format_time, leaderboard
from .starters import LANGUAGES, python_starter
from .testdata import cache_dir
from .timing.criteria import CRITERIA
from .timing.loop import Budget

PIPED_WIDTH = 200  # columns for tables when stdout is not a terminal and COLUMNS is unset
stderr = Console(stderr=True, highlight=False)


def show(renderable: RenderableType | str) -> None:
    """Print on stdout: at the terminal's width, or when piped at COLUMNS (else
    PIPED_WIDTH) with no trailing spaces."""
    console = Console(highlight=False)
    if console.is_terminal:
        console.print(renderable)
        return
    buffer = Console(file=io.StringIO(), width=int(os.environ.get("COLUMNS", "0") or 0) or PIPED_WIDTH,
                     color_system=None, highlight=False, soft_wrap=isinstance(renderable, str))
    buffer.print(renderable, markup=False) if isinstance(renderable, str) else buffer.print(renderable)
    text = buffer.file.getvalue()  # type: ignore[attr-defined]
    click.echo("\n".join(line.rstrip() for line in text.splitlines()))


class UsageFailure(click.ClickException):
    exit_code = ExitCode.USAGE


class HarnessGroup(click.Group):
    """A bug of the harness exits INTERNAL_ERROR with one line on stderr and
    its traceback in a file, never as "a solution failed"."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            raise click.exceptions.Exit(ExitCode.INTERRUPTED) from None
        except Exception as error:  # noqa: BLE001 - the one place a harness bug is caught
            saved = _save_traceback()
            click.echo(f"harness: internal error (a bug of the harness, not of the solution): "
                       f"{type(error).__name__}: {error}; traceback in {saved}", err=True)
            raise click.exceptions.Exit(ExitCode.INTERNAL_ERROR) from None


def _save_traceback() -> Path:
    folder = cache_dir() / "internal-errors"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = folder / f"{stamp}-{os.getpid()}.txt"
    path.write_text(f"harness {__version__}: {' '.join(sys.argv)}\n\n{traceback.format_exc()}")
    return path


def library_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Library errors become one line on stderr and ExitCode.USAGE, in one place."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except HarnessError as error:
            raise UsageFailure(str(error)) from None

    return wrapper


def writable_file(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """An output path, checked before any work: relative to the working
    directory, in an existing folder we may write, and not a folder itself."""
    if value is None:
        return None
    problem = output_problem(value)
    if problem:
        raise click.BadParameter(problem, ctx=ctx, param=param)
    return value


def output_problem(path: Path) -> str | None:
    """Why `path` cannot be written as a file, or None."""
    if path.is_dir():
        return f"{path} is a folder"
    parent = path.absolute().parent
    existing = next(p for p in (parent, *parent.parents) if p.exists())
    if not existing.is_dir():
        return f"cannot write {path}: {existing} is a file, not a folder"
    if existing != parent:
        return f"cannot write {path}: its folder {parent} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write {path}: no permission to write in {parent}"
    return None


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout instead of tables.")(command)


def _apply(options: list[Callable[..., Any]], command: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(options):
        command = option(command)
    return command


def evaluation_options(command: Callable[..., Any]) -> Callable[..., Any]:
    return _apply([
        click.option("--backend", type=click.Choice(("auto", *BACKENDS)), default="auto", show_default=True, help="cuda: an NVIDIA GPU; emu: the CPU emulator (correctness only); auto: cuda when a GPU is visible."),
        click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=None, help="Seconds any one test may run before the solution is killed (default: a limit derived from each test's size)."),
        click.option("--arch", default=None, help="nvcc target, e.g. sm_90 (default: read from the GPU). cuda only."),
        click.option("--nvcc-flags", default=None, help="Flags passed to nvcc, space separated (default: -O3). cuda only."),
        click.option("--gpu", type=click.IntRange(0), default=None, help="Index of the GPU to run on (default: 0). cuda only."),
        click.option("--sanitize", is_flag=True, help="Correctness tests under a memory checker, no timing. cuda: compute-sanitizer memcheck, racecheck and initcheck in turn; emu: AddressSanitizer. Findings are reported with .cu file:line."),
        click.option("--skip-python", is_flag=True, help="Leave Python solutions out (they need the cuda backend); without it, a skipped solution counts as not passed."),
        click.option("-v", "--verbose", is_flag=True, help="List every test of every solution, passed or not."),
        click.option("--secret-seeds", "secret_seeds", type=click.File("r"), callback=lambda ctx, param, f: f.read().strip() if f else None, default=None, help="A grader's secret (a file, or $HARNESS_SECRET_SEEDS): the generated tests' seeds are derived from it and left out of every report."),
        click.option("--no-history", is_flag=True, help="Do not record the results in the local history (see `harness history`)."),
        click.option("--html", "html_path", type=click.Path(path_type=Path), callback=writable_file, default=None, help="Also write the report as one self-contained HTML file with plots (see `harness report`)."),
        json_option,
    ], command)


def timing_options(command: Callable[..., Any]) -> Callable[..., Any]:
    defaults = Budget()
    return _apply([
        click.option("--budget", "budget_s", type=click.FloatRange(min=0), default=None, help=f"Seconds of timed calls per solution, once --min-samples are in (default: {defaults.time_s:g})."),
        click.option("--min-samples", type=click.IntRange(1), default=None, help=f"Timed calls never fewer than this (default: {defaults.min_samples})."),
        click.option("--min-time", "min_time_s", type=click.FloatRange(min=0), default=None, help=f"Seconds of timed calls before the criterion may stop them (default: {defaults.min_time_s:g}; the budget still ends them)."),
        click.option("--max-samples", type=click.IntRange(1), default=None, help=f"Timed calls never more than this (default: {defaults.max_samples})."),
        click.option("--criterion", type=click.Choice(sorted(CRITERIA)), default=None, help="When to stop: rse (relative standard error of the mean under 0.5%, the default) or fixed (100 calls)."),
        click.option("--rounds", type=click.IntRange(1), default=None, help="Time in this many rounds: the solutions, then their baseline, take turns, a block of calls each (a fresh process per block, the budget shared out), so a speedup compares samples from the same stretch of time (default: 1)."),
    ], command)


def one_test_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--test", "only_test", default=None, metavar="NAME", help="Run only this test (names: `harness show NAME --json`).")(command)


@click.group(cls=HarnessGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def cli() -> None:
    """Compile, validate and time GPU kernel solutions against float64 references."""


@cli.command("list")
@click.option("--difficulty", type=click.Choice([d.value for d in Difficulty]), default=None, help="Only challenges of this difficulty.")
@click.option("--topic", default=None, help="Only challenges with this topic (see the topics column).")
@json_option
@library_errors
def list_command(difficulty: str | None, topic: str | None, as_json: bool) -> None:
    """List the challenges, easiest first."""
    challenges = select_challenges(
        [load_challenge(name) for name in challenge_names()],
        Difficulty(difficulty) if difficulty else None,
        topic,
    )
    bests = _history_bests()
    if as_json:
        entries = [
            {"name": c.name, "title": c.title, "summary": c.summary, "difficulty": c.difficulty.value, "topics": list(c.topics),
             **_best_fields(bests.get(c.name))}
            for c in challenges
        ]
        click.echo(json.dumps(entries, indent=2))
        return
    # Names are never cut: on a narrow terminal the topics and sizes wrap instead.
    table = Table(
        Column("challenge", no_wrap=True, min_width=max((len(c.name) for c in challenges), default=9)),
        "difficulty", Column("topics", overflow="fold"), Column("performance size", overflow="fold"),
        "solved", "best median", "vs ref",
    )
    for ch in challenges:
        perf = ch.tests_of("performance")[0]
        best = _best_fields(bests.get(ch.name))
        table.add_row(
            ch.name, ch.difficulty.value, ", ".join(ch.topics), ", ".join(f"{k}={v}" for k, v in perf.sizes.items()),
            "yes" if best["solved"] else "-",
            format_time(best["best_median_s"]) if best["best_median_s"] else "-",
            f"{best['best_speedup']:.3g}x" if best["best_speedup"] else "-",
        )
    show(table)


_CODE = re.compile(r"(`+)(.+?)\1")
_INTRAWORD_STAR = re.compile(r"(?<=[^\s*\\])\*(?=[^\s*])")


def literal_math(markdown: str) -> str:
    """Markdown whose products stay products: a `*` between two non-spaces
    outside code (16*8192*2048) is escaped, so it never opens emphasis."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if fenced or line.lstrip().startswith("```"):
            lines.append(line)
            continue
        pieces, last = [], 0
        for code in _CODE.finditer(line):
            pieces += [_INTRAWORD_STAR.sub(r"\\*", line[last:code.start()]), code.group(0)]
            last = code.end()
        lines.append("".join(pieces) + _INTRAWORD_STAR.sub(r"\\*", line[last:]))
    return "\n".join(lines)


@cli.command("show")
@click.argument("name")
@json_option
@library_errors
def show_command(name: str, as_json: bool) -> None:
    """Show a challenge: its spec, or with --json its metadata."""
    challenge = load_challenge(name)
    if as_json:
        metadata = {**challenge.metadata, "signature": challenge.signature()}
        click.echo(json.dumps(metadata, indent=2))
        return
    show(Markdown(literal_math(challenge.spec_path.read_text())))


@cli.command()
@click.argument("name")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Overwrite PATH if it exists.")
@click.option("--lang", type=click.Choice(LANGUAGES), default=None, help="cuda (a .cu file), or a Python solution: cupy (RawModule kernels), triton or torch. Default: from PATH's suffix (.py: cupy).")
@library_errors
def init(name: str, path: Path, force: bool, lang: str | None) -> None:
    """Write the starter solution of challenge NAME to PATH (relative to the working directory)."""
    challenge = load_challenge(name)
    language = lang or ("cupy" if path.suffix == ".py" else "cuda")
    if (language == "cuda") != (path.suffix == ".cu"):
        raise UsageFailure(f"a {language} solution needs a {'.cu' if language == 'cuda' else '.py'} file, not {path.name}")
    if path.exists() and not force:
        raise UsageFailure(f"{path} exists; use --force to overwrite it")
    parent = path.absolute().parent
    blocking = next((p for p in (parent, *parent.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise UsageFailure(f"cannot write {path}: {blocking} is a file, not a folder")
    if path.is_dir():
        raise UsageFailure(f"cannot write {path}: it is a folder")
    try:
        parent.mkdir(parents=True, exist_ok=True)
        if language == "cuda":
            shutil.copyfile(challenge.starter_path, path)
        else:
            path.write_text(python_starter(challenge, language))
    except OSError as error:
        raise UsageFailure(f"cannot write {path}: {error.strerror or error}") from None
    stderr.print(f"wrote {path}: fill in solve(), then `harness run {name} {path}`", markup=False)


class Progress:
    """What the run is doing, with the time since it began: a spinner line on
    a terminal, plain lines on stderr when it is not one."""

    PIPED_TEST_LINES_S = 1.0  # piped, a "test t of T" line only this long after the last line

    def __init__(self) -> None:
        self.started = self.printed = time.monotonic()
        self.text = "starting"
        self.status = stderr.status(self) if stderr.is_terminal else None

    def __rich__(self) -> str:
        return f"[{self.elapsed()}] {self.text}"

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.started)
        return f"{seconds // 60}:{seconds % 60:02d}"

    def __call__(self, text: str) -> None:
        self.text = text
        quiet = ", test " in text and time.monotonic() - self.printed < self.PIPED_TEST_LINES_S
        if self.status is None and not quiet:
            self.printed = time.monotonic()
            click.echo(f"[{self.elapsed()}] {text}", err=True)

    def __enter__(self) -> Progress:
        if self.status is not None:
            self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()


def _grade_and_report(
    items: list[Item],
    *,
    check: bool,
    time: bool,
    baselines: bool,
    backend: str,
    as_json: bool,
    verbose: bool,
    gpus: str | None = None,
    shard: Shard | None = None,
    report_path: Path | None = None,
    junit_path: Path | None = None,
    no_history: bool = False,
    html_path: Path | None = None,
    repeat: int = 1,
    **given: Any,
) -> None:
    """The one path behind run, check, bench and grade: plan, evaluate, then
    print, write the report files, and exit with the documented code."""
    if html_path:
        html_report.require_matplotlib()
    chosen, note = resolve_backend(backend)
    if note:
        stderr.print(note, markup=False)
    if gpus is not None and chosen == Backend.CUDA:
        given["gpus"] = parse_gpus(gpus)
    elif gpus is not None:
        given["gpus"] = gpus
    notes: list[str] = []
    plan = make_plan(chosen, check=check, time=time, given={**given, "baselines": baselines}, notes=notes)
    for line in notes:
        stderr.print(line, markup=False)
    root = repository_root()
    reports, exit_code = [], ExitCode.OK
    for run_number in range(1, repeat + 1):
        if repeat > 1:
            stderr.print(f"run {run_number} of {repeat}", markup=False)
        with Progress() as progress:
            evaluation = evaluate(items, plan, root, progress)
        report = document.report_of(evaluation, (shard.index, shard.count) if shard else None)
        reports.append(report)
        exit_code = max(exit_code, evaluation.exit_code())
        if not no_history:
            history.record_or_warn(report, click.get_current_context().info_name or "", root, lambda text: stderr.print(f"warning: {text}", markup=False))
        if not as_json:
            _print_leaderboards(evaluation, verbose)
        if evaluation.interrupted_by is not None:
            stderr.print(f"interrupted: {sum(g.result.reason != 'interrupted' for g in evaluation.graded)} of {len(evaluation.graded)} solutions finished", markup=False)
            break
    rows = repeatability(reports)
    if as_json:
        click.echo(json.dumps(report if repeat == 1 else {"runs": reports, "repeatability": [_repeat_record(r) for r in rows]}, indent=2))
    elif repeat > 1:
        show(_repeat_table(rows))
    if report_path:
        report_path.write_text(json.dumps(report, indent=2) + "\n")
    if junit_path:
        junit_path.write_text(junit_xml(report))
    if html_path:
        html_report.write(report, html_path, html_report.challenge_costs(report, root))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in annotations(report):
            click.echo(line)
    sys.exit(exit_code)


def _repeat_record(row: Repeatability) -> dict[str, Any]:
    return {**asdict(row), "median_spread": row.median_spread, "speedup_spread": row.speedup_spread}


def _repeat_table(rows: list[Repeatability]) -> Table:
    """Each timed solution's median and speedup in every run, and their spread."""
    percent = lambda v: f"{v * 100:.2f}%" if v is not None else "-"  # noqa: E731
    table = Table("solution", "medians, run by run", "spread", "vs ref, run by run", "spread", title="repeatability", title_justify="left")
    for row in rows:
        table.add_row(
            row.key, " ".join(format_time(m) for m in row.medians_s), percent(row.median_spread),
            " ".join(f"{v:.3f}x" for v in row.speedups) or "-", percent(row.speedup_spread),
        )
    return table


def _print_leaderboards(evaluation: Evaluation, verbose: bool) -> None:
    for name, challenge in evaluation.challenges.items():
        results = [g.result for g in evaluation.graded if g.item.challenge == name]
        show(leaderboard(challenge, results, evaluation.plan.backend))
        for line in failure_lines(results, verbose):
            show(line)


def _items_for(name: str, given: tuple[Path, ...]) -> list[Item]:
    """The given files (relative to the working directory), or every solution
    of challenge NAME plus its reference."""
    challenge = load_challenge(name)
    root = repository_root()
    if not given:
        paths = discover_solutions(challenge, root)
        if not paths:
            raise UsageFailure(f"no solutions found for {challenge.name}")
        return [Item.of(challenge.name, p, root) for p in paths]
    for path in given:
        if path.is_dir():
            raise UsageFailure(f"{path} is a folder: give solution files (.cu or .py), or grade a folder with `harness grade {path} --challenge {challenge.name}`")
        if not path.exists():
            raise UsageFailure(f"no such solution file: {path}")
        if path.suffix not in SOLUTION_SUFFIXES:
            raise UsageFailure(f"{path}: a solution is a .cu or .py file")
    return [Item.of(challenge.name, p, root) for p in given]


solution_paths = click.argument("solutions", nargs=-1, type=click.Path(path_type=Path))


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@timing_options
@one_test_option
@library_errors
def run(name: str, solutions: tuple[Path, ...], **settings: Any) -> None:
    """Check and time solutions of NAME: the given files, or every file in
    solutions/NAME/ plus reference/NAME.cu. Prints a leaderboard; the
    reference is timed in the same run as the baseline."""
    _grade_and_report(_items_for(name, solutions), check=True, time=True, baselines=True, **settings)


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@one_test_option
@library_errors
def check(name: str, solutions: tuple[Path, ...], **settings: Any) -> None:
    """Correctness only: the example and functional tests."""
    _grade_and_report(_items_for(name, solutions), check=True, time=False, baselines=False, **settings)


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@timing_options
@click.option("--no-baseline", is_flag=True, help="Do not time reference/NAME.cu beside the given solutions.")
@click.option("--repeat", type=click.IntRange(1), default=1, show_default=True, help="Time everything this many times, in separate runs, and print how far the medians and speedups moved between runs.")
@library_errors
def bench(name: str, solutions: tuple[Path, ...], no_baseline: bool, **settings: Any) -> None:
    """Timing only (every timed call still verified), at the performance size.
    The reference solution is timed in the same run as the baseline."""
    _grade_and_report(_items_for(name, solutions), check=False, time=True, baselines=not no_baseline, **settings)


report_file = functools.partial(click.option, type=click.Path(path_type=Path), callback=writable_file, default=None)


@cli.command("grade")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--challenge", "challenge_name", default=None, help="Grade every PATH against this challenge (default: each solution's folder name).")
@click.option("--gpus", default=None, help="GPUs to grade on, one worker each: 'all' or indices like 0,1.")
@click.option("--shard", "shard_text", default=None, help="K/N: grade only the K-th of N deterministic parts (merge the reports with `harness merge`).")
@report_file("--report", "report_path", help="Write the versioned JSON report here.")
@report_file("--junit", "junit_path", help="Write JUnit XML here.")
@click.option("--no-timing", is_flag=True, help="Correctness only.")
@evaluation_options
@timing_options
@library_errors
def grade_command(
    paths: tuple[Path, ...], challenge_name: str | None, shard_text: str | None, no_timing: bool, **settings: Any
) -> None:
    """Grade many solutions: PATHS are files or folders (default solutions/).
    Compiles in parallel, runs solutions one at a time per GPU, goes on past
    any failure; each challenge's reference is timed beside its solutions."""
    root = repository_root()
    if challenge_name:
        load_challenge(challenge_name)
    shard = Shard.parse(shard_text) if shard_text else None
    items = shard_of(collect(list(paths) or [root / "solutions"], root, challenge_name), shard)
    if not items:
        raise UsageFailure("no solutions to grade" + (f" in shard {shard_text}" if shard else ""))
    _grade_and_report(items, check=True, time=not no_timing, baselines=True, shard=shard, **settings)


@cli.command()
@click.argument("reports", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@report_file("--output", "-o", "output", required=True, help="Where to write the merged report.")
@report_file("--junit", "junit_path", help="Also write JUnit XML of the merged report.")
@library_errors
def merge(reports: tuple[Path, ...], output: Path, junit_path: Path | None) -> None:
    """Merge the reports of `grade --shard K/N` runs into one."""
    merged = document.merge([document.load(p) for p in reports], [str(p) for p in reports])
    output.write_text(json.dumps(merged, indent=2) + "\n")
    if junit_path:
        junit_path.write_text(junit_xml(merged))
    stderr.print(f"merged {len(reports)} reports, {len(merged['results'])} results: {output}", markup=False)
    sys.exit(ExitCode.OK if merged["passed"] else ExitCode.FAILED)


@cli.command("compare")
@click.argument("base", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--threshold", type=float, default=0.05, show_default=True, help="Relative slowdown beyond the noise that counts as a regression.")
@json_option
@library_errors
def compare_command(base: Path, new: Path, threshold: float, as_json: bool) -> None:
    """Compare two reports solution by solution; exit 1 on a regression (a
    slowdown beyond noise and --threshold, or a solution that now fails)."""
    changes = compare_reports(document.load(base), document.load(new))
    bad = regressions(changes, threshold)
    if as_json:
        click.echo(json.dumps([{**asdict(c), "relative_change": c.relative_change, "regression": c in bad} for c in changes], indent=2))
    else:
        table = Table("solution", "status", "base median", "new median", "change", "noise")
        for change in changes:
            rel = change.relative_change
            status = f"[red]{change.status}[/red]" if change in bad else str(change.status)
            table.add_row(
                change.key, status,
                format_time(change.base_median_s) if change.base_median_s else "-",
                format_time(change.new_median_s) if change.new_median_s else "-",
                f"{rel * 100:+.1f}%" if rel is not None else "-",
                f"{change.noise * 100:.1f}%" if change.noise is not None else "-",
            )
        show(table)
    sys.exit(ExitCode.FAILED if bad else ExitCode.OK)


# --- practice workflow: history, HTML report, profiling ---


def _history_bests() -> dict[str, history.Best]:
    """The history's bests for `harness list`; an unreadable database is a warning."""
    try:
        return history.bests(history.read())
    except history.HistoryError as error:
        stderr.print(f"warning: history not shown: {error}", markup=False)
        return {}


def _best_fields(best: history.Best | None) -> dict[str, Any]:
    fastest = best.fastest if best else None
    return {
        "solved": bool(best and best.solved),
        "best_median_s": fastest.median_s if fastest else None,
        "best_speedup": fastest.speedup if fastest else None,
        "best_solution": fastest.solution if fastest else None,
    }


@cli.command("history")
@click.argument("name", required=False)
@json_option
@library_errors
def history_command(name: str | None, as_json: bool) -> None:
    """Each solution's results over time (all challenges, or NAME's), oldest
    first; * marks each solution's fastest passing time. Recorded by check,
    bench, run and grade in $HARNESS_HOME/history.sqlite3 (default: the user's
    data directory); --no-history on those commands skips it."""
    if name:
        load_challenge(name)
    entries = history.read(name)
    fastest = history.best_ids(entries)
    if as_json:
        click.echo(json.dumps([{**asdict(e), "best": e.id in fastest} for e in entries], indent=2))
        return
    if not entries:
        stderr.print(f"no results recorded yet in {history.database_path()}", markup=False)
        return
    table = Table(
        Column("when (UTC)", overflow="fold"), "command", Column("challenge", overflow="fold"),
        Column("solution", no_wrap=True, min_width=max((len(e.solution) for e in entries), default=8)),
        "sha256", "status", "median", "cv", "vs ref", Column("gpu", overflow="fold"), "",
    )
    for e in entries:
        table.add_row(
            e.recorded_at.replace("T", " ").replace("+00:00", ""), e.command, e.challenge, e.solution,
            (e.solution_sha256 or "")[:8], "PASS" if e.passed else (e.reason or "FAIL"),
            format_time(e.median_s) if e.median_s else "-", f"{e.cv * 100:.1f}%" if e.cv is not None else "-",
            f"{e.speedup:.3g}x" if e.speedup else "-", e.gpu or e.backend, "*" if e.id in fastest else "",
        )
    show(table)


@cli.command("report")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Where to write the HTML file.")
@library_errors
def report_command(report_path: Path, html_path: Path) -> None:
    """Render a JSON report (of run, check, bench, grade or merge) as one
    self-contained HTML file: leaderboards, per-test verdicts, environment,
    and plots of the timings against the floor and the reference."""
    report = document.load(report_path)
    html_report.write(report, html_path, html_report.challenge_costs(report, repository_root()))
    stderr.print(f"wrote {html_path}", markup=False)


@cli.command("profile")
@click.argument("name")
@click.argument("solution", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@report_file("--output", "-o", "report_path", help="Where to keep the Nsight Compute report (default: SOLUTION's name with .ncu-rep, in the current directory).")
@click.option("--arch", default=None, help="nvcc target, e.g. sm_90 (default: read from the GPU).")
@click.option("--nvcc-flags", default=" ".join(nvcc.DEFAULT_FLAGS), show_default=True, help="Flags passed to nvcc, space separated.")
@click.option("--gpu", type=click.IntRange(0), default=0, show_default=True, help="Index of the GPU to run on.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True, help="Seconds ncu may take in all.")
@json_option
@library_errors
def profile_command(name: str, solution: Path, report_path: Path | None, arch: str | None, nvcc_flags: str, gpu: int, timeout_s: float, as_json: bool) -> None:
    """Profile SOLUTION's performance-size call under Nsight Compute (after
    one verified warm-up): per kernel its duration, memory and SM throughput
    (% of peak), achieved occupancy, registers and shared memory per block,
    top stall reasons, warp instructions and the time they take at full
    issue, the busiest pipes, the SASS instructions where warps were most
    often sampled waiting, and the distance from the challenge's floor."""
    from . import profile
    from .backends import visible_gpus
    from .build.signature import check_signature
    from .testdata import cache_dir

    challenge = load_challenge(name)
    profile.find_ncu()  # missing: one line before anything is built
    gpus = visible_gpus()
    if not gpus:
        raise UsageFailure("profile needs a visible NVIDIA GPU (nvidia-smi lists none)")
    if solution.suffix == ".py":
        library = solution.resolve()
    else:
        check_signature(solution.read_text(errors="replace"), challenge)
        library = nvcc.build_library(solution, cache_dir(), arch or gpus[min(gpu, len(gpus) - 1)].arch, tuple(nvcc_flags.split()))
    report = report_path or Path(solution.stem + ".ncu-rep")
    with stderr.status(f"profiling {solution} under Nsight Compute"):
        result = profile.profile(challenge, solution, library, repository_root(), report.resolve(), gpu, timeout_s)
    if as_json:
        click.echo(json.dumps({**asdict(result), "kernel_time_s": result.kernel_time_s, "times_floor": result.times_floor}, indent=2))
        return
    table = Table("kernel", "duration", "memory %", "DRAM %", "SM %", "occupancy", "regs/thread", "smem/block", "block x grid", "top stalls (cycles per instruction)")
    for k in result.kernels:
        percent = lambda v: f"{v:.1f}%" if v is not None else "-"  # noqa: E731
        table.add_row(
            k.name, format_time(k.duration_s), percent(k.memory_throughput_pct), percent(k.dram_throughput_pct),
            percent(k.sm_throughput_pct),
            f"{percent(k.achieved_occupancy_pct)} of {percent(k.theoretical_occupancy_pct)}",
            str(k.registers_per_thread or "-"), f"{k.shared_memory_per_block_bytes} B" if k.shared_memory_per_block_bytes is not None else "-",
            f"{k.block_size} x {k.grid_size}", ", ".join(f"{s.reason} {s.cycles_per_instruction:.2f}" for s in k.stalls),
        )
    show(f"{result.challenge}: {result.solution} on {result.device}")
    show(table)
    for k in result.kernels:
        if k.warp_instructions and k.full_issue_s:
            pipes = ", ".join(f"{p.pipe} {p.percent_of_peak:.1f}%" for p in k.pipes)
            show(
                f"{k.name.split('(')[0]}: {k.warp_instructions / 1e6:.2f} M warp instructions, issued in "
                f"{k.issue_active_pct:.1f}% of cycles: {format_time(k.full_issue_s)} at one per scheduler per cycle"
                + (f"; busiest pipes {pipes}" if pipes else "")
            )
    for k in result.kernels:
        if k.instruction_mix:
            mix = ", ".join(f"{o.opcode} {o.share_pct:.1f}%" for o in k.instruction_mix)
            show(f"{k.name.split('(')[0]}: executed warp instructions by opcode: {mix}")
    for k in result.kernels:
        if k.hot_spots:
            show(f"{k.name.split('(')[0]}: where its warps were sampled waiting (share of samples, SASS offset, states):")
            for spot in k.hot_spots:
                states = ", ".join(f"{reason} {samples}" for reason, samples in spot.reasons)
                show(f"  {spot.share_pct:5.1f}%  +0x{spot.offset:04x}  {spot.sass}  ({states})")
    if result.floor_s:
        show(
            f"kernels {format_time(result.kernel_time_s)} in all; floor {format_time(result.floor_s)} "
            f"({result.bytes_moved / 1e6:.1f} MB at the {result.copy_bandwidth_bytes_per_s / 1e12:.2f} TB/s copy bandwidth "
            f"measured in the same process): {result.times_floor:.2f}x the floor"
        )
    show(f"Nsight Compute report: {result.report_path} (open with ncu-ui); raw CSV: {result.csv_path}; "
         f"source page: {result.source_csv_path}")



def main() -> None:
    cli()
