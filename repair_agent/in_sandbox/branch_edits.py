"""`else` arms the mutation analysis tries after an `if` that has none (stdlib only, Python 3.9 and
later, no import of the project: shipped into the sandbox with operators.py).

A missing branch is a common multi-line fix: the case the `if` leaves out does nothing where it
should do what the `if` does with another value (`if key in d: yield (match, item)` and no
`else: yield (default, item)` for the items without a match). The arm added here repeats a simple
statement of the `if`'s body with a name the body binds (a loop variable, an assignment's target:
the value only the `if` case has) replaced by a name the function has before the `if` (a parameter,
a local), those sharing a word with it first (`left_match` -> `left_default`). Each arm is then run
against the failing and the passing tests like any other mutant.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, List, Sequence, Tuple

try:
    from .statement_edits import char_column, source_lines
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import char_column, source_lines  # type: ignore[no-redef]

Edit = Tuple[str, str, str]   # (family, what, the new text: the line, then the `else` arm after it)

MAX_REPLACEMENTS = 8   # names tried in place of a bound one, per statement
SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.Return)


# an `if` without `else`: its line, the last line of its body (one simple statement on one line),
# the indentation of the `else:` to add after it, the arms worth trying there
ElseSite = Tuple[int, int, str, List[str]]


def else_sites(source: str) -> List[ElseSite]:
    """Every `if` of the functions of `source` that could take an `else` arm, with its arms."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source_lines(source, ends=False)
    out: List[ElseSite] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.If) or node.orelse or _is_elif(node, lines):
                continue
            last = node.body[-1]
            while isinstance(last, (ast.For, ast.While, ast.With, ast.If)) and not getattr(last, "orelse", None):
                last = last.body[-1]   # the innermost last statement: the `else` goes after the whole body
            end = getattr(last, "end_lineno", None)
            if not isinstance(last, SIMPLE) or end != last.lineno or end is None:
                continue
            indent = lines[node.lineno - 1][:node.col_offset]
            arms = _arms(fn, node, lines)
            if arms:
                out.append((node.lineno, end, indent, arms))
    return out


def _is_elif(node: ast.If, lines: Sequence[str]) -> bool:
    return lines[node.lineno - 1][node.col_offset:].startswith("elif")


def _arms(fn: ast.AST, node: ast.If, lines: Sequence[str]) -> List[str]:
    bound: List[str] = []
    statements = [s for b in node.body for s in ast.walk(b) if isinstance(s, ast.stmt)]
    for s in statements:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in bound:
                bound.append(n.id)
    if not bound:
        return []
    args = fn.args   # type: ignore[attr-defined]
    before = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.lineno < node.lineno and n.id not in before:
            before.append(n.id)
    before = [b for b in before if b not in bound and b not in ("self", "cls")]
    out: List[str] = []
    for s in statements:
        end = getattr(s, "end_lineno", None)
        if not isinstance(s, SIMPLE) or end != s.lineno or end is None:
            continue
        whole = lines[s.lineno - 1]
        text = whole[char_column(whole, s.col_offset):char_column(whole, s.end_col_offset or 0)]
        for name in bound:
            if not re.search(r"\b%s\b" % re.escape(name), text):
                continue
            for other in sorted(before, key=lambda b: (-_shared_words(name, b), before.index(b)))[:MAX_REPLACEMENTS]:
                arm = re.sub(r"(?<![\w.])%s\b" % re.escape(name), other, text)
                if arm != text and arm not in out:
                    out.append(arm)
    return out


def _shared_words(a: str, b: str) -> int:
    return len(set(a.lower().split("_")) & set(b.lower().split("_")) - {""})


def jump_sites(source: str) -> Dict[int, str]:
    """The last line of each branch inside a loop that falls through to more of the loop's body:
    where a forgotten `continue` belongs (`if k not in d: d[k] = item` then `continue`, or the item is
    also combined with itself below), with the branch's indentation."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    lines = source_lines(source, ends=False)
    out: Dict[int, str] = {}
    for loop in ast.walk(tree):
        if isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            _jumps(loop.body, lines, out)
    return out


def _jumps(body: Sequence[ast.stmt], lines: Sequence[str], out: Dict[int, str]) -> None:
    for k, stmt in enumerate(body):
        if not isinstance(stmt, ast.If):
            continue
        falls_through = k + 1 < len(body)
        for arm in (stmt.body, stmt.orelse):
            if not arm:
                continue
            last = arm[-1]
            if isinstance(last, ast.If):
                if falls_through:
                    _jumps([last, ast.Pass()], lines, out)   # a nested branch falls through the same way
                continue
            end = getattr(last, "end_lineno", None)
            if falls_through and isinstance(last, SIMPLE) and not isinstance(last, ast.Return) \
                    and end == last.lineno and end is not None:
                out[end] = lines[last.lineno - 1][:last.col_offset]


def jump_edit(line: str, indent: str) -> Edit:
    code = line.rstrip("\r\n")
    return ("jump", "add `continue`", "%s\n%scontinue" % (code, indent))


def else_edit(line: str, indent: str, arm: str) -> Edit:
    """The line, then `else: arm` at the `if`'s indentation."""
    code = line.rstrip("\r\n")
    return ("else-branch", "add `else: %s`" % arm, "%s\n%selse:\n%s    %s" % (code, indent, indent, arm))
