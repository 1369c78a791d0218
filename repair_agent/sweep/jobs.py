"""A sweep's jobs and results: one job per (scenario × chooser × budget × seed), the scenarios it
selects (by the scenario module's own discovery), and results.jsonl, one fsynced line per finished run."""
from __future__ import annotations

import fnmatch
import itertools
import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from verifier.files import append_line, cut_torn_tail, read_jsonl

from ..untrusted.redaction import redact_data
from ..scenarios.scenario import SUFFIX, ManifestError, Scenario, discover, load_manifest

RESULTS = "results.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_MD = "summary.md"
SCENARIO_ERROR = "scenario_error"   # the manifest cannot be used: no run happened
SWEEP_ERROR = "sweep_error"         # the worker itself failed (a bug, a chooser that cannot load)
# Not a run's outcome but the sweep's: a resumed sweep tries these again (a fixed manifest runs).
RETRIED_ON_RESUME = (SCENARIO_ERROR, SWEEP_ERROR)
INTERRUPTED_DETAIL = "interrupted by the user (Ctrl-C)"  # the controller's detail for an interrupted run
# Fields that differ between two executions of the same deterministic sweep.
NONDETERMINISTIC = ("wall_s", "run_dir", "run_id", "finished_at", "worker", "median_step_latency_s")


class SweepJob(BaseModel):
    scenario: str
    manifest: str | None = None        # None: a broken manifest, reported without running
    manifest_error: str | None = None
    chooser: str
    budget: int
    seed: int
    runs_dir: str
    sandbox: str = "docker"
    # A run in progress keeps a marker file here; after an interruption the sweep waits until
    # the markers are gone (every run's containers removed) before it shuts the executor down.
    active_dir: str | None = None
    # Created by the sweep when it is interrupted: a Ray task watching for it interrupts its own
    # run (Ray's own task cancellation races with task completion and can abort the driver).
    stop_file: str | None = None
    models_file: str | None = None     # where `model:NAME` choosers are defined
    max_cost: float | None = None      # each run's --max-cost (sweep --max-run-cost)

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.scenario, self.chooser, self.budget, self.seed)


class SweepResult(BaseModel):
    """One line of results.jsonl."""
    scenario: str
    kind: str = "unspecified"
    tags: list[str] = []
    expected: str = "awaiting_release_confirmation"
    chooser: str
    budget: int
    seed: int
    status: str
    exit_code: int | None = None
    correct: bool = False              # status == the scenario's expected outcome
    steps: int = 0
    max_steps: int | None = None
    u_trajectory: list[int] = []
    tokens: int | None = 0             # None: the model endpoint reported no usage (unknown, not 0)
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    cost: float | None = None          # when the model is priced in the models file
    median_step_latency_s: float | None = None
    requests: int = 0                  # HTTP requests to the model, retries and re-asks included
    model: dict[str, Any] | None = None  # name, model, endpoint, parameters (never the API key)
    # The endpoint failed (after its retries): not counted in the success rate, run again on resume.
    infrastructure_failure: bool = False
    wall_s: float = 0.0
    run_dir: str | None = None
    run_id: str | None = None
    diff_sha256: str | None = None
    detail: str = ""
    rubric: dict[str, Any] | None = None
    correctness: str | None = None     # correct / plausible / unchecked: see RunRecord.correctness
    finished_at: str | None = None
    worker: int | None = None

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.scenario, self.chooser, self.budget, self.seed)

    def deterministic(self) -> dict[str, Any]:
        """The line without what legitimately differs between two executions of the same job."""
        return self.model_dump(exclude=set(NONDETERMINISTIC))


class Interrupted(BaseModel):
    """What a job returns when its run was cut by Ctrl-C (or the sweep's stop file): no result, the run
    is not finished, and a resumed sweep runs it again."""


class Selection(BaseModel):
    scenarios: list[Scenario]
    broken: dict[str, str]             # manifest stem -> error


