"""How text from outside (a diff, chooser and model text, tool and server output) is shown to a person.

Everything a candidate, a chooser or a server wrote can carry characters that act instead of showing:
terminal escape sequences that move the cursor and erase the line above, a carriage return that
overwrites its line, bidi controls that reorder a line, zero-width and non-ASCII space characters
that hide a difference. Every place that shows such text to a person (the terminal, report.md,
report.html) renders it through this module, so each such character is shown by its name
(`\\x1b`, `<U+202E>`) and never reaches the terminal or the page as itself. Secrets are taken
out first (redaction.py): what is shown is what is recorded.

Backslashes are left as they are: a literal `\\x1b` typed into a comment is shown as typed, and is
harmless text either way; it is the character itself that can hide something.
"""
from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from .redaction import redact

# Categories that are never shown as themselves: controls, format (bidi, zero-width, BOM), private
# use, surrogates, unassigned, line and paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
_KEPT = frozenset("\n\t")  # line structure: shown as themselves where the text keeps its lines


def is_hidden(char: str) -> bool:
    """A character that acts, hides or passes for another: shown by name, never as itself."""
    if char in _KEPT or char == " ":
        return False
    category = unicodedata.category(char)
    # Non-ASCII spaces (no-break, ideographic, en/em...) read as a space but are another character.
    return category in HIDDEN_CATEGORIES or category == "Zs"


def name_of(char: str) -> str:
    """`\\x1b` for a character below U+0100, else `<U+202E>`: ASCII only, so it cannot act itself."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"<U+{code:04X}>"


# Every character is_hidden could select: a fast path lets ordinary text through without a per-character loop.
_MAYBE_HIDDEN = re.compile(r"[^\x20-\x7e\n\t]")


def visible(text: str, *, keep_lines: bool = True) -> str:
    """`text` with every hidden character shown by name; newlines and tabs kept unless keep_lines is
    False (a one-line field: a newline there could fake a line of its own)."""
    text = text if isinstance(text, str) else str(text)
    out = _MAYBE_HIDDEN.sub(lambda m: name_of(m.group()) if is_hidden(m.group()) else m.group(), text)
    if not keep_lines:
        out = out.replace("\n", "\\n").replace("\t", "\\t")
    return out


def terminal(text: Any, *, keep_lines: bool = True) -> str:
    """What a terminal may print of outside text: secrets removed, hidden characters named."""
    return visible(redact(str(text)), keep_lines=keep_lines)


def terminal_json(data: Any, indent: int | None = 2) -> str:
    """JSON for a terminal: the same data (still valid JSON, every string as written, secrets out),
    with hidden characters written as \\u escapes so none reaches the terminal as itself."""
    text = redact(json.dumps(data, indent=indent, ensure_ascii=False, default=str))
    return _MAYBE_HIDDEN.sub(lambda m: _json_escape(m.group()) if is_hidden(m.group()) else m.group(), text)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)  # JSON spells an astral character as a surrogate pair
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


# -- Markdown (report.md) --------------------------------------------------------------------------

# Characters Markdown or HTML would act on in running text; each is written so it shows as itself.
_MD_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# `_` inside a word (apply_discount) is no emphasis in CommonMark: left as is, so names stay readable.
_MD_ACTIVE = re.compile(r"[\\`*\[\]|~&<>#]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_text(text: Any) -> str:
    """Outside text as one line of Markdown prose: shown, never acted on (no markup, no HTML, no
    heading or table cell break of its own)."""
    shown = terminal(text, keep_lines=False)
    return _MD_ACTIVE.sub(lambda m: _MD_ENTITIES.get(m.group(), "\\" + m.group()), shown)


_MD_LINE_START = re.compile(r"^(\s*)([-=+]|\d+(?=[.)]))")


def md_lines(text: Any) -> list[str]:
    """Outside text of several lines (a goal, a problem statement) as Markdown lines of one paragraph,
    each shown as md_text shows one line, broken where the text breaks; a line that Markdown would
    read as a list item, a rule or a heading's underline starts escaped."""
    lines = str(text).splitlines() or [""]
    shown = [_MD_LINE_START.sub(_escape_start, md_text(line)) for line in lines]
    return [line + "  " for line in shown[:-1]] + shown[-1:]


def _escape_start(m: re.Match) -> str:
    mark = m.group(2)  # `-`, `=`, `+` escaped themselves; `1.` by its dot (a digit cannot be escaped)
    return m.group(1) + (mark + "\\" if mark[0].isdigit() else "\\" + mark)


def md_code(text: Any, *, cell: bool = False) -> str:
    """Outside text as an inline code span whose fence no backtick run inside can close; in a table
    `cell`, `|` is escaped because the cell ends at it even inside a code span."""
    shown = terminal(text, keep_lines=False)
    shown = shown.replace("|", "\\|") if cell else shown
    fence = "`" * (max((len(run) for run in re.findall(r"`+", shown)), default=0) + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") or not shown.strip() else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def md_fence(text: Any, info: str = "") -> list[str]:
    """Outside text as a fenced code block (its lines), fenced longer than any backtick run inside."""
    shown = terminal(text).rstrip("\n")
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`{3,}", shown)), default=0) + 1)
    return [fence + info, shown, fence]


# -- HTML (report.html) ----------------------------------------------------------------------------

def html_finalize(value: Any) -> Any:
    """jinja2's `finalize`: every value a template prints passes here before it is escaped, so the
    page never carries a hidden character or a secret as itself."""
    from markupsafe import Markup, escape

    if isinstance(value, Markup):  # markup the template made (tojson): its text shown the same way
        return escape(terminal(value.unescape()))
    if isinstance(value, str):
        return terminal(value)
    return value
