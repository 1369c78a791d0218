"""The controller's rules (seeds 000, 002, 004), driven end to end on the real discount repository.

These use the local backend (real git, real pytest, real verifier) so they run without an
engine; the same run in Docker, through the CLI, is in test_cli_docker.py.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chat_server import ChatServer, content, http_error, tool_call
from helpers import Scripted, fix_diff, local_run
from repair_agent.choosers import BaselineChooser, load_chooser
from repair_agent.choosers.model import ModelChooser
from repair_agent.loop.journal import read_journal
from repair_agent.scenarios.scenario import ManifestError, load_manifest, resolve
from repair_agent.loop.state import StopReason

ROOT = Path(__file__).resolve().parents[1]


run = local_run


def journal(record):
    return list(read_journal(Path(record.run_dir) / "journal.jsonl"))


def report(record):
    return json.loads((Path(record.run_dir) / "report.json").read_text())


def test_baseline_reaches_pending_release_and_u_never_rises(runs_dir):
    rec = run(BaselineChooser(resolve("discount-bug").baseline), runs_dir)
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.exit_code == 0
    assert rec.u_trajectory == [3, 3, 3, 3, 2, 1, 0]
    assert all(b <= a for a, b in zip(rec.u_trajectory, rec.u_trajectory[1:]))
    assert rec.steps_used == 6 <= 8
    assert "discount / 100" in (Path(rec.run_dir) / "candidate.diff").read_text()
    r = report(rec)
    assert r["release"]["confirm"].startswith("repair-agent release") and r["unknowns"] == []


def test_baseline_with_two_steps_stops_at_step_budget_with_e1_e2(runs_dir):
    rec = run(BaselineChooser(resolve("discount-bug").baseline), runs_dir, max_steps=2)
    assert rec.status is StopReason.STEP_BUDGET and rec.exit_code == 11
    r = report(rec)
    assert [e["id"] for e in r["evidence"]] == ["E1", "E2"]
    assert [e["tool"] for e in r["evidence"]] == ["search", "read_file"]
    # The missing evidence is named, not implied.
    assert len(r["unknowns"]) == 3 and any("target" in u for u in r["unknowns"])


def test_always_repeat_records_e1_then_repeated_action(runs_dir):
    rec = run(Scripted({"tool": "search", "query": "apply_discount"}), runs_dir)
    assert rec.status is StopReason.REPEATED_ACTION and rec.steps_used == 2
    assert [e["id"] for e in report(rec)["evidence"]] == ["E1"]


def test_key_order_cannot_disguise_a_repeat(runs_dir):
    rec = run(Scripted({"query": "discount", "tool": "search", "path_glob": None},
                       {"path_glob": None, "tool": "search", "query": "discount"}), runs_dir)
    assert rec.status is StopReason.REPEATED_ACTION


def test_stop_at_once_is_handoff_and_costs_a_step(runs_dir):
    rec = run(Scripted({"tool": "stop", "reason": "nothing to do"}), runs_dir)
    assert rec.status is StopReason.HANDOFF_REQUESTED and rec.exit_code == 10
    assert rec.steps_used == 1 and rec.u_trajectory == [3, 3]


@pytest.mark.parametrize("proposal", [{"tool": "shell", "cmd": "rm -rf /"}, "not json at all",
                                      {"tool": "search"}, ["two", "actions"],
                                      {"tool": "search", "query": "x", "unexpected": 1}])
def test_invalid_proposal_is_an_error_event_and_invalid_action(runs_dir, proposal):
    rec = run(Scripted(proposal), runs_dir)
    assert rec.status is StopReason.INVALID_ACTION and rec.exit_code == 15
    step = [r for r in journal(rec) if r["event"] == "step"][0]
    assert step["proposal"] == proposal  # kept exactly as proposed
    assert step["decision"]["accepted"] is False and step["decision"]["exit"] == "invalid_action"
    stop = [r for r in journal(rec) if r["event"] == "stop"][0]
    assert stop["extra"]["raw"] == proposal


def test_unparsable_diff_is_an_observation_with_raw_kept(runs_dir):
    """A diff nothing can read is the chooser's to fix: it is told so and the run goes on."""
    garbage = "this is not\na unified diff\n@@ nonsense"
    rec = run(Scripted({"tool": "apply_patch", "diff": garbage}, {"tool": "stop", "reason": "gave up"}), runs_dir)
    assert rec.status is StopReason.HANDOFF_REQUESTED and rec.steps_used == 2
    first = [r for r in journal(rec) if r["event"] == "step"][0]
    assert first["proposal"]["diff"] == garbage and first["decision"]["accepted"] is True
    assert first["result"]["raw_error"].startswith("your diff is malformed: ")


