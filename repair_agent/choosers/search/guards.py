"""Guards (an early return of the documented type) and the rule that no candidate writes a value a
failing test expects."""
from __future__ import annotations

import ast
import functools
import re

from .catalogue import Candidate
from .failure import Failure
from ...in_sandbox.statement_edits import statement_ast
from .source import _MISSING, Function, _call_args, _expected_from_assert


NEUTRAL_LITERALS = frozenset({"None", "True", "False", "0", "1", "-1", "0.0", "''", '""', "[]", "{}", "()"})


def documented_returns(fn: Function | None, lines: dict[int, str], failure: Failure) -> list[str]:
    """What a guard may return, from the function's annotation and docstring and the *type* of the
    value the test expects (never the value itself): `False` where it says bool, `0` for a count..."""
    header, doc, asserted = "", "", None
    if fn is not None:
        header = "".join(lines.get(n, "") for n in range(fn.def_line, fn.body_line))
        quote = min((i for i in (header.find('"""'), header.find("'''")) if i >= 0), default=-1)
        doc = header[quote:] if quote >= 0 else ""
        asserted = _expected_from_assert(fn.name, failure.assert_lines)   # its type only, never the value
    ann = re.search(r"->\s*([^:]+):", header)
    said = f"{ann.group(1) if ann else ''} {doc}".lower()
    out: list[str] = []
    if re.search(r"\bbool\b|\btrue\b|\bfalse\b|\bwhether\b", said) or asserted in ("True", "False") or (
            isinstance(failure.expected, bool) and failure.have_values):
        out += ["False", "True"]
    if re.search(r"\bint\b|\bfloat\b|\bnumber\b|\bcount\b|\bhow many\b|\btotal\b|\bsum\b", said) or (
            failure.have_values and type(failure.expected) in (int, float)):
        out.append("0")
    if re.search(r"\bstr\b|\bstring\b|\btext\b", said) or failure.have_values and isinstance(failure.expected, str):
        out.append("''")
    if re.search(r"\blist\b|\bsequence\b", said) or failure.have_values and isinstance(failure.expected, list):
        out.append("[]")
    if re.search(r"\bdict\b|\bmapping\b", said) or failure.have_values and isinstance(failure.expected, dict):
        out.append("{}")
    if re.search(r"\btuple\b", said) or failure.have_values and isinstance(failure.expected, tuple):
        out.append("()")
    out.append("None")
    shape = tuple_shape(fn, lines)
    if shape:   # every return of the function is a tuple of this length: so is the guard's
        return [shape]
    return list(dict.fromkeys(out))


def tuple_shape(fn: Function | None, lines: dict[int, str]) -> str | None:
    """`doc, None` for a function whose every return is a pair like `return doc, self.get_part(...)`:
    the parameters it returns as they are, None for what it computes."""
    if fn is None:
        return None
    shapes = set()
    keep = set(fn.params)
    for n in range(fn.body_line, fn.end_line + 1):
        parsed = statement_ast(lines.get(n, "")) if (lines.get(n) or "").lstrip().startswith("return") else None
        if parsed is None:
            continue
        node = parsed[0].body[0] if parsed[0].body else None
        if not isinstance(node, ast.Return):
            continue
        if not isinstance(node.value, ast.Tuple) or any(isinstance(e, ast.Starred) for e in node.value.elts):
            return None
        shapes.add(", ".join(e.id if isinstance(e, ast.Name) and e.id in keep else "None" for e in node.value.elts))
    return shapes.pop() if len(shapes) == 1 else None


def frame_guards(path: str, line_no: int, lines: dict[int, str], fn: Function | None,
                 failure: Failure) -> list[Candidate]:
    """Guards right before the line that raised: `if EXPR is None` / `if not EXPR` for the names,
    attributes and calls it uses, returning a value of the documented type."""
    text = lines.get(line_no, "")
    parsed = statement_ast(text)
    if parsed is None or text.lstrip().startswith(("def ", "elif ", "else", "except", "finally")):
        return []
    tree, _ = parsed
    exprs = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Call, ast.Compare, ast.BinOp, ast.Subscript, ast.Attribute)):
            parts = (node.args if isinstance(node, ast.Call) else [node.left, *node.comparators]
                     if isinstance(node, ast.Compare) else [node.left, node.right] if isinstance(node, ast.BinOp)
                     else [node.value])
            for part in parts:
                if isinstance(part, (ast.Name, ast.Attribute, ast.Call)) and ast.unparse(part) not in exprs:
                    exprs.append(ast.unparse(part))
    returns = documented_returns(fn, lines, failure)
    indent = text[:len(text) - len(text.lstrip())]
    out = []
    # the same guard at the top of the function, when what it tests exists there (`self.parts`)
    top = fn.body_line if fn is not None and fn.body_line < line_no and fn.body_line in lines else None
    for expr in exprs[:6]:
        if len(expr) > 60 or not re.match(r"^[\w.()\[\], ]+$", expr) or expr in ("self", "cls") or expr[:1].isupper():
            continue   # (an instance or a class is never None nor empty)
        root = re.match(r"\w+", expr)
        at_top = top is not None and root is not None and root.group(0) in ("self", "cls", *fn.params) \
            and "(" not in expr
        for kind, cond in (("none-guard", f"{expr} is None"), ("empty-guard", f"not {expr}")):
            for rank, ret in enumerate(returns[:2]):
                c = Candidate(path, line_no, (f"{indent}if {cond}:\n", f"{indent}    return {ret}\n", text),
                              kind, f"guard `if {cond}: return {ret}` before the failing line")
                c.score = 2.0 - rank
                out.append(c)
                if at_top:
                    assert fn is not None and top is not None
                    ind = fn.body_indent
                    c = Candidate(path, top, (f"{ind}if {cond}:\n", f"{ind}    return {ret}\n", lines[top]),
                                  kind, f"guard `if {cond}: return {ret}` at the top of {fn.name}")
                    c.score = 1.5 - rank
                    out.append(c)
    return out


