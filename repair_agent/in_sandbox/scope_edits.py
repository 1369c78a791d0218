"""One-line edits that need to know the code around the line: the parameters of the functions the
file defines, the variables in scope and the names the file calls (stdlib only, Python 3.9 and
later, no import of the project: shipped into the sandbox with operators.py).

From the published taxonomy of single-statement bugs (ManySStuBs4J, Karampatsis & Sutton, MSR 2020;
PySStuBs, Kamienski et al., MSR 2021), the kinds whose fix names something the line itself does not:

- same function, more arguments: a call to a function of the file leaves out a parameter that a
  variable of the same name in scope would fill (`is_open(day)` -> `is_open(day, holidays)`);
- a missing call: a value passed through a function the scope holds and calls elsewhere
  (`inner[k] = default` -> `inner[k] = func(default)`), or one an enclosing function makes and then
  never uses (`output_schema = Schema(returns)` and a nested `return output` -> `return
  output_schema(output)`: the only use was the call that went missing);
- a wrong return value: `return None` where a parameter was meant (`return None` -> `return default`);
- change identifier used: a name whose words hold one of a pair of opposites becomes its
  counterpart, when the file names that counterpart (`left_default` -> `right_default`,
  `.start` -> `.end`).

Each function returns (family, what, new line) triples, like the operator table.
"""
from __future__ import annotations

import ast
import re

try:
    from .statement_edits import Edit, StatementText, neutral_text, replace_span, statement_ast
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import (Edit, StatementText, neutral_text,  # type: ignore[no-redef]
                                    replace_span, statement_ast)

DEF_START = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")
SKIPPED_PARAMS = ("self", "cls")


def signatures_of(lines: dict[int, str]) -> dict[str, tuple[str, ...]]:
    """The parameters of every function the lines define (a header over several lines included).
    A name defined twice with different parameters is left out: which one a call reaches is unknown."""
    out: dict[str, tuple[str, ...]] = {}
    clash: set[str] = set()
    for n in sorted(lines):
        m = DEF_START.match(lines[n])
        if not m:
            continue
        header, k = lines[n].strip(), n
        while not re.search(r"\)\s*(->[^:]*)?:\s*(#.*)?$", header) and k - n < 12 and (k + 1) in lines:
            k += 1
            header += " " + lines[k].strip()
        header = re.sub(r"^async\s+", "", header)
        try:
            tree = ast.parse(re.sub(r":\s*(#.*)?$", ":", header) + " pass")
        except SyntaxError:
            continue
        fn = tree.body[0] if tree.body else None
        if not isinstance(fn, ast.FunctionDef):
            continue
        a = fn.args
        params = tuple(p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg not in SKIPPED_PARAMS)
        name = m.group(1)
        if name in out and out[name] != params:
            clash.add(name)
        out[name] = params
    return {k: v for k, v in out.items() if k not in clash}


