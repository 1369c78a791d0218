"""Reading source text: tokens, statement parses, function extents, numbers in prose, and what a
failing assertion passes to and expects from a function."""
from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize
from dataclasses import dataclass
from typing import Any

from .failure import _literal


@dataclass
class Function:
    def_line: int          # 1-based, in the file
    name: str
    params: list[str]
    body_line: int         # first statement after the docstring
    body_indent: str
    end_line: int


WORD_NUMBERS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}


def _numbers_in(prose: str) -> list[int]:
    """Integers a goal states in prose: digits, number words, and weeks as days ("one week" -> 7)."""
    out = []
    for m in re.finditer(r"(?<![\w.])(\d{1,6}|[a-z]+)(?![\w.])(\s+weeks?\b)?", prose.lower()):
        word, weeks = m.group(1), m.group(2)
        n = int(word) if word.isdigit() else WORD_NUMBERS.get(word, 1 if word in ("a", "an") and weeks else None)
        if n is not None and (word.isdigit() or weeks or word in WORD_NUMBERS):
            out.append(n * 7 if weeks else n)
    return out


GOAL_CALL_RE = re.compile(r"(?<![\w.])([a-z_]\w*)\(")
NOT_CODE = frozenset(dir(builtins)) | frozenset(keyword.kwlist)


def goal_calls(prose: str) -> list[str]:
    """The functions a goal's text calls (`add_uppercase_char([...]) returns ...`), in order: not a
    builtin, a keyword, a method (`x.upper()`), a class or a test."""
    return [n for n in dict.fromkeys(GOAL_CALL_RE.findall(prose)) if n not in NOT_CODE and not n.startswith("test")]


def _top_level_split(text: str) -> list[str]:
    """`a: int, f: Callable[[str], T] = None` -> its parameters: commas inside brackets (an
    annotation's, a default's) do not separate them."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


STUB_RE = re.compile(r"\)\s*(->[^:]*)?:\s*(\.\.\.|pass)\s*(#.*)?$")   # `def f(x) -> int: ...`


def functions_in(start: int, lines: list[str]) -> list[Function]:
    """`def`s whose header is inside the window, with their body extent (by indentation)."""
    found = []
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)(?:async\s+)?def\s+(\w+)\s*\((.*)", line)
        if not m:
            continue
        indent = len(m.group(1))
        header = line
        j = i
        while not re.search(r"\)\s*(->[^:]*)?:\s*(#.*)?$", header) and j + 1 < len(lines):
            if STUB_RE.search(header):
                break   # a stub on one line (`@overload def f(x: int) -> int: ...`): no body below
            j += 1
            header += lines[j]
        if STUB_RE.search(header):
            continue
        params = []
        for p in _top_level_split(re.sub(r"\)\s*(->[^:]*)?:\s*(#.*)?$", "", header.split("(", 1)[1])):
            name = re.match(r"\s*\**(\w+)", p)
            if name and name.group(1) not in ("self", "cls") and not p.strip().startswith("*"):
                params.append(name.group(1))
        k = j + 1
        body_line, body_indent, end = None, None, j + 1
        in_doc = False
        while k < len(lines):
            text = lines[k]
            if text.strip() and len(text) - len(text.lstrip()) <= indent and not in_doc:
                break
            stripped = text.strip()
            if body_line is None and stripped:
                if in_doc:
                    if stripped.endswith(('"""', "'''")):
                        in_doc = False
                elif stripped.startswith(('"""', "'''", 'r"""')):
                    q = stripped[:3] if not stripped.startswith("r") else stripped[1:4]
                    if not (len(stripped) >= 6 and stripped.endswith(q) and stripped.count(q) >= 2):
                        in_doc = True
                else:
                    body_line, body_indent = k, text[:len(text) - len(text.lstrip())]
            if stripped:
                end = k
            k += 1
        if body_line is not None:
            found.append(Function(start + i, m.group(2), params, start + body_line, body_indent, start + end))
    return found


TRIPLE_QUOTED = re.compile(r'[rRbBuUfF]{0,2}("""|\'\'\')')


