"""Finding solutions: a challenge's own (solutions/<name>/ and its reference),
and how a solution is named in reports."""

from __future__ import annotations

from pathlib import Path

from .challenge import Challenge

SOLUTION_SUFFIXES = (".cu", ".py")


def discover_solutions(challenge: Challenge, root: Path) -> list[Path]:
    """solutions/<name>/* in name order, then reference/<name>.cu."""
    folder = root / "solutions" / challenge.name
    found = sorted(p for p in folder.glob("*") if p.suffix in SOLUTION_SUFFIXES) if folder.is_dir() else []
    reference = reference_solution(challenge, root)
    return found + ([reference] if reference.is_file() else [])


def reference_solution(challenge: Challenge, root: Path) -> Path:
    return root / "reference" / f"{challenge.name}.cu"


def label_of(path: Path, root: Path) -> str:
    """A solution's name in reports: relative to the repository root where it
    lies inside it, else the path as given."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
