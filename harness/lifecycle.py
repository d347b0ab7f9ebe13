"""How the harness and its child processes end: together.

- In the harness: SIGINT, SIGTERM and SIGHUP cancel the run (`cancelling`);
  every wait on a child polls the cancellation, kills the child's process
  group and lets the run report what finished. A second Ctrl-C stops at once.
- In a worker (`die_with_parent`): the kernel kills it when its parent dies
  (PR_SET_PDEATHSIG, Linux), and a watchdog thread kills its process group
  when the lifeline pipe from the parent reaches end of file. Neither can be
  blocked by the solution: SIGKILL cannot be caught, and the watchdog runs
  while solve() spins in C code (ctypes releases the GIL around the call).
- Compilers run in their own process group through `run_process`, which
  kills the group on cancellation or timeout.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

POLL_S = 0.05  # how often a wait on a child looks at the cancellation
CANCELLING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1


class Cancelled(Exception):
    """The run was cancelled by a signal while this step was in progress."""


class Cancellation:
    """Set once, by a signal handler (or a test); read by every wait on a child."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal: int | None = None

    def cancel(self, signum: int = signal.SIGINT) -> None:
        if self.signal is None:
            self.signal = signum
        self._event.set()

    @property
    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout_s: float) -> bool:
        return self._event.wait(timeout_s)

    @property
    def exit_status(self) -> int:
        """128 + the signal's number, as a shell reports a process it stopped."""
        return 128 + (self.signal or signal.SIGINT)


_active = Cancellation()  # the run in progress; replaced by each `cancelling` block


def active() -> Cancellation:
    return _active


@contextlib.contextmanager
def cancelling(cancellation: Cancellation | None = None) -> Iterator[Cancellation]:
    """Within the block, SIGINT, SIGTERM and SIGHUP cancel `cancellation`
    (a second SIGINT raises KeyboardInterrupt at once). Signal handlers can
    only be installed from the main thread; elsewhere only the cancellation is set up."""
    global _active
    cancellation = cancellation or Cancellation()
    previous_active, _active = _active, cancellation
    previous: dict[int, object] = {}

    def handler(signum: int, frame: object) -> None:
        if cancellation.is_set and signum == signal.SIGINT:
            raise KeyboardInterrupt
        cancellation.cancel(signum)

    if threading.current_thread() is threading.main_thread():
        for signum in CANCELLING_SIGNALS:
            previous[signum] = signal.signal(signum, handler)
    try:
        yield cancellation
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)  # type: ignore[arg-type]
        _active = previous_active


def kill_group(process: subprocess.Popen[bytes] | subprocess.Popen[str]) -> None:
    """SIGKILL to the child's process group (everything it started), if any is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def run_process(command: list[str], timeout_s: float, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """subprocess.run for tools (compilers), in their own process group, killed
    on cancellation (Cancelled) or past `timeout_s` (subprocess.TimeoutExpired)."""
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout_s
    cancellation = active()
    try:
        while True:
            try:
                out, err = process.communicate(timeout=POLL_S * 4)
                return subprocess.CompletedProcess(command, process.returncode, out, err)
            except subprocess.TimeoutExpired:
                if cancellation.is_set:
                    raise Cancelled from None
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(command, timeout_s) from None
    finally:
        kill_group(process)
        if process.returncode is None:
            process.communicate()


def die_with_parent(lifeline: int) -> None:
    """In a worker: end this process group when the harness ends, however it ends.
    `lifeline` is the read end of a pipe whose write end only the parent holds."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    def watch() -> None:
        with contextlib.suppress(OSError):
            while os.read(lifeline, 4096):
                pass
        os.killpg(os.getpgrp(), signal.SIGKILL)  # end of file: the parent is gone

    threading.Thread(target=watch, name="lifeline", daemon=True).start()
