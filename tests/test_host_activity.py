"""The host-work check on the CPU: threads and child processes started and left
running are named; joined ones and ones that existed before are not."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from harness.host_activity import HostActivity, snapshot

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_nothing_started_is_nothing_escaped_and_what_ended_is_not_blamed():
    before = HostActivity(frozenset({1, 2, 3}), frozenset({40}))
    assert HostActivity(frozenset({1, 2, 3}), frozenset({40})).escaped_since(before) is None
    assert HostActivity(frozenset({1, 2}), frozenset()).escaped_since(before) is None
    message = HostActivity(frozenset({1, 2, 3, 9}), frozenset({40, 41})).escaped_since(before)
    assert "1 thread(s) (tid 9" in message and "1 child process(es) (pid 41)" in message


def test_a_thread_left_running_is_named_and_a_joined_one_is_not():
    release = threading.Event()
    before = snapshot()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        message = snapshot().escaped_since(before)
        assert message is not None and "1 thread(s)" in message and f"tid {worker.native_id} " in message
    finally:
        release.set()
        worker.join()
    # the test process has threads of its own that come and go: only this one is asserted on
    assert f"tid {worker.native_id} " not in (snapshot().escaped_since(before) or "")


def test_a_thread_from_before_the_call_is_not_blamed():
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        before = snapshot()
        assert f"tid {worker.native_id} " not in (snapshot().escaped_since(before) or "")
    finally:
        release.set()
        worker.join()


def test_a_child_process_left_running_is_named():
    before = snapshot()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        message = snapshot().escaped_since(before)
        assert message is not None and f"pid {child.pid}" in message
    finally:
        child.kill()
        child.wait()
    assert f"pid {child.pid}" not in (snapshot().escaped_since(before) or "")
