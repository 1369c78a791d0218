"""What the failing target test says: the frames inside the writable scope, the asserted values,
the exception, the functions the assertion calls, and hints about the kind of bug."""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from typing import Any

from verifier.spec import glob_match

from ...hints.mutation import MutantFix
from ...loop.state import Evidence
from .weights import Hint

# Names called in a failing assertion that are never the code under repair.
NOT_SUSPECTS = frozenset(dir(builtins)) | {
    "approx", "raises", "assert", "self", "cls", "pytest", "len", "str", "repr"}

FRAME_RE = re.compile(r"^(?:\s*File \")?(?P<path>[^\s:\"]+\.py)(?:\", line |:)(?P<line>\d+)(?::|,|$)", re.M)
ASSERT_EQ_RE = re.compile(r"assert (?P<got>.+?) (?P<op>==|!=|is not|is|in|<=|>=|<|>) (?P<exp>.+)$")
EXC_RE = re.compile(r"\b(?P<exc>[A-Z]\w*(?:Error|Exception)|StopIteration)\b:?\s*(?P<msg>.*)")
WHERE_CALL_RE = re.compile(r"where .*?=\s*(?:[\w.]+\.)?(?P<name>[A-Za-z_]\w*)\(|bound method (?:\w+\.)*(?P<method>\w+) of")
CALL_RE = re.compile(r"(?:\.|\b)(?P<name>[A-Za-z_]\w*)\(")
PERCENT_WORDS = re.compile(r"percent(?![\s-]*(?:escape|encod|sign|decod))|per cent|\bcents?\b|\d\s*%(?=[\s.,;:)]|$)", re.I)


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
    hints: set[Hint] = field(default_factory=set)   # what the failure says about the kind of bug
    # Spectrum localization of the observation: (path, line) -> Ochiai score relative to the best line.
    suspicious: dict[tuple[str, int], float] = field(default_factory=dict)
    suspicious_complete: bool = False   # every line the failing tests ran is listed
    # The mutation analysis, when the observation has one: the mutants that made failing targets
    # pass, and (tried, changed) per mutated line.
    mutant_fixes: dict[tuple[str, int], list[MutantFix]] = field(default_factory=dict)
    mutated: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    # ... and the edit_key of each mutant there a failing target still failed on (where mutants took effect)
    refuted: dict[tuple[str, int], frozenset[str]] = field(default_factory=dict)
    # Values the failing tests expect (source text of literals): a candidate never writes one into the code.
    expected_literals: set[str] = field(default_factory=set)
    # Every exception message the failing tests show (`E   ValueError: ...` lines), not only the first.
    exception_messages: list[str] = field(default_factory=list)
    # The exception a failing test expected and did not get (pytest's "DID NOT RAISE ValueError").
    not_raised: str = ""
    # Character classes of a pattern the failure quotes whose range stops one short of a character of
    # an input it quotes (`[0-6]` and '12345670'): the text to search the code for.
    short_ranges: list[str] = field(default_factory=list)
    quoted_patterns: list[str] = field(default_factory=list)   # the patterns those classes were found in


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def writable_path(path: str, writable: tuple[str, ...]) -> str | None:
    """The repository-relative path of `path` if it is inside the writable scope (absolute container
    paths such as /workspace/src/x.py are matched by their shortest writable suffix)."""
    parts = path.strip("/").split("/")
    if {"tests", "test"} & set(parts[:-1]):  # a test module's frame, under any prefix: never a suffix of it
        return None
    for i in range(len(parts)):
        rel = "/".join(parts[i:])
        if glob_match(rel, writable) and not rel.startswith(("tests/", "test/")) and "/tests/" not in f"/{rel}":
            return rel
    return None


ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# unittest's assertEqual message: `first != second` (by convention the value, then the expectation)
UNITTEST_NE_RE = re.compile(r"^(?:AssertionError: )?(?:(?:Lists|Tuples|Sequences|Sets|Dicts?) differ: )?"
                            r"(?P<got>.+?) != (?P<exp>.+)$")
# unittest's assertIsNone / assertTrue / assertFalse messages: `[] is not None`, `0 is not true`
UNITTEST_IS_RE = re.compile(r"^(?:AssertionError: )?(?P<got>.+?) is not (?P<exp>None|true|false)$")
UNITTEST_EXPECTED = {"None": None, "true": True, "false": False}
# `must be ... 0 <= x`, `must be non-negative`: a value computed out of the bounds a callee states
BOUNDS_BROKEN_RE = re.compile(r"(?:Error|Exception): .*must be .*(?:\d\s*<=?|non-?negative|positive|between|>=?\s*\d)",
                              re.I)
