"""`else` and `elif` arms the mutation analysis tries after an `if` (stdlib only, Python 3.9 and
later, no import of the project: shipped into the sandbox with operators.py).

A missing branch is a common multi-line fix: the case the `if` leaves out does nothing where it
should do what the `if` does with another value (`if key in d: yield (match, item)` and no
`else: yield (default, item)` for the items without a match). The arm added here repeats a simple
statement of the `if`'s body with a name the body binds (a loop variable, an assignment's target:
the value only the `if` case has) replaced by a name the function has before the `if` (a parameter,
a local), those sharing a word with it first (`left_match` -> `left_default`). Each arm is then run
against the failing and the passing tests like any other mutant.

A chain of cases may lack one: `if target.major: high = target.next_major()` then `else: high =
target.next_patch()`, and no `elif target.minor: high = target.next_minor()`. The arm added after an
arm repeats it with one word replaced by a word the file's names vary it with (`next_major`,
`next_minor`, `next_patch`: `major` -> `minor`, `patch`), where every name of the new arm is a name of
the file and its condition is none of the chain's. A chain that handles letters of one case may
lack the arm for the other (`elif c >= "A" and c <= "Z": val = ord(c) - ord("A")` and no arm for "a" to
"z"): the arm repeated with its condition's letter literals in the other case.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, List, Sequence, Tuple

try:
    from .statement_edits import char_column, source_lines
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import char_column, source_lines  # type: ignore[no-redef]

Edit = Tuple[str, str, str]   # (family, what, the new text: the line, then the `else` arm after it)

MAX_REPLACEMENTS = 8   # names tried in place of a bound one, per statement
MAX_SIBLINGS = 4       # words tried in place of one word of an arm, per arm
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
LETTERS = re.compile(r"""(['"])([A-Za-z]+)\1""")   # a string literal of letters only
SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.Return)


# an `if` without `else`: its line, the last line of its body (one simple statement on one line),
# the indentation of the `else:` to add after it, the arms worth trying there
ElseSite = Tuple[int, int, str, List[str]]


def else_sites(source: str) -> List[ElseSite]:
    """Every `if` of the functions of `source` that could take an `else` arm, with its arms."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source_lines(source, ends=False)
    out: List[ElseSite] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if not isinstance(node, ast.If) or node.orelse or _is_elif(node, lines):
                continue
            last = node.body[-1]
            while isinstance(last, (ast.For, ast.While, ast.With, ast.If)) and not getattr(last, "orelse", None):
                last = last.body[-1]   # the innermost last statement: the `else` goes after the whole body
            end = getattr(last, "end_lineno", None)
            if not isinstance(last, SIMPLE) or end != last.lineno or end is None:
                continue
            indent = lines[node.lineno - 1][:node.col_offset]
            arms = _arms(fn, node, lines)
            if arms:
                out.append((node.lineno, end, indent, arms))
    return out


def _is_elif(node: ast.If, lines: Sequence[str]) -> bool:
    return lines[node.lineno - 1][node.col_offset:].startswith("elif")


def _arms(fn: ast.AST, node: ast.If, lines: Sequence[str]) -> List[str]:
    bound: List[str] = []
    statements = [s for b in node.body for s in ast.walk(b) if isinstance(s, ast.stmt)]
    for s in statements:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in bound:
                bound.append(n.id)
    if not bound:
        return []
    args = fn.args   # type: ignore[attr-defined]
    before = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.lineno < node.lineno and n.id not in before:
            before.append(n.id)
    before = [b for b in before if b not in bound and b not in ("self", "cls")]
    out: List[str] = []
    for s in statements:
        end = getattr(s, "end_lineno", None)
        if not isinstance(s, SIMPLE) or end != s.lineno or end is None:
            continue
        whole = lines[s.lineno - 1]
        text = whole[char_column(whole, s.col_offset):char_column(whole, s.end_col_offset or 0)]
        for name in bound:
            if not re.search(r"\b%s\b" % re.escape(name), text):
                continue
            for other in sorted(before, key=lambda b: (-_shared_words(name, b), before.index(b)))[:MAX_REPLACEMENTS]:
                arm = re.sub(r"(?<![\w.])%s\b" % re.escape(name), other, text)
                if arm != text and arm not in out:
                    out.append(arm)
    return out


def _shared_words(a: str, b: str) -> int:
    return len(set(a.lower().split("_")) & set(b.lower().split("_")) - {""})


def jump_sites(source: str) -> Dict[int, str]:
    """The last line of each branch inside a loop that falls through to more of the loop's body:
    where a forgotten `continue` belongs (`if k not in d: d[k] = item` then `continue`, or the item is
    also combined with itself below), with the branch's indentation."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    lines = source_lines(source, ends=False)
    out: Dict[int, str] = {}
    for loop in ast.walk(tree):
        if isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
            _jumps(loop.body, lines, out)
    return out


def _jumps(body: Sequence[ast.stmt], lines: Sequence[str], out: Dict[int, str]) -> None:
    for k, stmt in enumerate(body):
        if not isinstance(stmt, ast.If):
            continue
        falls_through = k + 1 < len(body)
        for arm in (stmt.body, stmt.orelse):
            if not arm:
                continue
            last = arm[-1]
            if isinstance(last, ast.If):
                if falls_through:
                    _jumps([last, ast.Pass()], lines, out)   # a nested branch falls through the same way
                continue
            end = getattr(last, "end_lineno", None)
            if falls_through and isinstance(last, SIMPLE) and not isinstance(last, ast.Return) \
                    and end == last.lineno and end is not None:
                out[end] = lines[last.lineno - 1][:last.col_offset]


def jump_edit(line: str, indent: str) -> Edit:
    code = line.rstrip("\r\n")
    return ("jump", "add `continue`", "%s\n%scontinue" % (code, indent))


def else_edit(line: str, indent: str, arm: str) -> Edit:
    """The line, then `else: arm` at the `if`'s indentation."""
    code = line.rstrip("\r\n")
    return ("else-branch", "add `else: %s`" % arm, "%s\n%selse:\n%s    %s" % (code, indent, indent, arm))


# an arm of a chain of cases: the chain's first and last lines, the last line of the arm's body, the
# indentation of its `if`/`elif` and of its body, and the (condition, statement) arms to add after it
ElifSite = Tuple[int, int, int, str, str, List[Tuple[str, str]]]


def elif_sites(source: str) -> List[ElifSite]:
    """Every arm of an `if` chain in the functions of `source` (its condition on one line, its body one
    simple statement on one line) that could be followed by a sibling case."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    lines = source_lines(source, ends=False)
    siblings = _word_siblings(tree)
    out: List[ElifSite] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for head in ast.walk(fn):
            if not isinstance(head, ast.If) or _is_elif(head, lines):
                continue
            chain = [head]
            while len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ast.If) \
                    and _is_elif(chain[-1].orelse[0], lines):
                chain.append(chain[-1].orelse[0])   # type: ignore[arg-type]
            arms = [(arm, _segment(lines, arm.test), _segment(lines, arm.body[0])) for arm in chain
                    if arm.test.end_lineno == arm.lineno and len(arm.body) == 1 and isinstance(arm.body[0], SIMPLE)
                    and arm.body[0].end_lineno == arm.body[0].lineno > arm.lineno]   # not `if x: y` on one line
            conditions = {_segment(lines, arm.test) for arm in chain}
            indent = lines[head.lineno - 1][:head.col_offset]
            for arm, condition, statement in arms:
                new = [(c, s) for c, s in _sibling_arms(condition, statement, siblings) + _case_sibling(condition, statement)
                       if c not in conditions]
                if new:
                    body = arm.body[0]
                    out.append((head.lineno, getattr(head, "end_lineno", head.lineno), body.lineno, indent,
                                lines[body.lineno - 1][:body.col_offset], new[:MAX_SIBLINGS]))
    return out


def _segment(lines: Sequence[str], node: ast.AST) -> str:
    whole = lines[node.lineno - 1]   # type: ignore[attr-defined]
    return whole[char_column(whole, node.col_offset):char_column(whole, node.end_col_offset or 0)]  # type: ignore[attr-defined]


def _word_siblings(tree: ast.AST) -> Dict[Tuple[str, ...], List[str]]:
    """The file's names of several words (`next_major`) by their words with one left out (`next_*`):
    the words that fill the gap, in the order the file first names them. Single names count as
    known under the key `()`."""
    names: List[str] = []
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
            node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else \
            node.arg if isinstance(node, ast.arg) else None
        if name and name not in names:
            names.append(name)
    out: Dict[Tuple[str, ...], List[str]] = {(): names}
    for name in names:
        words = name.split("_")
        for k, word in enumerate(words):
            if word and len(words) > 1:
                out.setdefault(tuple(words[:k]) + ("*",) + tuple(words[k + 1:]), []).append(word)
    return out


def _sibling_arms(condition: str, statement: str, siblings: Dict[Tuple[str, ...], List[str]]) -> List[Tuple[str, str]]:
    """The arm with one word of its condition replaced, wherever that word's names in the arm have
    siblings (a name of several words) and every new name is a name of the file."""
    known = set(siblings[()])
    out: List[Tuple[str, str]] = []
    words = [w for name in IDENTIFIER.findall(condition) for w in name.split("_") if w]
    for word in dict.fromkeys(words):
        # in the arm's order, so the edits come in one order on every run (a set's would follow the hash seed)
        names = [n for n in dict.fromkeys(IDENTIFIER.findall(condition + " " + statement)) if word in n.split("_")]
        gaps = [tuple("*" if w == word else w for w in n.split("_")) for n in names if len(n.split("_")) > 1]
        if not gaps:
            continue   # only a one-word name holds it: any name of the file could replace it
        options = [w for w in siblings.get(gaps[0], []) if w != word and all(w in siblings.get(g, []) for g in gaps)]
        for other in options:
            def swap(m: "re.Match[str]") -> str:
                parts = m.group(0).split("_")
                return "_".join(other if p == word else p for p in parts)
            new_condition, new_statement = IDENTIFIER.sub(swap, condition), IDENTIFIER.sub(swap, statement)
            new_names = set(IDENTIFIER.findall(new_condition + " " + new_statement)) - \
                set(IDENTIFIER.findall(condition + " " + statement))
            if new_names <= known and (new_condition, new_statement) not in out:
                out.append((new_condition, new_statement))
    return out


def _case_sibling(condition: str, statement: str) -> List[Tuple[str, str]]:
    """The arm with the letter literals of its condition in the other case, in its statement too
    (`c >= "A" and c <= "Z"` -> `c >= "a" and c <= "z"`), when they are all of one case."""
    literals = {m.group(2) for m in LETTERS.finditer(condition)}
    if literals and all(t.isupper() for t in literals):
        other = str.lower
    elif literals and all(t.islower() for t in literals):
        other = str.upper
    else:
        return []

    def swap(m: "re.Match[str]") -> str:
        return m.group(1) + other(m.group(2)) + m.group(1) if m.group(2) in literals else m.group(0)
    return [(LETTERS.sub(swap, condition), LETTERS.sub(swap, statement))]


def elif_edit(line: str, indent: str, body_indent: str, condition: str, statement: str) -> Edit:
    """The line (the arm's last), then `elif condition: statement` at the chain's indentation."""
    code = line.rstrip("\r\n")
    return ("elif-branch", "add `elif %s: %s`" % (condition, statement),
            "%s\n%selif %s:\n%s%s" % (code, indent, condition, body_indent, statement))


def branch_points(source: str) -> List[Tuple[int, int, int]]:
    """Each `if`, `elif` and `while` of the functions of `source` whose condition is on one line: its
    function's first line, its own line, the first line of its body. The lines tell which way it went
    in each test (`diverging` in mutants.py)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    out: List[Tuple[int, int, int]] = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([d.lineno for d in fn.decorator_list] + [fn.lineno])
            out += [(first, node.lineno, node.body[0].lineno) for node in ast.walk(fn)
                    if isinstance(node, (ast.If, ast.While)) and node.test.end_lineno == node.lineno
                    and node.body[0].lineno > node.lineno]
    return sorted(set(out))
