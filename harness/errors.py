"""Typed errors of the library and the exit codes the CLI maps them to."""

from __future__ import annotations

import enum


class TextEnum(str, enum.Enum):
    """A closed set of names that reads and serialises as its plain text."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    def __hash__(self) -> int:  # equal to its text, so it finds (and is found by) the plain string in a dict
        return str.__hash__(self)


class ExitCode(enum.IntEnum):
    """Exit status of every `harness` command."""

    OK = 0  # everything asked for passed
    FAILED = 1  # at least one solution or test failed
    USAGE = 2  # bad arguments, missing tools or hardware, broken challenge
    INTERNAL_ERROR = 3  # a bug of the harness itself (its traceback is saved to a file)
    INTERRUPTED = 130  # Ctrl-C (SIGTERM and SIGHUP exit 128 + their number, as shells do)


class HarnessError(Exception):
    """Base of every error the CLI turns into one line and ExitCode.USAGE."""


class ChallengeError(HarnessError):
    """A challenge folder is missing a file or its metadata is inconsistent."""


class ToolNotFound(HarnessError):
    """A required tool (nvcc, g++, a GPU) is not available."""


class SolutionError(HarnessError):
    """A solution cannot be run; `reason` is its verdict category."""

    reason = "error"


class CompileError(SolutionError):
    """The compiler rejected the source. `diagnostics` holds file:line messages."""

    reason = "compile_error"

    def __init__(self, message: str, diagnostics: list[str] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


class MissingSymbol(SolutionError):
    reason = "missing_symbol"


class SignatureMismatch(SolutionError):
    reason = "signature_mismatch"


class UnsupportedFeature(SolutionError):
    """The solution uses something the selected backend cannot execute."""

    reason = "unsupported"
