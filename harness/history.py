"""The local history of results: every check, bench, run and grade appends
its results to a SQLite file, so `harness list` can show what was solved and
the best times, and `harness history` how a solution improved.

History is a convenience: a locked, corrupt or unwritable database is a
HistoryError, which the command line turns into a warning, never a failed run.
Several harness processes may write at once (WAL journal, a busy timeout and
retries). The schema carries a version (PRAGMA user_version); opening an
older file applies the missing migrations in order.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import HarnessError

FILE_NAME = "history.sqlite3"
BUSY_TIMEOUT_S = 10.0  # sqlite waits this long for another writer's lock
RETRIES = 5  # then retries the whole transaction, backing off
RETRY_BACKOFF_S = 0.2

# MIGRATIONS[k] takes a database from version k to k + 1; never edit a shipped step.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        recorded_at TEXT NOT NULL,
        command TEXT NOT NULL,
        challenge TEXT NOT NULL,
        solution TEXT NOT NULL,
        solution_sha256 TEXT,
        backend TEXT NOT NULL,
        gpu TEXT,
        harness_version TEXT NOT NULL,
        passed INTEGER NOT NULL,
        reason TEXT,
        median_s REAL,
        cv REAL,
        speedup REAL
    );
    """,
    # Version 2: the challenge's content hash (results of an edited challenge
    # can be told apart), the fastest sample and the sample count beside the
    # median, and an index for the per-solution queries of `harness history`.
    """
    ALTER TABLE results ADD COLUMN challenge_hash TEXT;
    ALTER TABLE results ADD COLUMN min_s REAL;
    ALTER TABLE results ADD COLUMN samples INTEGER;
    CREATE INDEX results_by_solution ON results (challenge, solution, recorded_at);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)

COLUMNS = (
    "recorded_at", "command", "challenge", "solution", "solution_sha256", "backend", "gpu", "harness_version",
    "passed", "reason", "median_s", "cv", "speedup", "challenge_hash", "min_s", "samples",
)


class HistoryError(HarnessError):
    """The history database cannot be read or written."""


@dataclass(frozen=True)
class Entry:
    """One solution's result in one command."""

    recorded_at: str  # ISO 8601, UTC
    command: str
    challenge: str
    solution: str
    solution_sha256: str | None
    backend: str
    gpu: str | None  # the device's name, for timed results
    harness_version: str
    passed: bool
    reason: str | None
    median_s: float | None
    cv: float | None
    speedup: float | None
    challenge_hash: str | None = None
    min_s: float | None = None
    samples: int | None = None
    id: int | None = None


@dataclass(frozen=True)
class Best:
    """A challenge as the history sees it."""

    challenge: str
    solved: bool
    fastest: Entry | None  # the passing timed entry with the lowest median


def database_path() -> Path:
    """$HARNESS_HOME/history.sqlite3, else under the user's data directory."""
    home = os.environ.get("HARNESS_HOME")
    if home:
        return Path(home) / FILE_NAME
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data / "harness" / FILE_NAME


def entries_from_report(report: dict[str, Any], command: str, root: Path | None = None) -> list[Entry]:
    """The entries a report adds: every result except the reference, which is
    the par a user is measured against rather than the user's own work."""
    gpus = {g["index"]: g["name"] for env in report["environments"] for g in env["gpus"]}
    entries = []
    for record in report["results"]:
        if record["baseline"] or record["is_reference"]:
            continue
        timing = record["timing"] or {}
        summary = timing.get("summary_gpu_time_s") or {}
        device = timing.get("device") or gpus.get(str(record["gpu"])) or None
        entries.append(Entry(
            recorded_at=report["created"],
            command=command,
            challenge=record["challenge"],
            solution=_solution_key(record["solution"], root),
            solution_sha256=record["solution_sha256"],
            backend=record["backend"],
            gpu=device if record["backend"] == "cuda" else None,
            harness_version=report["harness_version"],
            passed=record["passed"],
            reason=record["reason"],
            median_s=summary.get("median"),
            cv=summary.get("cv"),
            speedup=timing.get("speedup_vs_reference"),
            challenge_hash=report["challenges"].get(record["challenge"], {}).get("hash"),
            min_s=summary.get("minimum"),
            samples=summary.get("count"),
        ))
    return entries


def _solution_key(label: str, root: Path | None) -> str:
    """Labels inside the repository stay relative to it; a file elsewhere is
    kept by its absolute path, so one file is one solution whatever the
    directory the command ran in."""
    path = Path(label)
    if path.is_absolute() or (root is not None and (root / path).is_file()):
        return label
    return str(path.resolve()) if path.is_file() else label