def test_patch_to_tests_needs_authorization(runs_dir):
    import difflib

    test_file = ROOT / "sandbox_repos/discount_shop/tests/test_pricing.py"
    old = test_file.read_text().splitlines(keepends=True)
    new = [l.replace("== 90", "== 100") for l in old]
    diff = "".join(difflib.unified_diff(old, new, "a/tests/test_pricing.py", "b/tests/test_pricing.py"))
    rec = run(Scripted({"tool": "apply_patch", "diff": diff}), runs_dir)
    assert rec.status is StopReason.AUTHORIZATION_REQUIRED and rec.exit_code == 16
    stop = [r for r in journal(rec) if r["event"] == "stop"][0]
    assert any("tests/test_pricing.py" in g for g in stop["extra"]["grant"])
    assert "next_attempt" in stop and "grant" in stop["next_attempt"]


def test_same_check_same_result_is_no_new_evidence(runs_dir):
    rec = run(Scripted({"tool": "search", "query": "apply_discount"},
                       {"tool": "read_file", "path": "src/discount_shop/pricing.py"},
                       {"tool": "search", "query": "apply_discount"}), runs_dir)
    assert rec.status is StopReason.NO_NEW_EVIDENCE and rec.steps_used == 3
    assert len(report(rec)["evidence"]) == 3  # the repeated observation is recorded, then the run stops


def test_the_same_check_on_a_new_diff_is_new_evidence(runs_dir):
    rec = run(Scripted({"tool": "run_target_test"}, {"tool": "apply_patch", "diff": fix_diff()},
                       {"tool": "run_target_test"}, {"tool": "stop"}), runs_dir)
    assert rec.status is StopReason.HANDOFF_REQUESTED
    assert rec.u_trajectory == [3, 3, 3, 2, 2]


def test_deadline_refuses_the_late_step(runs_dir):
    def slow(view):
        time.sleep(1.5)  # the model's own latency, not a wait for an event
        return {"tool": "search", "query": "discount"}

    rec = run(Scripted({"tool": "search", "query": "price"}, slow), runs_dir, deadline_s=1.0)
    assert rec.status is StopReason.DEADLINE and rec.exit_code == 12
    assert [e["id"] for e in report(rec)["evidence"]] == ["E1"]


def test_reserved_final_step_allows_only_stop(runs_dir):
    queries = iter(["a", "b", "c", "d", "e"])

    def explore(view):
        if view.allowed_tools == ("stop",):
            return {"tool": "stop", "reason": "exploration allowance spent", "summary": "handover"}
        return {"tool": "search", "query": next(queries)}

    rec = run(Scripted(explore), runs_dir, max_steps=4, reserved_final_steps=1)
    assert rec.status is StopReason.HANDOFF_REQUESTED and rec.steps_used == 4
    greedy = run(Scripted(lambda v: {"tool": "search", "query": next(queries)}), runs_dir, max_steps=2,
                 reserved_final_steps=1)
    assert greedy.status is StopReason.STEP_BUDGET and "reserved" in greedy.detail


def test_a_chooser_that_raises_is_a_chooser_error_with_its_traceback_journaled(runs_dir):
    def boom(view):
        raise RuntimeError("model process crashed")

    rec = run(Scripted(boom), runs_dir)
    assert rec.status is StopReason.CHOOSER_ERROR and rec.exit_code == 19 and "crashed" in rec.detail
    stop = journal(rec)[-1]
    assert stop["event"] == "stop" and stop["status"] == "chooser_error"
    assert 'raise RuntimeError("model process crashed")' in stop["extra"]["traceback"]
    assert "in boom" in stop["extra"]["traceback"]


