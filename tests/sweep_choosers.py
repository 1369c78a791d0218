"""Plug-in choosers for the sweep tests (this directory on PYTHONPATH).

`SeededCareful(seed)` is a chooser whose behaviour depends on its seed, so repeated seeds
really differ: with an even seed it follows discount-bug's baseline recipe as is (6 steps);
with an odd seed it first runs the target test — evidence that the bug is real, which the
evidence rubric asks for — and then follows the recipe (7 steps). At a budget of 6 the odd
seed runs out of steps; at 8 both repair."""
from __future__ import annotations

from repair_agent.loop.actions import RunTargetTest
from repair_agent.choosers.base import ChooserDescription
from repair_agent.choosers.baseline import BaselineChooser


class SeededCareful:
    name = "seeded-careful"

    def __init__(self, seed: int = 0):
        from repair_agent.scenarios.scenario import resolve

        self.seed = seed
        self.recipe = BaselineChooser(resolve("discount-bug").baseline)

    def describe(self):
        return ChooserDescription(name=self.name, seed=self.seed)

    def choose(self, view):
        if self.seed % 2 == 0:
            return self.recipe.choose(view)
        if not view.evidence:
            return RunTargetTest()
        return self.recipe.choose(view.model_copy(update={"evidence": view.evidence[1:]}))
