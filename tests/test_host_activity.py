"""The host-work check on the CPU: threads and child processes started and left
running are named; joined ones and ones that existed before are not."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from harness.host_activity import snapshot

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_nothing_started_is_nothing_escaped():
    before = snapshot()
    assert snapshot().escaped_since(before) is None


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
    assert snapshot().escaped_since(before) is None


def test_a_thread_from_before_the_call_is_not_blamed():
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        before = snapshot()
        assert snapshot().escaped_since(before) is None
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
    assert snapshot().escaped_since(before) is None
