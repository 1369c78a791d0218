"""Reads the search chooser asks for before its first candidate, beyond the traceback and the
spectrum: the code of a pattern the failure quotes, and a function the goal names when the tests ran
nothing (code that runs at import, like a table built by a helper, never shows in a test's
spectrum)."""
from __future__ import annotations

import difflib
import re

from ...loop.actions import ReadFile, Search
from ...loop.state import View
from .failure import Failure
from .plan import Plan
from .source import goal_calls

GOAL_DEF_WINDOW = 45
MAX_GOAL_SEARCHES = 2


def read_goal_function(plan: Plan, view: View) -> Search | ReadFile | None:
    """When the failing tests ran no line of the writable scope (what they check was built at import),
    a function the goal calls (`add_uppercase_char([...]) returns ...`) that no line read defines:
    search for its `def`, then read from it. At most MAX_GOAL_SEARCHES names."""
    f = plan.failure
    assert f is not None
    if not plan.reads or f.suspicious:
        return None   # only when the failing tests ran no line of the scope (and after the plain reads)
    defined = {m.group(1) for lines in plan.known.values() for t in lines.values()
               if (m := re.match(r"\s*(?:async\s+)?def\s+(\w+)", t))}
    searched = 0
    for name in goal_calls(view.goal.text):
        if name in defined:
            continue
        query = f"def {name}("
        if query not in plan.searches:
            if searched >= MAX_GOAL_SEARCHES:
                return None
            writable = view.authorization.writable
            return Search(query=query, path_glob=writable[0] if len(writable) == 1 else None)
        searched += 1
        for path, line, _ in plan.hits_by_query.get(query, [])[:1]:
            if line not in plan.known.get(path, {}) and f"{path}:{line}" not in plan.reads:
                return ReadFile(path=path, start_line=line, end_line=line + GOAL_DEF_WINDOW)
    return None


MARGIN_DEF_RE = re.compile(r"(?:async\s+)?(?:def|class)\s")
METHOD_DEF_RE = re.compile(r"\s*(?:async\s+)?def\s+\w+\(\s*(?:self|cls)\b")
ENCLOSING_READ = 40   # lines read above a window to find the `def` of the function a frame is in


def read_enclosing_def(plan: Plan) -> ReadFile | None:
    """When None reached an operation (`'NoneType' object is not callable`), the top of the function the innermost traceback frame is in, if its
    window started below the `def` (a long docstring, a long function): its parameters and its first
    statements (where a guard, a default or a normalization is missing) are read, once. A nested
    function's enclosing one counts."""
    f = plan.failure
    assert f is not None
    if "NoneType" not in f.exception_message:
        return None   # only when None reached an operation: a guard or a default its top lacks
    for path, line in reversed(f.frames):
        known = plan.known.get(path, {})
        if line not in known:
            continue
        k = line - 1
        while k in known:   # up to the `def` or `class` at the margin that holds the frame, or a method's `def`
            if MARGIN_DEF_RE.match(known[k]) or METHOD_DEF_RE.match(known[k]):
                return None   # its whole top is in view
            k -= 1
        if k < 1 or f"{path}:{max(1, k - ENCLOSING_READ + 1)}" in plan.reads:
            return None
        return ReadFile(path=path, start_line=max(1, k - ENCLOSING_READ + 1), end_line=k)
    return None


QUOTED_HIT_BEFORE, QUOTED_HIT_AFTER = 20, 15


def find_quoted_pattern(plan: Plan, writable: tuple[str, ...]) -> Search | ReadFile | None:
    """Search for the character class the failure's quoted pattern gets wrong, then read its first hit."""
    f = plan.failure
    assert f is not None
    for query, pattern in list(zip(f.short_ranges, f.quoted_patterns))[:1]:
        if query not in plan.searches:
            return Search(query=query, path_glob=writable[0] if len(writable) == 1 else None)
        # the hit that shares most of the quoted pattern's text (a table entry `"[0-6]"` shares only the class)
        hits = sorted(plan.hits_by_query.get(query, []), key=lambda h: -_shared(h[2], pattern))
        for path, line, _ in hits[:1]:
            start = max(1, line - QUOTED_HIT_BEFORE)
            if line not in plan.known.get(path, {}) and f"{path}:{start}" not in plan.reads:
                return ReadFile(path=path, start_line=start, end_line=line + QUOTED_HIT_AFTER)
    return None


def _shared(a: str, b: str) -> int:
    """The length of the longest text both hold."""
    m = difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return m.size


def clean_fix_lines(f: Failure) -> list[tuple[str, int]]:
    """The lines where the mutation analysis found a clean fix, likeliest first: at or just above a
    line the failing tests crashed on (a guard before the crash), then the more suspicious, then in
    file order. Several guards of a guessed condition may be clean far from the fault; the crash
    says where the fault showed."""
    lines = [key for key, fixes in f.mutant_fixes.items() if any(fx.clean for fx in fixes)]
    crashed = {(p, n) for p, n in f.frames}

    def near_crash(key: tuple[str, int]) -> bool:
        return any((key[0], key[1] + d) in crashed for d in (0, 1, 2))
    return sorted(lines, key=lambda k: (not near_crash(k), -f.suspicious.get(k, 0.0), k))
