"""A report document as one self-contained HTML file: leaderboards, per-test
verdicts, the environment and plots, for sharing a result or opening a CI
artifact. Plots are drawn by matplotlib as SVG and embedded inline, with text
left as text (the browser's own fonts), so the file needs no network and no
other file to open.

Input is the JSON report (schema/report-v1.schema.json), plus optionally each
challenge's cost model at its performance size (flops and bytes, which the
report does not carry) for the roofline-style plot.
"""

from __future__ import annotations

import html
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ChallengeError, ToolNotFound
from .report import format_time

INSTALL_HINT = "the HTML report needs matplotlib: pip install 'harness[report]' (make install does)"
FIGURE_WIDTH_IN = 9.0
ROW_HEIGHT_IN = 0.42  # per solution in the horizontal plots
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
FLOOR_COLOUR = "#d62728"
REFERENCE_COLOUR = "#2ca02c"


@dataclass(frozen=True)
class Timed:
    """One timed result, as the plots need it."""

    label: str
    samples_s: list[float]
    median_s: float
    minimum_s: float
    maximum_s: float
    q1_s: float
    q3_s: float
    bytes_per_s: float | None
    is_reference: bool


def require_matplotlib() -> None:
    """Fail before a long run, not after it, when plots cannot be drawn."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ToolNotFound(INSTALL_HINT) from None


def challenge_costs(report: dict[str, Any], root: Path) -> dict[str, dict[str, float]]:
    """flops and bytes of each reported challenge at its performance size,
    from the challenge folders (a challenge not found, or without a flop
    model, is left out: its roofline point is not drawn)."""
    from .challenge import load_challenge

    costs = {}
    for name in report["challenges"]:
        try:
            challenge = load_challenge(name, root)
        except ChallengeError:
            continue
        performance = challenge.tests_of("performance")
        if not performance:
            continue
        flops = challenge.cost_of("flops", performance[0].sizes)
        moved = challenge.cost_of("bytes", performance[0].sizes)
        if flops and moved:
            costs[name] = {"flops": flops, "bytes": moved}
    return costs


def write(report: dict[str, Any], path: Path, costs: dict[str, dict[str, float]] | None = None) -> None:
    path.write_text(render(report, costs), encoding="utf-8")


def render(report: dict[str, Any], costs: dict[str, dict[str, float]] | None = None) -> str:
    """The whole page."""
    require_matplotlib()
    costs = costs or {}
    passed = sum(r["passed"] for r in report["results"])
    body = [
        "<h1>harness report</h1>",
        f"<p class='summary'>{_e(report['created'])} &middot; harness {_e(report['harness_version'])} &middot; "
        f"{passed} of {len(report['results'])} results passed &middot; "
        f"<span class='{'pass' if report['passed'] else 'fail'}'>{'PASSED' if report['passed'] else 'FAILED'}</span></p>",
    ]
    for name in sorted({r["challenge"] for r in report["results"]}):
        records = [r for r in report["results"] if r["challenge"] == name]
        body.append(_challenge_section(name, records, report["challenges"].get(name, {})))
    roofline = _roofline_section(report, costs)
    if roofline:
        body.append(roofline)
    body.append(_environment_section(report["environments"]))
    return PAGE.format(title=_e(f"harness report {report['created']}"), style=STYLE, body="\n".join(body))


def _challenge_section(name: str, records: list[dict[str, Any]], challenge: dict[str, Any]) -> str:
    timed = _timed(records)
    parts = [f"<section class='challenge' id='challenge-{_e(name)}'>", f"<h2>{_e(name)}</h2>", _leaderboard(records)]
    if timed:
        floor = _floor_s(records)
        reference = next((t.median_s for t in timed if t.is_reference), None)
        parts.append(_figure(f"{name}-medians", "Median GPU time per call, whiskers from the fastest to the slowest sample, box from the first to the third quartile, against the memory floor (byte model over the measured copy bandwidth) and the reference", _medians_plot(timed, floor, reference)))
        parts.append(_figure(f"{name}-samples", "Every timed sample of each solution", _samples_plot(timed, floor)))
        copy_bw = _copy_bandwidth(records)
        if copy_bw and any(t.bytes_per_s for t in timed):
            parts.append(_figure(f"{name}-bandwidth", "Achieved bandwidth (byte model over the median) against the device-to-device copy bandwidth measured in the same run", _bandwidth_plot(timed, copy_bw)))
    else:
        parts.append("<p class='note'>No timings in this report (correctness only, or the emu backend): no plots.</p>")
    parts.append(_verdicts(records, challenge))
    parts.append("</section>")
    return "\n".join(parts)


def _timed(records: list[dict[str, Any]]) -> list[Timed]:
    """Passing timed results, fastest first, with labels unique in the plots."""
    import numpy as np

    gpus = {r["gpu"] for r in records if r["timing"]}
    rows, seen = [], {}
    for record in records:
        timing = record["timing"]
        if not record["passed"] or not timing or not timing["gpu_time_s"]:
            continue
        samples = timing["gpu_time_s"]
        label = record["solution"] + (f" [gpu {record['gpu']}]" if len(gpus) > 1 else "")
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label += f" #{seen[label]}"
        q1, q3 = np.percentile(samples, [25, 75])
        summary = timing["summary_gpu_time_s"]  # document.result_record's statistics of the same samples
        rows.append(Timed(label, samples, summary["median"], summary["minimum"], summary["maximum"], float(q1), float(q3), timing.get("bytes_per_s"), record["is_reference"]))
    return sorted(rows, key=lambda t: t.median_s)


def _floor_s(records: list[dict[str, Any]]) -> float | None:
    for record in records:
        timing = record["timing"]
        if timing and timing["bytes_moved"] and timing["copy_bandwidth_bytes_per_s"]:
            return timing["bytes_moved"] / timing["copy_bandwidth_bytes_per_s"]
    return None


def _copy_bandwidth(records: list[dict[str, Any]]) -> float | None:
    rates = sorted(r["timing"]["copy_bandwidth_bytes_per_s"] for r in records if r["timing"] and r["timing"]["copy_bandwidth_bytes_per_s"])
    return rates[len(rates) // 2] if rates else None


def _time_axis(axes: Any, values: list[float]) -> None:
    """Log-scaled seconds where the times span decades, labelled in us, ms or s."""
    from matplotlib.ticker import FuncFormatter

    from matplotlib.ticker import NullFormatter

    if max(values) / min(values) > 20:
        axes.set_xscale("log")
        axes.xaxis.set_minor_formatter(NullFormatter())
    axes.xaxis.set_major_formatter(FuncFormatter(lambda x, _: format_time(x)))
    axes.margins(x=0.08)
    axes.set_xlabel("GPU time per call")


def _medians_plot(timed: list[Timed], floor: float | None, reference: float | None) -> str:
    figure, axes = _figure_and_axes(len(timed))
    positions = list(range(len(timed)))[::-1]
    for y, t in zip(positions, timed):
        colour = REFERENCE_COLOUR if t.is_reference else PALETTE[0]
        axes.plot([t.minimum_s, t.maximum_s], [y, y], color=colour, linewidth=1)
        axes.plot([t.q1_s, t.q3_s], [y, y], color=colour, linewidth=6, alpha=0.5, solid_capstyle="butt")
        axes.plot([t.median_s], [y], marker="D", color=colour, markersize=6, linestyle="none")
    values = [t.minimum_s for t in timed] + [t.maximum_s for t in timed]
    if floor:
        axes.axvline(floor, color=FLOOR_COLOUR, linestyle="--", label=f"memory floor {format_time(floor)}")
        values.append(floor)
    if reference:
        axes.axvline(reference, color=REFERENCE_COLOUR, linestyle=":", label=f"reference median {format_time(reference)}")
    axes.set_yticks(positions, [t.label for t in timed])
    _time_axis(axes, values)
    axes.legend(loc="lower right", fontsize=8)
    return _svg(figure)


def _samples_plot(timed: list[Timed], floor: float | None) -> str:
    import numpy as np

    figure, axes = _figure_and_axes(len(timed))
    positions = list(range(len(timed)))[::-1]
    rng = np.random.default_rng(0)  # jitter only spreads the dots; fixed so the file is reproducible
    for y, t, colour in zip(positions, timed, _colours(len(timed))):
        jitter = rng.uniform(-0.25, 0.25, len(t.samples_s))
        axes.scatter(t.samples_s, y + jitter, s=8, color=colour, alpha=0.6, linewidths=0)
    axes.boxplot([t.samples_s for t in timed], positions=positions, widths=0.6, showfliers=False, medianprops={"color": "black"}, **_horizontal())
    values = [s for t in timed for s in t.samples_s]
    if floor:
        axes.axvline(floor, color=FLOOR_COLOUR, linestyle="--", label=f"memory floor {format_time(floor)}")
        axes.legend(loc="lower right", fontsize=8)
        values.append(floor)
    axes.set_yticks(positions, [f"{t.label} ({len(t.samples_s)})" for t in timed])
    _time_axis(axes, values)
    return _svg(figure)


def _bandwidth_plot(timed: list[Timed], copy_bandwidth: float) -> str:
    figure, axes = _figure_and_axes(len(timed))
    positions = list(range(len(timed)))[::-1]
    rates = [(t.bytes_per_s or 0) / 1e9 for t in timed]
    axes.barh(positions, rates, color=[REFERENCE_COLOUR if t.is_reference else PALETTE[0] for t in timed])
    for y, rate in zip(positions, rates):
        axes.annotate(f" {rate:.3g} GB/s ({rate * 1e9 / copy_bandwidth:.1%})", (rate, y), va="center", fontsize=8)
    axes.axvline(copy_bandwidth / 1e9, color=FLOOR_COLOUR, linestyle="--", label=f"copy bandwidth {copy_bandwidth / 1e9:.4g} GB/s")
    axes.set_xlim(0, copy_bandwidth / 1e9 * 1.25)
    axes.set_yticks(positions, [t.label for t in timed])
    axes.set_xlabel("achieved GB/s (byte model / median)")
    axes.legend(loc="lower right", fontsize=8)
    return _svg(figure)


def _roofline_section(report: dict[str, Any], costs: dict[str, dict[str, float]]) -> str:
    """Achieved FLOP/s against arithmetic intensity (both from the cost
    models), under the memory roof of the measured copy bandwidth."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import NullFormatter

    points = []
    for name, cost in sorted(costs.items()):
        records = [r for r in report["results"] if r["challenge"] == name]
        copy_bw = _copy_bandwidth(records)
        for t in _timed(records):
            points.append((name, t, cost["flops"] / cost["bytes"], cost["flops"] / t.median_s, copy_bw))
    if not points:
        return ""
    figure = Figure(figsize=(FIGURE_WIDTH_IN, 5.0), layout="constrained")
    axes = figure.add_subplot()
    intensities = [p[2] for p in points]
    low, high = min(intensities) / 8, max(intensities) * 8
    for colour, name in zip(PALETTE, sorted({p[0] for p in points})):
        mine = [p for p in points if p[0] == name]
        axes.scatter([p[2] for p in mine], [p[3] for p in mine], color=colour, label=name, zorder=3)
        for _, t, x, y, _ in mine:
            axes.annotate(" " + t.label.rsplit("/", 1)[-1], (x, y), fontsize=7)
        copy_bw = next((p[4] for p in mine if p[4]), None)
        if copy_bw:
            axes.plot([low, high], [copy_bw * low, copy_bw * high], color=FLOOR_COLOUR, linestyle="--", linewidth=1)
    axes.plot([], [], color=FLOOR_COLOUR, linestyle="--", label="memory roof (copy bandwidth x intensity)")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.set_xlim(low, high)
    axes.set_xlabel("arithmetic intensity (model flops / model bytes)")
    axes.set_ylabel("achieved FLOP/s (model flops / median)")
    axes.legend(fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    caption = "Roofline-style view: each timed solution at its challenge's arithmetic intensity; the dashed line is the memory roof"
    return "<section id='roofline'><h2>Roofline</h2>" + _figure("roofline", caption, _svg(figure)) + "</section>"


def _figure_and_axes(rows: int) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(FIGURE_WIDTH_IN, 1.4 + ROW_HEIGHT_IN * rows), layout="constrained")
    axes = figure.add_subplot()
    axes.grid(True, axis="x", which="both", alpha=0.3)
    axes.set_ylim(-0.7, rows - 0.3)
    return figure, axes


