"""What the spectrum localization says about a candidate's line, as score points."""
from __future__ import annotations

from .catalogue import Candidate
from .failure import Failure


def spectrum_term(c: Candidate, failure: Failure, def_line: int | None, proxy: float | None) -> float:
    """+2 to +4 for a line the failing tests ran (more the fewer passing tests ran it, through its
    relative score, or a def line's body's, or `proxy`'s); -3 for a line of a listed file that the
    complete list lacks (it never ran in a failing test); 0 when the spectrum says nothing."""
    if not failure.suspicious:
        return 0.0
    sus = failure.suspicious.get((c.path, c.line))
    if sus is None and c.line == def_line:   # a def line runs whenever its body does
        sus = max((v for (p, n), v in failure.suspicious.items() if p == c.path and n > c.line
                   and n - c.line < 200), default=None)
    if proxy is not None:
        sus = max(sus or 0.0, proxy)
    if sus is not None:
        return 2 + 2 * sus
    if failure.suspicious_complete and c.kind != "default" and any(p == c.path for p, _ in failure.suspicious):
        return -3.0
    return 0.0
