"""SearchChooser: repairs without being told the fix (issue 7, part 2).

A deterministic, non-LLM chooser. It runs the target test, localizes from the failure (traceback
frames inside the writable scope first, then a search for the functions the failing assertion
calls), reads one window around the suspect, and tries candidate patches from a small mutation
catalogue, best-scored first: each with the target test, then the full suite. When a candidate
holds, `check_diff` closes the last condition and the controller stops at Uₜ = 0. Out of
candidates or budget, it hands off with what it learned.

It sees only the View: never the scenario, its reference fix or its `[baseline]` recipe. The seed
changes only the order in which equally scored candidates are tried.
"""
from __future__ import annotations

import ast
import difflib
import io
import json
import random
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

from verifier.spec import glob_match

from ..actions import ApplyPatch, CheckDiff, ReadFile, RunFullSuite, RunTargetTest, Search, Stop
from ..state import Evidence, View

WINDOW_BEFORE, WINDOW_AFTER = 30, 14   # a read around a traceback frame (the enclosing def is usually above)
DEF_WINDOW = 45                        # a read from a `def` line found by search
MAX_SEARCHES = 3
STEPS_FOR_A_CANDIDATE = 4              # apply, target test, full suite, check_diff
# Names called in a failing assertion that are never the code under repair.
NOT_SUSPECTS = frozenset(dir(__builtins__) if isinstance(__builtins__, dict) else dir(__import__("builtins"))) | {
    "approx", "raises", "assert", "self", "cls", "pytest", "len", "str", "repr"}

COMPARE_SWAPS = {"<": ("<=", ">"), "<=": ("<", ">="), ">": (">=", "<"), ">=": (">", "<="),
                 "==": ("!=",), "!=": ("==",)}
BOUNDARY_SWAPS = {("<", "<="), ("<=", "<"), (">", ">="), (">=", ">")}
ARITH_SWAPS = {"+": ("-",), "-": ("+",), "*": ("/",), "/": ("//", "*"), "//": ("/",), "+=": ("-=",),
               "-=": ("+=",), "%": ("//",)}
NAME_SWAPS = {"and": ("or",), "or": ("and",), "True": ("False",), "False": ("True",), "min": ("max",),
              "max": ("min",), "any": ("all",), "all": ("any",), "lower": ("upper",), "upper": ("lower",),
              "lstrip": ("strip",), "rstrip": ("strip",), "strip": ("rstrip", "lstrip"),
              "startswith": ("endswith",), "endswith": ("startswith",), "floor": ("ceil",), "ceil": ("floor",),
              "append": ("extend",), "extend": ("append",)}

FRAME_RE = re.compile(r"^(?:\s*File \")?(?P<path>[^\s:\"]+\.py)(?:\", line |:)(?P<line>\d+)(?::|,|$)", re.M)
ASSERT_EQ_RE = re.compile(r"assert (?P<got>.+?) (?P<op>==|!=|is not|is|in|<=|>=|<|>) (?P<exp>.+)$")
EXC_RE = re.compile(r"\b(?P<exc>[A-Z]\w*(?:Error|Exception)|StopIteration)\b:?\s*(?P<msg>.*)")
WHERE_CALL_RE = re.compile(r"where .*?=\s*(?:[\w.]+\.)?(?P<name>[A-Za-z_]\w*)\(|bound method (?:\w+\.)*(?P<method>\w+) of")
CALL_RE = re.compile(r"(?:\.|\b)(?P<name>[A-Za-z_]\w*)\(")
PERCENT_WORDS = re.compile(r"percent(?![\s-]*(?:escape|encod|sign|decod))|per cent|\bcents?\b|\d\s*%(?=[\s.,;:)]|$)", re.I)
NUMERIC_CALLS = {"round", "int", "float", "abs", "Decimal", "min", "max", "sum", "Fraction"}


# -- what the failure says ------------------------------------------------------------------------
@dataclass
class Failure:
    """Facts parsed from the first target-test observation."""
    message: str = ""
    got: Any = None
    expected: Any = None
    have_values: bool = False
    exception: str = ""
    exception_message: str = ""
    frames: list[tuple[str, int]] = field(default_factory=list)        # writable frames, innermost last
    callees: list[str] = field(default_factory=list)                    # names the failing assertion calls
    assert_lines: list[str] = field(default_factory=list)               # the `>` lines of test frames
    hints: set[str] = field(default_factory=set)


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _writable(path: str, writable: tuple[str, ...]) -> str | None:
    """The repository-relative path of `path` if it is inside the writable scope (absolute container
    paths such as /workspace/src/x.py are matched by their shortest writable suffix)."""
    parts = path.strip("/").split("/")
    for i in range(len(parts)):
        rel = "/".join(parts[i:])
        if glob_match(rel, writable) and not rel.startswith(("tests/", "test/")) and "/tests/" not in f"/{rel}":
            return rel
    return None


