"""Statements a function lacks, read from what the failure says is missing: the value it returns
(the test got None from a function that never returns one), an attribute its `__init__` never set
(`'Config' object has no attribute 'path'`), a name it never defined (`name 'sigs' is not
defined`: as another function defines it, or as its uses call for), a parameter it calls that was
None (`'NoneType' object is not callable`: its default). Forgotten statements are among the
commonest real one-line bugs; each rule here adds a line only where the failure names what the line
must provide."""
from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Sequence

from .catalogue import Candidate
from .failure import Failure
from .source import Function

NO_ATTRIBUTE_RE = re.compile(r"object has no attribute '(\w+)'")
UNDEFINED_RE = re.compile(r"name '(\w+)' is not defined|local variable '(\w+)' referenced before assignment"
                          r"|cannot access local variable '(\w+)'")
BUILTINS = frozenset(dir(builtins))   # `list[str]` annotates; it indexes nothing
ASSIGNED_RE = re.compile(r"^(\s*)(\w+)\s*(?::[^=]+)?=(?!=)\s*(.+)$")


def _body(fn: Function, lines: dict[int, str]) -> list[tuple[int, str]]:
    return [(n, lines[n]) for n in range(fn.body_line, fn.end_line + 1) if n in lines]


def _top_level(fn: Function, lines: dict[int, str]) -> list[tuple[int, str]]:
    """The body's statements at its own indentation (not inside a loop or a branch)."""
    return [(n, t) for n, t in _body(fn, lines) if t.strip() and t[:len(t) - len(t.lstrip())] == fn.body_indent]


def _complete(fn: Function, lines: dict[int, str]) -> bool:
    return all(n in lines for n in range(fn.def_line, fn.end_line + 2))


def _after_end(path: str, fn: Function, lines: dict[int, str], stmt: str, kind: str, what: str,
               score: float) -> Candidate:
    return Candidate(path, fn.end_line, (lines[fn.end_line], f"{fn.body_indent}{stmt}\n"), kind, what, score)


def missing_return(path: str, fn: Function, lines: dict[int, str], failure: Failure) -> list[Candidate]:
    """`return x` at the end of a function the test got None from, for each name it assigns at its
    own level (the last one first): the function computes a value and falls off its end."""
    got_none = (failure.have_values and failure.got is None and failure.expected is not None) or \
        "'NoneType'" in failure.exception_message
    top = _top_level(fn, lines)
    if not got_none or fn.name not in failure.callees or not top or not _complete(fn, lines):
        return []
    if top[-1][1].strip().startswith(("return", "raise")) or any(re.search(r"\byield\b", t) for _, t in _body(fn, lines)) \
            or _always_returns(fn, lines):
        return []   # it ends in a return already (on every branch), or it is a generator
    names: list[str] = []
    for _, text in reversed(top):
        m = ASSIGNED_RE.match(text)
        if m and m.group(2) not in names:
            names.append(m.group(2))
    names += [p for p in reversed(fn.params) if p not in names]
    return [_after_end(path, fn, lines, f"return {name}", "return", f"insert `return {name}` at the end of {fn.name}",
                       4.0 - 0.5 * min(i, 4)) for i, name in enumerate(names[:5])]


def _always_returns(fn: Function, lines: dict[int, str]) -> bool:
    """Does every path through the function end in a `return` or a `raise` (the arms of a final
    `if`/`else` or `try`/`except`/`else` included)?"""
    import textwrap
    try:
        tree = ast.parse(textwrap.dedent("".join(lines[n] for n in range(fn.def_line, fn.end_line + 1))))
    except (SyntaxError, ValueError, KeyError, RecursionError, MemoryError):
        return False
    if not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return _ends(tree.body[0].body)


