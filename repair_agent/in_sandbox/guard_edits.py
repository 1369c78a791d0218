"""Guards the mutation analysis tries before a suspicious line (stdlib only, Python 3.9 and later, no
import of the project: shipped into the sandbox with operators.py).

A missing check is the most common multi-line fix (the "missing if" and "missing exception"
patterns of the bug-fix taxonomies): `if X is None: return False`, `if not items: return []`,
`if key in table: raise E(...)`. The catalogue cannot know what such a guard should return or
raise; the analysis can, because it sees the failing tests: when they expected an exception that
was not raised, the guard raises it (built as the file already builds it); otherwise it returns
what the function's annotation or its own neutral returns say. Each guard is then run against the
failing and the passing tests like any other mutant, so only guards the tests agree with survive.
Guards whose condition is searched for rather than read off the line are in probe_edits.py.
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

try:
    from .statement_edits import statement_ast
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import statement_ast  # type: ignore[no-redef]

Edit = Tuple[str, str, str]   # (family, what, the new text: the guard's lines and the line itself)

# pytest.raises (`DID NOT RAISE <class 'm.E'>` before pytest 8, `DID NOT RAISE E` after), unittest's assertRaises
NOT_RAISED = (re.compile(r"DID NOT RAISE (?:<class ')?([A-Za-z_][\w.]*)"), re.compile(r"\b([A-Z]\w*) not raised"))
HEADS_WITHOUT_GUARD = ("elif ", "elif(", "else", "except", "finally", "def ", "async def ", "class ", "@", "#",
                       ")", "]", "}", '"""', "'''")
MAX_EXPRESSIONS = 4


@dataclass(frozen=True)
class GuardContext:
    """What a guard of one function may do: raise `raise_stmt` (the failing tests expected an exception),
    or else return one of `returns` (the neutral values the function's annotation or returns name)."""
    raise_stmt: Optional[str]
    returns: Tuple[str, ...]


def expected_exception(messages: Sequence[str]) -> Optional[str]:
    """The exception a failing test expected and did not get (`DID NOT RAISE <class 'm.E'>` -> `E`)."""
    for message in messages:
        for pattern in NOT_RAISED:
            m = pattern.search(message)
            if m:
                return m.group(1).split(".")[-1]
    return None


EXPECTS_RAISE = re.compile(r"\b(?:raises|assertRaises|assertRaisesRegex|assertRaisesRegexp)\(\s*([A-Za-z_][\w.]*)\s*[,)]"
                           r"|\bexcept\s+([A-Za-z_][\w.]*)(?:\s+as\s+\w+)?\s*:")   # a helper that catches it
TOO_BROAD = frozenset({"Exception", "BaseException"})


def expected_in_tests(sources: Sequence[str]) -> Optional[str]:
    """The one exception the failing tests' code says it expects (`pytest.raises(E)`,
    `self.assertRaises(E, ...)`, `except E as e: return e`), when another exception escaped instead;
    None when none or several."""
    found = {(m.group(1) or m.group(2)).split(".")[-1] for text in sources for m in EXPECTS_RAISE.finditer(text)}
    found -= TOO_BROAD
    return found.pop() if len(found) == 1 else None


# `pytest.raises(E, match="...")`, `assertRaisesRegex(E, "...")`: the text the exception's message must hold
EXPECTS_MESSAGE = re.compile(r"""\bmatch\s*=\s*r?(['"])(.+?)\1|\bassertRaisesRegexp?\(\s*[\w.]+\s*,\s*r?(['"])(.+?)\3""")
REGEX_SYNTAX = re.compile(r"[.^$*+?{}\[\]|()]")


def expected_message(sources: Sequence[str]) -> Optional[str]:
    """The message the failing tests' code asks the expected exception to match, when they ask for one
    and it is plain text (`match="timezone minute"`; escaped punctuation `\\.` read as itself); None
    when none, several, or a real pattern."""
    found = set()
    for text in sources:
        for m in EXPECTS_MESSAGE.finditer(text):
            pattern = m.group(2) if m.group(2) is not None else m.group(4)
            literal = re.sub(r"\\(\W)", "", pattern)
            if REGEX_SYNTAX.search(literal) or "\\" in literal:
                return None
            found.add(re.sub(r"\\(\W)", r"\1", pattern))
    return found.pop() if len(found) == 1 else None


EXPECTS_PARAMETER = re.compile(r"\bmatch\s*=\s*([A-Za-z_]\w*)\s*[,)]")