def parse_failure(ev: Evidence, goal_text: str, writable: tuple[str, ...]) -> Failure:
    out = ev.output or ""
    f = Failure()
    for line in out.splitlines():
        if ": failed: " in line or ": error: " in line:
            f.message = line.split(": ", 2)[-1] if line.count(": ") >= 2 else line
            break
    pytest_part = out.split("--- pytest output", 1)[-1] if "--- pytest output" in out else out
    for m in FRAME_RE.finditer(pytest_part):
        rel = _writable(m.group("path"), writable)
        if rel and (rel, int(m.group("line"))) not in f.frames:
            f.frames.append((rel, int(m.group("line"))))
    for line in pytest_part.splitlines():
        s = line.strip()
        if s.startswith(">"):
            f.assert_lines.append(s[1:].strip())
        if s.startswith("E "):
            body = s[1:].strip()
            for wm in WHERE_CALL_RE.finditer(body):
                f.callees.append(wm.group("name") or wm.group("method"))
            am = ASSERT_EQ_RE.match(body)
            if am and not f.have_values and am.group("op") == "==":
                ok_g, got = _literal(am.group("got"))
                ok_e, exp = _literal(am.group("exp"))
                if ok_g and ok_e:
                    f.got, f.expected, f.have_values = got, exp, True
            em = EXC_RE.match(body)
            if em and not f.exception:
                f.exception, f.exception_message = em.group("exc"), em.group("msg")
    if not f.exception:
        em = EXC_RE.search(f.message)
        if em and not f.message.startswith("assert"):
            f.exception, f.exception_message = em.group("exc"), em.group("msg")
    if not f.have_values:
        am = ASSERT_EQ_RE.search(f.message)
        if am and am.group("op") == "==":
            ok_g, got = _literal(am.group("got"))
            ok_e, exp = _literal(am.group("exp"))
            f.got, f.expected, f.have_values = got, exp, ok_g and ok_e
    for line in f.assert_lines:
        for m in CALL_RE.finditer(line):
            f.callees.append(m.group("name"))
    # then calls anywhere in the failing tests' source as the traceback shows it (indented code lines)
    for line in pytest_part.splitlines():
        if line.startswith("    ") and not line.strip().startswith(("def ", "E ", "#")):
            for m in CALL_RE.finditer(line):
                f.callees.append(m.group("name"))
    # last resort: functions the goal names (`name(` or a snake_case word)
    f.callees += re.findall(r"\b([A-Za-z_]\w*)\(", goal_text) + re.findall(r"\b([a-z]+_[a-z_0-9]+)\b", goal_text)
    f.callees = [c for c in dict.fromkeys(f.callees) if c not in NOT_SUSPECTS and not c.startswith("test")]
    f.hints = _hints(f, goal_text)
    return f


def _hints(f: Failure, goal_text: str) -> set[str]:
    hints: set[str] = set()
    text = f"{goal_text} {f.message} {f.exception_message}"
    if PERCENT_WORDS.search(text):
        hints.add("percent")
    if re.search(r"\bcents?\b", text, re.I):
        hints.add("cents")
    if re.search(r"\bNone(Type)?\b", f"{f.exception_message} {f.message}") or f.expected is None and f.have_values:
        hints.add("none")
    if f.exception in ("ZeroDivisionError", "IndexError", "StopIteration") or re.search(
            r"\bempty\b", f"{f.exception_message} {goal_text}", re.I):
        hints.add("empty")
    if f.exception == "TypeError" and "NoneType" in f.exception_message:
        hints.add("none")
    if re.search(r"off[- ]by[- ]one|inclusive|exclusive|boundary|at least|at most|fits|exactly|last|trailing|end of", goal_text, re.I):
        hints.add("boundary")
    if re.search(r"\b(first|last|earliest|latest|smallest|largest|lowest|highest|minimum|maximum|shortest|longest)\b",
                 goal_text, re.I):
        hints.add("extreme")
    if re.search(r"\bdefault\b", goal_text, re.I):
        hints.add("default")
    if re.search(r"\border\b|swap|reverse", goal_text, re.I):
        hints.add("swap")
    if f.have_values:
        g, e = f.got, f.expected
        num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
        if num(g) and num(e):
            if abs(g - e) == 1:
                hints.add("boundary")
            if g == -e and g != 0:
                hints.add("sign")
            if e and g and abs(round(g / e, 6)) in (100, 0.01):
                hints.update({"percent", "div100" if abs(round(g / e, 6)) == 100 else "mul100"})
            if g != e and (g + e == 0 or g - e == 2 * e or e - g == 2 * g):
                hints.add("sign")
        elif isinstance(g, bool) and isinstance(e, bool):
            hints.add("boolean")
        elif isinstance(g, (str, list, tuple)) and isinstance(e, (str, list, tuple)):
            if abs(len(g) - len(e)) == 1 or (isinstance(g, str) and isinstance(e, str)
                                             and abs(len(g.split()) - len(e.split())) == 1):
                hints.add("boundary")
            if sorted(map(repr, g)) == sorted(map(repr, e)) and g != e:
                hints.add("swap")
            if (isinstance(g, str) and isinstance(e, str) and re.sub(r"\d+", "#", g) == re.sub(r"\d+", "#", e)
                    and g != e):
                hints.add("number")   # same text, another number in it: a counter or constant is off
            if isinstance(g, str) and isinstance(e, str) and g.lower() == e.lower():
                hints.add("case")
            if isinstance(g, str) and isinstance(e, str) and g.strip() == e.strip():
                hints.add("strip")
    am = ASSERT_EQ_RE.search(f.message)
    if am and am.group("op") == "==":
        g_nums, e_nums = re.findall(r"\d+", am.group("got")), re.findall(r"\d+", am.group("exp"))
        if len(g_nums) > 1 and sorted(g_nums) == sorted(e_nums) and g_nums != e_nums:
            hints.add("swap")
    if (f.exception == "AssertionError" and not f.have_values and not am) or f.expected in (True, False):
        hints.add("boolean")
    return hints


