"""Read solve()'s parameter list from CUDA C source and compare it with the
challenge signature before anything is compiled or called: a call through
ctypes with the wrong parameters would read garbage, not fail cleanly."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..challenge import DTYPES, Challenge
from ..errors import MissingSymbol, SignatureMismatch

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_SOLVE = re.compile(r"\bvoid\s+solve\s*\(([^)]*)\)\s*\{", re.S)
_QUALIFIERS = {"__restrict__", "__restrict", "restrict", "volatile"}
_BASE_TYPES = {"float", "double", "int", "unsigned", "long", "short", "char", "half", "__half", "size_t", "int32_t", "int64_t"}


@dataclass(frozen=True)
class CParam:
    base: str  # "float", "int", ...
    pointer: bool
    name: str
    text: str

    def matches(self, c_type: str) -> bool:
        """Constness is not compared: it does not change the ABI, and writes to
        inputs are caught at run time."""
        want_pointer = c_type.endswith("*")
        want_base = c_type.replace("const", "").replace("*", "").strip()
        spellings = {want_base, *next((d.c_aliases for d in DTYPES.values() if d.c_name == want_base), ())}
        return self.pointer == want_pointer and self.base in spellings


def parse_solve_params(source: str) -> list[CParam]:
    """The parameters of the first `void solve(...) {` definition in `source`."""
    code = _COMMENTS.sub(" ", source)
    match = _SOLVE.search(code)
    if match is None:
        raise MissingSymbol("no definition of `void solve(...)` found in the source")
    text = match.group(1).strip()
    if text in ("", "void"):
        return []
    params = []
    for raw in text.split(","):
        tokens = re.findall(r"[A-Za-z_]\w*|\*", raw)
        words = [t for t in tokens if t not in _QUALIFIERS and t != "const"]
        pointer = "*" in words
        idents = [w for w in words if w != "*"]
        name = idents[-1] if len(idents) > 1 and idents[-1] not in _BASE_TYPES else ""
        base_words = [w for w in idents if w != name]
        params.append(CParam(base=" ".join(base_words), pointer=pointer, name=name, text=" ".join(raw.split())))
    return params


def check_signature(source: str, challenge: Challenge) -> None:
    """Raise SignatureMismatch (or MissingSymbol) unless solve() takes the
    challenge's parameters in order."""
    found = parse_solve_params(source)
    wanted = challenge.params
    if len(found) != len(wanted):
        raise SignatureMismatch(
            f"solve() takes {len(found)} parameters, the challenge signature has {len(wanted)}: "
            f"{challenge.signature()}"
        )
    for position, (got, want) in enumerate(zip(found, wanted), start=1):
        if not got.matches(want.c_type):
            raise SignatureMismatch(
                f"solve() parameter {position} is `{got.text}`, the signature wants `{want.c_type} {want.name}`"
            )
    if 'extern "C"' not in _COMMENTS.sub(" ", source):
        raise SignatureMismatch('solve() must be declared extern "C" (C++ name mangling hides it otherwise)')
