"""Plug-in choosers for fault-injection runs in a subprocess (loaded as fault_choosers:...)."""
from __future__ import annotations

import os
from pathlib import Path

from repair_agent.choosers import BaselineChooser
from repair_agent.scenarios.scenario import resolve


def cut_engine_at_step_3():
    """The discount-bug baseline that, when asked for step 3, tells the test's socket proxy to cut
    the Docker daemon off (by creating the file named in RA_FAULT_CUT_FILE)."""
    inner = BaselineChooser(resolve("discount-bug").baseline)

    class CutsTheEngine:
        name = "cuts-engine"

        def choose(self, view):
            if view.step == 3:
                Path(os.environ["RA_FAULT_CUT_FILE"]).touch()
            return inner.choose(view)

    return CutsTheEngine()