def parametrized_message(sources: Sequence[str], params: Sequence[Dict[str, Any]]) -> Optional[str]:
    """The message a failing test asks for through one of its parameters (`match=match`, each case's
    text; `params`: each failing test's parameters), when the failing tests agree on it and it matches
    itself as a pattern (`"forbids \"transparent\" as a value."`); else None."""
    found = set()
    for text, values in zip(sources, params):
        for m in EXPECTS_PARAMETER.finditer(text):
            value = values.get(m.group(1))
            if not isinstance(value, str) or not value:
                return None
            try:
                if re.search(value, value) is None:
                    return None
            except re.error:
                return None
            found.add(value)
    return found.pop() if len(found) == 1 else None


def raised_instead(messages: Sequence[str]) -> bool:
    """Did a failing test get an exception where it asserted a value, or no exception where it expected
    one (the failures a missing check leaves), rather than a wrong value?"""
    for message in messages:
        text = message[len("failed: "):] if message.startswith("failed: ") else message
        if expected_exception([text]) or not text.startswith(("assert ", "AssertionError", "Failed", "skipped")):
            return True
    return False


def raise_statement(exc: str, lines: Sequence[str], message: Optional[str] = None) -> Optional[str]:
    """How the file raises `exc` on one line (its own arguments kept: an exception that takes more than a
    message is built the way the code builds it), or `raise exc("...")` for a builtin or a name the file
    holds; None when the file could not raise it. With the `message` the tests ask for (expected_message),
    `raise exc(message)` when the file raises `exc` with a message alone, or it is a builtin or a class the
    file defines; not when the file already says the message (its raise is there: the fault is more likely
    in the condition before it than in a missing guard)."""
    call = re.compile(r"^\s*raise\s+(?:[\w.]+\.)?%s\(" % re.escape(exc))
    builtin = isinstance(getattr(builtins, exc, None), type) and issubclass(getattr(builtins, exc), BaseException)
    if message is not None and not any(message in text for text in lines):
        alone = re.compile(r"^\s*raise\s+((?:[\w.]+\.)?%s)\(\s*[rbuf]?(['\"]).*\2\s*\)\s*(#.*)?$" % re.escape(exc))
        for text in lines:
            m = alone.match(text.rstrip("\r\n"))
            if m:
                return "raise %s(%r)" % (m.group(1), message)
        if builtin or any(re.search(r"\bclass\s+%s\b" % re.escape(exc), t) for t in lines):
            return "raise %s(%r)" % (exc, message)
    for text in lines:
        if call.match(text):
            try:
                ast.parse(text.strip())
            except SyntaxError:
                continue   # over several lines
            return text.strip()
    if builtin or any(re.search(r"\b%s\b" % re.escape(exc), t) for t in lines):
        return "raise %s(%r)" % (exc, "invalid input")
    return None


ANNOTATED = ((re.compile(r"\bbool\b"), "False"), (re.compile(r"\b(?:list|List|Sequence)\b"), "[]"),
             (re.compile(r"\b(?:int|float)\b"), "0"), (re.compile(r"\bstr\b"), "''"),
             (re.compile(r"\b(?:dict|Dict|Mapping)\b"), "{}"), (re.compile(r"\b(?:tuple|Tuple)\b"), "()"),
             (re.compile(r"\b(?:None|Optional)\b"), "None"))


def neutral_returns(function_lines: Sequence[str]) -> Tuple[str, ...]:
    """At most two values a guard of this function returns: the annotation's neutral value, then the
    neutral values it already returns (`return False` makes `False` one, `return True` too), then None."""
    header = ""
    for text in function_lines:
        header += text
        if re.search(r"\)\s*(->[^:]*)?:\s*(#.*)?$", text.rstrip()):
            break
    out: List[str] = []
    annotation = re.search(r"->\s*([^:]+):", header)
    for pattern, value in ANNOTATED:
        if annotation and pattern.search(annotation.group(1)):
            out.append(value)
    for text in function_lines:
        m = re.match(r"^\s*return\s+(None|True|False|\[\]|\(\)|\{\}|''|\"\"|0)\s*(#.*)?$", text)
        if m:
            out.append("False" if m.group(1) == "True" else m.group(1).replace('""', "''"))
    out.append("None")
    return tuple(dict.fromkeys(out))[:2]


NUMBER_OF = ("int", "float", "len")
MAX_BOUNDS = 2


