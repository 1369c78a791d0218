"""Guards whose condition the mutation analysis searches for rather than guesses from the line alone
(family `guessed-guard`): conditions comparing the line's variables with its function's literals or the
failing tests' punctuation, their negations, conditions checked after a block's last assignment, and
bodies beyond a return or the expected raise (`continue`, a handler's exception, a parameter as it came).
There are too many to run each: the analysis evaluates the conditions where the line runs and runs only
those that pick the failing tests out (mutants.py, by_conditions).

Standard library only, Python 3.9 and later, no import of the project (shipped into the sandbox as
`ra_probe_edits` with operators.py); nothing runs at import.
"""
from __future__ import annotations

import ast
import builtins
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

try:
    from .guard_edits import MAX_EXPRESSIONS, TOO_BROAD, Edit, GuardContext, read_expressions, statement_of
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_guard_edits import MAX_EXPRESSIONS, TOO_BROAD, Edit, GuardContext, read_expressions, statement_of  # type: ignore


class LineFrame(NamedTuple):
    """Where a statement sits: what a guard before it may do besides returning or raising, and the
    literals a probed condition may compare its variables with."""
    in_loop: bool                # a loop of its own function runs it: `continue` skips the item
    handled: Tuple[str, ...]     # the builtin exceptions a `try` around it catches: raising one takes that way
    strings: Tuple[str, ...]     # its function's short text constants
    numbers: Tuple[int, ...]     # and integer constants
    last: bool = False           # the last statement of its block: no statement after it for a guard to precede


MAX_LITERAL = 8     # characters of a text constant a probe compares with
MAX_LITERALS = 4    # text constants, and integer constants, per function
MAX_PROBES = 24     # probed conditions per line


def _literals(fn: ast.AST) -> Tuple[Tuple[str, ...], Tuple[int, ...]]:
    """A function's short text and integer constants in the order it writes them, its nested functions' aside."""
    constants: List[ast.Constant] = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Constant):
            constants.append(node)
    constants.sort(key=lambda c: (c.lineno, c.col_offset))
    strings = [c.value for c in constants if isinstance(c.value, str) and 0 < len(c.value) <= MAX_LITERAL]
    numbers = [c.value for c in constants if type(c.value) is int]
    return tuple(dict.fromkeys(strings))[:MAX_LITERALS], tuple(dict.fromkeys(numbers))[:MAX_LITERALS]


def _handled(handlers: Sequence[ast.ExceptHandler]) -> List[str]:
    out: List[str] = []
    for h in handlers:
        types = h.type.elts if isinstance(h.type, ast.Tuple) else [h.type] if h.type is not None else []
        for t in types:
            if isinstance(t, ast.Name) and t.id not in TOO_BROAD and isinstance(getattr(builtins, t.id, None), type) \
                    and issubclass(getattr(builtins, t.id), BaseException):
                out.append(t.id)
    return out


def line_frames(source: str) -> Dict[int, LineFrame]:
    """The LineFrame of each statement of each function of `source`, by its first line."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out: Dict[int, LineFrame] = {}

    def visit(body: Sequence[ast.stmt], in_loop: bool, handled: Tuple[str, ...],
              literals: Optional[Tuple[Tuple[str, ...], Tuple[int, ...]]]) -> None:
        for k, stmt in enumerate(body):
            if literals is not None:
                out[stmt.lineno] = LineFrame(in_loop, handled, *literals, last=k == len(body) - 1)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(stmt.body, False, (), _literals(stmt))
            elif isinstance(stmt, ast.ClassDef):
                visit(stmt.body, False, (), None)
            elif isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
                visit(stmt.body, True, handled, literals)
                visit(stmt.orelse, in_loop, handled, literals)
            elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
                inner = tuple(dict.fromkeys(_handled(stmt.handlers) + list(handled)))   # type: ignore[attr-defined]
                visit(stmt.body, in_loop, inner, literals)   # type: ignore[attr-defined]
                for h in stmt.handlers:   # type: ignore[attr-defined]
                    visit(h.body, in_loop, handled, literals)
                visit(stmt.orelse + stmt.finalbody, in_loop, handled, literals)   # type: ignore[attr-defined]
            else:
                for field in ("body", "orelse"):
                    visit(getattr(stmt, field, None) or [], in_loop, handled, literals)
                for case in getattr(stmt, "cases", None) or []:
                    visit(case.body, in_loop, handled, literals)

    visit(tree.body, False, (), None)
    return out


def probe_conditions(line: str, names: Sequence[str], frame: LineFrame, chars: Sequence[str] = (),
                     words: Sequence[str] = ()) -> List[str]:
    """Conditions on the variables `line` reads: first each equal to an input word of the failing tests
    (`words`; `X == W`, and `X.lower() == W` for a word in small letters: a missing check is often for
    the very input the failing test passes, `if value.lower() == "transparent": raise ValueError(...)`),
    then against a literal of its function (`frame`) or a character of the failing tests' texts
    (`chars`): `X.startswith(L)`, `X.endswith(L)`, `L in X`, `X == L`, and for an integer K `X == K`,
    `X < K`, `X > K`, `len(X) > K`. Too many to run each: the analysis runs only those that held where
    the failing tests ran the line and nowhere else."""
    top = statement_of(line)
    return [] if top is None else _probes(read_expressions(top, names)[:MAX_EXPRESSIONS], frame, chars, words)


def _probes(exprs: Sequence[str], frame: LineFrame, chars: Sequence[str], words: Sequence[str] = ()) -> List[str]:
    texts = list(dict.fromkeys(list(frame.strings) + list(chars)))
    out: List[str] = []
    for x in exprs:
        for w in words:
            out += ["%s == %r" % (x, w)] + (["%s.lower() == %r" % (x, w)] if w.islower() else [])
    for x in exprs:
        for t in texts:
            out += ["%s.startswith(%r)" % (x, t), "%s.endswith(%r)" % (x, t), "%r in %s" % (t, x), "%s == %r" % (x, t)]
        for k in frame.numbers:
            out += ["%s == %d" % (x, k), "%s < %d" % (x, k), "%s > %d" % (x, k), "len(%s) > %d" % (x, k)]
    return list(dict.fromkeys(out))[:MAX_PROBES]


NEGATIONS = ((re.compile(r"^(%s) in (.+)$" % r"'[^']*'|\"[^\"]*\""), r"\1 not in \2"),
             (re.compile(r"^([\w.()]+) == (.+)$"), r"\1 != \2"), (re.compile(r"^([\w.()]+) < (-?\d+)$"), r"\1 >= \2"),
             (re.compile(r"^([\w.()]+) > (-?\d+)$"), r"\1 <= \2"))


def negation(cond: str) -> str:
    """A probe's negation as one would write it (`':' not in name`, `x != 3`, `len(x) <= 3`), else `not C`."""
    for pattern, replacement in NEGATIONS:
        if pattern.match(cond):
            return pattern.sub(replacement, cond)
    return "not " + cond


