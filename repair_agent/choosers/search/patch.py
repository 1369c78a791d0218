"""Rendering a candidate as a unified diff against the lines actually read."""
from __future__ import annotations

import difflib

from verifier.scope import HUNK_HEADER

from .catalogue import Candidate


def _blocks(lines: dict[int, str]) -> list[tuple[int, int]]:
    """Contiguous runs of known line numbers, as (first, last)."""
    runs: list[tuple[int, int]] = []
    for n in sorted(lines):
        if runs and n == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def unanchored_end(known: dict[str, dict[int, str]], eof: dict[str, int], before: Candidate | None,
                   after: Candidate | None) -> tuple[str, int] | None:
    """The first unread line after a read window whose last line the patch from `before` to `after`
    changes, unless that window ends the file: `git apply` anchors a hunk with no trailing context
    to the end of the file, so such a patch would not apply. None when every hunk is anchored."""
    for c in (before, after):
        if c is None:
            continue
        lines = known.get(c.path, {})
        for _, hi in _blocks(lines):
            # an edit that keeps the line last (a statement inserted above it) leaves it as context
            if c.line + c.span - 1 == hi and c.new_lines[-1:] != (lines[hi],) and eof.get(c.path) != hi:
                return c.path, hi + 1
    return None


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
                if c is None or c.path != path or not lo <= c.line <= c.line + c.span - 1 <= hi:
                    return list(orig)
                i = c.line - lo
                return orig[:i] + list(c.new_lines) + orig[i + c.span:]

            old, new = with_edit(before), with_edit(after)
            if old != new:
                for line in list(difflib.unified_diff(old, new, n=3))[2:]:
                    m = HUNK_HEADER.match(line)
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