def _stem(manifest: Path) -> str:
    return manifest.name[: -len(SUFFIX)] if manifest.name.endswith(SUFFIX) else manifest.stem


def select_scenarios(patterns: list[str] | None, extra_dirs: list[Path] | None = None) -> Selection:
    """Scenarios by NAME, GLOB (on names), `tag:T`, `kind:K`, or a manifest path; all when none.

    A manifest that cannot be loaded stays in the selection as broken (matched by its file
    name), so the sweep reports it instead of silently dropping it."""
    loaded, errors = discover(extra_dirs)
    broken: dict[str, str] = {}
    for error in errors:
        if error.manifest is not None:  # a missing directory is no scenario to report
            broken.setdefault(_stem(error.manifest), str(error))
    if not patterns:
        return Selection(scenarios=list(loaded.values()), broken=broken)
    chosen: dict[str, Scenario] = {}
    chosen_broken: dict[str, str] = {}
    for pattern in patterns:
        hits = 0
        if pattern.endswith(".toml") or Path(pattern).is_file():
            try:
                scenario = load_manifest(Path(pattern))
                chosen.setdefault(scenario.name, scenario)
            except ManifestError as exc:
                chosen_broken[_stem(Path(pattern))] = str(exc)
            continue
        for s in loaded.values():
            if (pattern.startswith("tag:") and pattern[4:] in s.tags
                    or pattern.startswith("kind:") and s.kind == pattern[5:]
                    or fnmatch.fnmatchcase(s.name, pattern)):
                chosen.setdefault(s.name, s)
                hits += 1
        if not pattern.startswith(("tag:", "kind:")):
            for stem, error in broken.items():
                if fnmatch.fnmatchcase(stem, pattern):
                    chosen_broken[stem] = error
                    hits += 1
        if not hits:
            raise ValueError(f"--scenarios {pattern!r} matches no scenario; known: {', '.join(sorted(loaded))}")
    return Selection(scenarios=list(chosen.values()), broken=chosen_broken)


def plan_jobs(selection: Selection, choosers: list[str], budgets: list[int], seeds: int, runs_dir: Path,
              sandbox: str = "docker", models_file: str | None = None,
              max_run_cost: float | None = None) -> list[SweepJob]:
    """Jobs for every (scenario, chooser, budget, seed); runs go to `runs_dir` (DIR/runs)."""
    jobs = []
    named = [(s.name, str(s.manifest_path), None) for s in selection.scenarios]
    named += [(stem, None, error) for stem, error in selection.broken.items()]
    for (name, manifest, error), chooser, budget, seed in itertools.product(named, choosers, budgets, range(seeds)):
        jobs.append(SweepJob(scenario=name, manifest=manifest, manifest_error=error, chooser=chooser,
                             budget=budget, seed=seed, runs_dir=str(Path(runs_dir).resolve()), sandbox=sandbox,
                             active_dir=str(Path(runs_dir).resolve() / ".active"),
                             stop_file=str(Path(runs_dir).resolve() / ".stop"), models_file=models_file,
                             max_cost=max_run_cost))
    return jobs


def load_results(path: Path) -> list[SweepResult]:
    """Finished runs. A torn last line (a crash mid-write) is cut off the file, so the next
    append starts on a clean line; a damaged line elsewhere is skipped (its run runs again).
    Older lines read with the defaults of the fields they predate."""
    read = read_jsonl(Path(path))
    cut_torn_tail(Path(path), read)
    out = []
    for line in read.lines:
        try:
            out.append(SweepResult.model_validate(line))
        except ValidationError:
            continue
    return out


class ResultsWriter:
    """Appends one JSON line per finished run, fsynced; a short write is completed or cut back off:
    an interrupted sweep leaves whole lines only."""

    def __init__(self, path: Path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def append(self, result: SweepResult) -> None:
        # a run's detail can quote a server's error: no secret reaches the sweep's record either
        append_line(self.fd, (json.dumps(redact_data(result.model_dump()), sort_keys=True) + "\n").encode())

    def close(self) -> None:
        os.close(self.fd)
