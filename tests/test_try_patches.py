"""try_patches: several candidate diffs checked by the verifier in one step, none applied. What a
chooser learns is what run_full_suite would show it of each; no condition is decided by it; every
candidate is authorized before any runs."""
from __future__ import annotations

import difflib
import json
from pathlib import Path

from helpers import PRICING, PRICING_REL, Scripted, fix_diff, local_run
from repair_agent.loop.journal import read_journal
from repair_agent.loop.state import StopReason
from verifier import diff_sha256

ROOT = Path(__file__).resolve().parents[1]


def _edit(old: str, new: str, path: Path = PRICING, rel: str = PRICING_REL) -> str:
    text = path.read_text()
    before, after = text.splitlines(keepends=True), text.replace(old, new).splitlines(keepends=True)
    assert after != before
    return "".join(difflib.unified_diff(before, after, f"a/{rel}", f"b/{rel}"))


WRONG = _edit("price * (1 - discount)", "price * (1 - discount / 10)")
# A candidate that hangs on one input (ten percent), as a wrong loop condition does.
HANGS = _edit("    discounted = price * (1 - discount)\n",
              "    while discount == 10 and price:\n        pass\n    discounted = price * (1 - discount / 100)\n")


def _steps(rec) -> list[dict]:
    return [r for r in read_journal(Path(rec.run_dir) / "journal.jsonl") if r["event"] == "step"]


def test_candidates_are_checked_in_one_step_and_the_tree_and_the_conditions_stay_as_they_were(runs_dir):
    rec = local_run(Scripted({"tool": "try_patches", "diffs": [WRONG, fix_diff()]}, {"tool": "stop"}), runs_dir)
    assert rec.status is StopReason.HANDOFF_REQUESTED and rec.steps_used == 2
    (tried, _) = _steps(rec)
    result = tried["result"]
    assert result["status"] == "ok" and result["summary"] == "1 of 2 candidate(s) pass the full suite: candidate 2"
    wrong, right = result["tries"]
    assert not wrong["ok"] and not wrong["targets_ok"] and wrong["failing"]
    assert right["ok"] and right["targets_ok"] and not right["failing"]
    assert "candidate 1" in result["output"] and "PASSED" in result["output"]
    # Nothing was applied, and the passing check decides nothing: a condition is about the current diff.
    assert rec.diff_sha256 == diff_sha256("") and rec.u_trajectory[0] == rec.u_trajectory[-1] == 3
    # The held-out probe's word reaches no chooser, here as in run_full_suite.
    text = json.dumps(result)
    assert "correctness" not in text and "heldout" not in text and "behaviour" not in text


def test_the_candidate_that_passed_is_applied_and_checked_as_usual(runs_dir):
    rec = local_run(Scripted({"tool": "try_patches", "diffs": [WRONG, fix_diff()]},
                             {"tool": "apply_patch", "diff": fix_diff()}, {"tool": "run_full_suite"},
                             {"tool": "check_diff"}), runs_dir)
    assert rec.status is StopReason.AWAITING_RELEASE_CONFIRMATION and rec.steps_used == 4


def test_a_candidate_that_needs_a_grant_stops_the_run_before_any_candidate_runs(runs_dir):
    test_file = ROOT / "sandbox_repos/discount_shop/tests/test_pricing.py"
    forged = _edit("== 90", "== 100", test_file, "tests/test_pricing.py")
    rec = local_run(Scripted({"tool": "try_patches", "diffs": [fix_diff(), forged]}), runs_dir)
    assert rec.status is StopReason.AUTHORIZATION_REQUIRED
    (step,) = _steps(rec)
    assert step.get("result") is None   # not even the first, harmless candidate ran
    stop = [r for r in read_journal(Path(rec.run_dir) / "journal.jsonl") if r["event"] == "stop"][0]
    assert any("tests/test_pricing.py" in g for g in stop["extra"]["grant"]) and stop["extra"]["raw"] == forged


def test_a_malformed_candidate_is_an_observation_and_none_runs(runs_dir):
    rec = local_run(Scripted({"tool": "try_patches", "diffs": [fix_diff(), "not\na diff\n@@ x"]},
                             {"tool": "stop"}), runs_dir)
    assert rec.status is StopReason.HANDOFF_REQUESTED
    result = _steps(rec)[0]["result"]
    assert result["status"] == "error" and result["tries"] == []
    assert result["summary"].startswith("candidate 2: your diff is malformed")


def test_more_candidates_than_a_step_may_hold_is_an_invalid_action_kept_raw(runs_dir):
    proposal = {"tool": "try_patches", "diffs": [fix_diff()] * 9}
    rec = local_run(Scripted(proposal), runs_dir)
    assert rec.status is StopReason.INVALID_ACTION and "at most 8" in rec.detail
    assert _steps(rec)[0]["proposal"] == proposal


def test_a_candidate_that_hangs_is_cut_at_a_limit_fitted_to_the_suite_not_the_specs(runs_dir):
    # The spec's per-test limit is 30 s in a check; the pristine suite's slowest test takes milliseconds.
    rec = local_run(Scripted({"tool": "try_patches", "diffs": [HANGS, fix_diff()]}, {"tool": "stop"}), runs_dir)
    step = _steps(rec)[0]
    hung, right = step["result"]["tries"]
    assert not hung["ok"] and any("Timeout" in why or "timeout" in why for why in hung["failing"].values()), hung
    assert right["ok"]
    assert step["result"]["duration_s"] < 25, step["result"]["duration_s"]


def test_a_resumed_search_run_replays_its_batches_and_never_retries_what_one_failed(runs_dir):
    from repair_agent.choosers.search import SearchChooser
    from repair_agent.lifecycle.resume import resume_run
    from repair_agent.lifecycle.run import execute_run
    from repair_agent.loop.journal import verify_chain
    from repair_agent.scenarios.scenario import resolve

    # The trap's run: target test, read, the trap applied, its full suite, then a batch; Ctrl-C there.
    def interrupt_after_the_batch(progress):
        if progress.tool == "try_patches":
            raise KeyboardInterrupt

    stopped = execute_run(resolve("stockroom-business-days-trap"), SearchChooser(0), backend="local",
                          runs_dir=runs_dir, max_steps=8, on_step=interrupt_after_the_batch)
    assert stopped.status is StopReason.DEPENDENCY_FAILURE and "Ctrl-C" in stopped.detail
    (batch,) = [s for s in _steps(stopped) if s["proposal"]["tool"] == "try_patches"]
    failed = {diff for diff, t in zip(batch["proposal"]["diffs"], batch["result"]["tries"]) if not t["ok"]}
    assert failed
    # Resumed, and interrupted again at its first step (its checks are not what this test is about).
    resumed = resume_run(Path(stopped.run_dir), chooser_spec="search", runs_dir=runs_dir,
                         on_step=lambda progress: (_ for _ in ()).throw(KeyboardInterrupt()))
    records = list(read_journal(Path(stopped.run_dir) / "journal.jsonl"))
    assert verify_chain(records) == [] and resumed.sessions == 2
    later = [s["proposal"] for s in _steps(resumed) if s["step"] > batch["step"]]
    assert later and later[0]["tool"] in ("apply_patch", "try_patches")
    # A candidate the batch failed is not tried again: it would be rendered as the same whole diff.
    tried_again = [d for p in later for d in p.get("diffs", [])] + [p["diff"] for p in later if p["tool"] == "apply_patch"]
    assert not failed & set(tried_again)
