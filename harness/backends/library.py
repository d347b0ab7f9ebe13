"""Loading a solution library and binding solve() with argument types derived
from the challenge signature: pointers as void*, sizes as int."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path

from ..challenge import Challenge
from ..errors import MissingSymbol


def load_solve(library: Path, challenge: Challenge) -> tuple[ctypes.CDLL, Callable[..., None]]:
    lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)
    try:
        solve = lib.solve
    except AttributeError:
        raise MissingSymbol("the library exports no `solve` symbol") from None
    solve.argtypes = [ctypes.c_int if p.role == "size" else ctypes.c_void_p for p in challenge.params]
    solve.restype = None
    return lib, solve