def string_lines(lines: dict[int, str]) -> set[int] | None:
    """The lines of a whole file (lines 1..n) that a string over several lines holds (all of it when
    the string opens its line, a docstring; else the lines after the one it opens on), and one-line
    docstrings. None when `lines` is not a whole file the tokenizer reads."""
    if not lines or len(lines) != max(lines) or min(lines) != 1:
        return None
    text = "".join(t if t.endswith("\n") else t + "\n" for _, t in sorted(lines.items()))
    out: set[int] = set()
    try:
        for t in tokenize.generate_tokens(io.StringIO(text).readline):
            opens_line = t.type == tokenize.STRING and not t.line[:t.start[1]].strip()
            if t.type == tokenize.STRING and t.end[0] > t.start[0]:
                out.update(range(t.start[0] + (0 if opens_line else 1), t.end[0] + 1))
            elif opens_line and TRIPLE_QUOTED.match(t.string):   # a one-line docstring
                out.add(t.start[0])
    except (tokenize.TokenError, SyntaxError):   # IndentationError is a SyntaxError
        return None
    return out


def _code_lines(lines: dict[int, str], lo: int, hi: int, known_start: bool,
                strings: set[int] | None = None) -> set[int]:
    """Line numbers in [lo, hi] that are code, not inside a triple-quoted string. `strings`: the
    whole file's string lines (`string_lines`, read once per file by the caller), exact. Without them,
    triple quotes are counted from `lo`: from a `def` line the string state is known; from an
    arbitrary window start it is assumed to be code."""
    if strings is not None:
        return {n for n in range(lo, hi + 1) if n in lines and n not in strings
                and not lines[n].strip().startswith(">>>")}
    out, in_string, quote = set(), False, ""
    if not known_start:
        # A window may start inside a docstring: when its first triple quote stands alone on its line
        # and no header line (`def ...:`) precedes it, that quote closes a string.
        prev = ""
        for n in range(lo, hi + 1):
            stripped = (lines.get(n) or "").strip()
            if stripped in ('"""', "'''") and not prev.endswith(":"):
                in_string, quote = True, stripped
                break
            if '"""' in stripped or "'''" in stripped:
                break
            prev = stripped or prev
    for n in range(lo, hi + 1):
        text = lines.get(n)
        if text is None:
            continue
        stripped = text.strip()
        if stripped.startswith(">>>"):   # a doctest line, not code of this module
            continue
        was_in = in_string
        for q in re.findall(r'"""|\'\'\'', text):
            if not in_string:
                in_string, quote = True, q
            elif q == quote:
                in_string = False
        starts_string = stripped.startswith(('"""', "'''", 'r"""', 'f"""'))
        if not was_in and not starts_string:
            out.add(n)
    return out



_MISSING = object()


def _call_args(name: str, assert_lines: list[str]) -> list[Any]:
    for line in assert_lines:
        try:
            tree = ast.parse(line.strip().removeprefix("assert ").strip() or "0")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (getattr(node.func, "id", None) == name
                                               or getattr(node.func, "attr", None) == name):
                args = []
                for a in node.args:
                    ok, v = _literal(ast.unparse(a))
                    args.append(v if ok else _MISSING)
                return args
    return []


def _expected_from_assert(name: str, assert_lines: list[str]) -> str | None:
    for line in assert_lines:
        try:
            tree = ast.parse(line.strip())
        except SyntaxError:
            continue
        test = tree.body[0].test if tree.body and isinstance(tree.body[0], ast.Assert) else None
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and name in ast.unparse(test.operand):
            return "False"
        if isinstance(test, ast.Call) and name in ast.unparse(test.func):
            return "True"
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and len(node.comparators) == 1 and name in ast.unparse(node.left):
                right = node.comparators[0]
                if isinstance(node.ops[0], (ast.Eq, ast.Is)) and _literal(ast.unparse(right))[0]:
                    return ast.unparse(right)
    return None


def scope_names(fn, lines: dict[int, str]) -> tuple[str, ...]:
    """Parameters and the locals the function assigns (plain, augmented, loop and `with` targets)."""
    names = list(fn.params)
    for n in range(fn.body_line, fn.end_line + 1):
        text = lines.get(n, "")
        m = re.match(r"^\s*(?:for\s+)?([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*(?:[-+*/%]?=(?!=)|\bin\b)", text)
        if m:
            names += [x.strip() for x in m.group(1).split(",")]
        names += re.findall(r"\bas\s+([A-Za-z_]\w*)", text)
    keywords = {"if", "elif", "while", "return", "yield", "not", "and", "or", "in", "is", "else", "try", "with", "assert"}
    return tuple(dict.fromkeys(x for x in names if x not in keywords))[:10]
