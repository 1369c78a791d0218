"""The journal as typed records, on real local runs of the discount repository: a line names earlier
evidence by id (a 12-step journal grows with its evidence, not with the square of its steps),
`replay --step N` still shows exactly the View the chooser got, and the verifier's rubric reads
the last stop of a resumed run."""
from __future__ import annotations

import json
from pathlib import Path

from repair_agent import cli
from repair_agent.choosers import load_chooser
from repair_agent.loop.journal import StepRecord, StopRecord, parse_record, read_journal, read_records, verify_chain
from repair_agent.lifecycle.resume import resume_run
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason
from verifier.rubric import rubric_from_journal

PRICING = "src/discount_shop/pricing.py"


class Reader:
    """Reads eleven overlapping windows of one file, then stops; keeps every View it was handed."""

    name = "window reader"

    def __init__(self):
        self.seen: list[dict] = []

    def choose(self, view):
        self.seen.append(view.model_dump(mode="json"))
        n = len(self.seen)
        if n < 12:
            return {"tool": "read_file", "path": PRICING, "start_line": n, "end_line": n + 30}
        return {"tool": "stop", "reason": "read enough"}


def test_a_12_step_journal_stays_linear_and_replay_shows_what_the_chooser_saw(tmp_path, capsys):
    chooser = Reader()
    record = execute_run(resolve("discount-bug"), chooser, backend="local", runs_dir=tmp_path / "runs",
                         max_steps=12)
    assert record.status is StopReason.HANDOFF_REQUESTED and record.steps_used == 12
    path = Path(record.run_dir) / "journal.jsonl"
    lines = path.read_text().splitlines()
    assert verify_chain(list(read_journal(path))) == []
    records = read_records(path)
    steps = [r for r in records if isinstance(r, StepRecord)]
    assert [s.step for s in steps] == list(range(1, 13))
    # Each step names the evidence before it by id; no line carries an earlier step's observation.
    assert [list(s.view.evidence_ids) for s in steps] == [[f"E{i}" for i in range(1, k)] for k in range(1, 13)]
    sizes = {json.loads(line).get("step"): len(line) for line in lines if json.loads(line)["event"] == "step"}
    evidence = max(len(s.result.model_dump_json()) for s in steps if s.result)
    # Step 11 saw ten earlier observations: repeating them would add ten evidence sizes to its line.
    # By reference it grows only by its history entries (one short row per step).
    assert sizes[11] - sizes[1] < 2 * evidence, (sizes, evidence)
    assert len(path.read_bytes()) < 12 * (sizes[1] + 2 * evidence)
    # replay --step N rebuilds the View from the journal: exactly what the chooser was handed.
    for n in (1, 6, 12):
        assert cli.main(["replay", record.run_dir, "--step", str(n)]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["view"] == chooser.seen[n - 1]
    assert shown["decision"] == {"accepted": True, "action": {"tool": "stop", "reason": "read enough"}}

    # A step line as journals wrote it before evidence was named by id (the View's evidence inline,
    # the action as canonical JSON text) still reads, and shows the same View.
    legacy = json.loads(lines[[json.loads(x).get("step") for x in lines].index(6)])
    legacy["view"]["evidence"] = chooser.seen[5]["evidence"]
    del legacy["view"]["evidence_ids"]
    legacy["decision"]["action"] = steps[5].decision.action.canonical()
    old = parse_record(legacy)
    assert old.view.view({}).model_dump(mode="json") == chooser.seen[5]
    assert old.evidence == steps[5].evidence


def test_the_rubric_reads_the_last_stop_of_a_resumed_run(tmp_path):
    runs = tmp_path / "runs"
    scenario = resolve("discount-bug")
    stopped = execute_run(scenario, load_chooser("baseline", scenario), backend="local", runs_dir=runs,
                          max_steps=2, chooser_spec="baseline")
    assert stopped.status is StopReason.STEP_BUDGET and stopped.u_trajectory[-1] == 3  # nothing patched yet
    resumed = resume_run(stopped.run_dir, extra_steps=4, runs_dir=runs)
    assert resumed.status is StopReason.AWAITING_RELEASE_CONFIRMATION
    path = Path(stopped.run_dir) / "journal.jsonl"
    stops = [r for r in read_records(path) if isinstance(r, StopRecord)]
    assert [s.status for s in stops] == [StopReason.STEP_BUDGET, StopReason.AWAITING_RELEASE_CONFIRMATION]
    assert stops[0].diff_sha256 != stops[1].diff_sha256 == resumed.diff_sha256
    rubric = rubric_from_journal(path)
    # Judged on the diff the run ended with, not the first session's empty one.
    assert rubric.final_diff_sha256 == resumed.diff_sha256
    assert rubric.target_passed_on_final_diff and rubric.full_suite_on_final_diff and rubric.scope_check_on_final_diff


def test_the_journaled_view_keeps_every_field_of_the_view():
    """JournaledView shares the View's fields (ViewFields) and names the evidence by id: a field added
    to View outside ViewFields would be silently missing from every journal and from `replay --step N`."""
    from repair_agent.loop.journal import JournaledView
    from repair_agent.loop.state import View

    assert set(View.model_fields) - {"evidence"} == set(JournaledView.model_fields) - {"evidence_ids", "evidence"}


def test_a_full_suite_whose_targets_pass_on_the_final_diff_counts_as_the_target_passing():
    from verifier.rubric import rubric_from_records

    def step(tool, status, sha, **data):
        return {"event": "step", "result": {"tool": tool, "status": status, "diff_sha256": sha, "data": data}}

    def journal(suite_sha, targets_ok):
        return [step("run_target_test", "failed", "e"), step("apply_patch", "ok", "e"),
                step("run_full_suite", "ok", suite_sha, targets_ok=targets_ok), step("check_diff", "ok", "d"),
                {"event": "stop", "diff_sha256": "d"}]

    assert rubric_from_records(journal("d", True)).complete
    # the pass-to-pass tests pass but the targets do not: no target evidence
    failing = rubric_from_records(journal("d", False))
    assert not failing.target_passed_on_final_diff and failing.missing == ["target_passed_on_final_diff"]
    # a suite run on another diff says nothing about the final one
    assert not rubric_from_records(journal("older", True)).target_passed_on_final_diff


class Searcher:
    """Searches once, then stops."""

    name = "searcher"

    def choose(self, view):
        if not view.evidence:
            return {"tool": "search", "query": "def ", "path_glob": "src/**", "note": "find the functions"}
        return {"tool": "stop", "reason": "searched"}


def test_a_search_is_journaled_with_its_hits_and_note_as_data_and_older_lines_read_the_same(tmp_path):
    record = execute_run(resolve("discount-bug"), Searcher(), backend="local", runs_dir=tmp_path / "runs",
                         max_steps=3)
    path = Path(record.run_dir) / "journal.jsonl"
    steps = [r for r in read_records(path) if isinstance(r, StepRecord)]
    evidence = steps[0].evidence
    assert evidence is not None and evidence.action.tool == "search" and evidence.action.query == "def "
    assert not evidence.capped and evidence.hits and evidence.failing == {} and evidence.targets_ok is None
    assert evidence.note == "find the functions" and evidence.action.note is None and "note" not in evidence.data
    # Each hit is one line of the output, as git grep printed it, and says where that line is.
    assert [f"{h.path}:{h.line}:{h.text}" for h in evidence.hits] == evidence.output.splitlines()
    pricing = (resolve("discount-bug").repo / PRICING).read_text().splitlines()
    assert all(pricing[h.line - 1] == h.text for h in evidence.hits if h.path == PRICING)
    assert any(h.path == PRICING for h in evidence.hits)
    # A line as journals wrote it before hits, capped and the note were fields: the same evidence.
    line = next(x for x in read_journal(path) if x.get("step") == 1)
    del line["result"]["hits"], line["result"]["capped"]
    line["result"]["data"]["note"] = line["result"].pop("note")
    assert parse_record(line).evidence == evidence


class Checker:
    """Runs the target test, then the full suite, on the unrepaired tree; then stops."""

    name = "checker"

    def choose(self, view):
        tools = ("run_target_test", "run_full_suite")
        if len(view.evidence) < len(tools):
            return {"tool": tools[len(view.evidence)]}
        return {"tool": "stop", "reason": "checked"}


def test_a_test_run_carries_its_failing_tests_and_targets_as_fields_and_older_lines_read_the_same(tmp_path):
    record = execute_run(resolve("discount-bug"), Checker(), backend="local", runs_dir=tmp_path / "runs",
                         max_steps=4)
    path = Path(record.run_dir) / "journal.jsonl"
    steps = [r.evidence for r in read_records(path) if isinstance(r, StepRecord) and r.evidence is not None]
    assert [e.tool for e in steps] == ["run_target_test", "run_full_suite"]
    for evidence in steps:
        # The bug is not fixed: the targets fail, and each failing test is named with its message.
        assert evidence.status == "failed" and evidence.targets_ok is False and evidence.failing
        assert evidence.failing == evidence.data["failing"] and all(evidence.failing.values())
    # A line as journals wrote it before the fields: the same evidence, read from its data.
    for step, evidence in enumerate(steps, 1):
        line = next(x for x in read_journal(path) if x.get("step") == step)
        del line["result"]["failing"], line["result"]["targets_ok"]
        assert parse_record(line).evidence == evidence