def _ends(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _ends(last.body)
    if isinstance(last, ast.Try):
        return all(_ends(h.body) for h in last.handlers) and (_ends(last.orelse) or _ends(last.body)) \
            or _ends(last.finalbody)
    return False


def missing_attribute(path: str, fn: Function, lines: dict[int, str], failure: Failure) -> list[Candidate]:
    """`self.a = a` at the end of an `__init__` that takes `a` and never stores it, when an object
    has no attribute `a`."""
    if fn.name != "__init__" or not _complete(fn, lines):
        return []
    out = []
    for message in [failure.exception_message, *failure.exception_messages]:
        m = NO_ATTRIBUTE_RE.search(message)
        if not m:
            continue
        attr = m.group(1)
        body = "".join(t for _, t in _body(fn, lines))
        if re.search(rf"\bself\.{attr}\s*(?::[^=]+)?=(?!=)", body):
            continue
        value = attr if attr in fn.params else attr.lstrip("_") if attr.lstrip("_") in fn.params else None
        if value is not None:
            out.append(_after_end(path, fn, lines, f"self.{attr} = {value}", "attribute",
                                  f"insert `self.{attr} = {value}` in {fn.name}", 6.0))
    return list({c.key: c for c in out}.values())


def missing_definition(path: str, fn: Function, lines: dict[int, str], failure: Failure,
                       frame_lines: set[tuple[str, int]]) -> list[Candidate]:
    """A name the function uses and never defines: the same assignment as another function of the
    file makes (`iterator = iter(iterable)`), at the top of this one's body, when its parameters
    hold what the assignment reads."""
    undefined = {next(g for g in m.groups() if g) for msg in [failure.exception_message, *failure.exception_messages]
                 for m in UNDEFINED_RE.finditer(msg)}
    if not undefined or not any(p == path and fn.def_line <= n <= fn.end_line for p, n in frame_lines):
        return []
    out = []
    readable = set(fn.params) | {"self", "cls"} | _module_names(lines)
    body = "".join(t for _, t in _body(fn, lines))
    for name in sorted(undefined):
        seen: set[str] = set()
        for n in sorted(lines):
            m = ASSIGNED_RE.match(lines[n])
            if not m or m.group(2) != name or fn.def_line <= n <= fn.end_line or m.group(3) in seen:
                continue
            value = m.group(3).strip()
            try:
                reads = {node.id for node in ast.walk(ast.parse(value, mode="eval")) if isinstance(node, ast.Name)}
            except SyntaxError:
                continue
            if not reads <= readable:
                continue   # it reads a local of its own function
            seen.add(m.group(3))
            out.append(Candidate(path, fn.body_line, (f"{fn.body_indent}{name} = {value}\n", lines[fn.body_line]),
                                 "definition", f"define {name} = {value} at the top of {fn.name}", 4.0))
        for i, value in enumerate(v for v in first_values(name, body, fn.params) if v not in seen):
            out.append(Candidate(path, fn.body_line, (f"{fn.body_indent}{name} = {value}\n", lines[fn.body_line]),
                                 "definition", f"start {name} as {value} at the top of {fn.name}",
                                 4.0 - 0.25 * min(i, 4)))
    return out


# What a name's uses say it starts as, most telling first: `ret[k][f] = v` needs a dict of dicts,
# `out[k].append(x)` a dict of lists, `seen.add(x)` a set, `total += x` a number (or a text).
_USES = (
    (r"{n}\[[^\]]+\]\[[^\]]+\]\s*=(?!=)", ("defaultdict(dict)",)),
    (r"{n}\[[^\]]+\]\.(?:append|extend)\(", ("defaultdict(list)",)),
    (r"{n}\[[^\]]+\]\.(?:add|update)\(", ("defaultdict(set)",)),
    (r"{n}\[[^\]]+\]\s*[-+]=", ("defaultdict(int)",)),
    (r"{n}\[[^\]]+\]\s*=(?!=)|{n}\.(?:setdefault|items|keys|values|get)\(", ("{}",)),
    (r"{n}\.(?:append|extend|insert|sort|reverse)\(", ("[]",)),
    (r"{n}\.(?:add|discard)\(", ("set()",)),
    (r"{n}\s*[-+]=\s*['\"]", ("''",)),
    (r"{n}\s*(?:[-+]=|=\s*{n}\s*[-+])", ("0", "[]", "''")),
    (r"{n}\s*\*=", ("1",)),
)


def first_values(name: str, body: str, params: Sequence[str] = ()) -> list[str]:
    """The starting values a variable's uses in `body` call for, most telling first (none when no use
    says: a guess of `None` would pass for anything)."""
    out: list[str] = []
    if re.search(rf"\bnext\(\s*{re.escape(name)}\s*[,)]", body):   # `next(iterator)`: an iterator over an input
        out += [f"iter({p})" for p in params if p != name][:3]
    for pattern, values in _USES:
        if re.search(r"(?<![\w.])" + pattern.format(n=re.escape(name)), body):
            out += [v for v in values if v not in out]
    n = re.escape(name)
    if re.search(rf"[<>]=?\s*{n}\b|(?<![\w.]){n}\s*[<>]", body):   # a bound: `index < last`
        seqs = re.findall(r"enumerate\((\w+)\)|\bin\s+(\w+)\s*:|(?<![\w.])(\w+)\[", body)
        for seq in dict.fromkeys(x for group in seqs for x in group if x and x != name and x not in BUILTINS):
            out += [f"len({seq}) - 1", f"len({seq})"]
    return out[:8]


def _module_names(lines: dict[int, str]) -> set[str]:
    """Names bound at module level in the lines read (imports, constants, functions, classes), and
    the builtins."""
    names = set(dir(builtins))
    for text in lines.values():
        if text[:1].isspace():
            continue
        if m := re.match(r"(?:def|class)\s+(\w+)|(\w+)\s*(?::[^=]+)?=(?!=)", text):
            names.add(m.group(1) or m.group(2))
        elif m := re.match(r"(?:from\s+\S+\s+)?import\s+(.+)", text):
            for part in m.group(1).split(","):
                names.add(part.split(" as ")[-1].strip().split(".")[0].strip("() "))
    return names


NONE_CALLED_RE = re.compile(r"'NoneType' object is not callable")
NONE_DEFAULT_RE = re.compile(r"^\s*if\s+(\w+)\s+is\s+None\s*:\s*$")
DEFAULT_CALLABLES = ("bool", "lambda x: x")   # the usual meanings of a predicate or a key left out


def missing_default(path: str, fn: Function, lines: dict[int, str], failure: Failure) -> list[Candidate]:
    """`if pred is None: pred = bool` at the top of a function that calls one of its parameters, when
    None was called: the value its docstring names for None, then the one another function of the
    lines read gives the same name in the same idiom, then a truth test and the identity."""
    if not any(NONE_CALLED_RE.search(m) for m in [failure.exception_message, *failure.exception_messages]) \
            or not all(n in lines for n in range(fn.def_line, fn.body_line + 1)):
        return []
    body = "".join(t for _, t in _body(fn, lines))   # the lines read of it
    doc = "".join(lines[n] for n in range(fn.def_line + 1, fn.body_line) if n in lines)
    defaults = _none_defaults(fn, lines)
    out = []
    for name in sorted(fn.params, key=lambda p: p not in defaults):
        if not re.search(rf"(?<![\w.]){name}\(", body) or re.search(rf"\b{name}\s+is\s+None\b|\b{name}\s*=(?!=)", body):
            continue   # never called, or the function already gives it a value
        values = _documented_values(name, doc) + _idiom_values(name, fn, lines) + list(DEFAULT_CALLABLES)
        for i, value in enumerate(dict.fromkeys(values)):
            stmt = f"{fn.body_indent}if {name} is None:\n{fn.body_indent}    {name} = {value}\n"
            out.append(Candidate(path, fn.body_line, (stmt, lines[fn.body_line]), "definition",
                                 f"default {name} to {value} at the top of {fn.name}", 4.0 - 0.25 * min(i, 4)))
    return out


def _none_defaults(fn: Function, lines: dict[int, str]) -> list[str]:
    """The parameters of `fn` whose default is None."""
    header = "".join(lines[n] for n in range(fn.def_line, fn.body_line) if n in lines)
    m = re.search(r"\((.*?)\)\s*(?:->[^:]+)?:", header, re.S)
    return re.findall(r"(\w+)\s*(?::[^=,]+)?=\s*None\b", m.group(1)) if m else []


def _documented_values(name: str, doc: str) -> list[str]:
    """Names a docstring's sentence about `name` being None quotes (``If *pred* is None, :func:`bool`
    is used``)."""
    out = []
    for sentence in re.split(r"(?<=\.)\s+", " ".join(doc.split())):
        if re.search(rf"\b{name}\b", sentence) and "None" in sentence:
            out += [q for q in re.findall(r"`+([A-Za-z_][\w.]*)(?:\(\))?`+", sentence) if q not in (name, "None")]
    return out


def _idiom_values(name: str, fn: Function, lines: dict[int, str]) -> list[str]:
    """What the lines read outside `fn` assign to `name` right after `if name is None:`."""
    out = []
    for n in sorted(lines):
        m = NONE_DEFAULT_RE.match(lines[n])
        if m and m.group(1) == name and not fn.def_line <= n <= fn.end_line:
            after = ASSIGNED_RE.match(lines.get(n + 1, ""))
            if after and after.group(2) == name:
                out.append(after.group(3).strip())
    return out


def missing_statements(path: str, fn: Function, lines: dict[int, str], failure: Failure,
                       frame_lines: set[tuple[str, int]]) -> list[Candidate]:
    return (missing_return(path, fn, lines, failure) + missing_attribute(path, fn, lines, failure)
            + missing_definition(path, fn, lines, failure, frame_lines) + missing_default(path, fn, lines, failure))
