"""One-line edits of conditions, handlers and loops (stdlib only, Python 3.9 and later, no import of
the project: shipped into the sandbox with operators.py).

The generic kinds of real one-line fixes the table did not make, by bench/fix_shapes.py over
BugsInPy and the fix commits of its projects' histories (PySStuBs' "more specific if", "add
elements", "add function around expression"):

- a condition that first checks the object it goes on to use: `if task.running:` ->
  `if task and task.running:`, `if name in self.cookies:` -> `if self.cookies is not None and ...`;
- a handler that catches one exception type too few: `except (KeyError, IndexError):` ->
  `except (KeyError, IndexError, ValueError):`;
- an iterable used while it changes, or in no fixed order: `for k in d:` -> `for k in list(d):`,
  `", ".join(names)` -> `", ".join(sorted(names))`;
- one operand of `and`/`or` negated: `if skip and value in symbols:` -> `if not skip and ...` (negating
  the whole condition or a comparison's operator does not reach a slip in one operand).

Each function returns (family, what, new line) triples, like the operator table.
"""
from __future__ import annotations

import ast
import re

try:
    from .statement_edits import Edit, StatementText, replace_span, statement_ast
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import Edit, StatementText, replace_span, statement_ast  # type: ignore[no-redef]

MAX_BASES = 2   # objects a condition is made to check first: two, each as `X and` and `X is not None and`
# The exceptions a handler most often lacks in real fixes, most frequent first.
EXCEPTIONS = ("ValueError", "TypeError", "KeyError", "IndexError", "AttributeError", "OverflowError")
HEADER = re.compile(r"^\s*(?:if|elif|while)\b")
EXCEPT = re.compile(r"^(\s*except\s+)(\(?)([\w.]+(?:\s*,\s*[\w.]+)*)(\)?)(\s+as\s+\w+)?(\s*:.*)$")


def condition_edits(code: str, names: tuple[str, ...]) -> list[Edit]:
    out = _handler_types(code)
    parsed = statement_ast(code)
    if parsed is None:
        return out
    tree, indent = parsed
    stmt = StatementText(code, indent)
    top = tree.body[0] if isinstance(tree, ast.Module) and tree.body else None
    tests: list[ast.expr] = []
    if isinstance(top, (ast.If, ast.While)) and HEADER.match(code):
        tests.append(top.test)
    if isinstance(top, (ast.Return, ast.Assign)) and isinstance(top.value, (ast.BoolOp, ast.Compare)):
        tests.append(top.value)
    tests += [n.test for n in ast.walk(tree) if isinstance(n, ast.IfExp)]
    for test in tests:
        out += _checked_first(code, test, stmt, names)
    out += _copied_iterables(code, tree, stmt)
    out += _negated_operands(code, tree, stmt)
    return out


def _chain(node: ast.AST, names: tuple[str, ...]) -> bool:
    """A variable of the scope, or an attribute chain on one or on `self` (`self.request.cookies`)."""
    if isinstance(node, ast.Name):
        return node.id in names
    while isinstance(node, ast.Attribute):
        node = node.value
        if isinstance(node, ast.Name):
            return node.id in names or node.id == "self"
    return False


