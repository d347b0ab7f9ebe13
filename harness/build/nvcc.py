"""Compile CUDA C solutions into shared libraries with nvcc, cached.

The library is keyed by the source, the flags, the nvcc version and the
target architecture, so an edit, a new toolkit or another GPU rebuilds and
nothing else does.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..lifecycle import run_process
from ..errors import CompileError, MissingSymbol, ToolNotFound

SHIM = Path(__file__).with_name("shim.cu")
DEFAULT_FLAGS = ("-O3",)
COMPILE_TIMEOUT_S = 300

# nvcc front end: "file.cu(12): error: ..."; host compiler: "file.cu:12:5: error: ..."
_NVCC_DIAG = re.compile(r"^(?P<file>[^\s:()][^:()]*)\((?P<line>\d+)\): (?P<msg>(?:catastrophic error|error|warning).*)$")
_GCC_DIAG = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?P<msg>(?:error|fatal error|warning).*)$")


@dataclass(frozen=True)
class Toolchain:
    nvcc: Path
    version: str  # e.g. "13.0.88"


def find_nvcc() -> Path:
    """nvcc from PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, or the PyPI nvcc wheel
    (nvidia-cuda-nvcc), in that order."""
    candidates: list[str | None] = [shutil.which("nvcc")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for site in sys.path:
        candidates.extend(sorted(glob.glob(os.path.join(site, "nvidia", "*", "bin", "nvcc"))))
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    raise ToolNotFound(
        "nvcc not found: looked on PATH, in $CUDA_HOME/bin, /usr/local/cuda/bin and the "
        "nvidia-cuda-nvcc wheel; install the CUDA toolkit or `pip install nvidia-cuda-nvcc`"
    )


@lru_cache(maxsize=1)
def toolchain() -> Toolchain:
    nvcc = find_nvcc()
    out = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, check=False).stdout
    match = re.search(r"V(\d+\.\d+\.\d+)", out)
    return Toolchain(nvcc=nvcc, version=match.group(1) if match else out.strip().splitlines()[-1])


# The target when no GPU says otherwise (emu's compile check, a build without a
# GPU): Hopper with its architecture-specific instructions (wgmma).
HOPPER_ARCH = "sm_90a"


def arch_flags(arch: str) -> list[str]:
    """nvcc's target flags for `arch` ("sm_90", or "sm_90a" for Hopper's
    architecture-specific instructions such as wgmma). An "a" target is built
    for itself alone: nvcc 13's -arch=sm_90a also emits compute_90 PTX, which
    ptxas rejects for those instructions."""
    if arch.endswith("a"):
        return [f"-gencode=arch=compute_{arch[3:]},code={arch}"]
    return [f"-arch={arch}"]


def compile_command(nvcc: Path, sources: list[Path], output: Path, arch: str, flags: tuple[str, ...]) -> list[str]:
    """The nvcc command line for a solution library. `arch` is e.g. "sm_90"."""
    return [
        str(nvcc),
        *flags,
        *arch_flags(arch),
        "-shared",
        "-Xcompiler",
        "-fPIC",
        "-o",
        str(output),
        *(str(s) for s in sources),
    ]


def parse_diagnostics(text: str) -> list[str]:
    """Compiler messages as "file:line: message", in the order printed."""
    found = []
    for line in text.splitlines():
        match = _NVCC_DIAG.match(line.strip()) or _GCC_DIAG.match(line.strip())
        if match:
            found.append(f"{match['file']}:{match['line']}: {match['msg']}")
    return found


def run_compiler(command: list[str], source: Path, cwd: Path | None = None) -> tuple[bool, str]:
    """Run a compiler on `source`: whether it succeeded, and its messages.
    One that outlives COMPILE_TIMEOUT_S is a CompileError."""
    try:
        done = run_process(command, COMPILE_TIMEOUT_S, cwd=cwd)  # killed if the run is cancelled
    except subprocess.TimeoutExpired:
        tool = Path(command[0]).name
        raise CompileError(f"{tool} did not finish within {COMPILE_TIMEOUT_S} s on {source.name}") from None
    return done.returncode == 0, (done.stderr + done.stdout).strip()


def error_diagnostics(text: str) -> list[str]:
    """Only the errors among the compiler's messages, as "file:line: message"."""
    return [d for d in parse_diagnostics(text) if "error" in d.split(": ", 1)[1].split(":", 1)[0]]


def build_key(source_text: bytes, flags: tuple[str, ...], arch: str, version: str) -> str:
    digest = hashlib.sha256()
    for part in (source_text, SHIM.read_bytes(), " ".join(flags).encode(), arch.encode(), version.encode()):
        digest.update(part)
        digest.update(b"\0")
    return digest.hexdigest()[:24]


def build_library(source: Path, cache: Path, arch: str, flags: tuple[str, ...] = DEFAULT_FLAGS) -> Path:
    """Compile `source` with the shim into a cached shared library and return its path."""
    tools = toolchain()
    key = build_key(source.read_bytes(), flags, arch, tools.version)
    library = cache / "build" / key / "solution.so"
    if library.exists():
        return library
    library.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=library.parent) as scratch:
        partial = Path(scratch) / "solution.so"
        command = compile_command(tools.nvcc, [source.resolve(), SHIM], partial, arch, flags)
        succeeded, log = run_compiler(command, source)
        if not succeeded:
            diagnostics = error_diagnostics(log)
            summary = diagnostics[0] if diagnostics else (log.splitlines() or ["nvcc failed"])[-1]
            raise CompileError(summary, diagnostics or log.splitlines()[-20:])
        _require_solve_symbol(partial)
        partial.replace(library)
    return library


def _require_solve_symbol(library: Path) -> None:
    nm = shutil.which("nm")
    if nm is None:
        return  # the child process reports a missing symbol when it loads the library
    out = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True, check=False)
    symbols = {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}
    if "solve" not in symbols:
        mangled = sorted(s for s in symbols if "5solve" in s)
        hint = f' (found C++-mangled {mangled[0]}: declare it extern "C")' if mangled else ""
        raise MissingSymbol(f"the library exports no `solve` symbol{hint}")