def test_patch_after_green_makes_evidence_stale(runs_dir):
    rec = run(Scripted({"tool": "apply_patch", "diff": fix_diff()}, {"tool": "run_full_suite"},
                       lambda v: {"tool": "apply_patch", "diff": fix_diff().replace(
                           "+    discounted = price * (1 - discount / 100)",
                           "+    discounted = price * (1 - discount / 100.0)")
                           .replace("-    discounted = price * (1 - discount)", "-    discounted = price * (1 - discount / 100)")},
                       {"tool": "stop"}), runs_dir)
    assert rec.u_trajectory[:3] == [3, 3, 1]
    assert rec.u_trajectory[3] == 3  # a new patch: the green verdicts are stale
    assert rec.status is StopReason.HANDOFF_REQUESTED


def test_model_chooser_over_loopback_http_repairs_the_bug(runs_dir):
    script = [tool_call("search", {"query": "price * (1 - discount)", "path_glob": "src/**"}),
              tool_call("read_file", {"path": "src/discount_shop/pricing.py"}),
              tool_call("apply_patch", {"diff": fix_diff()}),
              tool_call("run_target_test", {}), tool_call("run_full_suite", {}), tool_call("check_diff", {})]
    with ChatServer(script) as srv:
        rec = run(ModelChooser(base_url=srv.base_url, model="scripted-model"), runs_dir)
        assert len(srv.requests) == 6
        assert "assert 100 == 90" in json.dumps(srv.requests[0]["messages"])  # the goal is in the prompt
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.u_trajectory[-1] == 0
    steps = [r for r in journal(rec) if r["event"] == "step"]
    assert steps[0]["usage"]["total_tokens"] == 150
    call = steps[0]["chooser_call"]  # the prompt and the raw reply, verbatim, for replay
    assert "assert 100 == 90" in json.dumps(call["messages"])
    assert call["raw"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "search"
    assert steps[-1]["state_after"]["budget"]["tokens_used"] == 6 * 150


def test_token_budget_is_counted_by_the_controller(runs_dir):
    script = [tool_call("search", {"query": "discount"}), tool_call("search", {"query": "price"}),
              tool_call("search", {"query": "never asked"})]
    with ChatServer(script) as srv:
        rec = run(ModelChooser(base_url=srv.base_url, model="m"), runs_dir, max_tokens=250)
        assert len(srv.requests) == 2  # 150 tokens per reply: the third call is never made
    assert rec.status is StopReason.STEP_BUDGET and "token budget" in rec.detail and rec.steps_used == 2


def test_model_malformed_reply_and_http_500_end_in_named_exits(runs_dir):
    fast = {"retry_base_s": 0.001, "retry_max_s": 0.01}
    # Malformed again after the one re-ask: the controller's invalid_action, the raw reply kept.
    with ChatServer([tool_call("search", '{"query": "unterminated')] * 2) as srv:
        rec = run(ModelChooser(base_url=srv.base_url, model="m", **fast), runs_dir)
    assert rec.status is StopReason.INVALID_ACTION
    assert "unterminated" in json.dumps([r for r in journal(rec) if r["event"] == "stop"][0]["extra"]["raw"])
    # A 500 that outlasts the retries: dependency_failure, every attempt's raw error kept.
    with ChatServer([http_error(500, {"error": {"message": "upstream exploded"}})] * 3) as srv:
        rec = run(ModelChooser(base_url=srv.base_url, model="m", max_retries=2, **fast), runs_dir)
    assert rec.status is StopReason.DEPENDENCY_FAILURE and rec.exit_code == 17 and rec.infrastructure_failure
    stop = [r for r in journal(rec) if r["event"] == "stop"][0]
    assert json.dumps(stop["extra"]["raw"]).count("upstream exploded") >= 3
    with ChatServer([content("I think the bug is fixed, all tests pass!")] * 2) as srv:
        rec = run(ModelChooser(base_url=srv.base_url, model="m", **fast), runs_dir)
    assert rec.status is StopReason.INVALID_ACTION  # prose is not an action, nor proof


def test_plugin_chooser_through_the_cli(tmp_path):
    plugin = tmp_path / "my_plugin.py"
    plugin.write_text("class Stopper:\n    name = 'stopper'\n    def choose(self, view):\n"
                      "        return {'tool': 'stop', 'reason': 'plug-in says hi'}\n\ndef make():\n    return Stopper()\n")
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(tmp_path / "runs"), "run",
                           "discount-bug", "--sandbox", "local", "--chooser", "my_plugin:make", "--json"],
                          capture_output=True, text=True, env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)},
                          timeout=120)
    out = json.loads(proc.stdout)
    assert proc.returncode == 10 and out["status"] == "handoff_requested" and out["chooser"] == "stopper"
    for key in ("run_id", "run_dir", "scenario", "steps_used", "max_steps", "u_trajectory", "diff_sha256"):
        assert key in out
    assert "does NOT isolate" in proc.stderr  # the local sandbox says so, every time


