"""emu coexists with the whole C++ standard library: a solution that includes
every C++17 standard header builds on emu and passes its challenge's tests.
The runtime header is force-included before the solution, so any macro it
defines is seen by every standard header too; a clash (as `__noinline__` was,
against libstdc++'s `__attribute__((__noinline__))`) fails this test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.challenge import load_challenge
from harness.evaluation import evaluate_files
from harness.plan import Plan

REPO = Path(__file__).resolve().parents[1]
SOLUTION = REPO / "tests" / "emu_programs" / "scan_with_unique_ptr_scratch.cu"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="the emu backend needs g++")

# The C++17 standard library: its headers and the C compatibility headers
# (deprecated ones included, as C++17 still has them). nvcc 13.0 accepts every
# one in device code's translation unit (`nvcc -std=c++17 -arch=sm_90 -x cu -c`
# of `#include <h>` and an empty kernel, each header alone), so each must build
# on emu too.
CXX17_HEADERS = (
    "algorithm", "any", "array", "atomic", "bitset", "ccomplex", "cctype", "cerrno", "cfenv", "cfloat",
    "charconv", "chrono", "cinttypes", "ciso646", "climits", "clocale", "cmath", "codecvt", "complex",
    "condition_variable", "csetjmp", "csignal", "cstdalign", "cstdarg", "cstdbool", "cstddef", "cstdint",
    "cstdio", "cstdlib", "cstring", "ctgmath", "ctime", "cuchar", "cwchar", "cwctype", "cassert", "deque",
    "exception", "execution", "filesystem", "forward_list", "fstream", "functional", "future",
    "initializer_list", "iomanip", "ios", "iosfwd", "iostream", "istream", "iterator", "limits", "list",
    "locale", "map", "memory", "memory_resource", "mutex", "new", "numeric", "optional", "ostream", "queue",
    "random", "ratio", "regex", "scoped_allocator", "set", "shared_mutex", "sstream", "stack", "stdexcept",
    "streambuf", "string", "string_view", "strstream", "system_error", "thread", "tuple", "type_traits",
    "typeindex", "typeinfo", "unordered_map", "unordered_set", "utility", "valarray", "variant", "vector",
)


def test_a_solution_including_every_standard_header_passes_on_emu(tmp_path: Path) -> None:
    challenge = load_challenge("ssm_selective_scan", REPO)
    solution = tmp_path / "every_standard_header.cu"
    includes = "".join(f"#include <{header}>\n" for header in CXX17_HEADERS)
    solution.write_text(includes + SOLUTION.read_text())

    (result,) = evaluate_files(challenge, [solution], Plan(backend="emu", time=False), REPO)

    assert result.passed, f"{result.reason}: {result.message}"
    assert len(result.tests) == len(challenge.tests_of("example", "functional"))