def negations(probes: Sequence[str]) -> Dict[str, str]:
    """Each probe -> its negation; not `len(X) > 0`'s, which is the guard condition `not X`."""
    return {c: negation(c) for c in probes if not re.fullmatch(r"len\(.+\) > 0", c)}


MAX_STORED = 2   # the names an assignment stores that a guard after it checks


def after_conditions(line: str, frame: LineFrame, chars: Sequence[str] = ()) -> List[str]:
    """The conditions of a guard right after `line`, a one-line assignment that ends its block, on the
    names it stores (`name, value = line.split("=", 1)` then `if ':' in name: ...` at the end of a
    `try`): `X is None`, `not X`, the probes. Before another statement, that statement's guards are
    the same edits."""
    top = statement_of(line)
    if not frame.last or not isinstance(top, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or top.end_lineno != top.lineno:
        return []
    targets = top.targets if isinstance(top, ast.Assign) else [top.target]
    stored: List[str] = []
    for t in targets:
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in stored and n.id != "_":
                stored.append(n.id)
    stored = stored[:MAX_STORED]
    return list(dict.fromkeys([c for x in stored for c in ("%s is None" % x, "not %s" % x)] + _probes(stored, frame, chars)))


def after_edit(line: str, condition: str, body: str) -> Edit:
    """`line`, then `if condition: body` after it at its indentation."""
    code = line.rstrip("\r\n")
    indent = code[:len(code) - len(code.lstrip())]
    return ("guard", "guard `if %s: %s` after the line" % (condition, body),
            "%s\n%sif %s:\n%s    %s" % (code, indent, condition, indent, body))


MAX_CHARACTERS = 4   # characters of the failing tests' texts a probe looks for


MAX_WORDS = 2        # input words of the failing tests a probe compares a variable with
WORD = re.compile(r"[A-Za-z][A-Za-z_-]{1,23}")


def probe_words(texts: Sequence[str]) -> List[str]:
    """The words among the failing tests' texts (their parameters, what their messages quote), most
    frequent first, then in the order they come."""
    counts: Dict[str, int] = {}
    for text in texts:
        if WORD.fullmatch(text):
            counts[text] = counts.get(text, 0) + 1
    return sorted(counts, key=lambda w: -counts[w])[:MAX_WORDS]


def probe_characters(texts: Sequence[str]) -> List[str]:
    """The punctuation of the failing tests' texts, most frequent first (`#` of `"# note"`)."""
    counts: Dict[str, int] = {}
    for text in texts:
        for ch in set(text):
            if ch.isprintable() and not ch.isalnum() and not ch.isspace() and ch not in "'\"\\":
                counts[ch] = counts.get(ch, 0) + 1
    return sorted(counts, key=lambda c: (-counts[c], c))[:MAX_CHARACTERS]


MAX_RETURNED = 2   # parameters a guard may return as they came


def frame_bodies(ctx: GuardContext, frame: Optional[LineFrame], params: Sequence[str] = ()) -> List[str]:
    """What else a guard may do where the line sits: skip the item of its loop, or, when the tests
    expected no exception, raise one the `try` around it catches (its handler is the other way), or
    return a parameter as it came (`if not text: return text`)."""
    if frame is None:
        return []
    out = ["continue"] if frame.in_loop else []
    if ctx.raise_stmt is None:
        out += ["raise %s()" % frame.handled[0]] if frame.handled else []
        out += ["return %s" % p for p in params if p not in ("self", "cls")][:MAX_RETURNED]
    return out
