"""What bounds reference/mamba3_scan.cu: the reference timed beside copies of
it with one part of its memory traffic or of its work taken away, at the
official size, rounds interleaved. A copy's output is wrong by design (it
computes on whatever its shared memory holds, or drops its stores); its time
says what that part costs the whole kernel, and the copy with every memory
part taken away says how long the block's own work takes with nothing to
wait for. Each patch replaces text of the reference that must be there
exactly as often as the patch says, so a changed reference makes this fail
rather than time something else.

    python3 reference/mamba3_scan_bounds.py [--rounds 2] [--ncu]   (on a machine with a GPU)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE, DRIVER, HELPERS = HERE / "mamba3_scan.cu", HERE / "mamba3_scan_bounds.cu", HERE / "phase_stamps.cuh"


@dataclass(frozen=True)
class Edit:
    old: str
    new: str
    count: int = 1  # occurrences of `old` in the reference


@dataclass(frozen=True)
class Patch:
    what: str  # what the copy no longer does
    edits: tuple[Edit, ...]


def patch(what: str, old: str, new: str, count: int = 1) -> Patch:
    return Patch(what, (Edit(old, new, count),))


PATCHES = {
    "hot_theta": patch(
        "every block loads the angles of one chunk (b 0, h 0, steps 64..127): L2 hits",
        "__ldg(theta + (size_t)row_of(t) * npairs + pair)",
        "__ldg(theta + (size_t)((L + t_begin + i) * H) * npairs + pair)",
    ),
    "hot_stage": patch(
        "every block stages B, C and x of that same chunk: L2 hits",
        "const long long row_prev = (long long)(b * seq_len + t0 - 1) * H + h;",
        "const long long row_prev = (long long)(L - 1) * H;",
    ),
    "no_stage": patch(
        "B, C and x are not staged (dt and lam are): shared memory keeps what the block before left",
        """        stage_rows<L + 1, NP>(wide & WIDE_N, b_rows, [&](int r, int n, long long o, bool ok, int w) {
            copy_w(w, sm + K::OFF_B + r * K::SB + n, ok ? B + o : B, ok);
        });
        stage_rows<L, NP>(wide & WIDE_N, c_rows, [&](int r, int n, long long o, bool ok, int w) {
            copy_w(w, rC + r * K::SB + n, ok ? C + o : C, ok);
        });
        stage_rows<L + 1, PT>(wide & WIDE_P, x_rows, [&](int r, int p, long long o, bool ok, int w) {
            copy_w(w, sm + K::OFF_X + r * K::SX + p, ok ? x + o : x, ok);
        });
""",
        "        (void)b_rows, (void)c_rows, (void)x_rows;\n",
    ),
    "no_wait": patch(
        "the look-back reads the flags once and takes chunk c-1 as inclusive, set or not",
        """                    const bool ready = valid && (st >> 2) == epoch;
                    const unsigned ready_mask = __ballot_sync(0xffffffffu, ready);
                    const unsigned incl_mask = __ballot_sync(0xffffffffu, ready && (st & 3ull) == FLAG_INCLUSIVE);""",
        """                    const bool ready = valid && ((st >> 2) == epoch || st != 1ull);
                    const unsigned ready_mask = __ballot_sync(0xffffffffu, ready);
                    const unsigned incl_mask =
                        __ballot_sync(0xffffffffu, ready && ((st & 3ull) == FLAG_INCLUSIVE || lane == 0));""",
    ),
    "no_y": patch(
        "y is not stored",
        "store_pair(y + (size_t)row_of(t0 + r) * P + p0 + p, v, wide & PAIR_Y, p0 + p + 1 < P);",
        "if (v.x == 12345.f) y[0] = v.y;  // keeps the sums",
    ),
    "no_publish": Patch(
        "the agg, map and inclusive states are not stored (the look-back reads stale ones)",
        (
            Edit("__stcg(reinterpret_cast<float4*>", "keep_alive(reinterpret_cast<float4*>", count=3),
            # the stand-in for __stcg stores only what is never computed, so the values stay live
            Edit(
                "// Four blocks (32 warps) per SM",
                "__device__ __forceinline__ void keep_alive(float4* p, float4 v) {\n"
                "    if (v.x == 12345.f) *p = v;\n"
                "}\n"
                "// Four blocks (32 warps) per SM",
            ),
        ),
    ),
    "no_lookback": patch(
        "no look-back at all: no walk, no inclusive state (G from h_in = 0)",
        "    if (c > 0) {\n",
        "    if (c > 0 && false) {\n",
    ),
    "mma_one": patch(
        "each split product is one TF32 mma (ah bh) instead of three; the lo halves go unused",
        """    mma_tf32(d, al, bh);
    mma_tf32(d, ah, bl);
    mma_tf32(d, ah, bh);""",
        "    mma_tf32(d, ah, bh);",
    ),
    "no_products": patch(
        "no split product at all: the accumulators stay 0, and their fragment loads and splits go too",
        """    mma_tf32(d, al, bh);
    mma_tf32(d, ah, bl);
    mma_tf32(d, ah, bh);""",
        "    (void)d, (void)ah, (void)al, (void)bh, (void)bl;",
    ),
}
MEMORY_FREE = ("hot_theta", "no_stage", "no_wait", "no_y")
IN_BLOCK = MEMORY_FREE + ("no_publish", "no_lookback")
VARIANTS = {
    "base": (),
    "hot_theta": ("hot_theta",),
    "hot_stage": ("hot_theta", "hot_stage"),
    "no_stage": ("hot_theta", "no_stage"),
    "no_wait": ("no_wait",),
    "no_y": ("no_y",),
    "no_publish": ("no_publish",),
    "mma_one": ("mma_one",),
    "memory_free": MEMORY_FREE,
    "memory_free_no_publish": MEMORY_FREE + ("no_publish",),
    "in_block": IN_BLOCK,
    "in_block_mma_one": IN_BLOCK + ("mma_one",),
    "in_block_no_products": IN_BLOCK + ("no_products",),
}
NCU_METRICS = (
    "gpu__time_duration.sum",
    "smsp__inst_executed.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
)


def patched(source: str, patch_names: tuple[str, ...]) -> str:
    """The reference's text with the named patches applied; ValueError if one does not fit it."""
    for name in patch_names:
        for edit in PATCHES[name].edits:
            found = source.count(edit.old)
            if found != edit.count:
                raise ValueError(f"patch {name}: its text is in the reference {found} times, not {edit.count}")
            source = source.replace(edit.old, edit.new)
    return source


