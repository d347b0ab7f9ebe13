"""Grading many solutions across challenges: which solution belongs to which
challenge, which shard runs what, and which baselines run beside them
(evaluation.py runs the items)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .challenge import challenge_names, load_challenge
from .discovery import SOLUTION_SUFFIXES, label_of, reference_solution
from .errors import ChallengeError, HarnessError


@dataclass(frozen=True)
class Item:
    """One solution to grade, and whether it is only there as the baseline."""

    challenge: str
    path: Path  # absolute: resolved against the working directory where it was given
    label: str  # as reports show it: relative to the repository root inside it, else as given
    baseline: bool = False

    @classmethod
    def of(cls, challenge: str, given: Path, root: Path, baseline: bool = False) -> Item:
        return cls(challenge, given.absolute(), label_of(given, root), baseline)

    @property
    def key(self) -> str:
        return f"{self.challenge}/{self.label}"


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            raise HarnessError(f"--shard takes K/N, e.g. 2/4, not {text!r}") from None
        if not 1 <= index <= count:
            raise HarnessError(f"--shard {text}: K must be between 1 and N")
        return cls(index, count)


def collect(paths: list[Path], root: Path, challenge: str | None = None) -> list[Item]:
    """Solution files under `paths` (files or folders, searched recursively).
    A solution's challenge is its parent folder's name unless `challenge` is given."""
    known = set(challenge_names(root))
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if p.suffix in SOLUTION_SUFFIXES and p.is_file()))
        elif path.is_file():
            files.append(path)
        else:
            raise HarnessError(f"no such file or folder: {path}")
    items = []
    for file in files:
        name = challenge or file.parent.name
        if name not in known:
            raise ChallengeError(f"{file}: its folder names no challenge ({name!r}); pass --challenge NAME")
        items.append(Item.of(name, file, root))
    return sorted(set(items), key=lambda item: item.key)


def shard_of(items: list[Item], shard: Shard | None) -> list[Item]:
    """Deterministic split: the i-th item of the sorted list goes to shard i mod N."""
    if shard is None:
        return items
    ordered = sorted(items, key=lambda item: item.key)
    return [item for i, item in enumerate(ordered) if i % shard.count == shard.index - 1]


def with_baselines(items: list[Item], root: Path) -> list[Item]:
    """Each challenge's reference solution, timed beside its solutions (unless listed already)."""
    listed = {(item.challenge, item.path.resolve()) for item in items}
    extra = []
    for name in sorted({item.challenge for item in items}):
        reference = reference_solution(load_challenge(name, root), root)
        if reference.is_file() and (name, reference.resolve()) not in listed:
            extra.append(Item.of(name, reference, root, baseline=True))
    return items + extra
