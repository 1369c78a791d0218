"""The bug report's own examples, evaluated on the code as it is and on each mutant that turns the
failing targets green (hints/goal_examples.py reads them off the goal text on the host).

An example is an expression and the value it should have (a literal's source) or the exception it
should raise. It is evaluated in the names the failing tests' modules see, over those of the modules
the analysis mutates (the report says `truncate(...)` where the test says `_.truncate(...)`), and
each evaluation is cut by the analysis's own alarm like any test. An example whose expression cannot
be resolved there (a name neither side has, a syntax error) is dropped before any mutant runs.

The standard library only, Python 3.9 and later (shipped as `ra_examples`); nothing runs at import.
"""
from __future__ import annotations

import ast
import contextlib
import io
from typing import Any, Dict, List, Optional, Sequence, Tuple

try:
    from .behaviour import stable_repr
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_behaviour import stable_repr  # type: ignore[no-redef]

MAX_EXAMPLES = 8    # the host reads no more off a goal text (hints/goal_examples.py)
VALUE, RAISED, UNRESOLVED = "value", "raised", "unresolved"   # evaluate()'s kinds
MAX_VARIANTS = 24   # inputs near the examples' own, in all


def variants(expr: str) -> List[str]:
    """The expression again with one literal argument of one of its calls changed a little: a text one
    character longer or shorter, in upper case, with a space before it, empty; a whole number one more
    or one less, or 0. What a fix does on these against what the code as given did is how far its
    behaviour moved from the code's near the report's example (Analysis.goal_deviation)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return []
    out: List[str] = []
    for call in [n for n in ast.walk(tree) if isinstance(n, ast.Call)]:
        for arg in list(call.args) + [k.value for k in call.keywords]:
            if not isinstance(arg, ast.Constant) or isinstance(arg.value, bool):
                continue
            old = arg.value
            if isinstance(old, str):
                new: List[Any] = [old + "x", old[:-1], old.upper(), " " + old, ""]
            elif isinstance(old, int):
                new = [old + 1, old - 1, 0]
            else:
                continue
            for value in dict.fromkeys(v for v in new if v != old):
                arg.value = value
                out.append(ast.unparse(tree))
            arg.value = old
    return [v for v in dict.fromkeys(out) if v != expr]


class Example:
    """One example, compiled: `check(ns)` is True when it holds, False when it does not, None when it
    cannot be evaluated here at all (NameError, ImportError: it names what the namespace lacks)."""

    def __init__(self, expr: str, expect: Optional[str], raises: Optional[str]) -> None:
        self.expr = expr
        self.code = compile(expr, "<example>", "eval")   # SyntaxError: the caller drops it
        self.expect = ast.literal_eval(expect) if expect is not None else None
        self.raises = raises

    def check(self, ns: Dict[str, Any]) -> Optional[bool]:
        kind, value = evaluate(self.code, ns)
        if kind == UNRESOLVED:
            return None
        if kind == RAISED:
            return self.raises is not None and any(k.__name__ == self.raises for k in type(value).__mro__)
        if self.raises is not None:
            return False
        try:
            return bool(value == self.expect) or (isinstance(self.expect, (list, tuple)) and not isinstance(value, (str, bytes))
                                                  and hasattr(value, "__iter__") and list(value) == list(self.expect))
        except Exception:   # a value that cannot be compared, or iterated, is not the one expected
            return False


def compiled(examples: Sequence[Dict[str, Any]]) -> List[Example]:
    """The examples the host sent that compile and whose expected value is a literal."""
    out: List[Example] = []
    for e in list(examples)[:MAX_EXAMPLES]:
        try:
            out.append(Example(e["expr"], e.get("expect"), e.get("raises")))
        except (SyntaxError, ValueError, TypeError, KeyError, MemoryError, RecursionError):
            continue
    return out


def namespace(test_modules: Sequence[Any], project_modules: Sequence[Any]) -> Dict[str, Any]:
    """The names an example may use: each project module's globals and the module itself under its
    top package's name (`sqlparse.parse`), then the failing tests' modules' globals over them."""
    import sys
    ns: Dict[str, Any] = {}
    for mod in project_modules:
        ns.update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
        top = mod.__name__.split(".")[0]
        if top in sys.modules:
            ns.setdefault(top, sys.modules[top])
    for mod in test_modules:
        ns.update({k: v for k, v in vars(mod).items() if not k.startswith("__")})
    ns["__builtins__"] = __builtins__
    return ns


def evaluate(code: Any, ns: Dict[str, Any]) -> Tuple[str, Any]:
    """(VALUE, what the expression came to; an iterator as the list of its items), (RAISED, the
    exception) or (UNRESOLVED, None) when it names what the namespace lacks (NameError, ImportError).
    Its printing is swallowed."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            value = eval(code, ns)   # noqa: S307 - the report's example (or one near it), in the agent's sandbox
            return VALUE, (list(value) if hasattr(value, "__next__") else value)
    except (NameError, ImportError):
        return UNRESOLVED, None
    except Exception as exc:
        return RAISED, exc


def outcome(code: Any, ns: Dict[str, Any]) -> Optional[str]:
    """What an expression came to, as text (an exception by its type's name); None when unresolved."""
    kind, value = evaluate(code, ns)
    if kind == UNRESOLVED:
        return None
    return "raises " + type(value).__name__ if kind == RAISED else stable_repr(value)
