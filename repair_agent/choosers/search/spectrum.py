"""What the spectrum localization says about a candidate's line, as score points."""
from __future__ import annotations

from .catalogue import Candidate
from .failure import Failure
from .weights import Rule


def spectrum_features(c: Candidate, failure: Failure, def_line: int | None,
                      proxy: float | None) -> list[tuple[Rule, float]]:
    """A line the failing tests ran, and its relative score (higher the fewer passing tests ran it;
    a def line takes its body's, a line that never runs in a test `proxy`'s); a line of a listed
    file that the complete list lacks (it never ran in a failing test); none when the spectrum says
    nothing."""
    if not failure.suspicious and proxy is None:
        return []
    sus = failure.suspicious.get((c.path, c.line))
    if sus is None and c.line == def_line:   # a def line runs whenever its body does
        sus = max((v for (p, n), v in failure.suspicious.items() if p == c.path and n > c.line
                   and n - c.line < 200), default=None)
    if proxy is not None:
        sus = max(sus or 0.0, proxy)
    if sus is not None:
        return [(Rule.SPECTRUM_RAN, 1.0), (Rule.SPECTRUM_SHARPNESS, sus)]
    if failure.suspicious_complete and c.kind != "default" and any(p == c.path for p, _ in failure.suspicious):
        return [(Rule.SPECTRUM_NEVER_RAN, 1.0)]
    return []
