"""The controller's loop record survives a resume: for every step k of a real run (discount-bug,
baseline chooser, local backend), the record rebuilt from the journal a kill right after step k
leaves (and, once, a step_budget stop) is the one the live controller held, and the resumed run
ends as the uninterrupted one.

Every comparison walks the fields of LoopState, so a field added to the loop is compared too: a
resume that loses it fails here. The one field a resume rebuilds on purpose instead of copying
(the verifier's verdicts, never trusted from the journal) is compared by what it means."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from verifier import unsatisfied

from repair_agent.choosers import BaselineChooser
from repair_agent.loop.controller import Controller
from repair_agent.loop.journal import Journal
from repair_agent.loop.loop_state import LoopState
from repair_agent.choosers.base import ChooserDescription
from repair_agent.lifecycle.resume import load_checkpoint, rebuilt_loop, resume_run
from repair_agent.lifecycle.run import initial_state
from repair_agent.sandbox import backend_named
from repair_agent.sandbox.early import new_run_id
from repair_agent.scenarios.scenario import resolve
from repair_agent.lifecycle.session import Session
from repair_agent.loop.state import StopReason, budget_with
from repair_agent.loop.tools import Executor

MAX_STEPS = 8
STEPS = 6  # the baseline's run: search, read, patch, target test, full suite, scope check
VOLATILE = {"started_at", "duration_s"}  # when an observation ran and for how long: differs between runs


def baseline() -> BaselineChooser:
    return BaselineChooser(resolve("discount-bug").baseline)


def drive(runs_dir: Path, max_steps: int = MAX_STEPS) -> tuple[list[LoopState], Path]:
    """A fresh run, wired as execute_run wires it, keeping the live controller's record after each step."""
    scenario = resolve("discount-bug")
    run_id = new_run_id(scenario.name)
    run_dir = (runs_dir / run_id).resolve()
    run_dir.mkdir(parents=True)
    journal = Journal(run_dir / "journal.jsonl")
    session = Session(scenario, run_dir, run_id, backend_named("local"), None, lambda _: None, runs_dir=runs_dir)
    after_each_step: list[LoopState] = []
    try:
        session.open(granted=())
        started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        journal.write(session.setup_record(ChooserDescription(name="baseline"), "baseline", started))
        sandbox, verifier = session.live
        state = initial_state(scenario, budget_with(scenario.budget, max_steps=max_steps))
        controller = Controller(LoopState.start(state), baseline(), Executor(sandbox, verifier), verifier, journal,
                                environment_id=verifier.environment_id,
                                on_step=lambda _: after_each_step.append(controller.committed))
        controller.run()
    finally:
        session.close()
        journal.close()
    assert after_each_step[-1] == controller.loop
    return after_each_step, run_dir


def killed_after_step(run_dir: Path, k: int, into: Path) -> Path:
    """A copy of the run as a SIGKILL right after step k's journal line leaves it: the lines up to
    it (setup, start, steps 1..k), nothing after. Its process is this one, so it is not a live run."""
    copy = into / run_dir.name
    shutil.copytree(run_dir, copy)
    path = copy / "journal.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert [json.loads(line)["event"] for line in lines[:2 + k]] == ["setup", "start"] + ["step"] * k
    path.write_text("".join(lines[:2 + k]))
    return copy


def plain(value: Any) -> Any:
    """A field's value as plain data, without when things ran."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k not in VOLATILE}
    return value


def differences(got: LoopState, expected: LoopState, meaning: dict[str, Any]) -> dict[str, tuple]:
    """Every field of LoopState that differs: by `meaning[name](record)` where given, else as plain data."""
    out = {}
    for field in dataclasses.fields(LoopState):
        read = meaning.get(field.name, lambda loop, name=field.name: plain(getattr(loop, name)))
        if read(got) != read(expected):
            out[field.name] = (read(got), read(expected))
    return out


def restored(loop: LoopState) -> list:
    """The verdicts as a resume restores them: in order, by evidence and kind, none able to satisfy."""
    return [(evidence, type(v).__name__, getattr(v, "kind", None), False) for evidence, v in loop.verdicts]


def decided(loop: LoopState) -> list:
    """What the verdicts decide on the record's diff: the conditions, as plain data."""
    return plain(unsatisfied(list(loop.verdicts), loop.state.diff_sha256))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[list[LoopState], Path]:
    after_each_step, run_dir = drive(tmp_path_factory.mktemp("uninterrupted") / "runs")
    assert len(after_each_step) == STEPS and after_each_step[-1].state.u == 0
    return after_each_step, run_dir


@pytest.mark.parametrize("k, ending", [(k, "killed") for k in range(1, STEPS + 1)] + [(3, "step_budget")])
def test_stop_or_kill_after_step_k_then_resume_ends_as_the_uninterrupted_run(k, ending, runs_dir, uninterrupted):
    """Killed after each step k; and once stopped by its budget (a stop line, steps used up), after
    the patch and before any check."""
    after_each_step, fresh_dir = uninterrupted
    last = after_each_step[-1]
    if ending == "killed":
        live, run_dir = after_each_step[k - 1], killed_after_step(fresh_dir, k, runs_dir)
    else:
        stopped, run_dir = drive(runs_dir, max_steps=k)
        live = stopped[-1]

    # The record a resume hands the controller is the one the live controller held after step k.
    checkpoint = load_checkpoint(run_dir)
    assert checkpoint.status == ending and checkpoint.state.budget.steps_used == k
    rebuilt = rebuilt_loop(checkpoint, live.diff)
    assert differences(rebuilt, live, {"verdicts": restored}) == {}
    assert all(not v.ok for _, v in rebuilt.verdicts)  # journaled verdicts never satisfy anything

    record = resume_run(run_dir, extra_steps=MAX_STEPS - k, runs_dir=runs_dir)
    assert (record.status, record.steps_used, record.max_steps) == (
        StopReason.AWAITING_RELEASE_CONFIRMATION, STEPS, MAX_STEPS), record.detail
    assert (record.diff_sha256, record.u_trajectory) == (last.state.diff_sha256, list(last.u_trajectory))
    # The resumed run's last record, as its journal keeps it, against the uninterrupted run's live one.
    # Two runs observe the same things differently (output files, pytest's output, canaries): their
    # evidence is compared by what was observed and concluded; the state but for the resume's own
    # version; the verdicts by what a resume restores.
    final = rebuilt_loop(load_checkpoint(run_dir), (run_dir / "candidate.diff").read_text())
    assert final.state.version == last.state.version + 1
    across_runs = {"verdicts": restored, "evidence": lambda loop: [observed(e) for e in loop.evidence],
                   "state": state_across_runs}
    assert differences(final, last, across_runs) == {}
    assert decided(last) == plain(final.state.conditions)


def observed(evidence) -> dict | None:
    """An observation as two runs of the same steps share it: what ran, on what, and what it concluded."""
    if evidence is None:
        return None
    return evidence.model_dump(include={"id", "step", "tool", "action", "status", "source", "summary",
                                        "diff_sha256", "fingerprint"})


def state_across_runs(loop: LoopState) -> dict:
    state = plain(loop.state)
    del state["version"], state["parent_hash"]  # a resume is a state version of its own
    return {**state, "observation": observed(loop.state.observation)}