# -- candidates -----------------------------------------------------------------------------------
@dataclass
class Candidate:
    path: str
    line: int                 # 1-based line of the original file that is replaced
    new_lines: tuple[str, ...]
    kind: str
    what: str
    score: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{json.dumps(self.new_lines)}"

    def label(self) -> str:
        return f"{self.path}:{self.line} {self.kind}: {self.what}"


def _tokens(line: str) -> list[tokenize.TokenInfo]:
    toks = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(line).readline):
            toks.append(t)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return toks


def _parses(stmt: str) -> bool | None:
    """Does the stripped line parse as a statement (a header gets a `pass` body)? None: it is a
    fragment of a longer statement, so nothing can be said."""
    s = stmt.strip()
    if not s or s.startswith("#"):
        return None
    variants = [s, s + " pass", s + "\n    pass", "if 1:\n    pass\n" + s + "\n    pass"]
    if s.startswith(("elif ", "else")):
        variants.insert(0, "if 1:\n    pass\n" + s + "\n    pass")
    for v in variants:
        try:
            ast.parse(v)
            return True
        except SyntaxError:
            continue
    return False


def _stmt_ast(line: str) -> tuple[ast.AST, int] | None:
    """The line's AST and the column offset of its stripped text."""
    s = line.strip()
    indent = len(line) - len(line.lstrip())
    for v in (s, s + " pass"):
        try:
            return ast.parse(v), indent
        except SyntaxError:
            continue
    return None


def _replace_span(line: str, start: int, end: int, text: str) -> str:
    return line[:start] + text + line[end:]


def line_mutations(line: str, goal_numbers: tuple[int, ...] = ()) -> list[tuple[str, str, str]]:
    """(kind, what, new line) for one source line: token-level and AST-level mutations.
    `goal_numbers`: integers the goal names; a constant may be replaced by one of them."""
    out: list[tuple[str, str, str]] = []
    code = line.rstrip("\n")
    if not code.strip() or code.strip().startswith(("#", '"""', "'''")):
        return out
    is_def = code.lstrip().startswith(("def ", "async def ", "class "))
    toks = [t for t in _tokens(code + "\n") if t.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL,
                                                                tokenize.NEWLINE, tokenize.COMMENT)]
    depth = 0   # inside [...]: a constant there is an index or a slice bound
    for k, t in enumerate(toks):
        if t.type == tokenize.OP and t.string in "[]":
            depth += 1 if t.string == "[" else -1
        if t.start[0] != 1 or t.end[0] != 1:
            continue
        (_, c0), (_, c1) = t.start, t.end
        if t.type == tokenize.OP and t.string in COMPARE_SWAPS and not is_def:
            for new in COMPARE_SWAPS[t.string]:
                kind = "boundary" if (t.string, new) in BOUNDARY_SWAPS else "comparison"
                out.append((kind, f"{t.string} -> {new}", _replace_span(code, c0, c1, new)))
        elif t.type == tokenize.OP and t.string in ARITH_SWAPS and not is_def:
            for new in ARITH_SWAPS[t.string]:
                out.append(("arithmetic", f"{t.string} -> {new}", _replace_span(code, c0, c1, new)))
        elif t.type == tokenize.NUMBER and re.fullmatch(r"\d+", t.string):
            n = int(t.string)
            prev = toks[k - 1] if k else None
            binary = (prev is not None and prev.type == tokenize.OP and prev.string in "+-" and k >= 2
                      and (toks[k - 2].type in (tokenize.NAME, tokenize.NUMBER) or toks[k - 2].string in ")]"))
            for g in goal_numbers:
                if g != n and g not in (n + 1, n - 1):
                    out.append(("default" if is_def else "goal-constant", f"{n} -> {g} (named in the goal)",
                                _replace_span(code, c0, c1, str(g))))
            for new in (n + 1, n - 1):
                if is_def:
                    out.append(("default", f"{n} -> {new}", _replace_span(code, c0, c1, str(new))))
                    continue
                kind = "slice" if depth > 0 else "constant"
                if new == 0 and binary:   # `x - 1` -> `x`, not `x - 0`
                    cut = toks[k - 2].end[1]
                    out.append((kind, f"drop {prev.string} 1", code[:cut] + code[c1:]))
                elif new >= 0:
                    out.append((kind, f"{n} -> {new}", _replace_span(code, c0, c1, str(new))))
        elif t.type == tokenize.NAME and t.string in NAME_SWAPS:
            for new in NAME_SWAPS[t.string]:
                kind = ("default" if is_def else "boolean") if t.string in ("True", "False") else (
                    "boolean" if t.string in ("and", "or", "any", "all") else
                    "extreme" if t.string in ("min", "max") else "name")
                out.append((kind, f"{t.string} -> {new}", _replace_span(code, c0, c1, new)))
        elif t.type == tokenize.NAME and t.string == "not" and not is_def:
            # `not x` -> `x`, `x not in y` -> `x in y`
            out.append(("boolean", "drop `not`", _replace_span(code, c0, c1 + 1 if code[c1:c1 + 1] == " " else c1, "")))
        elif t.type == tokenize.NAME and t.string in ("if", "elif", "while") and k == 0:
            head = re.match(r"^(\s*(?:if|elif|while)\s+)(.+?):\s*$", code)
            if head:
                out.append(("boolean", "negate the condition", f"{head.group(1)}not ({head.group(2)}):"))
        elif t.type == tokenize.NAME and t.string in ("in", "is") and not code.lstrip().startswith("for ") \
                and not (k + 1 < len(toks) and toks[k + 1].string == "not"):
            negated = "not in" if t.string == "in" else "is not"
            out.append(("comparison", f"{t.string} -> {negated}", _replace_span(code, c0, c1, negated)))
        elif t.type == tokenize.NAME and t.string == "None" and is_def:
            for new in ("0", "1", "''"):
                out.append(("default", f"None -> {new}", _replace_span(code, c0, c1, new)))
    if not is_def:
        out += _ast_mutations(code)
    return out