def test_bad_plugin_and_bad_manifest_get_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="cannot load chooser plug-in"):
        load_chooser("no_such_module_xyz:make")
    manifest = tmp_path / "broken.scenario.toml"
    manifest.write_text('name = "broken"\nrepo = "nowhere"\n[goal]\ntext = "x"\n[acceptance]\ntarget_tests = []\n')
    with pytest.raises(ManifestError) as err:
        load_manifest(manifest)
    assert "broken.scenario.toml" in str(err.value) and "goal.failure_signature" in str(err.value)
    assert "acceptance.target_tests" in str(err.value)
    runs = tmp_path / "runs"
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "run", str(manifest), "--runs-dir", str(runs)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "goal.failure_signature" in proc.stderr
    kept = list(read_journal(next(runs.glob("*invalid-manifest*/journal.jsonl"))))
    assert kept[0]["event"] == "manifest_error" and kept[0]["raw"] == manifest.read_text()
    # One broken manifest in a directory does not hide the good ones.
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "scenarios", "--json", "--scenarios-dir",
                           str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0 and "discount-bug" in {s["name"] for s in json.loads(proc.stdout)}
    assert "skipping an unusable manifest" in proc.stderr and "broken.scenario.toml" in proc.stderr


def test_scenarios_json_lists_discount_bug():
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "scenarios", "--json"], capture_output=True, text=True)
    listed = {s["name"]: s for s in json.loads(proc.stdout)}
    assert listed["discount-bug"]["goal"] and listed["discount-bug"]["repo"].endswith("discount_shop")


def test_runs_lists_every_run_with_its_status(runs_dir):
    done = run(BaselineChooser(resolve("discount-bug").baseline), runs_dir)
    stopped = run(Scripted({"tool": "stop"}), runs_dir)
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "runs", "--json", "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True)
    rows = {r["run_id"]: r for r in json.loads(proc.stdout)}
    assert rows[done.run_id]["status"] == "awaiting_release_confirmation" and rows[done.run_id]["u"] == 0
    assert rows[stopped.run_id]["status"] == "handoff_requested" and rows[stopped.run_id]["release"] == "-"


def test_model_chooser_through_the_cli_with_environment_variables(tmp_path):
    script = [tool_call("search", {"query": "price * (1 - discount)"}),
              tool_call("stop", {"reason": "found the formula; handing over", "summary": "pricing.py line 37"})]
    with ChatServer(script) as srv:
        env = {**__import__("os").environ, "REPAIR_AGENT_MODEL_BASE_URL": srv.base_url,
               "REPAIR_AGENT_MODEL": "env-model", "REPAIR_AGENT_MODEL_API_KEY": "sk-test"}
        proc = subprocess.run([sys.executable, "-m", "repair_agent", "run", "discount-bug", "--chooser", "model",
                               "--sandbox", "local", "--json", "--runs-dir", str(tmp_path / "runs")],
                              capture_output=True, text=True, env=env, timeout=120)
        assert srv.requests[0]["model"] == "env-model"
        assert srv.headers[0]["authorization"] == "Bearer sk-test"
    out = json.loads(proc.stdout)
    assert proc.returncode == 10 and out["status"] == "handoff_requested" and out["chooser"] == "model"
    assert out["steps_used"] == 2 and "handing over" in out["detail"]