def _after_checks(fn: Function, lines: dict[int, str]) -> int | None:
    """The first statement after the function's leading argument checks (`if ...: raise ...`
    blocks): an early return belongs after them, so bad arguments are still refused."""
    n, ind = fn.body_line, len(fn.body_indent)
    moved = False
    while n <= fn.end_line and (lines.get(n) or "").strip().startswith("if "):
        body = [k for k in range(n + 1, fn.end_line + 1) if (lines.get(k) or "").strip()]
        block = []
        for k in body:
            text = lines[k]
            if len(text) - len(text.lstrip()) <= ind:
                break
            block.append(k)
        # a block that only raises (the raise may continue over several lines)
        if not block or not lines[block[0]].strip().startswith("raise") or any(
                re.match(r"\s*(return|if|elif|else|for|while|with|try)\b", lines[k]) for k in block[1:]):
            break
        n, moved = block[-1] + 1, True
        while n <= fn.end_line and not (lines.get(n) or "").strip():
            n += 1
    return n if moved and n <= fn.end_line and n in lines else None


def guard_candidates(path: str, fn: Function, lines: dict[int, str], failure: Failure) -> list[Candidate]:
    out = []
    call_args = _call_args(fn.name, failure.assert_lines)
    returns = documented_returns(fn, lines, failure)
    ind = fn.body_indent
    after = _after_checks(fn, lines)
    # at the top of the body, and after the argument checks (preferred: they still refuse bad input)
    sites = [(fn.body_line, 0.0)] + ([(after, 0.5)] if after else [])
    for i, p in enumerate(fn.params):
        if call_args and i >= len(call_args):
            continue   # not passed by the failing call: its default is not the problem a guard solves
        arg = call_args[i] if i < len(call_args) else _MISSING
        relevant = arg is _MISSING or arg is None or (hasattr(arg, "__len__") and len(arg) == 0)
        if not relevant:
            continue
        for kind, cond, rets in (("none-guard", f"{p} is None", returns[:2] + ["None"]),
                                 ("empty-guard", f"not {p}", returns[:2] + [p])):
            for ret in dict.fromkeys(rets):
                for site, bonus in sites:
                    new = (f"{ind}if {cond}:\n", f"{ind}    return {ret}\n", lines[site])
                    c = Candidate(path, site, new, kind, f"guard `if {cond}: return {ret}` "
                                  + (f"at the top of {fn.name}" if site == fn.body_line else
                                     f"after {fn.name}'s argument checks"))
                    # the failing call passes exactly the value this guard catches
                    c.score = 3.0 if (arg is None and kind == "none-guard") or (arg is not _MISSING and arg is not None
                                                                                and kind == "empty-guard") else 0.0
                    c.score += bonus - (0.5 if ret != rets[0] else 0.0)
                    out.append(c)
    return out


def copies_expected(c: Candidate, original: str, failure: Failure) -> bool:
    """Does the candidate write a value the failing test expects into the code? Only neutral values
    (None, booleans, 0, 1, empty) may appear; anything else would fit the test, not the behaviour."""
    if not failure.expected_literals:
        return False
    added = "".join(c.new_lines)
    # Cheap first: a literal that is written needs its text (a string's content) in the new lines.
    if not any(_needle(lit) in added for lit in failure.expected_literals if lit not in NEUTRAL_LITERALS):
        return False
    before = _literals_in(original)
    for line in c.new_lines:
        for lit in _literals_in(line) - before:
            if lit in failure.expected_literals and lit not in NEUTRAL_LITERALS:
                return True
    return False


def _needle(lit: str) -> str:
    try:
        value = ast.literal_eval(lit)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return lit
    return value if isinstance(value, str) else lit


@functools.lru_cache(maxsize=4096)
def _literals_in(line: str) -> frozenset[str]:
    parsed = statement_ast(line)
    if parsed is None:
        return frozenset()
    out = set()
    for node in ast.walk(parsed[0]):
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.UnaryOp)):
            try:
                out.add(repr(ast.literal_eval(node)))
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    return frozenset(out)
