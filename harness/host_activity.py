"""Host work that outlives solve(): threads and child processes a call leaves running.

The timer and the checks see the GPU stream and the outputs; a thread or a
child process still running when solve() returns can launch work the timer
never sees, or finish the outputs after the harness has looked. The rule is
simple and exact: no thread or child process of this process may exist when
solve() returns that did not exist when it was called. (Measured on an H200:
the CUDA runtime starts its threads when the context is created, before any
call; correct solutions leave the thread list unchanged.)

Threads are counted by the preloaded thread_watch library where the worker
has it: a /proc snapshot taken after the return misses a detached thread
that launches its kernel just after solve() returns and exits before the
harness looks (seen on an H200: such a file got through every correctness
test). Child processes, and threads where the library is missing (no C
compiler, or under a sanitizer), come from /proc.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path

TASKS = Path("/proc/self/task")


@dataclass(frozen=True)
class HostActivity:
    """The threads and child processes of this process at one moment."""

    threads: frozenset[int]
    children: frozenset[int]

    def escaped_since(self, before: HostActivity, unfinished_threads: int | None = None) -> str | None:
        """What was started since `before` and is still alive, in words; None if
        nothing. `unfinished_threads`, where the thread watch counted them,
        replaces the threads this snapshot sees."""
        threads = sorted(self.threads - before.threads)
        children = sorted(self.children - before.children)
        parts = []
        if unfinished_threads:
            named = f" ({describe_threads(threads)})" if threads else ""
            parts.append(f"{unfinished_threads} thread(s){named}")
        elif threads and unfinished_threads is None:
            parts.append(f"{len(threads)} thread(s) ({describe_threads(threads)})")
        if children:
            parts.append(f"{len(children)} child process(es) (pid {', '.join(map(str, children))})")
        if not parts:
            return None
        return (
            " and ".join(parts)
            + " started by solve() still running when it returned: every thread must be joined and every"
            " child waited for before solve() returns (work left on them escapes the timer and the checks)"
        )


class WatchedCall:
    """One call of solve(), watched. Made before the call (the /proc snapshot,
    which takes a while, stays off any timer); `started()` right before it
    and `returned()` right when it returns (both a few atomic operations, so
    that a thread still in its routine at the return is counted);
    `escaped()` whenever convenient afterwards."""

    def __init__(self) -> None:
        self.before = snapshot()
        self.unfinished: int | None = None

    def started(self) -> None:
        if _WATCH:
            _WATCH.harness_watch_threads()

    def returned(self) -> None:
        if _WATCH:
            self.unfinished = _WATCH.harness_unfinished_threads()

    def escaped(self) -> str | None:
        return snapshot().escaped_since(self.before, self.unfinished)


def _thread_watch() -> ctypes.CDLL | None:
    """The preloaded thread_watch library's functions, if this process has them."""
    process = ctypes.CDLL(None)
    try:
        process.harness_unfinished_threads.restype = ctypes.c_long
        process.harness_watch_threads.restype = None
    except AttributeError:
        return None
    return process


_WATCH = _thread_watch()


def snapshot() -> HostActivity:
    """Threads and children that are still running now (Linux /proc); empty
    where /proc is missing. A thread that is exiting is not running: a joined
    thread's entry can outlive pthread_join by a moment, since the kernel wakes
    the joiner before it removes the thread; so can an exited, unreaped child."""
    if not TASKS.is_dir():
        return HostActivity(frozenset(), frozenset())
    threads, children = set(), set()
    for task in os.listdir(TASKS):
        if _running(TASKS / task / "stat"):
            threads.add(int(task))
        try:
            pids = (TASKS / task / "children").read_text().split()
        except OSError:  # the thread ended while we looked, or no CONFIG_PROC_CHILDREN
            continue
        children.update(int(pid) for pid in pids if _running(Path("/proc") / pid / "stat"))
    return HostActivity(frozenset(threads), frozenset(children))


PF_EXITING = 0x4  # the kernel's task flag for a task inside do_exit()


def _running(stat: Path) -> bool:
    """Whether the task of this /proc stat file exists and is neither exiting nor a zombie."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()  # after "pid (comm)": state, ppid, ...
    except (OSError, IndexError):
        return False
    state, flags = fields[0], int(fields[6])  # stat fields 3 and 9
    return state not in ("Z", "X") and not flags & PF_EXITING


def describe_threads(tids: list[int]) -> str:
    names = []
    for tid in tids[:4]:
        try:
            names.append(f"tid {tid} '{(TASKS / str(tid) / 'comm').read_text().strip()}'")
        except OSError:
            names.append(f"tid {tid}")
    return ", ".join(names) + (", ..." if len(tids) > 4 else "")