# pytest's `DID NOT RAISE <class 'ValueError'>`, unittest's `ValueError not raised by f`
DID_NOT_RAISE_RE = re.compile(r"DID NOT RAISE <?(?:class )?'?(?:[\w.]+\.)?([A-Z]\w*(?:Error|Exception|Warning))"
                              r"|\b([A-Z]\w*(?:Error|Exception|Warning)) not raised\b")
RECASED_INPUT_RE = re.compile(r"\.(?:capitalize|upper|title|swapcase)\(\)")


def parse_failure(ev: Evidence, goal_text: str, writable: tuple[str, ...]) -> Failure:
    out = ANSI_RE.sub("", ev.output or "")   # a project may force colour on (`--color=yes` in its config)
    f = Failure()
    for line in out.splitlines():
        if ": failed: " in line or ": error: " in line:
            f.message = line.split(": ", 2)[-1] if line.count(": ") >= 2 else line
            break
    pytest_part = out.split("--- pytest output", 1)[-1] if "--- pytest output" in out else out
    for m in FRAME_RE.finditer(pytest_part):
        rel = writable_path(m.group("path"), writable)
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
                f.have_values, f.got, f.expected = _asserted_values(am, pytest_part, f.assert_lines)
            um = UNITTEST_NE_RE.match(body) if not am else None
            if um and not f.have_values:
                ok_g, got = _literal(um.group("got"))
                ok_e, exp = _literal(um.group("exp"))
                if ok_g and ok_e:
                    f.got, f.expected, f.have_values = got, exp, True
            im = UNITTEST_IS_RE.match(body) if not am and not um else None
            if im and not f.have_values:
                ok_g, got = _literal(im.group("got"))
                if ok_g:
                    f.got, f.expected, f.have_values = got, UNITTEST_EXPECTED[im.group("exp")], True
            em = EXC_RE.match(body)
            if em and not f.exception:
                f.exception, f.exception_message = em.group("exc"), em.group("msg")
            if em:
                f.exception_messages.append(body)
    if not f.exception:
        em = EXC_RE.search(f.message)
        if em and not f.message.startswith("assert"):
            f.exception, f.exception_message = em.group("exc"), em.group("msg")
    if not f.have_values:
        am = ASSERT_EQ_RE.search(f.message)
        if am and am.group("op") == "==":
            f.have_values, f.got, f.expected = _asserted_values(am, pytest_part, f.assert_lines)
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
    nr = DID_NOT_RAISE_RE.search(out)
    if nr:
        f.not_raised = nr.group(1) or nr.group(2)
    f.short_ranges, f.quoted_patterns = short_ranges([f.message, *f.exception_messages])
    f.hints = _hints(f, goal_text)
    loc = ev.localization
    if loc is not None and loc.lines:
        best = max(s.score for s in loc.lines) or 1.0
        for s in loc.lines:
            rel = writable_path(s.path, writable)
            if rel:
                f.suspicious.setdefault((rel, s.line), round(s.score / best, 4))
        f.suspicious_complete = loc.scored_lines <= len(loc.lines)
    if loc is not None and loc.mutation is not None:
        for fx in loc.mutation.fixes:
            rel = writable_path(fx.path, writable)
            if rel:
                f.mutant_fixes.setdefault((rel, fx.line), []).append(fx)
        for ml in loc.mutation.lines:
            rel = writable_path(ml.path, writable)
            if rel:
                f.mutated[(rel, ml.line)] = (ml.tried, ml.changed)
                if ml.changed and ml.refuted:   # mutants took effect there: the ones that fixed nothing are known
                    f.refuted[(rel, ml.line)] = frozenset(ml.refuted)
    f.expected_literals = _expected_literals(f)
    return f


WHERE_RE = re.compile(r"^E\s+\+\s+where (.+?) = ", re.M)


def _asserted_values(am: re.Match[str], pytest_part: str, assert_lines: list[str]) -> tuple[bool, Any, Any]:
    """(both sides are literals, the value got, the value expected) of an `assert A == B` message,
    whichever side the test wrote its expectation on."""
    ok_a, a = _literal(am.group("got"))
    ok_b, b = _literal(am.group("exp"))
    if not (ok_a and ok_b):
        return False, None, None
    if _expectation_first(pytest_part, assert_lines, am.group("got"), am.group("exp")):
        return True, b, a
    return True, a, b