def unused_callables(text: str) -> list[tuple[int, int, list[str]]]:
    """Per function with nested ones (first line, last line, names): the callables it makes (a `def`,
    a lambda, an object built by a call) and never reads, its nested functions included: a name made
    and never used is the sign of a use that went missing."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out: list[tuple[int, int, list[str]]] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nested = [n for n in ast.walk(fn) if n is not fn and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
        if not nested:
            continue
        read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        inner = {id(x) for n in nested for x in ast.walk(n) if x is not n}   # the nested functions' own names
        made: list[str] = []
        for stmt in (x for x in ast.walk(fn) if id(x) not in inner):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) and any(
                    isinstance(v, (ast.Lambda, ast.Call)) for v in ast.walk(stmt.value)):
                made.append(stmt.targets[0].id)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt is not fn and not stmt.decorator_list:
                made.append(stmt.name)
        names = [n for n in dict.fromkeys(made) if n not in read and not n.startswith("_")]
        if names:
            out.append((fn.lineno, fn.end_lineno or fn.lineno, names))
    return out


def scope_edits(code: str, names: tuple[str, ...], callables: tuple[str, ...],
                signatures: dict[str, tuple[str, ...]]) -> list[Edit]:
    parsed = statement_ast(code)
    if parsed is None:
        return []
    tree, indent = parsed
    stmt = StatementText(code, indent)
    out = _missing_arguments(code, tree, stmt, names, signatures)
    out += _missing_calls(code, tree, stmt, names, callables)
    out += _returned_parameter(code, tree, stmt, names)
    out += _opposite_names(code, tree, stmt, names, callables, signatures)
    out += _sibling_arguments(code, tree, stmt)
    out += _type_of(code, tree, stmt, names)
    return out


# built-in types a call may be given where the type of a value at hand was meant
BUILTIN_TYPES = frozenset({"list", "tuple", "set", "frozenset", "dict", "str", "bytes", "int", "float"})
TYPE_TESTS = frozenset({"isinstance", "issubclass", "type"})   # a fixed type there is the point of the call
MAX_TYPE_OF = 4   # variables whose type is tried per built-in type


def _type_of(code: str, tree: ast.AST, stmt: StatementText, names: tuple[str, ...]) -> list[Edit]:
    """A built-in type passed to a call replaced by the type of a variable of the scope: code that
    handles lists, tuples and sets alike and builds one of them as a list (`Schema(list).validate(data)`
    -> `Schema(type(s)).validate(data)`, where `s` is the tuple or set being matched)."""
    out: list[Edit] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or (isinstance(node.func, ast.Name) and node.func.id in TYPE_TESTS):
            continue
        for arg in node.args:
            if isinstance(arg, ast.Name) and arg.id in BUILTIN_TYPES and stmt.span(arg):
                for n in [n for n in names if n not in ("self", "cls")][:MAX_TYPE_OF]:
                    out.append(("type-of", f"{arg.id} -> type({n})", replace_span(code, *stmt.at(arg), f"type({n})")))
    return out


# methods that come in mirrored kinds: a call of one with no argument, beside a call of its kind with one,
# may have lost that argument (`base.rstrip("/") + "/" + path.lstrip()`)
MIRRORED = (("strip", "lstrip", "rstrip"), ("split", "rsplit"), ("removeprefix", "removesuffix"),
            ("startswith", "endswith"), ("partition", "rpartition"), ("ljust", "rjust", "center"),
            ("find", "rfind"), ("index", "rindex"))


def _sibling_arguments(code: str, tree: ast.AST, stmt: StatementText) -> list[Edit]:
    """A method call without arguments given the one literal argument a call of its kind on the line has."""
    calls = [(n, n.func.attr) for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and stmt.span(n)]
    out: list[Edit] = []
    for bare, method in calls:
        close = stmt.at(bare)[1] - 1
        if bare.args or bare.keywords or code[close] != ")":
            continue
        kind = next((k for k in MIRRORED if method in k), ())
        given = [stmt.text(c.args[0]) for c, m in calls if c is not bare and m in kind
                 and len(c.args) == 1 and not c.keywords and isinstance(c.args[0], ast.Constant)]
        for arg in dict.fromkeys(given):
            out.append(("more-arguments", f"pass {arg} to .{method}()", code[:close] + arg + code[close:]))
    return out


def _callee(node: ast.Call) -> str:
    f = node.func
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in SKIPPED_PARAMS:
        return f.attr   # `self.method(...)`: a method of this file's class
    return ""


def _missing_arguments(code: str, tree: ast.AST, stmt: StatementText, names: tuple[str, ...],
                       signatures: dict[str, tuple[str, ...]]) -> list[Edit]:
    out: list[Edit] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and stmt.span(node)) or _callee(node) not in signatures:
            continue
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue   # `f(*args)`, `f(**kw)`: what is passed is unknown
        params = signatures[_callee(node)]
        passed = {k.arg for k in node.keywords}
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        close = stmt.at(node)[1] - 1   # the closing parenthesis
        if code[close] != ")":
            continue
        empty = not node.args and not node.keywords
        for k, param in enumerate(params):
            if k < len(node.args) or param in passed or param not in names or param in used:
                continue
            # the next positional parameter is passed by position, a later one by keyword
            arg = param if k == len(node.args) and not node.keywords else f"{param}={param}"
            new = code[:close] + ("" if empty else ", ") + arg + code[close:]
            out.append(("more-arguments", f"pass {param} to {_callee(node)}()", new))
    return out


def _missing_calls(code: str, tree: ast.AST, stmt: StatementText, names: tuple[str, ...],
                   callables: tuple[str, ...]) -> list[Edit]:
    """A value assigned, returned or passed, wrapped in a variable of the scope the file calls."""
    funcs = [n for n in names if n in callables]
    if not funcs:
        return []
    values: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.Return, ast.AugAssign)) and node.value is not None:
            values.append(node.value)
        elif isinstance(node, ast.Call):
            values += node.args
    out: list[Edit] = []
    for v in values:
        if not isinstance(v, (ast.Name, ast.Attribute, ast.Subscript)) or not stmt.span(v):
            continue
        text = stmt.text(v)
        for f in funcs:
            if f != text and not (isinstance(v, ast.Name) and v.id in callables):
                out.append(("missing-call", f"{text} -> {f}({text})", replace_span(code, *stmt.at(v), f"{f}({text})")))
    return out


def _returned_parameter(code: str, tree: ast.AST, stmt: StatementText, names: tuple[str, ...]) -> list[Edit]:
    top = tree.body[0] if isinstance(tree, ast.Module) and tree.body else None
    if not (isinstance(top, ast.Return) and top.value is not None and stmt.span(top.value)):
        return []
    empty = neutral_text(top.value)
    if empty is None:
        return []
    return [("return-variable", f"return {empty} -> return {n}", replace_span(code, *stmt.at(top.value), n))
            for n in names[:6]]


# Words of a name that have an opposite a slip writes for them.
OPPOSITES = {"left": "right", "right": "left", "start": "end", "end": "start", "begin": "end", "first": "last",
             "last": "first", "head": "tail", "tail": "head", "prefix": "suffix", "suffix": "prefix",
             "before": "after", "after": "before", "lo": "hi", "hi": "lo", "low": "high", "high": "low",
             "old": "new", "new": "old", "prev": "next", "next": "prev", "src": "dst", "dst": "src",
             "inner": "outer", "outer": "inner", "open": "close", "close": "open", "keys": "values",
             "values": "keys", "width": "height", "height": "width", "row": "col", "col": "row",
             "major": "minor", "minor": "major", "stop": "start", "input": "output", "output": "input",
             "read": "write", "write": "read", "get": "set", "set": "get", "add": "remove", "remove": "add",
             "push": "pop", "pop": "push", "local": "utc", "utc": "local"}


# Attributes that come in pairs on the same object (`m.start()`/`m.end()`, `d.keys()`/`d.values()`,
# `interval.lo`/`interval.hi`): the counterpart exists even when the file does not name it.
PAIRED_ATTRIBUTES = frozenset({"start", "end", "first", "last", "left", "right", "head", "tail", "lo", "hi", "low",
                               "high", "width", "height", "row", "col", "major", "minor", "prefix", "suffix",
                               "before", "after", "keys", "values", "begin"})


def _counterparts(name: str) -> list[str]:
    words = name.split("_")
    out = []
    for k, w in enumerate(words):
        other = OPPOSITES.get(w.lower())
        if other:
            other = other.upper() if w.isupper() else other
            out.append("_".join(words[:k] + [other] + words[k + 1:]))
    return out


def _opposite_names(code: str, tree: ast.AST, stmt: StatementText, names: tuple[str, ...],
                    callables: tuple[str, ...], signatures: dict[str, tuple[str, ...]]) -> list[Edit]:
    """A variable, a call or an attribute read whose counterpart the file names (a variable of the
    scope, a function it calls or defines, or an attribute read on this line or named by a parameter)."""
    known = set(names) | set(callables) | set(signatures) | {p for ps in signatures.values() for p in ps}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    out: list[Edit] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and stmt.span(node):
            for other in _counterparts(node.id):
                if other in known:
                    out.append(("opposite", f"{node.id} -> {other}", replace_span(code, *stmt.at(node), other)))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and stmt.span(node):
            end = stmt.at(node)[1]
            start = end - len(node.attr)
            if code[start:end] != node.attr:
                continue
            for other in _counterparts(node.attr):
                if other in attrs or other in known or node.attr in PAIRED_ATTRIBUTES:
                    out.append(("opposite", f".{node.attr} -> .{other}", replace_span(code, start, end, other)))
    return out
