"""The text of an edit: a replace_in_file turned into a unified diff, and what a chooser is shown
when an edit's text is not in the file (the closest lines, numbered) or git could not apply a hunk."""
from __future__ import annotations

import difflib
import re

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from verifier.scope import recount_hunks


def split_lines(text: str) -> list[str]:
    """Lines with their newline kept, split on "\n" only (str.splitlines also splits on \x0c, \u2028...,
    which a diff does not)."""
    return re.findall(r"[^\n]*\n|[^\n]+$", text)


def numbered(lines: list[str], first: int) -> str:
    """`cat -n` style, as read_file with line_numbers shows them: a model copies these into edits."""
    return "".join(f"{n:6d}\t{line.rstrip(chr(10))}\n" for n, line in enumerate(lines, first))


NEAREST_CONTEXT = 2
NEAREST_MAX_LINES = 40


NEAREST_WANTED_LINES = 20  # of the model's text, compared: enough to place it, bounded in cost


def nearest_lines(text: str, wanted: str, path: str) -> str:
    """The stretch of `text` most like `wanted`, with line numbers and a little context: what a
    model needs to correct an edit whose text is not in the file (it misremembered a line)."""
    lines = split_lines(text)
    stripped = [x.strip() for x in lines]
    want = [w.strip() for w in split_lines(wanted)][:NEAREST_WANTED_LINES]
    if not lines:
        return f"{path} is empty."
    size = max(1, min(len(want), len(lines)))
    last_start = len(lines) - size
    # Candidate windows, cheaply: those sharing the most exact lines with the wanted text, and those
    # anchored at the lines most like its two longest lines (a line misremembered everywhere).
    present = set(w for w in want if w)
    shared = sorted(range(last_start + 1), key=lambda i: -sum(x in present for x in stripped[i:i + size]))[:10]
    anchors = []
    for w in sorted((w for w in want if w), key=len, reverse=True)[:2]:
        offset = want.index(w)
        for close in difflib.get_close_matches(w, stripped, n=5, cutoff=0.4):
            anchors += [min(max(0, n - offset), last_start) for n, x in enumerate(stripped) if x == close][:5]
    wanted_text = "\n".join(want)
    best = max(dict.fromkeys(shared + anchors), key=lambda i: (difflib.SequenceMatcher(
        None, "\n".join(stripped[i:i + size]), wanted_text, autojunk=False).ratio(), -i))
    start = max(0, best - NEAREST_CONTEXT)
    end = min(len(lines), best + size + NEAREST_CONTEXT, start + NEAREST_MAX_LINES)
    return f"The closest lines in {path} (lines {start + 1}-{end} of {len(lines)}):\n" + numbered(lines[start:end], start + 1)


def replacement_diff(path: str, text: str, old: str, new: str) -> tuple[str | None, str]:
    """(the unified diff replacing the one occurrence of `old`, "") or (None, why not, with the
    nearest or the matching lines numbered)."""
    count = text.count(old)
    if count == 0:
        return None, (f"`old` was not found in {path} (it must match exactly, whitespace and indentation "
                      f"included). Nothing was changed.\n" + nearest_lines(text, old, path))
    if count > 1:
        starts, at = [], text.find(old)
        while at >= 0 and len(starts) < 5:
            starts.append(text.count("\n", 0, at) + 1)
            at = text.find(old, at + 1)
        lines = split_lines(text)
        shown = "".join(numbered(lines[max(0, n - 2):n + 2], max(1, n - 1)) + "---\n" for n in starts[:3])
        return None, (f"`old` occurs {count} times in {path} (at lines {', '.join(map(str, starts))}"
                      f"{', ...' if count > len(starts) else ''}); it must occur exactly once. Nothing was changed: "
                      f"include more of the surrounding lines in `old` and `new`.\n{shown}")
    if old == new:
        return None, "`old` and `new` are the same text: there is nothing to change."
    before, after = split_lines(text), split_lines(text.replace(old, new, 1))
    diff = []
    for line in difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"):
        # difflib leaves a last line without its newline as it is; a unified diff marks it.
        diff.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(diff), ""


_PATCH_FAILED = re.compile(r"^error: patch failed: (.+):(\d+)$", re.M)


def failed_hunk(diff: str, git_stderr: str) -> tuple[str, str] | None:
    """(path, the hunk's old text) of the hunk git names in `patch failed: PATH:LINE`; None when git
    names none, or the diff does not read as a unified diff (then no hunk can be shown either)."""
    match = _PATCH_FAILED.search(git_stderr)
    if match is None:
        return None
    path, line = match[1], int(match[2])
    try:
        patch = PatchSet(recount_hunks(diff))  # the text git was given (see Sandbox.apply_patch)
    except UnidiffParseError:
        return None
    hunks = [h for f in patch if f.path == path for h in f]
    chosen = next((h for h in hunks if h.source_start == line), hunks[0] if hunks else None)
    old = "".join(x.value for x in chosen.source_lines()) if chosen is not None else ""
    return (path, old) if old else None


def git_apply_errors(stderr: str) -> str:
    """git apply's messages without its progress lines and without the echo of the patch's own text
    ("while searching for:"), which only repeats what the model sent."""
    kept, echo = [], False
    for line in stderr.splitlines():
        if line.startswith("error: while searching for:"):
            echo = True
            continue
        if echo and not line.startswith("error:"):
            continue
        echo = False
        if not line.startswith(("Checking patch", "Applied patch", "Hunk #")) or "fail" in line.lower():
            kept.append(line)
    return "\n".join(kept)