def bound_conditions(top: ast.AST, variables: Sequence[str]) -> List[str]:
    """A range check a raising guard makes on the numbers the line reads (input validation, the most
    common raising guard): `E < 0`, `E <= 0`, and `E >= K` for an integer K of the line (a limit,
    a radix: `m + h * 60` bounds `m` by 60). E: one of `variables` (the scope's the line reads), or
    int()/float()/len() of one (then not the variable itself, which is text or a collection)."""
    converted: List[str] = []
    wrapped = set()
    for node in ast.walk(top):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in NUMBER_OF \
                and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], (ast.Name, ast.Attribute)):
            text = ast.unparse(node)
            wrapped.add(ast.unparse(node.args[0]))
            if text not in converted:
                converted.append(text)
    exprs = (converted + [x for x in variables if x not in wrapped])[:MAX_EXPRESSIONS]
    bounds = sorted({n.value for n in ast.walk(top) if isinstance(n, ast.Constant) and type(n.value) is int
                     and n.value >= 2})[:MAX_BOUNDS]
    return [c for x in exprs for c in ["%s < 0" % x, "%s <= 0" % x] + ["%s >= %d" % (x, k) for k in bounds]]


def read_expressions(top: ast.AST, names: Sequence[str]) -> List[str]:
    """The variables of `names` the statement reads (not those it stores), and the attributes of variables
    it reads without calling them, in its order."""
    stored = {n.id for n in ast.walk(top) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    called = {id(n.func) for n in ast.walk(top) if isinstance(n, ast.Call)}
    exprs: List[str] = []
    scope = set(names) | {"self"}
    for node in ast.walk(top):
        text = ""
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names and node.id not in stored:
            text = node.id
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in called \
                and isinstance(node.value, ast.Name) and node.value.id in scope:
            text = "%s.%s" % (node.value.id, node.attr)
        if text and text not in exprs:
            exprs.append(text)
    return exprs


def statement_of(line: str) -> Optional[ast.stmt]:
    code = line.rstrip("\r\n")
    stripped = code.strip()
    if not stripped or stripped.startswith(HEADS_WITHOUT_GUARD):
        return None
    parsed = statement_ast(code)
    if parsed is None or not isinstance(parsed[0], ast.Module) or not parsed[0].body:
        return None
    return parsed[0].body[0]


def guard_conditions(line: str, names: Sequence[str], ctx: GuardContext) -> List[str]:
    """The conditions of the guards before `line` (one statement): `X is None` and `not X` for the
    variables and attributes of variables it reads; when the guard raises, also `K in T` before a store
    `T[K] = ...` and range checks (`bound_conditions`)."""
    top = statement_of(line)
    if top is None:
        return []
    exprs = read_expressions(top, names)
    conditions = [c for x in exprs[:MAX_EXPRESSIONS] for c in ("%s is None" % x, "not %s" % x)]
    if ctx.raise_stmt is not None and isinstance(top, ast.Assign) and len(top.targets) == 1 \
            and isinstance(top.targets[0], ast.Subscript):
        target = top.targets[0]
        table, key = ast.unparse(target.value), ast.unparse(target.slice)
        if re.fullmatch(r"[\w.]+", table) and re.fullmatch(r"[\w.]+", key):
            conditions.insert(0, "%s in %s" % (key, table))
    if ctx.raise_stmt is not None:
        conditions += bound_conditions(top, [x for x in exprs if "." not in x])
    return conditions


def guard_bodies(ctx: GuardContext) -> List[str]:
    """What a guard does when its condition holds: raise what the tests expected, or return a neutral value."""
    return [ctx.raise_stmt] if ctx.raise_stmt is not None else ["return %s" % r for r in ctx.returns]


def guard_edit(line: str, condition: str, body: str) -> Edit:
    """`if condition: body` before `line` (its own text kept after the guard, at its indentation)."""
    code = line.rstrip("\r\n")
    indent = code[:len(code) - len(code.lstrip())]
    return ("guard", "guard `if %s: %s`" % (condition, body),
            "%sif %s:\n%s    %s\n%s" % (indent, condition, indent, body, code))


def guard_edits(line: str, names: Sequence[str], ctx: GuardContext) -> List[Edit]:
    """Every guard before `line`: each of its `guard_conditions` with each of the `guard_bodies`."""
    return [guard_edit(line, cond, body) for cond in guard_conditions(line, names, ctx) for body in guard_bodies(ctx)]
