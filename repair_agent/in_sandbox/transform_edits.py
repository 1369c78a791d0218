"""Statements the mutation analysis tries before a variable's first use: `v = v.removesuffix('_id')`,
`build = build.replace('+', '.')`, `data = data.removeprefix(UTF8_BOM)` (stdlib only, Python 3.9 and
later, no import of the project: shipped into the sandbox with operators.py).

A forgotten normalization of an input is a common multi-line fix (BugsInPy adds `x = x.astype(...)`,
`text = text.translate(...)`, `result = result.replace("'", "")`), and no one-token edit makes it.
What the missing call must do is rarely guessable from the code alone, but the failing tests often
show it: their examples hold an input and the text it should become (`'0.1.0+2+3+4'` beside
`'0.1.0+2.3.4'`: a `+` becomes a `.`), and a module may define the marker the input must lose (a
byte-order mark). `example_transforms` reads such pairs, `constant_transforms` such markers; each
transform is then tried, like any mutant, before each statement that reads a variable first since
it was last assigned, and only those the failing and the passing tests agree with survive.

A step the function takes elsewhere may be missing there too (`pos -= 1` inside a loop, and not
before `while pos >= 0 and text[pos] == "\\"`, which should start one character back): each
one-line augmented assignment of a variable (`updates`) is tried before the statements that read
that variable first. And a value a function computes and never reads (`last_day = ...`, then no
`last_day`) is the trace of a statement that went missing: the variables read after it are clamped
by it (`day = min(day, last_day)`, `max`) before the statements that read them first. So is a value
named after a variable (`last_day` for `day`), read or not.
"""
from __future__ import annotations

import ast
import textwrap
from typing import Dict, Iterable, List, Sequence, Set, Tuple

try:
    from .statement_edits import source_lines
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import source_lines  # type: ignore[no-redef]

Edit = Tuple[str, str, str]   # (family, what, the new text: the inserted statement and the line itself)

PLAIN = (".strip()", ".lower()")   # the normalizations that need no argument
MAX_LITERAL = 40        # longer texts are not examples of one small change
MAX_LITERALS = 300      # the literals compared pairwise (cheap: string operations only)
MAX_AFFIX = 4           # a prefix or suffix dropped: at most this long (`_id`, `\ufeff`)
MAX_FROM_EXAMPLES = 6   # the transforms most pairs of examples agree with
MAX_CONSTANT = 3        # a module constant a transform may drop: a marker this short (a BOM, a separator)
MAX_CONSTANTS = 3


def literals_in(sources: Iterable[str]) -> List[str]:
    """The text literals of test code (a test function, its class: the examples it loops over), in order."""
    out: List[str] = []
    for text in sources:
        try:
            tree = ast.parse(textwrap.dedent(text))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        out += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return out


def example_transforms(literals: Sequence[str]) -> List[str]:
    """Call suffixes that turn one literal into another, most supported first: a short suffix or prefix
    dropped (`'employee_id'` and `'Employee'`: `.removesuffix('_id')`, case aside), one character
    replaced by another wherever the two differ (`'0.1.0+2+3+4'` and `'0.1.0+2.3.4'`:
    `.replace('+', '.')`), one character removed throughout (`.replace('-', '')`)."""
    lits = list(dict.fromkeys(s for s in literals if 0 < len(s) <= MAX_LITERAL))[:MAX_LITERALS]
    votes: Dict[str, int] = {}
    for a in lits:
        al = a.lower()
        for b in lits:
            if a == b:
                continue
            bl = b.lower()
            extra = len(a) - len(b)
            if 0 < extra <= MAX_AFFIX and bl:
                if al.startswith(bl):
                    _vote(votes, ".removesuffix(%r)" % a[len(b):])
                if al.endswith(bl):
                    _vote(votes, ".removeprefix(%r)" % a[:extra])
                dropped = {ch for ch in a if ch not in b}
                if len(dropped) == 1:
                    ch = dropped.pop()
                    if a.replace(ch, "") == b:
                        _vote(votes, ".replace(%r, '')" % ch)
            elif extra == 0:
                changed = {(x, y) for x, y in zip(a, b) if x != y}
                if 0 < len(changed) <= 2 and len({x for x, _ in changed}) == len(changed) \
                        and not any(x.isalnum() or y.isalnum() for x, y in changed):
                    for x, y in sorted(changed):   # punctuation for punctuation: a separator, not a value
                        _vote(votes, ".replace(%r, %r)" % (x, y))
    return [t for t, _ in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_FROM_EXAMPLES]]


def _vote(votes: Dict[str, int], call: str) -> None:
    votes[call] = votes.get(call, 0) + 1


