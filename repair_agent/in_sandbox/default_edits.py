"""Wrong default values, for the mutation analysis (stdlib only, Python 3.9 and later, no import of the
project: shipped into the sandbox with operators.py).

A `def` line never runs inside a test: its defaults are made once, when the module is imported, so
the spectrum never ranks it and swapping a function's code (which holds no defaults) cannot try
another. The analysis instead edits the defaults of the functions the failing tests run and puts each
into the live function (`__defaults__`, `__kwdefaults__`) for the run. A flag's default is the one
flipped (`create=True` where the documentation says `False`); a count's is one off or 0.
"""
from __future__ import annotations

import ast
from typing import Any, List, Tuple

try:
    from .statement_edits import source_lines
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import source_lines  # type: ignore[no-redef]

# where a default goes in the live function: ("positional", its index in __defaults__, value) or
# ("keyword", the parameter's name, value)
DefaultSlot = Tuple[str, Any, Any]
# (the line the default is on, that line edited, what changed, family, its DefaultSlot)
DefaultMutant = Tuple[int, str, str, str, DefaultSlot]


def _alternatives(value: Any) -> List[Any]:
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return list(dict.fromkeys(v for v in (value + 1, value - 1, 0) if v != value))
    return []


def default_mutants(source: str, def_line: int) -> List[DefaultMutant]:
    """The edits of the constant defaults (a bool, an int) of the function whose `def` is on `def_line`."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    fn = next((n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.lineno == def_line), None)
    if fn is None:
        return []
    lines = source_lines(source)
    positional = fn.args.posonlyargs + fn.args.args
    slots: List[Tuple[ast.arg, Any, DefaultSlot]] = []
    for i, node in enumerate(fn.args.defaults):
        slots.append((positional[len(positional) - len(fn.args.defaults) + i], node, ("positional", i, None)))
    for arg, kw in zip(fn.args.kwonlyargs, fn.args.kw_defaults):
        if kw is not None:
            slots.append((arg, kw, ("keyword", arg.arg, None)))
    out: List[DefaultMutant] = []
    for arg, node, (kind, where, _) in slots:
        if not isinstance(node, ast.Constant) or node.lineno != node.end_lineno or node.lineno > len(lines):
            continue
        text = lines[node.lineno - 1]
        raw = text.encode("utf-8")
        start, end = node.col_offset, node.end_col_offset   # byte offsets
        old = raw[start:end].decode("utf-8")
        for value in _alternatives(node.value):
            new = (raw[:start] + repr(value).encode("utf-8") + raw[end:]).decode("utf-8")
            out.append((node.lineno, new, "default %s=%s -> %s=%r" % (arg.arg, old, arg.arg, value), "default",
                        (kind, where, value)))
    return out


def with_default(defaults: Any, kwdefaults: Any, slot: DefaultSlot) -> Tuple[Any, Any]:
    """A function's (__defaults__, __kwdefaults__) with the one of `slot` replaced."""
    kind, where, value = slot
    if kind == "positional":
        items = list(defaults or ())
        items[where] = value
        return tuple(items), kwdefaults
    return defaults, dict(kwdefaults or {}, **{where: value})