def _ast_mutations(code: str) -> list[tuple[str, str, str]]:
    parsed = _stmt_ast(code)
    if parsed is None:
        return []
    tree, indent = parsed
    out: list[tuple[str, str, str]] = []
    s = code.strip()

    def span(node: ast.AST) -> tuple[int, int] | None:
        if getattr(node, "lineno", 1) != 1 or getattr(node, "end_lineno", 1) != 1:
            return None
        return indent + node.col_offset, indent + node.end_col_offset

    def text(node: ast.AST) -> str:
        return s[node.col_offset:node.end_col_offset]

    arith_operands: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
            for a, b in zip(node.args, node.args[1:4]):
                sa, sb = span(a), span(b)
                if sa and sb:
                    new = code[:sa[0]] + text(b) + code[sa[1]:sb[0]] + text(a) + code[sb[1]:]
                    out.append(("swap", f"swap arguments {text(a)}, {text(b)}", new))
        if isinstance(node, ast.BinOp):
            arith_operands += [node.left, node.right]
            sp = span(node)
            if isinstance(node.op, (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod)) and sp:
                new = _replace_span(code, *sp, f"{text(node.right)} {s[node.left.end_col_offset:node.right.col_offset].strip()} {text(node.left)}")
                out.append(("swap", f"swap operands of {text(node)}", new))
            if (isinstance(node.op, (ast.Div, ast.Mult)) and isinstance(node.right, ast.Constant)
                    and node.right.value in (100, 100.0) and sp):
                out.append(("percent", f"drop {text(node)[len(text(node.left)):].strip()}",
                            _replace_span(code, *sp, text(node.left))))
        if isinstance(node, ast.Subscript):
            sl = node.slice
            bounds = [sl.lower, sl.upper] if isinstance(sl, ast.Slice) else [sl]
            for b in bounds:
                # `e - 1` bounds are already covered by the constant mutations
                simple_offset = isinstance(b, ast.BinOp) and isinstance(b.right, ast.Constant)
                plain_index = not isinstance(sl, ast.Slice)
                if (b is not None and not isinstance(b, (ast.Constant, ast.Tuple, ast.UnaryOp)) and span(b)
                        and not simple_offset and not (plain_index and not isinstance(b, ast.Name))):
                    for d in ("+ 1", "- 1"):
                        out.append(("slice", f"{text(b)} -> {text(b)} {d}", _replace_span(code, *span(b), f"{text(b)} {d}")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            for b in node.args:
                if not isinstance(b, ast.Constant) and span(b):
                    for d in ("+ 1", "- 1"):
                        out.append(("slice", f"range bound {text(b)} {d}", _replace_span(code, *span(b), f"{text(b)} {d}")))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in NUMERIC_CALLS:
            arith_operands += [a for a in node.args if isinstance(a, ast.Name)]
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            arith_operands.append(node.value)
    seen_operands = set()
    for operand in arith_operands:
        if id(operand) in seen_operands:
            continue
        seen_operands.add(id(operand))
        if isinstance(operand, ast.Name) and span(operand):
            for op in ("/ 100", "* 100"):
                out.append(("percent", f"{operand.id} -> {operand.id} {op}",
                            _replace_span(code, *span(operand), f"{operand.id} {op}")))
    return out


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
            j += 1
            header += lines[j]
        params = []
        for p in re.sub(r"\)\s*(->[^:]*)?:\s*(#.*)?$", "", header.split("(", 1)[1]).split(","):
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


def _code_lines(lines: dict[int, str], lo: int, hi: int, known_start: bool) -> set[int]:
    """Line numbers in [lo, hi] that are code, not inside a triple-quoted string. From a `def` line
    the string state is known; from an arbitrary window start it is assumed to be code."""
    out, in_string, quote = set(), False, ""
    for n in range(lo, hi + 1):
        text = lines.get(n)
        if text is None:
            continue
        stripped = text.strip()
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


def frame_guards(path: str, line_no: int, lines: dict[int, str], fn: Function | None,
                 failure: Failure) -> list[Candidate]:
    """Guards right before the line that raised: `if EXPR is None` / `if not EXPR` for the names,
    attributes and calls it uses, returning what the test expects (or None)."""
    text = lines.get(line_no, "")
    parsed = _stmt_ast(text)
    if parsed is None or text.lstrip().startswith(("def ", "elif ", "else", "except", "finally")):
        return []
    tree, _ = parsed
    exprs = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Call, ast.Compare, ast.BinOp, ast.Subscript, ast.Attribute)):
            parts = (node.args if isinstance(node, ast.Call) else [node.left, *node.comparators]
                     if isinstance(node, ast.Compare) else [node.left, node.right] if isinstance(node, ast.BinOp)
                     else [node.value])
            for part in parts:
                if isinstance(part, (ast.Name, ast.Attribute, ast.Call)) and ast.unparse(part) not in exprs:
                    exprs.append(ast.unparse(part))
    expected = (repr(failure.expected) if failure.have_values else
                _expected_from_assert(fn.name, failure.assert_lines) if fn else None)
    indent = text[:len(text) - len(text.lstrip())]
    out = []
    for expr in exprs[:6]:
        if len(expr) > 60 or not re.match(r"^[\w.()\[\], ]+$", expr):
            continue
        for kind, cond in (("none-guard", f"{expr} is None"), ("empty-guard", f"not {expr}")):
            for ret in dict.fromkeys([expected or "None", "None"]):
                c = Candidate(path, line_no, (f"{indent}if {cond}:\n", f"{indent}    return {ret}\n", text),
                              kind, f"guard `if {cond}: return {ret}` before the failing line")
                c.score = 2.0 if ret == expected else 1.0
                out.append(c)
    return out


