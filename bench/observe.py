"""A chooser that only observes: it runs the target test once (the failure and the spectrum
localization) and hands off. A sweep of it is the cheapest way to collect the first observations
`search_replay.py` replays the search chooser from, on scenarios with or without a recipe:

    PYTHONPATH=bench repair-agent sweep --scenarios-dir DIR --scenarios tag:corpus:mutants \\
        --chooser observe:Observe --budgets 12 --seeds 1 --workers 2 --out OBS
    .venv/bin/python bench/search_replay.py OBS/runs/*
"""
from __future__ import annotations

from repair_agent.choosers.base import ChooserDescription
from repair_agent.loop.actions import RunTargetTest, Stop
from repair_agent.loop.state import View


class Observe:
    name = "observe"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def describe(self) -> ChooserDescription:
        # the mutation analysis, so the replay sees the observation the search chooser gets
        return ChooserDescription(name=self.name, seed=self.seed, mutation_analysis=True)

    def choose(self, view: View):
        if not view.evidence:
            return RunTargetTest()
        return Stop(reason="observe: one target-test observation taken", summary="an observation for replays only")
