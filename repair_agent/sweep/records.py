"""The shape of a sweep's summary: summary.json is written from `SweepSummary` and read back through
it, and summary.md and summary.html render it. The one place that says which fields a summary has.

Every field past a cell's name has a default, so a summary.json written before a field existed
still reads (and loses that figure, not the page); fields it no longer knows are ignored."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .statistics import CellStatistics, Comparison


class Cell(CellStatistics):
    """One (scenario group, chooser, budget): its figures, their run-to-run bands, its exits, and (from
    CellStatistics) its sampling intervals, resolution and correctness counts."""

    scenario_group: str = "all"
    chooser: str
    budget: int
    n: int = 0
    seeds: list[int] | None = None   # None: not recorded (no claim about the band either way)
    scenarios: int = 0
    # The figures (summary.METRICS); None where a figure cannot be computed.
    success_rate: float | None = None
    correct_rate: float | None = None
    evidence_complete_rate: float | None = None
    median_steps: float | None = None
    median_tokens: float | None = None
    median_wall_s: float | None = None
    band: float | None = None                   # of the success rate
    bands: dict[str, float | None] = {}          # metric -> band
    per_seed: dict[str, dict[str, float | None]] = {}  # seed -> metric -> figure
    repaired: int = 0
    repair_runs: int = 0
    handoffs_correct: int = 0
    handoff_runs: int = 0
    forced_green: int = 0                        # greens on scenarios that expect a hand-off
    evidence: dict[str, float] = {}              # rubric item -> share of runs
    exits: dict[str, int] = {}                   # status -> runs
    # What a model cost (None where unknown or unpriced).
    model: dict[str, Any] | None = None          # name, model, endpoint, parameters (never the key)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    median_step_latency_s: float | None = None
    requests: int = 0
    infrastructure_failures: int = 0             # runs the endpoint failed, not in any rate
    chooser_errors: int = 0                      # runs the chooser crashed in: failures, and a bug to fix

    @property
    def name(self) -> str:
        """How a comparison names the cell within its scenario group."""
        return cell_name(self.chooser, self.budget)

    def figure(self, metric: str) -> float | None:
        return getattr(self, metric)

    @property
    def one_seed(self) -> bool:
        return self.seeds is not None and len(self.seeds) < 2


def cell_name(chooser: str, budget: int) -> str:
    return f"{chooser}@{budget}"


class RunRow(BaseModel):
    """One run of the sweep, as the summary lists it."""

    scenario: str
    kind: str | None = None
    chooser: str
    budget: int
    seed: int
    status: str
    correct: bool | None = None
    steps: int | None = None
    tokens: int | None = None
    cost: float | None = None
    infrastructure_failure: bool | None = None
    wall_s: float | None = None
    run_dir: str | None = None


class ListedRun(BaseModel):
    """One run a summary lists apart from the rates' figures, with why."""

    scenario: str
    chooser: str
    budget: int
    seed: int
    detail: str = ""
    run_dir: str | None = None

    def line(self) -> str:
        return f"- `{self.scenario}` {self.chooser} budget {self.budget} seed {self.seed}: {self.detail[:300]}"


class InfrastructureFailure(ListedRun):
    """A run the model endpoint failed after its retries: in no rate, run again on resume."""


class ChooserCrash(ListedRun):
    """A run that ended chooser_error: the chooser raised (its traceback is in the run's journal).
    Counted as a failed run in every rate, and listed apart: it is a bug, not a finding."""


class ScenarioProblem(BaseModel):
    """A scenario that is broken (no run happened) or whose runs stopped before the first step."""

    scenario: str
    detail: str = ""


class SweepCostLimit(BaseModel):
    """`sweep --max-cost`: what the sweep's runs may cost in all (the models files' prices), what its
    finished runs cost, and the runs it did not start once that was reached."""

    max_cost: float
    spent: float = 0.0
    unknown_cost_runs: int = 0   # runs whose endpoint reported no usage: their cost is not in `spent`
    not_started: int = 0

    @property
    def reached(self) -> bool:
        return self.spent >= self.max_cost


class SweepSummary(BaseModel):
    """summary.json."""

    group_by: str = "all"
    cells: list[Cell] = []
    comparisons: list[Comparison] = []
    runs: list[RunRow] = []
    infrastructure_failures: list[InfrastructureFailure] = []
    chooser_errors: list[ChooserCrash] = []
    broken: list[ScenarioProblem] = []
    never_started: list[ScenarioProblem] = []
    band_definition: str | None = None
    success_definition: str | None = None
    explanation: str | None = None
    seeds_per_cell: int = 0
    command: str | None = None
    cost_limit: SweepCostLimit | None = None

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    @classmethod
    def read(cls, path: Path) -> "SweepSummary":
        return cls.model_validate_json(Path(path).read_text())