def guard_candidates(path: str, fn: Function, lines: dict[int, str], failure: Failure) -> list[Candidate]:
    out = []
    call_args = _call_args(fn.name, failure.assert_lines)
    expected = repr(failure.expected) if failure.have_values else None
    if expected is None:
        expected = _expected_from_assert(fn.name, failure.assert_lines)
    first = lines[fn.body_line]
    ind = fn.body_indent
    for i, p in enumerate(fn.params):
        if call_args and i >= len(call_args):
            continue   # not passed by the failing call: its default is not the problem a guard solves
        arg = call_args[i] if i < len(call_args) else _MISSING
        relevant = arg is _MISSING or arg is None or (hasattr(arg, "__len__") and len(arg) == 0)
        if not relevant:
            continue
        for kind, cond, returns in (("none-guard", f"{p} is None", [expected] if expected else ["None", p]),
                                    ("empty-guard", f"not {p}", [expected] if expected else [p, "0", "None"])):
            for ret in dict.fromkeys(returns):
                new = (f"{ind}if {cond}:\n", f"{ind}    return {ret}\n", first)
                c = Candidate(path, fn.body_line, new,
                              kind, f"guard `if {cond}: return {ret}` at the top of {fn.name}")
                # the failing call passes exactly the value this guard catches
                c.score = 3.0 if (arg is None and kind == "none-guard") or (arg is not _MISSING and arg is not None
                                                                            and kind == "empty-guard") else 0.0
                out.append(c)
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


KIND_PRIOR = {"extreme": 0, "goal-constant": 0, "comparison": 2, "boundary": 2, "arithmetic": 2, "constant": 2, "percent": 0, "swap": 0,
              "slice": 1, "boolean": 1, "name": 0, "default": 0, "none-guard": 0, "empty-guard": 0}