def _expectation_first(pytest_part: str, assert_lines: list[str], left: str, right: str) -> bool:
    """Is `assert A == B` written with the expectation first (`assert 'sponsor' == singularize(w)`)?
    pytest's first `where` line names the value a call computed; without one, a literal or a name
    on the left and a call on the right say so."""
    where = WHERE_RE.search(pytest_part)
    if where:
        value = where.group(1).strip()
        return value == right.strip() and value != left.strip()
    for line in assert_lines:
        m = re.match(r"assert (.+?) == (.+)$", line)
        if m:   # a value (a literal, a name) on the left, a call computing one on the right
            left_value = _literal(m.group(1))[0] or re.fullmatch(r"[\w.]+", m.group(1).strip()) is not None
            return left_value and "(" in m.group(2) and not _literal(m.group(2))[0]
    return False


def _hints(f: Failure, goal_text: str) -> set[Hint]:
    hints: set[Hint] = set()
    text = f"{goal_text} {f.message} {f.exception_message}"
    if PERCENT_WORDS.search(text):
        hints.add(Hint.PERCENT)
    if re.search(r"\bcents?\b", text, re.I):
        hints.add(Hint.CENTS)
    if re.search(r"\bNone(Type)?\b", f"{f.exception_message} {f.message}") or f.expected is None and f.have_values:
        hints.add(Hint.NONE)
    if f.exception in ("ZeroDivisionError", "IndexError", "StopIteration") or re.search(
            r"\bempty\b", f"{f.exception_message} {goal_text}", re.I):
        hints.add(Hint.EMPTY)
    if f.exception == "TypeError" and "NoneType" in f.exception_message:
        hints.add(Hint.NONE)
    elif f.exception == "TypeError" and re.search(r"\bgot '?\w+'?|unsupported operand|object is not (?:iterable|callable|subscriptable)"
                                                  r"|must be \w+, not|can only concatenate", f.exception_message):
        hints.add(Hint.TYPE)   # a value of the wrong type reached a call: another variable or argument was meant
    if f.exception == "RecursionError":
        hints.add(Hint.RECURSION)   # the base case is never taken: its condition, not the recursive line
    if re.search(r"off[- ]by[- ]one|inclusive|exclusive|boundary|at least|at most|fits|exactly|last|trailing|end of", goal_text, re.I):
        hints.add(Hint.BOUNDARY)
    if re.search(r"\b(first|last|earliest|latest|smallest|largest|lowest|highest|minimum|maximum|shortest|longest)\b",
                 goal_text, re.I):
        hints.add(Hint.EXTREME)
    if any(RECASED_INPUT_RE.search(line) for line in f.assert_lines) or _texts_differ_in_case(f.message):
        hints.add(Hint.CASE)   # the failing assertion feeds a re-cased input, or got texts in another case
    if any(BOUNDS_BROKEN_RE.search(m) for m in f.exception_messages + [f.message]):
        hints.add(Hint.RANGE)   # a callee refused a value out of its bounds: a clamp or a limit computed it
    if re.search(r"\bdefault\b", goal_text, re.I):
        hints.add(Hint.DEFAULT)
    if re.search(r"\border\b|swap|reverse", goal_text, re.I):
        hints.add(Hint.SWAP)
    if f.have_values:
        g, e = f.got, f.expected
        if is_number(g) and is_number(e):
            if abs(g - e) == 1:
                hints.add(Hint.BOUNDARY)
            if g == -e and g != 0:
                hints.add(Hint.SIGN)
            if e and g and abs(round(g / e, 6)) in (100, 0.01):
                hints.update({Hint.PERCENT, Hint.DIV100 if abs(round(g / e, 6)) == 100 else Hint.MUL100})
            if g != e and (g + e == 0 or g - e == 2 * e or e - g == 2 * g):
                hints.add(Hint.SIGN)
        elif isinstance(g, bool) and isinstance(e, bool):
            hints.add(Hint.BOOLEAN)
        elif isinstance(g, (list, tuple)) and isinstance(e, (list, tuple)) and len(g) == len(e) and g != e \
                and all(is_number(a) and is_number(b) and (a == b or a == -b) for a, b in zip(g, e)):
            hints.add(Hint.SIGN)   # the same numbers, some negated: an operation with its operands swapped
        elif isinstance(g, (str, list, tuple)) and isinstance(e, (str, list, tuple)):
            separators = isinstance(g, str) and isinstance(e, str) and g != e and _alnum(g) == _alnum(e)
            if separators:
                hints.add(Hint.SEPARATORS)   # only punctuation or spacing differs: a pattern or a replacement
            elif abs(len(g) - len(e)) == 1 or (isinstance(g, str) and isinstance(e, str)
                                               and abs(len(g.split()) - len(e.split())) == 1):
                hints.add(Hint.BOUNDARY)
            if sorted(map(repr, g)) == sorted(map(repr, e)) and g != e:
                hints.add(Hint.SWAP)
            if (isinstance(g, str) and isinstance(e, str) and re.sub(r"\d+", "#", g) == re.sub(r"\d+", "#", e)
                    and g != e):
                hints.add(Hint.NUMBER)   # same text, another number in it: a counter or constant is off
            if isinstance(g, str) and isinstance(e, str) and g.lower() == e.lower():
                hints.add(Hint.CASE)
            if isinstance(g, str) and isinstance(e, str) and g.strip() == e.strip():
                hints.add(Hint.STRIP)
    am = ASSERT_EQ_RE.search(f.message)
    if am and am.group("op") == "==":
        g_nums, e_nums = re.findall(r"\d+", am.group("got")), re.findall(r"\d+", am.group("exp"))
        if len(g_nums) > 1 and sorted(g_nums) == sorted(e_nums) and g_nums != e_nums:
            hints.add(Hint.SWAP)
    if (f.exception == "AssertionError" and not f.have_values and not am) or f.expected in (True, False):
        hints.add(Hint.BOOLEAN)
    return hints



