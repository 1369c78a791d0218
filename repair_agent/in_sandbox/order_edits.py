"""Edits of an ordering, for the mutation analysis: a sort or an extreme that lacks its `key=` or its
`reverse=True`, or has one too many (`sorted(self.sections)` -> `sorted(self.sections, key=self.lineof)`).

The keys tried are the file's own one-argument functions: the methods of the class around the line
(as `self.name`), then the module's functions, then `len` and `str.lower`. Standard library only,
Python 3.9 and later (shipped into the sandbox as `ra_order_edits`), nothing runs at import.
"""
from __future__ import annotations

import ast
from typing import List, Sequence, Tuple

try:
    from .statement_edits import Edit, StatementText, replace_span, statement_ast
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import Edit, StatementText, replace_span, statement_ast  # type: ignore[no-redef]

FAMILY = "order"
SORTS = ("sorted", "sort")            # take `reverse=` too
EXTREMES = ("min", "max")             # a key only with one iterable argument
MAX_KEYS = 6
BUILTIN_KEYS = ("len", "str.lower")
# (the module's one-argument functions, [(a class's first and last line, its one-argument methods)])
KeyIndex = Tuple[List[str], List[Tuple[int, int, List[str]]]]


def _one_argument(fn: ast.FunctionDef, method: bool) -> bool:
    """Can `fn` be called with one positional argument (after `self` for a method)?"""
    decorators = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}
    if decorators & {"property", "staticmethod", "classmethod"} or fn.name.startswith("__"):
        return False
    params = fn.args.posonlyargs + fn.args.args
    params = params[1:] if method else params
    required = len(params) - len(fn.args.defaults)
    kw_required = sum(d is None for d in fn.args.kw_defaults)
    return bool(params) and required <= 1 and not kw_required


def key_index(text: str) -> KeyIndex:
    """The one-argument functions of a module and of each of its classes (empty if it does not parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [], []
    module = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and _one_argument(n, False)]
    classes = [(c.lineno, getattr(c, "end_lineno", c.lineno),
                ["self." + n.name for n in c.body if isinstance(n, ast.FunctionDef) and _one_argument(n, True)])
               for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
    return module, classes


def keys_at(index: KeyIndex, line: int) -> List[str]:
    """The keys a sort on `line` may take: the innermost class's methods first."""
    module, classes = index
    around = [c for c in classes if c[0] <= line <= c[1]]
    methods = max(around, key=lambda c: c[0])[2] if around else []
    return list(dict.fromkeys(methods + module + list(BUILTIN_KEYS)))[:MAX_KEYS]


def order_edits(code: str, keys: Sequence[str]) -> List[Edit]:
    """(family, what, new line) for each call of a sort or an extreme on the line."""
    parsed = statement_ast(code)
    if parsed is None:
        return []
    tree, indent = parsed
    stmt = StatementText(code, indent)
    out: List[Edit] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or stmt.span(node) is None:
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else (
            node.func.attr if isinstance(node.func, ast.Attribute) else "")
        if name not in SORTS + EXTREMES or (name == "sort" and not isinstance(node.func, ast.Attribute)):
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue
        _, end = stmt.at(node)
        close = end - 1   # the call's `)`
        given = {k.arg: k for k in node.keywords}
        empty = not node.args and not node.keywords
        sep = "" if empty else ", "
        if "key" not in given and (name in SORTS or len(node.args) == 1):
            for key in keys:
                out.append((FAMILY, f"{name}(..., key={key})", replace_span(code, close, close, f"{sep}key={key}")))
        if "reverse" not in given and name in SORTS:
            out.append((FAMILY, f"{name}(..., reverse=True)", replace_span(code, close, close, f"{sep}reverse=True")))
        for arg in ("key", "reverse"):
            if arg in given:
                out += _without(code, stmt, given[arg], name)
    return out


def _without(code: str, stmt: StatementText, kw: ast.keyword, name: str) -> List[Edit]:
    """The call without one keyword argument (and the comma before it, or after it when it is first)."""
    where = stmt.span(kw) if hasattr(kw, "end_col_offset") else None
    if where is None:
        return []
    s, e = where
    before = code[:s].rstrip()
    if before.endswith(","):
        s = len(before) - 1
    else:
        after = code[e:]
        e += len(after) - len(after.lstrip().lstrip(",").lstrip()) if after.lstrip().startswith(",") else 0
    return [(FAMILY, f"{name}(...) without {kw.arg}=", code[:s] + code[e:])]