def record(report: dict[str, Any], command: str, root: Path | None = None, path: Path | None = None) -> int:
    """Append a report's entries; returns how many were written."""
    entries = entries_from_report(report, command, root)
    if not entries:
        return 0
    rows = [tuple(_column(e, c) for c in COLUMNS) for e in entries]
    sql = f"INSERT INTO results ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})"
    with _transaction(path or database_path(), create=True) as connection:
        connection.executemany(sql, rows)
    return len(rows)


def record_or_warn(
    report: dict[str, Any], command: str, root: Path | None, warn: Callable[[str], None], path: Path | None = None
) -> None:
    """record(), turning a HistoryError into a warning: the run goes on."""
    try:
        record(report, command, root, path)
    except HistoryError as error:
        warn(f"results not recorded in the history: {error}")


def read(challenge: str | None = None, path: Path | None = None) -> list[Entry]:
    """Entries oldest first, of one challenge or all; none if there is no database yet."""
    where, args = ("WHERE challenge = ?", (challenge,)) if challenge else ("", ())
    database = path or database_path()
    if not database.exists():
        return []
    with _transaction(database, create=False) as connection:
        rows = connection.execute(f"SELECT id, {', '.join(COLUMNS)} FROM results {where} ORDER BY recorded_at, id", args).fetchall()
    return [Entry(**{**dict(row), "passed": bool(row["passed"])}) for row in rows]


def bests(entries: list[Entry]) -> dict[str, Best]:
    """Per challenge: solved (some entry passed) and the fastest passing timed entry."""
    fastest = _fastest(entries, lambda e: e.challenge)
    solved = {e.challenge for e in entries if e.passed}
    return {c: Best(c, c in solved, fastest.get(c)) for c in dict.fromkeys(e.challenge for e in entries)}


def best_ids(entries: list[Entry]) -> set[int]:
    """The id of each solution's fastest passing timed entry."""
    return {e.id for e in _fastest(entries, lambda e: (e.challenge, e.solution)).values() if e.id is not None}


def _fastest(entries: list[Entry], key: Callable[[Entry], Any]) -> dict[Any, Entry]:
    """The passing timed entry with the lowest median, per key (the first on a tie)."""
    fastest: dict[Any, Entry] = {}
    for entry in entries:
        if entry.passed and entry.median_s is not None:
            current = fastest.get(key(entry))
            if current is None or entry.median_s < (current.median_s or 0):
                fastest[key(entry)] = entry
    return fastest


def _column(entry: Entry, name: str) -> Any:
    value = getattr(entry, name)
    return int(value) if isinstance(value, bool) else value


@contextmanager
def _transaction(database: Path, create: bool) -> Iterator[sqlite3.Connection]:
    """A connection to a migrated database, inside one write transaction that
    commits on success and rolls back on an error."""
    connection = _begin(database, create)
    try:
        yield connection
        connection.execute("COMMIT")
    except sqlite3.Error as error:
        raise HistoryError(f"{database}: {error}") from None
    finally:
        connection.close()  # without a COMMIT the transaction is rolled back


def _begin(database: Path, create: bool) -> sqlite3.Connection:
    """Open, take the write lock (waiting for another writer, then retrying
    with a backoff) and migrate. The lock is taken up front (BEGIN IMMEDIATE),
    so nothing later in the transaction waits for one."""
    for attempt in range(RETRIES + 1):
        connection = None
        try:
            if create:
                database.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(database, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            connection.row_factory = sqlite3.Row
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("BEGIN IMMEDIATE")
            _migrate(connection, database)
            return connection
        except sqlite3.OperationalError as error:
            if connection is not None:
                connection.close()
            if _is_busy(error) and attempt < RETRIES:
                time.sleep(RETRY_BACKOFF_S * (attempt + 1))
                continue
            raise HistoryError(f"{database}: {error}") from None
        except (sqlite3.Error, OSError, HistoryError) as error:
            if connection is not None:
                connection.close()
            if isinstance(error, HistoryError):
                raise
            raise HistoryError(f"{database}: {error}") from None
    raise AssertionError("unreachable: the last attempt raises")


def _is_busy(error: sqlite3.OperationalError) -> bool:
    text = str(error)
    return "locked" in text or "busy" in text


def _migrate(connection: sqlite3.Connection, database: Path) -> None:
    """Bring the schema to SCHEMA_VERSION, inside the caller's transaction."""
    version = connection.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise HistoryError(f"{database} has schema version {version}, newer than this harness's {SCHEMA_VERSION}")
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step].split(";"):
            if statement.strip():
                connection.execute(statement)
    if version != SCHEMA_VERSION:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
