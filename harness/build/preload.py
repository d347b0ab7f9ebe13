"""The library preloaded into every worker (thread_watch.c), built once per
cache with the host's C compiler."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

THREAD_WATCH = Path(__file__).with_name("thread_watch.c")


def thread_watch_library(cache: Path) -> Path | None:
    """The built library, or None without a C compiler (the workers then see
    threads through /proc alone, which can miss a thread that ends right after
    solve() returns: see host_activity)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    key = hashlib.sha256(THREAD_WATCH.read_bytes() + compiler.encode()).hexdigest()[:24]
    library = cache / "build" / f"thread-watch-{key}.so"
    if library.exists():
        return library
    library.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=library.parent) as scratch:
        partial = Path(scratch) / library.name
        command = [compiler, "-shared", "-fPIC", "-O2", str(THREAD_WATCH), "-o", str(partial), "-ldl", "-lpthread"]
        if subprocess.run(command, capture_output=True, check=False).returncode != 0:
            return None
        partial.replace(library)
    return library