def build(name: str, folder: Path) -> Path:
    """The driver built against the variant's copy of the reference, in its own folder."""
    work = folder / name
    work.mkdir()
    (work / REFERENCE.name).write_text(patched(REFERENCE.read_text(), VARIANTS[name]))
    shutil.copy(DRIVER, work)
    shutil.copy(HELPERS, work)
    binary = work / "bounds"
    command = ["nvcc", "-O3", "-arch=sm_90", str(work / DRIVER.name), "-o", str(binary)]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0:
        raise SystemExit(f"variant {name} does not build:\n{built.stderr}")
    return binary


def timed(binary: Path, name: str) -> float:
    """The median of the driver's 80 calls, in us."""
    out = subprocess.run([str(binary), name], check=True, capture_output=True, text=True).stdout.split()
    return float(out[1])


def ncu_line(binary: Path, name: str) -> str:
    command = ["ncu", "-k", "regex:lookback_kernel", "--launch-skip", "5", "--launch-count", "1"]
    command += ["--csv", "--metrics", ",".join(NCU_METRICS), str(binary), name]
    out = subprocess.run(command, capture_output=True, text=True).stdout
    values = {}
    for line in out.splitlines():
        cells = [c.strip('"') for c in line.split('","')]
        if len(cells) > 3 and cells[-3] in NCU_METRICS:
            values[cells[-3]] = f"{cells[-1]} {cells[-2]}"
    return "  ".join(f"{metric.split('.')[0]} {values.get(metric, '?')}" for metric in NCU_METRICS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="times each variant is timed, in turn")
    parser.add_argument("--ncu", action="store_true", help="also each variant's instructions and issue rate")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mamba3-bounds-") as folder:
        with ThreadPoolExecutor() as pool:
            binaries = dict(zip(VARIANTS, pool.map(lambda n: build(n, Path(folder)), VARIANTS)))
        medians: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(args.rounds):
            for name, binary in binaries.items():
                medians[name].append(timed(binary, name))
        base = statistics.median(medians["base"])
        print(f"{'variant':24} {'median us':>9} {'vs base':>8}  rounds' medians  (what it no longer does)")
        for name, values in medians.items():
            median = statistics.median(values)
            rounds = " ".join(f"{v:.1f}" for v in values)
            print(f"{name:24} {median:9.1f} {median - base:+8.1f}  {rounds}  ({'; '.join(VARIANTS[name]) or '-'})")
            if args.ncu:
                print(f"{'':24} {ncu_line(binaries[name], name)}")
        for name, variant_patch in PATCHES.items():
            print(f"  {name}: {variant_patch.what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
