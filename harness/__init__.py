"""harness: compile, validate and time GPU kernel challenge solutions."""

__version__ = "0.1.0"
