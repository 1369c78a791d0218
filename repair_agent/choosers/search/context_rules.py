"""What the function around a candidate's line says about it, as features (each rule names a bug
pattern): the condition in front of a raise the test expected, a raise at a frame, a parameter the
function never reads, a walk that restarts every iteration, parameters passed on in another order
than declared, a re-cased value compared with literals of the other case."""
from __future__ import annotations

import re

from .catalogue import Candidate
from .context_edits import reads
from .failure import Failure
from .weights import Rule, active


def context_bonus(c: Candidate, fn, lines: dict[int, str], f: Failure, unused: list[str] | tuple[str, ...] = ()) -> float:
    """What the function around a candidate's line says about it (each rule names a bug pattern), as
    score points; its features join the candidate's. `unused`: the parameters the function never
    reads (`unused_params`)."""
    x = context_features(c, fn, lines, f, unused)
    for name, value in x.items():
        c.features[name] = c.features.get(name, 0.0) + value
    return active().dot(x)


def context_features(c: Candidate, fn, lines: dict[int, str], f: Failure,
                     unused: list[str] | tuple[str, ...] = ()) -> dict[str, float]:
    text = lines.get(c.line, "")
    x: dict[str, float] = {}

    def add(rule: Rule) -> None:
        x[rule.value] = x.get(rule.value, 0.0) + 1.0
    if f.not_raised and c.kind in ("comparison", "boundary", "boolean", "condition") and text.lstrip().startswith(("if ", "elif ")):
        nxt = next((lines[k] for k in range(c.line + 1, c.line + 4) if lines.get(k, "").strip()), "")
        if re.match(rf"^\s*raise\s+(?:[\w.]+\.)?{re.escape(f.not_raised)}\b", nxt):
            add(Rule.EXPECTED_RAISE_CONDITION)   # the test expected this raise: the condition in front of it let the value through
            said = re.findall(r"['\"]([^'\"]{6,})['\"]", nxt)
            if any(text_ in line or line_ in text_ for text_ in said for line in f.assert_lines
                   for line_ in re.findall(r"['\"]([^'\"]{6,})['\"]", line)):
                add(Rule.EXPECTED_RAISE_MESSAGE)   # ... and it raises with the message the test looks for
    # The exception that reached the test was raised by the code itself (`raise KeyError(...)` at a
    # frame): what let the value get there is the suspect; the raise's own message is not.
    if f.exception not in ("", "AssertionError") and not f.not_raised and c.kind not in ("delete", "raise-guard"):
        if any(p == c.path and n == c.line for p, n in f.frames) and text.lstrip().startswith("raise "):
            add(Rule.RAISE_AT_FRAME)
    if c.kind == "variable" and unused and len(c.new_lines) == 1 and any(
            reads(p, c.new_lines[0]) and not reads(p, text) for p in unused):
        add(Rule.USES_UNUSED_PARAMETER)   # the function takes a value it never uses: this edit uses it
    m = re.match(r"^(\w+) -> (\w+)$", c.what)
    if c.kind == "variable" and m and re.match(rf"^\s*{re.escape(m.group(2))}\s*=[^=]", text) and _in_loop(c.line, fn, lines):
        add(Rule.WALK_RESTARTS)   # `d = result.get(k)` in a loop -> `d = d.get(k)`: a walk that restarts every iteration
    sw = re.match(r"^swap arguments (\w+), (\w+)$", c.what)
    if c.kind == "swap" and sw and sw.group(1) in fn.params and sw.group(2) in fn.params and \
            fn.params.index(sw.group(1)) > fn.params.index(sw.group(2)):
        add(Rule.PARAMETER_ORDER)   # the function passes its own parameters on in another order than it declares them
    if c.kind == "name" and m and {m.group(1), m.group(2)} == {"lower", "upper"}:
        agreement = _case_agreement(c.line, m.group(2), fn, lines)
        if agreement is not None:
            add(Rule.CASE_AGREES if agreement else Rule.CASE_DISAGREES)
    return x


def guard_features(c: Candidate, lines: dict[int, str], f: Failure) -> dict[str, float]:
    """A guard that raises the exception the test expected and did not get, inserted before an `if` that
    already raises it: that `if`'s condition let the value through (EXPECTED_RAISE_CONDITION favours its
    edits); a second check with another condition passes the tests as well, and is rarely the fix."""
    raises = rf"^\s*raise\s+(?:[\w.]+\.)?{re.escape(f.not_raised)}\b"
    if not f.not_raised or len(c.new_lines) < 3 or not re.match(r"^\s*if\b", c.new_lines[0]) \
            or not re.match(raises, c.new_lines[1]) or not lines.get(c.line, "").lstrip().startswith("if "):
        return {}
    nxt = next((lines[k] for k in range(c.line + 1, c.line + 4) if lines.get(k, "").strip()), "")
    return {Rule.GUARD_BESIDE_EXPECTED_RAISE.value: 1.0} if re.match(raises, nxt) else {}


def _in_loop(n: int, fn, lines: dict[int, str]) -> bool:
    indent = len(lines.get(n, "")) - len(lines.get(n, "").lstrip())
    for k in range(n - 1, fn.def_line, -1):
        t = lines.get(k, "")
        if not t.strip():
            continue
        ind = len(t) - len(t.lstrip())
        if ind < indent:
            if re.match(r"^\s*(?:async\s+)?(for|while)\b", t):
                return True
            indent = ind
    return False


def _case_agreement(n: int, new: str, fn, lines: dict[int, str]) -> bool | None:
    """`v = v.lower()` compared further down with "AM": a value re-cased one way and compared with
    literals of the other case never matches. True when the edit makes them agree, False when it
    breaks an agreement, None when it does neither."""
    m = re.match(r"^\s*(\w+)\s*=[^=]", lines.get(n, ""))
    if not m:
        return None
    var = m.group(1)
    cased = []
    for k in range(n + 1, fn.end_line + 1):
        for lit in re.findall(rf"\b{re.escape(var)}\s*(?:==|!=|in|not in)\s*[\(\[{{]?\s*(['\"])(.*?)\1", lines.get(k, "")):
            letters = [ch for ch in lit[1] if ch.isalpha()]
            if letters and (all(ch.isupper() for ch in letters) or all(ch.islower() for ch in letters)):
                cased.append("upper" if letters[0].isupper() else "lower")
    if not cased:
        return None
    return True if all(x == new for x in cased) else False if all(x != new for x in cased) else None
