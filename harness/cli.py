"""The `harness` command line. Commands parse, call one library function and print."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from dataclasses import asdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from . import __version__
from . import document, history, html_report
from .backends import BACKENDS, gpu_snapshot, parse_gpus, resolve_backend
from .build import nvcc
from .challenge import Challenge, Difficulty, challenge_names, load_challenge, repository_root, select_challenges
from .compare import compare_reports, regressions
from .errors import ExitCode, HarnessError
from .github import annotations
from .grading import Item, Shard, collect, grade, shard_of, with_baselines
from .junit import junit_xml
from .report import failure_lines, format_time, leaderboard, timing_summary
from .results import SolutionResult
from .runner import Options, discover_solutions, label_of
from .sanitizers import find_compute_sanitizer
from .starters import LANGUAGES, python_starter
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
        click.option("--sanitize", is_flag=True, help="Correctness tests under a memory checker, no timing. cuda: compute-sanitizer memcheck, racecheck and initcheck in turn; emu: AddressSanitizer. Findings are reported with .cu file:line."),
        click.option("--no-history", is_flag=True, help="Do not record the results in the local history (see `harness history`)."),
        click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write the report as one self-contained HTML file with plots (see `harness report`)."),
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
    table = Table("challenge", "difficulty", "topics", "performance size", "solved", "best median", "vs ref")
    for ch in challenges:
        perf = ch.tests_of("performance")[0]
        best = _best_fields(bests.get(ch.name))
        table.add_row(
            ch.name, ch.difficulty.value, ", ".join(ch.topics), ", ".join(f"{k}={v}" for k, v in perf.sizes.items()),
            "yes" if best["solved"] else "-",
            format_time(best["best_median_s"]) if best["best_median_s"] else "-",
            f"{best['best_speedup']:.3g}x" if best["best_speedup"] else "-",
        )
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
@click.option("--lang", type=click.Choice(LANGUAGES), default=None, help="cuda (a .cu file), or a Python solution: cupy (RawModule kernels), triton or torch. Default: from PATH's suffix (.py: cupy).")
@library_errors
def init(name: str, path: Path, force: bool, lang: str | None) -> None:
    """Write the starter solution of challenge NAME to PATH."""
    challenge = load_challenge(name)
    language = lang or ("cupy" if path.suffix == ".py" else "cuda")
    if (language == "cuda") != (path.suffix == ".cu"):
        raise UsageFailure(f"a {language} solution needs a {'.cu' if language == 'cuda' else '.py'} file, not {path.name}")
    if path.exists() and not force:
        raise UsageFailure(f"{path} exists; use --force to overwrite it")
    path.parent.mkdir(parents=True, exist_ok=True)
    if language == "cuda":
        shutil.copyfile(challenge.starter_path, path)
    else:
        path.write_text(python_starter(challenge, language))
    stderr.print(f"wrote {path}: fill in solve(), then `harness run {name} {path}`")


def _grade_and_report(
    items: list[Item],
    *,
    check: bool,
    time: bool,
    baselines: bool,
    backend: str,
    as_json: bool,
    gpus: str | None = None,
    shard: Shard | None = None,
    report_path: Path | None = None,
    junit_path: Path | None = None,
    no_history: bool = False,
    html_path: Path | None = None,
    **settings: Any,
) -> None:
    """The one path behind run, check, bench and grade: evaluate, then print,
    write the report files, and exit with the documented code."""
    if html_path:
        html_report.require_matplotlib()
    chosen, note = resolve_backend(backend)
    if note:
        stderr.print(note)
    if settings.get("sanitize"):
        if not check:
            raise UsageFailure("--sanitize runs the correctness tests: use it with run, check or grade")
        if chosen == "cuda":
            find_compute_sanitizer(nvcc.find_nvcc())  # missing: a set-up error before anything runs
        if time:
            stderr.print("--sanitize: correctness tests only, nothing is timed under a memory checker")
        time = False
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
    if chosen != "cuda":
        python = [item for item in items if item.path.suffix == ".py"]
        if python:
            stderr.print(f"emu: skipping {len(python)} Python solution(s), which need CuPy and a GPU")
            items = [item for item in items if item.path.suffix != ".py"]
        if not items:
            raise UsageFailure("nothing left to run on emu: Python solutions need the cuda backend")
    gpu_list = parse_gpus(gpus) if gpus and chosen == "cuda" else [options.gpu]
    root = repository_root()
    if baselines and options.time:
        items = with_baselines(items, root)
    with stderr.status("starting") as status:

        def progress(label: str, what: str) -> None:
            status.update(f"{label}: {what}" if label else what)

        challenges, graded = grade(items, options, root, gpu_list, progress)
    report = _document(challenges, graded, options, root, shard)
    if not no_history:
        history.record_or_warn(report, click.get_current_context().info_name or "", root, lambda text: stderr.print(f"warning: {text}", markup=False))
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        _print_leaderboards(challenges, graded, chosen)
    if report_path:
        report_path.write_text(json.dumps(report, indent=2) + "\n")
    if junit_path:
        junit_path.write_text(junit_xml(report))
    if html_path:
        html_report.write(report, html_path, html_report.challenge_costs(report, root))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in annotations(report):
            click.echo(line)
    sys.exit(ExitCode.OK if report["passed"] else ExitCode.FAILED)


def _print_leaderboards(
    challenges: dict[str, Challenge], graded: list[tuple[Item, int, SolutionResult]], backend: str
) -> None:
    for name, challenge in challenges.items():
        results = [result for item, _, result in graded if item.challenge == name]
        stdout.print(leaderboard(challenge, results, backend))
        for line in failure_lines(results):
            stdout.print(line, markup=False, highlight=False, soft_wrap=True)
        for result in results:
            if result.reason == "compile_error":
                stdout.print(f"{result.solution}:\n{result.message}", markup=False, highlight=False, soft_wrap=True)


def _document(
    challenges: dict[str, Challenge],
    graded: list[tuple[Item, int, SolutionResult]],
    options: Options,
    root: Path,
    shard: Shard | None,
) -> dict[str, Any]:
    medians = {
        (item.challenge, gpu): summary.median
        for item, gpu, result in graded
        if result.is_reference and result.passed and (summary := timing_summary(result)) is not None
    }
    records = [
        document.result_record(
            item.challenge, result, root, gpu if options.backend == "cuda" else None, item.baseline,
            medians.get((item.challenge, gpu)),
        )
        for item, gpu, result in graded
    ]
    nvcc_info = None
    if options.backend == "cuda":
        nvcc_info = {"version": nvcc.toolchain().version, "flags": list(options.nvcc_flags), "arch": options.arch}
    gpus = gpu_snapshot() if options.backend == "cuda" else []
    env = document.environment(options.backend, gpus, nvcc_info)
    return document.build(list(challenges.values()), records, env, (shard.index, shard.count) if shard else None)


def _items_for(challenge: Challenge, given: tuple[Path, ...]) -> list[Item]:
    """The given files, or every solution of the challenge plus its reference."""
    root = repository_root()
    if given:
        missing = [str(p) for p in given if not p.is_file()]
        if missing:
            raise UsageFailure("no such solution file: " + ", ".join(missing))
        paths = list(given)
    else:
        paths = discover_solutions(challenge, root)
        if not paths:
            raise UsageFailure(f"no solutions found for {challenge.name}")
    return [Item(challenge.name, Path(label_of(p, root))) for p in paths]


solution_paths = click.argument("solutions", nargs=-1, type=click.Path(path_type=Path))


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@timing_options
@library_errors
def run(name: str, solutions: tuple[Path, ...], **settings: Any) -> None:
    """Check and time solutions of NAME: the given files, or every file in
    solutions/NAME/ plus reference/NAME.cu. Prints a leaderboard; the
    reference is timed in the same run as the baseline."""
    challenge = load_challenge(name)
    _grade_and_report(_items_for(challenge, solutions), check=True, time=True, baselines=True, **settings)


@cli.command()
@click.argument("name")
@solution_paths
@evaluation_options
@library_errors
def check(name: str, solutions: tuple[Path, ...], **settings: Any) -> None:
    """Correctness only: the example and functional tests."""
    challenge = load_challenge(name)
    _grade_and_report(_items_for(challenge, solutions), check=True, time=False, baselines=False, **settings)


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
    _grade_and_report(_items_for(challenge, solutions), check=False, time=True, baselines=not no_baseline, **settings)


@cli.command("grade")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--challenge", "challenge_name", default=None, help="Grade every PATH against this challenge (default: each solution's folder name).")
@click.option("--gpus", default=None, help="GPUs to grade on, one worker each: 'all' or indices like 0,1.")
@click.option("--shard", "shard_text", default=None, help="K/N: grade only the K-th of N deterministic parts (merge the reports with `harness merge`).")
@click.option("--report", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write the versioned JSON report here.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Write JUnit XML here.")
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
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True, help="Where to write the merged report.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Also write JUnit XML of the merged report.")
@library_errors
def merge(reports: tuple[Path, ...], output: Path, junit_path: Path | None) -> None:
    """Merge the reports of `grade --shard K/N` runs into one."""
    merged = document.merge([document.load(p) for p in reports])
    output.write_text(json.dumps(merged, indent=2) + "\n")
    if junit_path:
        junit_path.write_text(junit_xml(merged))
    stderr.print(f"merged {len(reports)} reports, {len(merged['results'])} results: {output}")
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
            status = f"[red]{change.status}[/red]" if change in bad else change.status
            table.add_row(
                change.key, status,
                format_time(change.base_median_s) if change.base_median_s else "-",
                format_time(change.new_median_s) if change.new_median_s else "-",
                f"{rel * 100:+.1f}%" if rel is not None else "-",
                f"{change.noise * 100:.1f}%" if change.noise is not None else "-",
            )
        stdout.print(table)
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
    table = Table("when (UTC)", "command", "challenge", "solution", "sha256", "status", "median", "cv", "vs ref", "gpu", "")
    for e in entries:
        table.add_row(
            e.recorded_at.replace("T", " ").replace("+00:00", ""), e.command, e.challenge, e.solution,
            (e.solution_sha256 or "")[:8], "PASS" if e.passed else (e.reason or "FAIL"),
            format_time(e.median_s) if e.median_s else "-", f"{e.cv * 100:.1f}%" if e.cv is not None else "-",
            f"{e.speedup:.3g}x" if e.speedup else "-", e.gpu or e.backend, "*" if e.id in fastest else "",
        )
    stdout.print(table)


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
@click.option("--output", "-o", "report_path", type=click.Path(dir_okay=False, path_type=Path), default=None, help="Where to keep the Nsight Compute report (default: SOLUTION's name with .ncu-rep, in the current directory).")
@click.option("--arch", default=None, help="nvcc target, e.g. sm_90 (default: read from the GPU).")
@click.option("--nvcc-flags", default="-O3", show_default=True, help="Flags passed to nvcc, space separated.")
@click.option("--gpu", type=int, default=0, show_default=True, help="Index of the GPU to run on.")
@click.option("--timeout", "timeout_s", type=float, default=600.0, show_default=True, help="Seconds ncu may take in all.")
@json_option
@library_errors
def profile_command(name: str, solution: Path, report_path: Path | None, arch: str | None, nvcc_flags: str, gpu: int, timeout_s: float, as_json: bool) -> None:
    """Profile SOLUTION's performance-size call under Nsight Compute (after
    one verified warm-up): per kernel its duration, memory and SM throughput
    (% of peak), achieved occupancy, registers and shared memory per block,
    top stall reasons, and the distance from the challenge's floor."""
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
    stdout.print(f"{result.challenge}: {result.solution} on {result.device}", markup=False)
    stdout.print(table)
    if result.floor_s:
        stdout.print(
            f"kernels {format_time(result.kernel_time_s)} in all; floor {format_time(result.floor_s)} "
            f"({result.bytes_moved / 1e6:.1f} MB at the {result.copy_bandwidth_bytes_per_s / 1e12:.2f} TB/s copy bandwidth "
            f"measured in the same process): {result.times_floor:.2f}x the floor",
            markup=False,
        )
    stdout.print(f"Nsight Compute report: {result.report_path} (open with ncu-ui); raw CSV: {result.csv_path}", markup=False)

def main() -> None:
    cli()
