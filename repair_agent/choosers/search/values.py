"""Edits read from the failing values themselves: when the text a test got differs from the text
it expected only by one short separator put in another's place (`'pypi other'` for
`'pypi\\nother'`), the string literal in the code that holds the one becomes the other; and when a
number is off by a power of ten, the power-of-ten edit that scales it back is the likely one."""
from __future__ import annotations

import ast
import difflib
import json
import math
import re
import tokenize

from .catalogue import Candidate
from .failure import Failure, is_number
from ...in_sandbox.statement_edits import tokens_of

MAX_SEPARATOR = 3   # longer differences are words, not separators


def separator_change(failure: Failure) -> tuple[str, str] | None:
    """(what the code wrote, what the test expected) when every difference between the got and the
    expected text is the same short piece of text put in the place of another."""
    g, e = failure.got, failure.expected
    if not (failure.have_values and isinstance(g, str) and isinstance(e, str)) or g == e:
        return None
    ops = difflib.SequenceMatcher(None, g, e, autojunk=False).get_opcodes()
    pairs = {(g[i1:i2], e[j1:j2]) for tag, i1, i2, j1, j2 in ops if tag != "equal"}
    if len(pairs) != 1:
        return None
    old, new = pairs.pop()
    if not old or len(old) > MAX_SEPARATOR or len(new) > MAX_SEPARATOR or (old + new).isalnum():
        return None   # text inserted where the code wrote nothing is no separator put in another's place
    return old, new


def joiner_insertion(failure: Failure) -> str | None:
    """The text a joiner that wrote nothing should have put between the pieces: every difference
    between the got and the expected text is the same short text inserted (`'helloworld'` for
    `'hello world'`)."""
    g, e = failure.got, failure.expected
    if not (failure.have_values and isinstance(g, str) and isinstance(e, str)) or g == e:
        return None
    ops = difflib.SequenceMatcher(None, g, e, autojunk=False).get_opcodes()
    pieces = {(tag, e[j1:j2]) for tag, i1, i2, j1, j2 in ops if tag != "equal"}
    if len(pieces) != 1:
        return None
    tag, new = pieces.pop()
    return new if tag == "insert" and len(new) <= MAX_SEPARATOR and not new.isalnum() else None


def separator_swaps(path: str, lines: dict[int, str], lo: int, hi: int, failure: Failure) -> list[Candidate]:
    change = separator_change(failure)
    inserted = joiner_insertion(failure) if change is None else None
    if change is None and inserted is None:
        return []
    old, new = change or ("", inserted or "")
    out = []
    for n in range(lo, hi + 1):
        text = lines.get(n)
        if text is None:
            continue
        for t in tokens_of(text):
            if t.type != tokenize.STRING or t.start[0] != 1 or t.string[:1] not in "'\"":
                continue
            try:
                value = ast.literal_eval(t.string)
            except (ValueError, SyntaxError):
                continue
            if value != old or (not old and not text[t.end[1]:].startswith(".join(")):
                continue   # an empty literal is a separator only as a joiner
            literal = json.dumps(new) if t.string[0] == '"' else "'" + json.dumps(new)[1:-1].replace("'", "\\'") + "'"
            new_text = text[:t.start[1]] + literal + text[t.end[1]:]
            out.append(Candidate(path, n, (new_text,), "separator", f"{t.string} -> {literal} (the values differ by it)", 3.0))
    return out


def magnitude_fix(c: Candidate, line_text: str, failure: Failure) -> bool | None:
    """Does a power-of-ten edit (`/ 10.0` -> `/ 100.0`) scale the result by expected / got? None when
    the values or the line do not say."""
    g, e = failure.got, failure.expected
    m = re.match(r"([\d.]+) -> ([\d.]+)", c.what)
    if m is None or not all(is_number(v) and v for v in (g, e)):
        return None
    op = re.search(rf"([*/])\s*{re.escape(m.group(1))}(?![\d.])", line_text)
    if op is None:
        return None
    old, new = float(m.group(1)), float(m.group(2))
    factor = new / old if op.group(1) == "*" else old / new
    return math.isclose(factor, e / g, rel_tol=1e-6)
