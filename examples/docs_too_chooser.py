"""A plug-in chooser that fixes the discount bug AND documents the fix in README.md.

README.md is outside the writable globs (`src/**`), so the controller refuses the combined patch
with `authorization_required`; a person can `repair-agent grant RUN --allow README.md`, and
`repair-agent resume RUN` then re-offers the same patch under the widened authorization.
Deterministic and stateless over the View (it counts evidence, like the baseline).
"""
from __future__ import annotations

import difflib

PRICING = "src/discount_shop/pricing.py"
NOTE = "\n## Changes\n\n* `apply_discount` now treats `discount` as a percentage, as documented above.\n"


def _diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


class DocsToo:
    name = "docs-too"

    def choose(self, view):
        e = view.evidence
        steps = [
            lambda: {"tool": "read_file", "path": PRICING},
            lambda: {"tool": "read_file", "path": "README.md"},
            lambda: {"tool": "apply_patch", "diff": _diff(PRICING, e[0].output, e[0].output.replace(
                "price * (1 - discount)", "price * (1 - discount / 100)"))
                + _diff("README.md", e[1].output, e[1].output + NOTE)},
            lambda: {"tool": "run_target_test"},
            lambda: {"tool": "run_full_suite"},
            lambda: {"tool": "check_diff"},
        ]
        if len(e) < len(steps):
            return steps[len(e)]()
        return {"tool": "stop", "reason": "sequence complete"}


def make():
    return DocsToo()