def module_markers(source: str) -> List[str]:
    """The names of the module's short text constants (`UTF8_BOM = "\\ufeff"`, `SEP: Final = "/"`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out = []
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id.isupper() and isinstance(value, ast.Constant) \
                and isinstance(value.value, str) and 0 < len(value.value) <= MAX_CONSTANT:
            out.append(target.id)
    return out[:MAX_CONSTANTS]


def constant_transforms(markers: Sequence[str]) -> List[str]:
    return [f".{method}({name})" for name in markers for method in ("removeprefix", "removesuffix")]


def first_reads(source: str) -> Dict[int, List[str]]:
    """For each statement (by its first line) of each function of `source`: the variables it is the
    first to read (a parameter, or a local once assigned), in the order it names them. A transform of
    such a variable belongs right before that statement: where the input enters, not after the
    function has worked on it (`word = word.removesuffix('_id')` before the first line that reads
    `word`; after `word = word.replace('_', ' ')` it would need another suffix)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    out: Dict[int, List[str]] = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for line, names in _function_first_reads(fn).items():
                out.setdefault(line, []).extend(n for n in names if n not in out[line])
    return out


NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
BODIES = ("body", "orelse", "finalbody", "handlers")


def _function_first_reads(fn: ast.AST) -> Dict[int, List[str]]:
    args = fn.args   # type: ignore[attr-defined]
    params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    statements = sorted(_statements(fn.body), key=lambda s: (s.lineno, s.col_offset))   # type: ignore[attr-defined]
    assigned = set(params) | {n.id for s in statements for n in _own_names(s) if isinstance(n.ctx, ast.Store)}
    read = {p: False for p in params}   # a variable absent here has no value yet
    out: Dict[int, List[str]] = {}
    for stmt in statements:
        names = _own_names(stmt)
        firsts = []
        for n in names:
            if isinstance(n.ctx, ast.Load) and n.id in assigned and read.get(n.id) is False and n.id not in firsts:
                firsts.append(n.id)
        for n in names:
            if isinstance(n.ctx, ast.Load) and n.id in read:
                read[n.id] = True
        for n in names:
            if isinstance(n.ctx, ast.Store):
                read.setdefault(n.id, False)   # a variable is transformed where it is first read, once
        if firsts:
            out[stmt.lineno] = firsts
    for block in _blocks(fn.body):   # type: ignore[attr-defined]
        _block_first_reads(block, set(params), statements, out)
    return out


MAX_BLOCK_NAMES = 3   # the variables a branch's first statement may transform


def _blocks(body: Sequence[ast.stmt]) -> Iterable[List[ast.stmt]]:
    """The bodies nested in a function's statements (an `if`'s arms, a loop's, a `try`'s), not the
    function's own body."""
    for stmt in body:
        if isinstance(stmt, NESTED):
            continue
        for field in BODIES:
            children = getattr(stmt, field, None) or []
            for child in children:
                if isinstance(child, ast.ExceptHandler):
                    yield child.body
                    yield from _blocks(child.body)
            inner = [c for c in children if not isinstance(c, ast.ExceptHandler)]
            if inner:
                yield inner
                yield from _blocks(inner)


def _block_first_reads(block: List[ast.stmt], params: set, statements: Sequence[ast.stmt],
                       out: Dict[int, List[str]]) -> None:
    """A branch that handles one kind of input may be where that input's normalization was
    forgotten (`else: line = line.strip()` for continuation lines only): the variables a block reads
    that held a value before it, transformed at its first statement."""
    first = block[0]
    bound = set(params) | {n.id for s in statements if s.lineno < first.lineno
                           for n in _own_names(s) if isinstance(n.ctx, ast.Store)}
    names: List[str] = []
    for stmt in _statements(block):
        for n in _own_names(stmt):
            if isinstance(n.ctx, ast.Load) and n.id in bound and n.id not in names:
                names.append(n.id)
    here = out.setdefault(first.lineno, [])
    here.extend(n for n in names[:MAX_BLOCK_NAMES] if n not in here)
    if not here:
        del out[first.lineno]


def _statements(body: Sequence[ast.stmt]) -> Iterable[ast.stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, NESTED):
            continue
        for field in BODIES:
            for child in getattr(stmt, field, ()) or ():
                yield from _statements(child.body if isinstance(child, ast.ExceptHandler) else [child])


def _own_names(stmt: ast.stmt) -> List[ast.Name]:
    """The names a statement itself reads and writes (a compound statement: its header only), in order."""
    if isinstance(stmt, NESTED):
        return []
    parts = [v for k, v in ast.iter_fields(stmt) if k not in BODIES]
    found: List[ast.Name] = []
    for part in parts:
        for node in (part if isinstance(part, list) else [part]):
            if isinstance(node, ast.AST):
                found += [n for n in _walk_outside_nested(node) if isinstance(n, ast.Name)]
    # reads before writes on one line (`word = word.strip()` reads `word`, then assigns it)
    return sorted(found, key=lambda n: (isinstance(n.ctx, ast.Store), n.lineno, n.col_offset))


def _walk_outside_nested(node: ast.AST) -> Iterable[ast.AST]:
    yield node
    if isinstance(node, NESTED):
        return
    for child in ast.iter_child_nodes(node):
        yield from _walk_outside_nested(child)


MAX_UPDATES = 3   # steps of one variable tried before one statement