HINT_BONUS = {"percent": {"percent": 6}, "boundary": {"boundary": 3, "constant": 2, "slice": 4},
              "none": {"none-guard": 6}, "empty": {"empty-guard": 6, "boundary": 1, "slice": 1},
              "sign": {"arithmetic": 3, "swap": 2}, "swap": {"swap": 4}, "boolean": {"boundary": 2, "comparison": 1, "boolean": 1},
              "default": {"default": 5, "constant": 1, "boolean": 1},
              "extreme": {"extreme": 6}, "number": {"constant": 3, "slice": 1}, "case": {"name": 5}, "strip": {"name": 5}}


JUSTIFIED_BY = {"none-guard": {"none"}, "empty-guard": {"empty"}, "swap": {"swap", "sign"}, "name": {"case", "strip"}, "default": {"default"},
                "percent": {"percent", "cents"}, "extreme": {"extreme"}}


def score(c: Candidate, failure: Failure, goal_words: set[str], frame_lines: set[tuple[str, int]], line_text: str,
          params: tuple[str, ...] = ()) -> float:
    s = KIND_PRIOR.get(c.kind, 0) + c.score
    for h in failure.hints:
        s += HINT_BONUS.get(h, {}).get(c.kind, 0)
    if (c.path, c.line) in frame_lines:
        s += 3
    elif any(p == c.path and 0 < fl - c.line <= 2 for p, fl in frame_lines):
        s += 2
    if c.kind == "percent":
        name = c.what.split(" ")[0]
        if ({"percent", "cents"} & failure.hints) and (name.lower() in goal_words
                                                       or re.search(r"pct|percent|rate|ratio|fraction", name, re.I)):
            s += 2
        if name in params:
            s += 1
        # percentages become fractions by / 100; cents become units by / 100 and back by * 100
        if {"div100", "mul100"} & failure.hints:   # the values say which way
            s += 2 if ("* 100" in c.what) == ("mul100" in failure.hints) else 0
        else:
            s += 1 if ("* 100" in c.what) == ("cents" in failure.hints) else 0
    else:
        idents = re.findall(r"[a-z_]\w*", line_text.lower())
        s += min(2, len(goal_words & (set(idents) | {part for i in idents for part in i.split("_") if len(part) > 3})))
    # kinds that are rarely the bug unless the failure points at them
    if c.kind in JUSTIFIED_BY and not (JUSTIFIED_BY[c.kind] & failure.hints):
        s -= 2 if c.kind.endswith("guard") else 1
    if c.what == "negate the condition":
        s -= 1   # rarely the whole bug
    if "(named in the goal)" in c.what and c.kind == "default":
        s += 2
    return s


# -- diffs ----------------------------------------------------------------------------------------
def _blocks(lines: dict[int, str]) -> list[tuple[int, int]]:
    """Contiguous runs of known line numbers, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for n in sorted(lines):
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def render_patch(known: dict[str, dict[int, str]], before: Candidate | None, after: Candidate | None) -> str:
    """One unified diff taking the tree from `before` applied to `after` applied (either may be None:
    the pristine text). Every hunk is built from lines actually read, so it applies exactly."""
    parts = []
    for path in sorted({c.path for c in (before, after) if c is not None}):
        lines = known[path]
        hunks, shift_old, shift_new = [], 0, 0
        for lo, hi in _blocks(lines):
            orig = [lines[i] for i in range(lo, hi + 1)]

            def with_edit(c: Candidate | None) -> list[str]:
                if c is None or c.path != path or not lo <= c.line <= hi:
                    return list(orig)
                i = c.line - lo
                return orig[:i] + list(c.new_lines) + orig[i + 1:]

            old, new = with_edit(before), with_edit(after)
            if old != new:
                for line in list(difflib.unified_diff(old, new, n=3))[2:]:
                    m = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
                    if m:
                        a, b = int(m.group(1)), int(m.group(3))
                        line = (f"@@ -{a + lo - 1 + shift_old},{m.group(2) or 1} "
                                f"+{b + lo - 1 + shift_new},{m.group(4) or 1} @@\n")
                    hunks.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
            shift_old += len(old) - len(orig)
            shift_new += len(new) - len(orig)
        if hunks:
            parts.append(f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" + "".join(hunks))
    return "".join(parts)


# -- the chooser ----------------------------------------------------------------------------------
@dataclass
class Plan:
    """Everything derived from the evidence so far. Rebuilt from the View at every step, so the
    chooser's decisions are a function of (View, seed) alone and replay from the journal."""
    failure: Failure | None = None
    known: dict[str, dict[int, str]] = field(default_factory=dict)
    reads: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    search_hits: list[tuple[str, int]] = field(default_factory=list)
    tried: list[tuple[Candidate, str]] = field(default_factory=list)   # (candidate, outcome)
    applied: Candidate | None = None
    awaiting: str | None = None         # "target" | "full" | "check": the next check for `applied`


