"""The deterministic baseline: a fixed workflow picked by evidence count.

It is NOT a language-model agent: it does not interpret observations beyond locating the
line to patch. It follows the reference repair of the discount bug (search, patch, target test, full suite,
diff check) and is a comparator with predictable coverage and no inference cost.
"""
from __future__ import annotations

import re

from ..loop.actions import Action, ApplyPatch, CheckDiff, ReadFile, RunFullSuite, RunTargetTest, Search, Stop
from ..scenarios.scenario import BaselineRecipe
from ..loop.state import View
from .base import ChooserDescription, ChooserStep

CONTEXT = 3


class BaselineChooser:
    name = "baseline"

    def __init__(self, recipe: BaselineRecipe | None):
        self.recipe = recipe

    def describe(self) -> ChooserDescription:
        return ChooserDescription(name=self.name)

    def choose(self, view: View) -> ChooserStep:
        return ChooserStep(proposal=self.next_action(view))

    def next_action(self, view: View) -> Action:
        """The recipe's next action for this much evidence (a plug-in may build on it)."""
        if self.recipe is None:
            return Stop(reason="this scenario's manifest has no [baseline] recipe; use --chooser model or a plug-in")
        e = view.evidence
        if len(e) == 0:
            return Search(query=self.recipe.search, path_glob=self.recipe.path_glob)
        hit = re.match(r"^([^:\n]+):(\d+):", e[0].output)
        if not hit:
            return Stop(reason=f"the search for {self.recipe.search!r} found nothing to patch")
        path, line = hit.group(1), int(hit.group(2))
        start = max(1, line - CONTEXT)
        steps = [lambda: ReadFile(path=path, start_line=start, end_line=line + CONTEXT),
                 lambda: ApplyPatch(diff=self._patch(path, start, e[1].output)),
                 RunTargetTest, RunFullSuite, CheckDiff]
        if len(e) - 1 < len(steps):
            return steps[len(e) - 1]()
        return Stop(reason="baseline sequence complete", summary=f"Uₜ={view.u}; unknowns: {list(view.unknowns)}")

    def _patch(self, path: str, start: int, text: str) -> str:
        old = text.splitlines(keepends=True)
        new = [l.replace(self.recipe.search, self.recipe.replace, 1) for l in old]
        body = "".join(f"-{o}+{n}" if o != n else f" {o}" for o, n in zip(old, new))
        return f"--- a/{path}\n+++ b/{path}\n@@ -{start},{len(old)} +{start},{len(new)} @@\n{body}"
