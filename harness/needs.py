"""What one repeat of a cell needs, as the workload's describe states it (`needs`, optional;
docs/workload-contract.md): named expressions over the cell's parameters, `duration_s` and
`warmup_s`, and each other. `memory_bytes` and `disk_bytes` are checked against the machine;
the other names are figures the error message shows (e.g. `requests`)."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any

CHECKED = ("memory_bytes", "disk_bytes")

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {
    "min": min,
    "max": max,
    "exp": math.exp,
    "ceil": math.ceil,
}


def parse(needs: object) -> dict[str, ast.Expression]:
    """describe's `needs`: an object of name -> expression text; ValueError names the bad one."""
    if not isinstance(needs, dict):
        raise ValueError("'needs' must be an object of name -> expression")
    parsed = {}
    for name, text in needs.items():
        if not isinstance(text, str):
            raise ValueError(f"needs.{name} must be an expression in a string")
        try:
            parsed[name] = ast.parse(text, mode="eval")
        except SyntaxError as err:
            raise ValueError(f"needs.{name}: not an expression: {err.msg}") from None
    return parsed


def evaluate(needs: Mapping[str, ast.Expression], variables: Mapping[str, Any]) -> dict[str, float]:
    """Every figure for one cell; ValueError names the figure that cannot be computed."""
    done: dict[str, float] = {}
    active: list[str] = []

    def figure(name: str) -> Any:
        if name in done:
            return done[name]
        if name in variables:
            return variables[name]
        if name not in needs:
            raise ValueError(f"unknown name '{name}'")
        if name in active:
            raise ValueError(f"'{name}' depends on itself")
        active.append(name)
        value = _eval(needs[name].body, figure)
        active.pop()
        if isinstance(value, str) or not math.isfinite(value):
            raise ValueError(f"needs.{name} is {value!r}, not a finite number")
        done[name] = float(value)
        return done[name]

    for name in needs:
        try:
            figure(name)
        except (ValueError, TypeError, ZeroDivisionError, OverflowError) as err:
            raise ValueError(f"needs.{name}: {err}") from None
    return done


def _eval(node: ast.AST, figure: Callable[[str], Any]) -> Any:
    def value(n: ast.AST) -> Any:
        return _eval(n, figure)

    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str):
        return node.value
    if isinstance(node, ast.Name):
        return figure(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](value(node.left), value(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -value(node.operand)
    if isinstance(node, ast.IfExp):
        return value(node.body) if value(node.test) else value(node.orelse)
    if isinstance(node, ast.BoolOp):
        result = value(node.values[0])
        for item in node.values[1:]:
            if isinstance(node.op, ast.Or) == bool(result):
                break
            result = value(item)
        return result
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        return _COMPARE[type(node.ops[0])](value(node.left), value(node.comparators[0]))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        return _FUNCTIONS[node.func.id](*(value(arg) for arg in node.args))
    raise ValueError(f"unsupported expression: {ast.unparse(node)}")