def updates(source: str) -> List[Tuple[int, int, str, str]]:
    """Each function's one-line augmented assignments of a variable (`pos -= 1`), with the function's
    first and last line and the variable, in the order the function has them; each text once per function."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source_lines(source, ends=False)
    out: List[Tuple[int, int, str, str]] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        seen: List[str] = []
        for stmt in sorted(_statements(fn.body), key=lambda s: s.lineno):
            if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.end_lineno == stmt.lineno:
                text = lines[stmt.lineno - 1].strip()
                if text not in seen and _one_statement(text):
                    seen.append(text)
                    out.append((fn.lineno, fn.end_lineno or fn.lineno, stmt.target.id, text))
    return out


def _one_statement(text: str) -> bool:
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return False
    return len(body) == 1 and isinstance(body[0], ast.AugAssign)


def update_edits(line: str, names: Sequence[str], steps: Sequence[Tuple[int, int, str, str]], number: int) -> List[Edit]:
    """Each step of one of `names` (the variables `line` reads first) that its function (or one around
    it) takes elsewhere, before `line` (`number`), at most MAX_UPDATES a variable."""
    if not insertable(line):
        return []
    out: List[Edit] = []
    for name in names:
        texts = [t for first, last, n, t in steps if n == name and first <= number <= last]
        out += [inserted(line, stmt) for stmt in list(dict.fromkeys(texts))[:MAX_UPDATES]]
    return out


# the heads of the statements no statement can be inserted before (it would split their block)
CONTINUATIONS = ("elif ", "elif(", "else", "except", "finally", "@", "def ", "async def ", "class ")


def insertable(line: str) -> bool:
    return not line.lstrip().startswith(CONTINUATIONS)


def inserted(line: str, stmt: str) -> Edit:
    """`stmt` before `line`, at its indentation (its own text kept after it), as a transform."""
    code = line.rstrip("\r\n")
    indent = code[:len(code) - len(code.lstrip())]
    return ("transform", f"insert `{stmt}`", f"{indent}{stmt}\n{code}")


def transform_edit(line: str, name: str, call: str) -> Edit:
    """`name = name<call>` before `line`."""
    return inserted(line, f"{name} = {name}{call}")


def transform_edits(line: str, names: Sequence[str], calls: Sequence[str]) -> List[Edit]:
    """Every transform of each of `names` (the variables `line` reads first) before `line`."""
    if not insertable(line):
        return []
    return [transform_edit(line, name, call) for name in names for call in calls]


def _assignments(source: str) -> Iterable[Tuple[ast.FunctionDef | ast.AsyncFunctionDef, int, str]]:
    """Each plain `name = ...` of each function of `source` (nested ones too): the function, the
    assignment's line, the name."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for stmt in _statements(fn.body):
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                    yield fn, stmt.lineno, stmt.targets[0].id


def unused_values(source: str) -> List[Tuple[int, int, int, str]]:
    """Each function's variables assigned by a plain `name = ...` and never read in it (nested functions
    included): the function's first and last line, the assignment's line, the name. `_` names are left
    out (unused on purpose)."""
    out: List[Tuple[int, int, int, str]] = []
    used: Dict[int, Set[str]] = {}   # per function: the names it reads or declares global
    for fn, at, name in _assignments(source):
        if id(fn) not in used:
            used[id(fn)] = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)} | {
                d for n in ast.walk(fn) if isinstance(n, (ast.Global, ast.Nonlocal)) for d in n.names}
        if name not in used[id(fn)] and not name.startswith("_"):
            out.append((fn.lineno, fn.end_lineno or fn.lineno, at, name))
    return out


def named_bounds(source: str) -> List[Tuple[int, int, int, str]]:
    """Each function's variables assigned by a plain `name = ...` whose name is of several words
    (`last_day`, `max_width`): the function's first and last line, the assignment's line, the name.
    Such a value may be the bound a variable named by one of its words must be kept within."""
    return [(fn.lineno, fn.end_lineno or fn.lineno, at, name) for fn, at, name in _assignments(source)
            if len([w for w in name.split("_") if w]) > 1]


MAX_BOUNDS = 2   # the named bounds nearest above a line, tried per variable


def clamp_edits(line: str, names: Sequence[str], unused: Sequence[Tuple[int, int, int, str]], number: int,
                bounds: Sequence[Tuple[int, int, int, str]] = ()) -> List[Edit]:
    """`v = min(v, u)` and `v = max(v, u)` before `line` (`number`) for each of `names` (the variables it
    reads first), where `u` is a value its function computed before the line and never reads, or one
    of `bounds` named after `v` (`day = min(day, last_day)`: the clamp a fix removed leaves `last_day`
    read by the code after it, so it is not unused)."""
    if not insertable(line):
        return []
    values = dict.fromkeys(u for first, last, at, u in unused if first <= number <= last and at < number)
    out = [inserted(line, f"{name} = {f}({name}, {value})") for value in values for name in names if name != value
           for f in ("min", "max")]
    above = sorted((at, u) for first, last, at, u in bounds if first <= number <= last and at < number and u not in values)
    for name in names:
        kin = [u for _, u in reversed(above) if u != name and name in u.split("_")]
        out += [inserted(line, f"{name} = {f}({name}, {u})") for u in list(dict.fromkeys(kin))[:MAX_BOUNDS]
                for f in ("min", "max")]
    return out
