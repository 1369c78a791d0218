"""Lines that look wrong on their own, whatever the failure says: an expression that computes
nothing (`x[:len(x)]`, `a == a`), a parallel assignment whose values break the pairing of its
targets (`hi, hi_key = y, x_key`), and a return of "nothing" in another form than the test wants.
An edit that mends such a line is likelier than its neighbours; `smell_features` names it."""
from __future__ import annotations

import ast
import functools

from .catalogue import Candidate
from .failure import Failure
from .weights import Rule
from ...in_sandbox.statement_edits import statement_ast


def smell_features(c: Candidate, line_text: str, failure: Failure) -> list[tuple[Rule, float]]:
    out: list[tuple[Rule, float]] = []
    one = c.new_lines[0] if len(c.new_lines) == 1 else None
    if c.kind == "variable" and one is not None and redundancies(line_text) > redundancies(one):
        out.append((Rule.LINE_COMPUTES_NOTHING, 1.0))   # the line computed nothing (`x[:len(x)]`): one of its variables was meant to be another
    if c.kind == "variable" and one is not None and stem_pairs(line_text) < stem_pairs(one) > 0:
        out.append((Rule.PAIRS_TARGETS, 1.0))   # `hi, hi_key = y, x_key`: the values pair up as their targets do
    if c.kind == "return-value" and failure.have_values:
        was, now = (_value(x) for x in c.what.removeprefix("return ").split(" -> return "))
        if now is not _NO_VALUE and _same(now, failure.expected):
            out.append((Rule.RETURNS_WHAT_TEST_GOT if _same(was, failure.got) else Rule.RETURNS_OTHER, 1.0))   # the test got what this line returns, and wants the other
    return out


@functools.lru_cache(maxsize=4096)   # asked for every candidate of a line
def redundancies(code: str) -> int:
    """Expressions on the line that compute nothing (`x[:len(x)]`, `a == a`, `n - n`): one is
    almost always a variable written for another."""
    parsed = statement_ast(code)
    if parsed is None:
        return 0
    count = 0
    for node in ast.walk(parsed[0]):
        if isinstance(node, ast.BinOp) and ast.dump(node.left) == ast.dump(node.right) \
                and isinstance(node.op, (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod, ast.BitXor)):
            count += 1
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1 and \
                ast.dump(node.left) == ast.dump(node.comparators[0]) and not isinstance(node.left, ast.Constant):
            count += 1
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            for bound in (node.slice.lower, node.slice.upper):
                if isinstance(bound, ast.Call) and getattr(bound.func, "id", None) == "len" and len(bound.args) == 1 \
                        and ast.dump(bound.args[0]) == ast.dump(node.value):
                    count += 1
    return count


@functools.lru_cache(maxsize=4096)
def stem_pairs(code: str) -> int:
    """Parallel assignments whose values pair up as their targets do, minus those that break it:
    `hi, hi_key = x, x_key` +1, `hi, hi_key = y, x_key` -1 (targets `t`, `t_key`: values `v`, `v_key`)."""
    parsed = statement_ast(code)
    if parsed is None:
        return 0
    count = 0
    for node in ast.walk(parsed[0]):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)
                and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts)):
            continue
        targets = [getattr(e, "id", None) for e in node.targets[0].elts]
        values = [getattr(e, "id", None) for e in node.value.elts]
        for i, t in enumerate(targets):
            for j, u in enumerate(targets):
                if i != j and t and u and values[i] and values[j] and u.startswith(t) and len(u) > len(t):
                    suffix = u[len(t):]
                    if values[j] == values[i] + suffix:
                        count += 1
                    elif values[j].endswith(suffix):
                        count -= 1
    return count


_NO_VALUE = object()


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return _NO_VALUE


def _same(a, b) -> bool:
    return type(a) is type(b) and a == b