def _horizontal() -> dict[str, Any]:
    """boxplot's keyword for horizontal boxes: `orientation` from matplotlib 3.10, `vert` before."""
    import matplotlib

    major, minor = (int(part) for part in matplotlib.__version__.split(".")[:2])
    return {"orientation": "horizontal"} if (major, minor) >= (3, 10) else {"vert": False}


def _colours(count: int) -> list[str]:
    return [PALETTE[i % len(PALETTE)] for i in range(count)]


def _svg(figure: Any) -> str:
    """The figure as an inline <svg> element: text kept as text, no XML
    prologue, no metadata block, ids salted so that several plots on one page never share one."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"plot{id(figure)}"}):
        figure.savefig(buffer, format="svg", metadata=dict.fromkeys(("Date", "Creator", "Format", "Type")))
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _figure(key: str, caption: str, svg: str) -> str:
    return f"<figure class='plot' id='plot-{_e(key)}'>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


def _leaderboard(records: list[dict[str, Any]]) -> str:
    def order(record: dict[str, Any]) -> tuple[int, float, str]:
        summary = (record["timing"] or {}).get("summary_gpu_time_s")
        if record["passed"] and summary:
            return (0, summary["median"], record["solution"])
        return (1 if record["passed"] else 2, 0.0, record["solution"])

    rows = []
    for rank, record in enumerate(sorted(records, key=order), start=1):
        timing = record["timing"] or {}
        summary = timing.get("summary_gpu_time_s")
        tests = record["tests"]
        status = "PASS" if record["passed"] else (record["reason"] or "FAIL")
        speedup = timing.get("speedup_vs_reference")
        rate = timing.get("bytes_per_s")
        copy_bw = timing.get("copy_bandwidth_bytes_per_s")
        cells = [
            str(rank), _e(record["solution"]) + (" <span class='tag'>reference</span>" if record["is_reference"] else ""),
            f"<span class='{'pass' if record['passed'] else 'fail'}' title='{_e(record['message'])}'>{_e(status)}</span>",
            f"{sum(t['passed'] for t in tests)}/{len(tests)}",
            format_time(summary["median"]) if summary else "-",
            f"{summary['cv'] * 100:.1f}%" if summary else "-",
            format_time(summary["minimum"]) if summary else "-",
            "ref" if record["is_reference"] and speedup else (f"{speedup:.3g}x" if speedup else "-"),
            f"{rate / 1e9:.3g}" if rate else "-",
            f"{rate / copy_bw:.1%}" if rate and copy_bw else "-",
            str(summary["count"]) if summary else "-",
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = "".join(f"<th>{h}</th>" for h in ("#", "solution", "status", "tests", "median", "cv", "min", "vs ref", "GB/s", "% copy BW", "samples"))
    messages = [
        f"<li><b>{_e(r['solution'])}</b>: {_e(r['reason_text'] or r['reason'] or '')}<pre>{_e(r['message'])}</pre></li>"
        for r in records if not r["passed"]
    ]
    failures = f"<details open><summary>failures</summary><ul class='failures'>{''.join(messages)}</ul></details>" if messages else ""
    return f"<table class='leaderboard'><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>{failures}"


def _verdicts(records: list[dict[str, Any]], challenge: dict[str, Any]) -> str:
    """A grid of solutions by tests; each cell's title has the test's message."""
    names = [t["name"] for t in challenge.get("tests", [])]
    for record in records:
        names += [t["name"] for t in record["tests"] if t["name"] not in names]
    header = "<th>solution</th>" + "".join(f"<th class='test'>{_e(n)}</th>" for n in names)
    rows = []
    for record in sorted(records, key=lambda r: r["solution"]):
        by_name = {t["name"]: t for t in record["tests"]}
        cells = []
        for name in names:
            test = by_name.get(name)
            if test is None:
                cells.append("<td class='skip'>-</td>")
            elif test["passed"]:
                cells.append(f"<td class='pass' title='{_e(_comparison_text(test))}'>pass</td>")
            else:
                cells.append(f"<td class='fail' title='{_e(test['message'])}'>{_e(test['reason'] or 'fail')}</td>")
        rows.append(f"<tr><td>{_e(record['solution'])}</td>{''.join(cells)}</tr>")
    return f"<h3>Per-test verdicts</h3><div class='scroll'><table class='verdicts'><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"


def _comparison_text(test: dict[str, Any]) -> str:
    parts = [f"{c['output']}: worst |err|/tolerance {c['worst_ratio']:.3g}" for c in test["comparisons"] if c.get("worst_ratio") is not None]
    return "; ".join(parts) or "passed"


def _environment_section(environments: list[dict[str, Any]]) -> str:
    rows = []
    for env in environments:
        gpus = "<br>".join(_e(", ".join(f"{k} {v}" for k, v in gpu.items())) for gpu in env["gpus"]) or "-"
        nvcc = env["nvcc"]
        nvcc_text = f"{nvcc['version']} {' '.join(nvcc['flags'])} arch {nvcc['arch'] or 'from the device'}" if nvcc else "-"
        rows.append(f"<tr><td>{_e(env['backend'])}</td><td>{gpus}</td><td>{_e(nvcc_text)}</td><td>{_e(env['python'])}</td><td>{_e(env['platform'])}</td></tr>")
    header = "".join(f"<th>{h}</th>" for h in ("backend", "GPUs", "nvcc", "python", "platform"))
    return f"<section id='environment'><h2>Environment</h2><table><thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def external_references(page: str) -> list[str]:
    """Anything the page would fetch: src/href to another file or host,
    url(...) and @import in styles. Empty for a self-contained page (SVG
    namespace declarations are names, not fetches)."""
    found = re.findall(r"""(?:src|href)\s*=\s*["']([^"'#][^"']*)["']""", page)
    found += re.findall(r"url\(\s*['\"]?([^)'\"#][^)'\"]*)", page)
    found += re.findall(r"@import[^;]*", page)
    return found


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
.leaderboard td:nth-child(n+4) { text-align: right; font-variant-numeric: tabular-nums; }
.pass { color: #1a7f37; font-weight: 600; }
.fail { color: #cf222e; font-weight: 600; }
td.pass { background: #e6f4ea; font-weight: normal; }
td.fail { background: #fde7e9; font-weight: normal; }
td.skip { color: #999; }
th.test { writing-mode: vertical-rl; transform: rotate(180deg); font-weight: normal; }
.tag { font-size: 0.75em; background: #e8f0fe; padding: 0 0.3em; border-radius: 3px; }
.scroll { overflow-x: auto; }
figure.plot { margin: 1em 0; }
figure.plot svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.85em; color: #555; }
pre { white-space: pre-wrap; font-size: 0.85em; }
"""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
{body}
</body>
</html>
"""