def _bases(test: ast.expr, names: tuple[str, ...]) -> list[ast.expr]:
    """What the condition uses that may be None or empty: first the values it tests (the container of
    `in`, the argument of `len()` or of a call, an operand of an order), then the objects whose
    attributes or items it reads; left to right in each group."""
    used: list[ast.expr] = []
    derefs: list[ast.expr] = []
    for node in ast.walk(test):
        if isinstance(node, ast.Compare):
            if isinstance(node.ops[0], (ast.In, ast.NotIn)):
                used += node.comparators[:1]
            elif isinstance(node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
                used += [node.left, *node.comparators]
        elif isinstance(node, ast.Call):
            used += [a for a in node.args if not isinstance(a, ast.Starred)]
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(getattr(node, "ctx", None), ast.Store):
            derefs.append(node.value)
    out: list[ast.expr] = []
    seen = set()
    for group in (used, derefs):
        for node in sorted(group, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
            key = ast.dump(node)
            if _chain(node, names) and key not in seen:
                seen.add(key)
                out.append(node)
    return out


def _checked_first(code: str, test: ast.expr, stmt: StatementText, names: tuple[str, ...]) -> list[Edit]:
    """`X and C` and `X is not None and C`, before the first operand of an `and` that uses X."""
    if not stmt.span(test):
        return []
    operands = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    tested = {ast.dump(v) for v in operands} | {
        ast.dump(v.left) for v in operands if isinstance(v, ast.Compare) and isinstance(v.ops[0], (ast.IsNot, ast.Is))}
    out: list[Edit] = []
    for base in [b for b in _bases(test, names) if ast.dump(b) not in tested][:MAX_BASES]:
        text = stmt.text(base)
        key = ast.dump(base)
        first = next((v for v in operands if any(ast.dump(n) == key for n in ast.walk(v))), operands[0])
        where = stmt.span(first)
        if where is None:
            continue
        # an `or`, a conditional expression...: binds looser than the `and` put before it
        loose = isinstance(first, (ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr))
        body = code[where[0]:where[1]]
        if loose and not (body.startswith("(") and body.endswith(")")):
            body = f"({body})"
        for check in (text, f"{text} is not None"):
            out.append(("condition-guard", f"check {check} first",
                        code[:where[0]] + f"{check} and {body}" + code[where[1]:]))
    return out


def _negated_operands(code: str, tree: ast.AST, stmt: StatementText) -> list[Edit]:
    """`a and b` -> `not a and b`, `a and not b`: each operand that is a value, not a comparison (its
    operator's swaps negate it) nor a `not` (dropping it is the operator table's edit)."""
    out: list[Edit] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.BoolOp):
            continue
        for value in node.values:
            if isinstance(value, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and stmt.span(value):
                text = stmt.text(value)
                out.append(("boolean", f"negate `{text}`", replace_span(code, *stmt.at(value), f"not {text}")))
    return out


def _handler_types(code: str) -> list[Edit]:
    """`except A:` -> `except (A, E):` for the common exceptions E it does not name."""
    m = EXCEPT.match(code)
    if not m or bool(m.group(2)) != bool(m.group(4)):
        return []
    caught = [t.strip() for t in m.group(3).split(",")]
    if any(t in ("Exception", "BaseException") for t in caught):
        return []
    out = []
    for exc in EXCEPTIONS:
        if exc not in caught:
            new = f"{m.group(1)}({', '.join(caught + [exc])}){m.group(5) or ''}{m.group(6)}"
            out.append(("exception-type", f"also catch {exc}", new))
    return out


def _copied_iterables(code: str, tree: ast.AST, stmt: StatementText) -> list[Edit]:
    """A loop over a copy of what it iterates (the body may change it), a join in sorted order."""
    out: list[Edit] = []
    top = tree.body[0] if isinstance(tree, ast.Module) and tree.body else None
    if isinstance(top, (ast.For, ast.AsyncFor)) and code.lstrip().startswith(("for ", "async for ")) \
            and isinstance(top.iter, (ast.Name, ast.Attribute, ast.Call)) and stmt.span(top.iter) \
            and not (isinstance(top.iter, ast.Call) and getattr(top.iter.func, "id", "") in ("list", "range", "enumerate",
                                                                                            "sorted", "tuple", "zip")):
        out.append(("iterable-call", f"loop over list({stmt.text(top.iter)})",
                    replace_span(code, *stmt.at(top.iter), f"list({stmt.text(top.iter)})")))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join" \
                and isinstance(node.func.value, (ast.Constant, ast.JoinedStr)) and len(node.args) == 1 \
                and isinstance(node.args[0], (ast.Name, ast.Attribute, ast.Call)) and stmt.span(node.args[0]) \
                and getattr(getattr(node.args[0], "func", None), "id", "") != "sorted":
            arg = stmt.text(node.args[0])
            out.append(("iterable-call", f"join sorted({arg})", replace_span(code, *stmt.at(node.args[0]), f"sorted({arg})")))
    return out