def _texts_differ_in_case(message: str) -> bool:
    """Do the quoted texts on the two sides of a failed comparison (`Lists differ: [('Щ', 'SCH')...] !=
    [('Щ', 'Sch')...]`, whose values are cut and cannot be parsed) pair up equal but for their case?"""
    sides = message.split(" != ", 1)
    if len(sides) != 2:
        return False
    got, exp = ([a or b for a, b in QUOTED_RE.findall(side)] for side in sides)
    pairs = list(zip(got, exp))
    return bool(pairs) and all(a.lower() == b.lower() for a, b in pairs) and any(a != b for a, b in pairs)


QUOTED_RE = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")
CLASS_RE = re.compile(r"(?<!\\)\[(?!\^)([^\]]*)\]")


def short_ranges(texts: list[str]) -> tuple[list[str], list[str]]:
    """`[0-6]` when a failure quotes a pattern with that class and an input holding '7' (or '/'):
    a range one short at either end rejects the input (a common regular-expression bug). Also the
    patterns they were found in."""
    out: list[str] = []
    found_in: list[str] = []
    for text in texts:
        quoted = [a or b for a, b in QUOTED_RE.findall(text or "")]
        patterns = [q for q in quoted if CLASS_RE.search(q) and re.search(r"\w-\w", q)]
        inputs = [q for q in quoted if q not in patterns]
        for pattern in patterns:
            for m in CLASS_RE.finditer(pattern):
                members = m.group(1)
                for lo, hi in re.findall(r"(\w)-(\w)", members):
                    beyond = {chr(ord(hi) + 1), chr(ord(lo) - 1)}
                    near = {ch for ch in beyond if ch.isalnum() and ch.isdigit() == hi.isdigit()}
                    if any(ch in q and ch not in members for q in inputs for ch in near) and m.group(0) not in out:
                        out.append(m.group(0))
                        found_in.append(pattern)
    return out, found_in


def is_number(value) -> bool:
    """An int or a float as a test compares it (a bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _alnum(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


def _expected_literals(f: Failure) -> set[str]:
    """The values the failing assertions expect (the literals they compare with, on either side, and
    the parsed expected value), normalized by `ast.literal_eval` + repr."""
    found: set[str] = set()
    if f.have_values:
        found.add(repr(f.expected))
    for text in f.assert_lines:
        try:
            tree = ast.parse(text.strip().removeprefix("assert ").strip() or "0")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):   # a literal on either side: `assert 'x' == f()` too
                for side in [node.left, *node.comparators]:
                    ok, value = _literal(ast.unparse(side))
                    if ok:
                        found.add(repr(value))
    return found
