"""Build a CUDA solution into a shared library that runs on the CPU.

Steps: (1) if nvcc is installed, compile the .cu's device code for sm_90a (its
front end checks the host code too) so that code a GPU
compiler rejects is rejected here too; (2) translate it (translate.py);
(3) compile the translation with g++ and the runtime header force-included
(precompiled once per cache). Libraries are cached by a hash of everything
that affects them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from ...build import nvcc as nvcc_tools
from ...build.nvcc import error_diagnostics, run_compiler
from ...errors import CompileError, ToolNotFound
from .translate import translate

RUNTIME_DIR = Path(__file__).parent / "runtime"
RUNTIME_HEADER = RUNTIME_DIR / "emu_cuda.h"
SHIM_INCLUDE_DIR = RUNTIME_DIR / "include"

CXX_FLAGS = [
    "-std=c++17", "-O2", "-fPIC", "-shared",
    "-fno-strict-aliasing",  # solutions pun float/int/float4 through pointers
    "-fno-threadsafe-statics",  # __shared__ statics: one host thread runs blocks
    "-fmax-errors=30",
]
SANITIZE_FLAGS = ["-fsanitize=address", "-fno-omit-frame-pointer", "-g", "-O1"]
STALE_RUNTIME_S = 7 * 24 * 3600  # a precompiled runtime unused for this long is removed



def find_cxx() -> str:
    cxx = os.environ.get("HARNESS_EMU_CXX") or shutil.which("g++")
    if not cxx:
        raise ToolNotFound("the emu backend needs g++ (apt install g++)")
    return cxx


def find_nvcc() -> str | None:
    """The harness's nvcc, or None: without one the GPU compiler's check is skipped."""
    try:
        return str(nvcc_tools.find_nvcc())
    except ToolNotFound:
        return None


@functools.lru_cache(maxsize=None)
def _tool_version(tool: str) -> str:
    try:
        return subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _runtime_digest() -> str:
    h = hashlib.sha256()
    files = sorted(RUNTIME_DIR.rglob("*.h")) + [Path(__file__), Path(__file__).parent / "translate.py"]
    for f in files:
        h.update(str(f.relative_to(Path(__file__).parent)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def cache_key(source_text: str, cxx: str, sanitize: bool) -> str:
    return _digest(source_text, _runtime_digest(), _tool_version(cxx), str(sanitize), " ".join(CXX_FLAGS))


def nvcc_check(source: Path, nvcc: str) -> None:
    """Reject what the GPU compiler rejects (device and host code). Only the
    device code is compiled (-cubin): nvcc's front end still checks the host
    code, and skipping the host compiler halves the check's time (2.97 s
    against 1.53 s for reference/gemv.cu here), which every emu build pays.
    ptxas still reads and checks all of the PTX (inline asm included) but does
    not optimise it (-O0): 0.41 s against 0.77 s for a small kernel, 11 s
    against 13.5 s for reference/mamba3_scan_backward.cu."""
    with tempfile.TemporaryDirectory(prefix="harness-emu-nvcc-") as tmp:
        cmd = [nvcc, "-cubin", "-Xptxas", "-O0", *nvcc_tools.arch_flags(nvcc_tools.HOPPER_ARCH), "-I", str(source.parent),
               "-o", str(Path(tmp) / "check.cubin"), str(source)]
        succeeded, output = run_compiler(cmd, source, cwd=Path(tmp))
    if not succeeded:
        raise CompileError(f"nvcc rejected {source.name}:\n{output}", error_diagnostics(output))


def drop_stale_runtimes(cache_dir: Path) -> None:
    """Removes the precompiled runtimes (42-50 MB each) not used for
    STALE_RUNTIME_S: every change of the runtime or of g++ makes new ones."""
    for folder in cache_dir.glob("emu-runtime-*"):
        try:
            if time.time() - folder.stat().st_mtime > STALE_RUNTIME_S:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # removed meanwhile by another build
            pass


def precompiled_runtime(cxx: str, flags: list[str], cache_dir: Path) -> Path | None:
    """The runtime header precompiled for these flags, made once per cache: the
    path to force-include (a one-line header that includes the runtime, next to
    its .gch, which g++ reads instead of parsing the runtime again: 0.9 s
    against 1.6 s for reference/vector_add.cu here). None when the compiler is
    not GCC (HARNESS_EMU_CXX may name another, whose precompiled headers and
    their errors differ) or cannot make one."""
    if "Free Software Foundation" not in _tool_version(cxx):
        return None
    key = _digest(_runtime_digest(), _tool_version(cxx), " ".join(flags), str(RUNTIME_HEADER))
    folder = cache_dir / f"emu-runtime-{key}"
    header = folder / "emu_runtime.h"
    if (folder / "emu_runtime.h.gch").is_file():
        try:
            os.utime(folder)  # in use: see drop_stale_runtimes
        except OSError:  # removed meanwhile: the build then goes without it
            pass
        return header
    drop_stale_runtimes(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".h.tmp", delete=False) as stub:
        stub.write(f'#include "{RUNTIME_HEADER}"\n')
    os.replace(stub.name, header)  # atomic, like the .gch below: concurrent builds agree
    fd, tmp_gch = tempfile.mkstemp(dir=folder, suffix=".gch.tmp")
    os.close(fd)
    cmd = [cxx, *flags, "-I", str(SHIM_INCLUDE_DIR), "-I", str(RUNTIME_DIR), "-x", "c++-header", str(header), "-o", tmp_gch]
    try:
        made = subprocess.run(cmd, capture_output=True, timeout=300).returncode == 0
        if made:
            os.replace(tmp_gch, folder / "emu_runtime.h.gch")
    except (OSError, subprocess.TimeoutExpired):
        made = False
    finally:
        if os.path.exists(tmp_gch):
            os.unlink(tmp_gch)
    return header if made else None


def build_emu_library(source: Path, cache_dir: Path, *, sanitize: bool = False) -> Path:
    """Translate and compile `source` for the CPU; the path of the cached .so.

    Raises CompileError (diagnostics point at the .cu file), UnsupportedFeature
    and ToolNotFound (no g++). HARNESS_EMU_SKIP_NVCC=1 skips the nvcc check.
    """
    source = Path(source).resolve()
    text = source.read_text(encoding="utf-8", errors="replace")
    cxx = find_cxx()
    key = cache_key(text, cxx, sanitize)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    library = cache_dir / f"{source.stem}-emu{'-asan' if sanitize else ''}-{key}.so"
    if library.is_file():
        return library

    nvcc = None if os.environ.get("HARNESS_EMU_SKIP_NVCC") == "1" else find_nvcc()
    if nvcc:
        nvcc_check(source, nvcc)
    translated = translate(text, str(source))
    cpp = cache_dir / f"{source.stem}-emu-{key}.cpp"
    cpp.write_text(translated, encoding="utf-8")

    fd, tmp_name = tempfile.mkstemp(prefix=library.stem + ".", suffix=".so.tmp", dir=cache_dir)
    os.close(fd)
    flags = [*CXX_FLAGS, *(SANITIZE_FLAGS if sanitize else [])]
    runtime = precompiled_runtime(cxx, flags, cache_dir)

    def compile_with(header: Path) -> tuple[bool, str]:
        return run_compiler([cxx, *flags, "-I", str(SHIM_INCLUDE_DIR), "-I", str(RUNTIME_DIR), "-iquote",
                             str(source.parent), "-include", str(header), "-x", "c++", str(cpp), "-o", tmp_name], source)

    try:
        succeeded, output = compile_with(runtime or RUNTIME_HEADER)
        if not succeeded and runtime:
            # judged again without it: a damaged or vanished .gch is an error to g++,
            # not a miss (then dropped: the next build makes it again), and a
            # solution's own errors read as they do in a plain build
            succeeded, output = compile_with(RUNTIME_HEADER)
            if succeeded:
                shutil.rmtree(runtime.parent, ignore_errors=True)
        if not succeeded:
            raise CompileError(f"g++ (emu) rejected {source.name}:\n{output}", error_diagnostics(output))
        os.replace(tmp_name, library)  # atomic: concurrent builds of one source agree
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
    return library


@functools.lru_cache(maxsize=None)
def _libasan_path(cxx: str) -> str:
    out = subprocess.run([cxx, "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60).stdout.strip()
    return os.path.realpath(out) if out and os.path.isabs(out) else ""


def sanitizer_env() -> dict[str, str]:
    """Environment a child process needs to load a `sanitize=True` library
    through ctypes: the ASan runtime must be the first library loaded, which
    for a Python interpreter means LD_PRELOAD; leak checking is off because
    the interpreter itself "leaks" at exit."""
    lib = _libasan_path(find_cxx())
    if not lib or not os.path.exists(lib):
        raise ToolNotFound("ASan runtime not found (g++ -print-file-name=libasan.so); install libasan")
    return {
        "LD_PRELOAD": lib,
        "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0"
        ":verify_asan_link_order=0:print_summary=1:symbolize=1",
    }
