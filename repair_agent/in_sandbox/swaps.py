"""The token swaps of the one table of one-line edits (operators.py): comparison, arithmetic and
name swaps, and the slips between a call's function and a sibling the mutant generator makes
(`chr(int(x))` written `chr(float(x))`, `.startswith` written `.endswith`), whose inverses the
analysis and the catalogue try.

Shipped into the sandbox with the mutation analysis: the standard library only, Python 3.9 and
later, no import of the project, nothing runs at import.
"""
from __future__ import annotations

import ast
import functools
import tokenize
from typing import Dict, List, Mapping, Sequence, Tuple

try:
    from .statement_edits import Edit, replace_span, statement_ast, tokens_of
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import Edit, replace_span, statement_ast, tokens_of  # type: ignore[no-redef]

COMPARE_SWAPS = {"<": ("<=", ">", "!="), "<=": ("<", ">="), ">": (">=", "<", "!="), ">=": (">", "<="),
                 "==": ("!=",), "!=": ("==",)}
BOUNDARY_SWAPS = {("<", "<="), ("<=", "<"), (">", ">="), (">=", ">")}
ARITH_SWAPS = {"+": ("-",), "-": ("+",), "*": ("/",), "/": ("//", "*"), "//": ("/", "%"), "%": ("//",),
               # augmented assignments: the operator, or a plain assignment instead of an accumulation
               "+=": ("-=", "*=", "="), "-=": ("+=", "="), "*=": ("/=", "+=", "="), "/=": ("*=", "//="),
               "//=": ("/=",), "%=": ("//=",)}
NAME_SWAPS = {"and": ("or",), "or": ("and",), "True": ("False",), "False": ("True",), "min": ("max",),
              "max": ("min",), "any": ("all",), "all": ("any",), "lower": ("upper",), "upper": ("lower",),
              "lstrip": ("strip",), "rstrip": ("strip",), "strip": ("rstrip", "lstrip"),
              "startswith": ("endswith",), "endswith": ("startswith",), "floor": ("ceil",), "ceil": ("floor",),
              "append": ("extend",), "extend": ("append",), "isinstance": ("issubclass",), "issubclass": ("isinstance",),
              "find": ("rfind",), "rfind": ("find",), "index": ("rindex",), "rindex": ("index",),
              "split": ("rsplit",), "rsplit": ("split",),
              # attributes only (`heapq.nlargest`, `pattern.match`): the same names as variables are not these
              "nlargest": ("nsmallest",), "nsmallest": ("nlargest",), "search": ("match",), "match": ("search",)}
ATTRIBUTE_ONLY = frozenset({"nlargest", "nsmallest", "search", "match", "find", "rfind", "index", "rindex",
                            "split", "rsplit"})
# Calls whose arguments are iterables or arbitrary objects, never counts: no argument offsets there.
ITERABLE_CALLS = frozenset({"zip", "map", "filter", "sorted", "reversed", "list", "tuple", "set", "frozenset", "iter",
                            "enumerate", "dict", "any", "all", "sum", "chain", "concat", "repeat", "cycle", "join",
                            "str", "repr", "print", "isinstance", "getattr", "hasattr", "append", "extend"})
NUMERIC_CALLS = {"round", "int", "float", "abs", "Decimal", "min", "max", "sum", "Fraction"}

# A called builtin or method, and the sibling a slip puts in its place (the generator's direction).
FUNCTION_SLIPS = {"min": "max", "max": "min", "any": "all", "all": "any", "str": "repr", "repr": "str",
                  "sorted": "reversed", "reversed": "sorted", "list": "tuple", "tuple": "list",
                  "isinstance": "issubclass", "hasattr": "callable", "int": "float", "float": "int",
                  "zip": "enumerate", "enumerate": "zip", "filter": "map", "map": "filter"}
METHOD_SLIPS = {"lower": "upper", "upper": "lower", "startswith": "endswith", "endswith": "startswith",
                "lstrip": "rstrip", "rstrip": "lstrip", "strip": "rstrip", "find": "rfind", "rfind": "find",
                "index": "rindex", "rindex": "index", "split": "rsplit", "rsplit": "split",
                "append": "extend", "extend": "append", "keys": "values", "values": "keys",
                "items": "values", "get": "pop", "pop": "get", "add": "discard", "update": "setdefault",
                "match": "search", "search": "match", "fullmatch": "match", "sub": "subn",
                "isdigit": "isalpha", "isalpha": "isdigit", "isupper": "islower", "islower": "isupper",
                "title": "capitalize", "capitalize": "title", "join": "split", "replace": "split",
                "insert": "append", "remove": "discard", "copy": "items", "group": "groups"}


def undoing(slips: Mapping[str, str]) -> Dict[str, Tuple[str, ...]]:
    """What each slipped name may have been: the inverse of `slips` (`float` -> `int`, `subn` -> `sub`)."""
    out: Dict[str, List[str]] = {}
    for right, wrong in slips.items():
        out.setdefault(wrong, []).append(right)
    return {wrong: tuple(sorted(rights)) for wrong, rights in out.items()}


