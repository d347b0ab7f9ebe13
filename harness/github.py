"""GitHub Actions workflow commands: one error annotation per failed solution,
on the file and line a compiler named where there is one."""

from __future__ import annotations

import re
from typing import Any

_FILE_LINE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):")


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotations(document: dict[str, Any]) -> list[str]:
    lines = []
    for record in document["results"]:
        if record["passed"]:
            continue
        where = f"file={record['solution']}"
        located = _FILE_LINE.match(record["message"])
        if located and located["file"].endswith(record["solution"].split("/")[-1]):
            where += f",line={located['line']}"
        title = f"{record['challenge']}: {record['reason_text'] or record['reason']}"
        lines.append(f"::error {where},title={_escape(title).replace(',', '%2C')}::{_escape(record['message'])}")
    return lines
