"""A line that differs from its clones, for the mutation analysis (stdlib only, Python 3.9 and later, no
import of the project: shipped into the sandbox with operators.py).

Libraries repeat themselves: `parse` and `search` end alike (`if evaluate_result: return
self.evaluate_result(m)` / `else: return Match(self, m)`), and a slip in one copy leaves a line that
no longer matches the others (`return m`). A line whose two previous code lines read exactly as
the two before a line elsewhere in the file may be that other line (re-indented): the line's
clones, found in the source as it is, with nothing of its history.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

try:
    from .statement_edits import source_lines
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_statement_edits import source_lines  # type: ignore[no-redef]

Edit = Tuple[str, str, str]   # (family, what, the new line)
Context = Tuple[str, str]

CONTEXT = 2          # the code lines before a line that must read the same
MIN_CONTEXT = 12     # characters of that context: shorter (`else:` after `return x`) says little
MAX_CLONES = 3       # other texts tried per line


def _code(text: str) -> str:
    stripped = text.strip()
    return "" if not stripped or stripped.startswith("#") else stripped


def clone_index(source: str) -> Dict[Context, List[Tuple[int, str]]]:
    """Each code line of `source` by the stripped text of the CONTEXT code lines before it."""
    index: Dict[Context, List[Tuple[int, str]]] = {}
    before: List[str] = []
    for n, text in enumerate(source_lines(source, ends=False), 1):
        code = _code(text)
        if not code:
            continue
        if len(before) >= CONTEXT:
            key = (before[-2], before[-1])
            if len("".join(key)) >= MIN_CONTEXT:
                index.setdefault(key, []).append((n, code))
        before.append(code)
    return index


def clone_edits(lines: List[str], line: int, index: Dict[Context, List[Tuple[int, str]]]) -> List[Edit]:
    """The line (1-based, of `lines`, with their ends) replaced by each other text its clones hold."""
    text = lines[line - 1]
    code = _code(text)
    if not code:
        return []
    before = [c for c in (_code(t) for t in lines[:line - 1]) if c][-CONTEXT:]
    if len(before) < CONTEXT:
        return []
    indent = text[:len(text) - len(text.lstrip())]
    ending = text[len(text.rstrip("\r\n")):] or "\n"
    others = [other for n, other in index.get((before[0], before[1]), ()) if n != line and other != code]
    return [("clone", "as at its clone: `%s`" % other, indent + other + ending)
            for other in list(dict.fromkeys(others))[:MAX_CLONES]]
