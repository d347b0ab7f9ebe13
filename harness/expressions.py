"""Safe evaluation of the small expressions challenge metadata is written in.

Shapes and cost models are arithmetic over size names ("batch*seq_len*4");
constraints are comparisons over input arrays ("all(delta > 0)"). Metadata is
data, so it is evaluated by walking the AST, never with eval().
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .errors import ChallengeError

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "all": np.all,
    "any": np.any,
    "abs": np.abs,
    "isfinite": np.isfinite,
    "min": np.min,
    "max": np.max,
}


class ExpressionError(ChallengeError):
    """Metadata holds an expression the harness cannot evaluate."""


def evaluate(expression: str, names: Mapping[str, Any]) -> Any:
    """Evaluate `expression` with `names` bound; only arithmetic, comparisons
    and the functions in _FUNCTIONS are allowed."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse {expression!r}: {exc.msg}") from None
    return _eval(tree.body, names, expression)


def names_in(expression: str) -> set[str]:
    """The variable names an expression refers to (function names excluded)."""
    tree = ast.parse(expression, mode="eval")
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def _eval(node: ast.AST, names: Mapping[str, Any], source: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise ExpressionError(f"unknown name {node.id!r} in {source!r}")
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, names, source), _eval(node.right, names, source))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_eval(node.operand, names, source))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        left = _eval(node.left, names, source)
        return _COMPARE[type(node.ops[0])](left, _eval(node.comparators[0], names, source))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS and not node.keywords:
        return _FUNCTIONS[node.func.id](*(_eval(arg, names, source) for arg in node.args))
    raise ExpressionError(f"unsupported syntax {ast.dump(node)[:60]} in {source!r}")