# Methods of one type that people confuse with each other (`dt.time()` for `dt.timetz()`, `.upper()` for
# `.capitalize()`): a fix may call any other of its group. Only fixes try them; the generator slips
# as METHOD_SLIPS says.
CASE_METHODS = ("lower", "upper", "capitalize", "title", "casefold", "swapcase")   # a case-changing call: its own family
METHOD_GROUPS = (
    CASE_METHODS,
    ("strip", "lstrip", "rstrip"),
    ("split", "rsplit", "splitlines", "partition", "rpartition"),
    ("find", "rfind", "index", "rindex", "count"),
    ("startswith", "endswith"),
    ("isdigit", "isdecimal", "isnumeric", "isalnum", "isalpha", "isspace"),
    ("ljust", "rjust", "center"),
    ("removeprefix", "removesuffix"),
    ("date", "time", "timetz"),
    ("keys", "values", "items"),
    ("append", "extend", "insert"),
    ("match", "search", "fullmatch", "findall", "finditer"),
    ("sub", "subn"),
    ("get", "pop", "setdefault"),
    ("add", "discard", "remove"),
)


@functools.lru_cache(maxsize=None)
def slip_fixes() -> Tuple[Dict[str, Tuple[str, ...]], Dict[str, Tuple[str, ...]]]:
    """The inverses of FUNCTION_SLIPS and METHOD_SLIPS, then the rest of each method's group, built once
    (every line asks for them)."""
    methods = {k: list(v) for k, v in undoing(METHOD_SLIPS).items()}
    for group in METHOD_GROUPS:
        for name in group:
            known = methods.setdefault(name, [])
            known += [other for other in group if other != name and other not in known]
    return undoing(FUNCTION_SLIPS), {k: tuple(v) for k, v in methods.items()}


# An unbounded value: `max(n, maxsize)` is always `maxsize`, `min(n, -inf)` always `-inf`.
_HUGE = ("maxsize", "inf")


def _sentinel(node: ast.AST) -> int:
    """+1 for a value no number exceeds (`sys.maxsize`, `math.inf`, `float("inf")`), -1 for its
    negation, else 0."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_sentinel(node.operand)
    if isinstance(node, ast.Name) and node.id in _HUGE or isinstance(node, ast.Attribute) and node.attr in _HUGE:
        return 1
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1 \
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        text = node.args[0].value.strip().lower()
        return {"inf": 1, "+inf": 1, "infinity": 1, "-inf": -1, "-infinity": -1}.get(text, 0)
    return 0


def constant_extremes(code: str) -> int:
    """How many `max(...)` calls with an argument no number exceeds (or `min(...)` with one no number
    is below) the line holds: each is that argument whatever the others are, so an edit that makes one
    (`min(n, maxsize)` -> `max(n, maxsize)`) turns a bound into a constant and is no fix."""
    parsed = statement_ast(code) if "maxsize" in code or "inf" in code else None
    return 0 if parsed is None else sum(1 for n in ast.walk(parsed[0]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id in ("min", "max") and len(n.args) > 1 and not n.keywords
               and any(_sentinel(a) == (1 if n.func.id == "max" else -1) for a in n.args))


def call_slip_fixes(code: str, toks: Sequence[tokenize.TokenInfo]) -> List[Edit]:
    """A called builtin (`float(...)`, not `x.float(...)`) or method (`.subn(...)`) replaced by what a slip
    may have replaced. Some are name swaps too (`min` -> `max`): the caller keeps one edit per text."""
    out: List[Edit] = []
    functions, methods = slip_fixes()
    for k, t in enumerate(toks[:-1]):
        if t.type != tokenize.NAME or toks[k + 1].string != "(" or t.start[0] != 1:
            continue
        after_dot = k > 0 and toks[k - 1].string == "."
        fixes = (methods if after_dot else functions).get(t.string, ())
        for new in fixes:
            family = "case-call" if t.string in CASE_METHODS and new in CASE_METHODS else "call-name"
            out.append((family, f"{t.string}() -> {new}()", replace_span(code, t.start[1], t.end[1], new)))
    return out


SEPARATORS = ("", " ", "-", "_", ",", ".", "/", ":", "\n")
MAX_SEPARATOR_SWAPS = 8


def literal_swaps(line: str, chars: tuple[str, ...] = ()) -> list[Edit]:
    """A separator literal (one character or none) that should be another: the usual separators and
    the punctuation of the failing tests' texts (`chars`), for the mutation analysis alone (a test
    run tells which one, where the catalogue could only guess)."""
    code = line.rstrip("\r\n")
    ending = line[len(code):] or "\n"
    out: list[Edit] = []
    for t in tokens_of(code):
        if t.type != tokenize.STRING or t.start[0] != 1 or t.string[:1] not in "'\"" or t.string[:3] in ("'''", '"""'):
            continue
        try:
            value = ast.literal_eval(t.string)
        except (ValueError, SyntaxError):
            continue
        if not isinstance(value, str) or len(value) > 1:
            continue
        for other in [v for v in dict.fromkeys(tuple(chars) + SEPARATORS) if v != value][:MAX_SEPARATOR_SWAPS]:
            literal = repr(other)
            if t.string[0] == '"':
                literal = '"' + literal[1:-1].replace("\\'", "'").replace('"', '\\"') + '"'
            out.append(("separator", f"{value!r} -> {other!r}", code[:t.start[1]] + literal + code[t.end[1]:] + ending))
    return out
