"""Python solutions: a .py file whose `solve(...)` takes the challenge's
parameters in order, arrays as device arrays and sizes as ints, and writes the
outputs in place.

Arrays are CuPy arrays (kernels from CUDA C strings through cupy.RawModule),
or torch tensors sharing the same memory through DLPack when the module sets
`ARRAYS = "torch"` or imports torch or triton (Triton and PyTorch solutions).
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..challenge import Challenge
from ..errors import MissingSymbol, SignatureMismatch, SolutionError

ARRAY_KINDS = ("cupy", "torch")
INSTALL_HINTS = {"cupy": "cupy-cuda13x", "torch": "torch", "triton": "triton"}


class MissingPackage(SolutionError):
    reason = "missing_package"


def _solve_definition(tree: ast.Module) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "solve":
            return node
    raise MissingSymbol("no top-level `def solve(...)` in the file")


def array_kind(tree: ast.Module) -> str:
    """`ARRAYS = "..."` if the module sets it, else torch for torch/triton code, else cupy."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ARRAYS" for t in node.targets):
            if isinstance(node.value, ast.Constant) and node.value.value in ARRAY_KINDS:
                return node.value.value
            raise SignatureMismatch(f"ARRAYS must be one of {ARRAY_KINDS}")
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    return "torch" if imported & {"torch", "triton"} else "cupy"


def check_python_signature(source: str, challenge: Challenge) -> None:
    """solve's parameters must be the challenge's, by name and in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        from ..errors import CompileError

        raise CompileError(f"line {error.lineno}: {error.msg}", [f"{error.filename}:{error.lineno}: {error.msg}"]) from None
    definition = _solve_definition(tree)
    found = [a.arg for a in definition.args.posonlyargs + definition.args.args]
    wanted = [p.name for p in challenge.params]
    if len(found) != len(wanted):
        raise SignatureMismatch(f"solve() takes {len(found)} parameters, the challenge has {len(wanted)}: {', '.join(wanted)}")
    for position, (got, want) in enumerate(zip(found, wanted), start=1):
        if got != want:
            raise SignatureMismatch(f"solve() parameter {position} is `{got}`, the signature has `{want}` there")
    array_kind(tree)


def load_python_solution(path: Path, challenge: Challenge) -> Callable[[list[Any]], None]:
    """Import the file and return a function that calls its solve with the
    challenge's arguments (CuPy arrays and ints) converted as it expects."""
    kind = array_kind(ast.parse(path.read_text()))
    spec = importlib.util.spec_from_file_location(f"harness_solution_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ModuleNotFoundError as error:
        package = (error.name or "").split(".")[0]
        hint = INSTALL_HINTS.get(package, package)
        raise MissingPackage(f"needs the Python package {package!r}, which is not installed (pip install {hint})") from None
    solve = getattr(module, "solve", None)
    if not callable(solve):
        raise MissingSymbol("the module defines no callable `solve`")
    if kind == "torch":
        try:
            import torch
        except ModuleNotFoundError:
            raise MissingPackage("needs the Python package 'torch', which is not installed (pip install torch)") from None

        def call_with_tensors(arguments: list[Any]) -> None:
            solve(*(a if isinstance(a, int) else torch.from_dlpack(a) for a in arguments))

        return call_with_tensors
    return lambda arguments: solve(*arguments)


def exception_reason(error: BaseException) -> str:
    """Verdict category for an exception raised by a Python solution."""
    name = type(error).__name__
    if name in ("CompileException", "CompilationError", "NVRTCError"):
        return "compile_error"
    if name == "CUDARuntimeError" or name.startswith("CUDA"):
        return "cuda_error"
    return "exception"