class SearchChooser:
    name = "search"

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self.last_plan: Plan | None = None
        self.last_candidates: list[Candidate] = []

    # The single entry point: one proposal from the View.
    def choose(self, view: View):
        try:
            return self._choose(view)
        except Exception as exc:  # an input this chooser cannot handle: hand over, do not crash the run
            return Stop(reason=f"search chooser: cannot continue ({type(exc).__name__}: {str(exc)[:300]})",
                        summary="an observation this chooser could not interpret; the evidence so far is in the journal")

    def _choose(self, view: View):
        plan = self._replay(view)
        self.last_plan = plan
        if plan.failure is None:
            return RunTargetTest()
        # A candidate is on the tree: finish checking it.
        if plan.applied is not None and plan.awaiting:
            if plan.awaiting == "target" and view.steps_left == 2:
                # Exactly enough for the full suite (it decides the target condition too) and the scope check.
                return RunFullSuite()
            return {"target": RunTargetTest, "full": RunFullSuite, "check": CheckDiff}[plan.awaiting]()
        candidates = self._ranked(plan, view)
        self.last_candidates = candidates
        tried = {c.key for c, _ in plan.tried}
        untried = [c for c in candidates if c.key not in tried]
        # Localize further while there is nothing to try and budget to try something later.
        if not untried and view.steps_left > STEPS_FOR_A_CANDIDATE + 1:
            step = self._localize(plan, view)
            if step is not None:
                return step
        if not untried:
            return self._handoff(plan, candidates, "no candidate patch left to try")
        if view.steps_left < STEPS_FOR_A_CANDIDATE - 1:
            return self._handoff(plan, candidates, f"{view.steps_left} step(s) left: not enough to try and check "
                                 "another candidate")
        return ApplyPatch(diff=render_patch(plan.known, plan.applied, untried[0]))

    # -- localization --------------------------------------------------------------------------
    def _localize(self, plan: Plan, view: View):
        f = plan.failure
        writable = view.authorization.writable
        # 1. the innermost traceback frames in scope, one window each
        for path, line in reversed(f.frames):
            if line not in plan.known.get(path, {}):
                key = f"{path}:{max(1, line - WINDOW_BEFORE)}"
                if key not in plan.reads:
                    return ReadFile(path=path, start_line=max(1, line - WINDOW_BEFORE), end_line=line + WINDOW_AFTER)
        # 2. a `def` found by search
        for path, line in plan.search_hits:
            if line not in plan.known.get(path, {}) and f"{path}:{line}" not in plan.reads:
                return ReadFile(path=path, start_line=line, end_line=line + DEF_WINDOW)
        # 3. search for the functions the failing assertion calls
        glob = writable[0] if len(writable) == 1 else None
        if len(plan.searches) < MAX_SEARCHES:
            for name in f.callees:
                for query in (f"def {name}(", f"class {name}"):
                    if query not in plan.searches:
                        if query.startswith("class") and any(s.startswith(f"def {name}(") and s in plan.searches
                                                             for s in plan.searches) and plan.search_hits:
                            continue
                        return Search(query=query, path_glob=glob)
        return None

    # -- candidates ----------------------------------------------------------------------------
    def _ranked(self, plan: Plan, view: View) -> list[Candidate]:
        f = plan.failure
        goal_words = set(re.findall(r"[a-z_]\w*", view.goal.text.lower())) - {"the", "a", "to", "of", "and", "that",
                                                                               "so", "make", "test", "tests", "its"}
        frame_lines = set(f.frames)
        prose = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", " ", view.goal.text)   # not numbers inside quoted examples
        goal_numbers = tuple(dict.fromkeys(n for n in _numbers_in(prose) if n <= 1000))[:6]
        cands: dict[str, Candidate] = {}
        for path, lines in plan.known.items():
            fns = functions_in(min(lines), [lines[i] for i in range(min(lines), max(lines) + 1)])
            # Lines worth mutating: inside a function near a frame, or a searched-for function.
            spans = []
            for fn in fns:
                hit = any(p == path and fn.def_line <= fl <= fn.end_line for p, fl in frame_lines)
                searched = (path, fn.def_line) in plan.search_hits or fn.name in f.callees
                if hit or searched:
                    spans.append((fn, hit))
            # ... and the helpers they call that are in view (one level down)
            called = {name for fn, _ in spans for n in range(fn.def_line + 1, fn.end_line + 1)
                      for name in re.findall(r"\b([A-Za-z_]\w*)\(", lines.get(n, ""))}
            spans += [(fn, False) for fn in fns if fn.name in called and all(fn is not g for g, _ in spans)]
            if not spans:   # no def in view: the frame's neighbourhood
                spans = [(None, True)]
            for fn, hit in spans:
                lo = fn.def_line if fn else min(lines)
                hi = fn.end_line if fn else max(lines)
                code_lines = _code_lines(lines, lo, hi, known_start=fn is not None)
                params = tuple(fn.params) if fn else ()
                for n in range(lo, hi + 1):
                    text = lines.get(n)
                    if text is None or n not in code_lines:
                        continue
                    ok = _parses(text)
                    for kind, what, new in line_mutations(text, goal_numbers):
                        new_line = new if new.endswith("\n") else new + "\n"
                        if new_line == text or (ok and _parses(new_line) is False):
                            continue
                        c = Candidate(path, n, (new_line,), kind, what)
                        c.score = score(c, f, goal_words, frame_lines, text, params)
                        cands.setdefault(c.key, c)
                for fpath, fline in frame_lines:
                    if fpath == path and lo <= fline <= hi:
                        for c in frame_guards(path, fline, lines, fn, f):
                            c.score = score(c, f, goal_words, frame_lines, lines[fline], params)
                            cands.setdefault(c.key, c)
                if fn is not None:
                    for c in guard_candidates(path, fn, lines, f):
                        c.score = score(c, f, goal_words, frame_lines, lines[fn.body_line], params)
                        cands.setdefault(c.key, c)
        ordered = sorted(cands.values(), key=lambda c: (c.path, c.line, c.kind, c.key))
        rng = random.Random(self.seed)
        tiers: dict[int, list[Candidate]] = {}
        for c in ordered:
            tiers.setdefault(int(c.score), []).append(c)
        out = []
        for tier in sorted(tiers, reverse=True):
            group = tiers[tier]
            rng.shuffle(group)
            out += group
        return out

    # -- reading the evidence back -------------------------------------------------------------
    def _replay(self, view: View) -> Plan:
        plan = Plan()
        writable = view.authorization.writable
        for ev in view.evidence:
            action = json.loads(ev.action)
            tool = action.get("tool")
            if tool == "run_target_test" and plan.failure is None:
                plan.failure = parse_failure(ev, view.goal.text, writable)
            elif tool == "search":
                plan.searches.append(action["query"])
                for line in (ev.output or "").splitlines():
                    m = re.match(r"^([^:\n]+):(\d+):", line)
                    if m and _writable(m.group(1), writable) == m.group(1):
                        hit = (m.group(1), int(m.group(2)))
                        if hit not in plan.search_hits:
                            plan.search_hits.append(hit)
            elif tool == "read_file":
                start = action.get("start_line") or 1
                plan.reads.append(f"{action['path']}:{start}")
                if ev.status == "ok" and "[output capped" not in ev.output:
                    known = plan.known.setdefault(action["path"], {})
                    for i, text in enumerate(ev.output.splitlines(keepends=True)):
                        if plan.applied is None:   # reads happen before any patch; never learn a patched line
                            known.setdefault(start + i, text if text.endswith("\n") else text + "\n")
            elif tool == "apply_patch":
                # Which candidate this was: recompute the ranking as it stood before this step.
                cand = self._candidate_for(action["diff"], plan, view)
                if ev.status == "ok" and cand is not None:
                    plan.applied, plan.awaiting = cand, "target"
                elif cand is not None:
                    plan.tried.append((cand, "patch did not apply"))
            elif tool in ("run_target_test", "run_full_suite", "check_diff") and plan.applied is not None:
                c = plan.applied
                passed = ev.status == "ok"
                if tool == "run_target_test":
                    if passed:
                        plan.awaiting = "full"
                    else:
                        plan.tried.append((c, "target test still fails")); plan.awaiting = None
                elif tool == "run_full_suite":
                    targets_ok = (ev.data or {}).get("targets_ok")
                    if passed:
                        plan.awaiting = "check"
                    else:
                        plan.tried.append((c, "full suite fails (the target passes: a trap)" if targets_ok
                                           else "full suite fails")); plan.awaiting = None
                else:
                    if not passed:
                        plan.tried.append((c, "diff out of scope")); plan.awaiting = None
        return plan

    def _candidate_for(self, diff: str, plan: Plan, view: View) -> Candidate | None:
        for c in self._ranked(plan, view):
            if render_patch(plan.known, plan.applied, c) == diff:
                return c
        return None

    # -- handing over --------------------------------------------------------------------------
    def _handoff(self, plan: Plan, candidates: list[Candidate], why: str) -> Stop:
        f = plan.failure
        tried = "; ".join(f"{c.label()} -> {outcome}" for c, outcome in plan.tried) or "none"
        suspects = ", ".join(f"{p}:{l}" for p, l in f.frames) or "no traceback frame inside the writable scope"
        searched = ", ".join(plan.searches) or "nothing"
        left = [c for c in candidates if c.key not in {t.key for t, _ in plan.tried}]
        summary = (f"failure: {f.message or f.exception or 'unknown'}; hints: {sorted(f.hints) or 'none'}. "
                   f"suspect frames: {suspects}; searched: {searched}; read: {', '.join(plan.reads) or 'nothing'}. "
                   f"candidates tried ({len(plan.tried)}): {tried}. untried candidates: {len(left)}"
                   + (f" (next: {left[0].label()})" if left else "")
                   + (f". The working tree still holds the last failed candidate {plan.applied.label()}."
                      if plan.applied is not None and plan.tried and plan.tried[-1][0] is plan.applied else "."))
        return Stop(reason=f"search chooser: {why}", summary=summary[:7900])
