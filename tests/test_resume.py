"""Resume a run from its journal, and a person's grant after authorization_required.

The local backend drives the rules (real git, real pytest, real verifier, no engine needed); the
SIGKILL-at-every-step test runs the CLI in Docker and kills the real process.
"""
from __future__ import annotations

import difflib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from repair_agent.lifecycle import release
from repair_agent.choosers import BaselineChooser
from repair_agent.loop.journal import read_journal, record_hash, verify_chain
from repair_agent.lifecycle.resume import ResumeRefused, load_checkpoint, record_grant
from repair_agent.reports.records import load_record
from repair_agent.lifecycle.resume import resume_run
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason, state_hash

from helpers import runs_dir_with_cache

ROOT = Path(__file__).resolve().parents[1]
REPO = ROOT / "sandbox_repos/discount_shop"
TEST_PRICING = "tests/test_pricing.py"


def _diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        f"a/{path}", f"b/{path}"))


class EditsTheTest:
    """Tries to pass by editing the target test instead of fixing the code (needs a grant)."""

    name = "edits-the-test"

    def choose(self, view):
        e = view.evidence
        steps = [lambda: {"tool": "read_file", "path": TEST_PRICING},
                 lambda: {"tool": "apply_patch", "diff": _diff(TEST_PRICING, e[0].output,
                                                               e[0].output.replace("== 90", "== 100", 1))},
                 lambda: {"tool": "run_target_test"}, lambda: {"tool": "run_full_suite"},
                 lambda: {"tool": "check_diff"}]
        return steps[len(e)]() if len(e) < len(steps) else {"tool": "stop", "reason": "sequence complete"}


class WrongFix:
    """A fix that does not fix: the verifier says so."""

    name = "wrong-fix"

    def choose(self, view):
        e = view.evidence
        path = "src/discount_shop/pricing.py"
        steps = [lambda: {"tool": "read_file", "path": path},
                 lambda: {"tool": "apply_patch", "diff": _diff(path, e[0].output, e[0].output.replace(
                     "price * (1 - discount)", "price * (1 - discount / 10)"))},
                 lambda: {"tool": "run_target_test"}, lambda: {"tool": "run_full_suite"},
                 lambda: {"tool": "check_diff"}]
        return steps[len(e)]() if len(e) < len(steps) else {"tool": "stop", "reason": "sequence complete"}


class EnvKnob:
    """An honest fix that also reads an environment variable: the gate asks a person first."""

    name = "env-knob"

    def choose(self, view):
        e = view.evidence
        path = "src/discount_shop/pricing.py"
        steps = [lambda: {"tool": "read_file", "path": path},
                 lambda: {"tool": "apply_patch", "diff": _diff(path, e[0].output, e[0].output.replace(
                     '"""Price arithmetic: rounding to cents and percentage discounts."""\n',
                     '"""Price arithmetic: rounding to cents and percentage discounts."""\n\nimport os\n').replace(
                     "    discounted = price * (1 - discount)\n",
                     "    discounted = price * (1 - discount / 100)\n"
                     "    if os.environ.get(\"DISCOUNT_SHOP_TRACE\"):\n        print(price, discount, discounted)\n"))},
                 lambda: {"tool": "run_target_test"}, lambda: {"tool": "run_full_suite"},
                 lambda: {"tool": "check_diff"}]
        return steps[len(e)]() if len(e) < len(steps) else {"tool": "stop", "reason": "sequence complete"}


def make_env_knob():
    return EnvKnob()


def make_edits_the_test():
    return EditsTheTest()


def make_wrong_fix():
    return WrongFix()


def baseline():
    return BaselineChooser(resolve("discount-bug").baseline)


def run_local(chooser, runs_dir, spec="baseline", **kw):
    return execute_run(resolve("discount-bug"), chooser, backend="local", runs_dir=runs_dir,
                       chooser_spec=spec, **kw)


def records(run_dir) -> list[dict]:
    return list(read_journal(Path(run_dir) / "journal.jsonl"))


def report(run_dir) -> dict:
    return json.loads((Path(run_dir) / "report.json").read_text())


def drop_stop_line(run_dir) -> None:
    """What a SIGKILL between the last step line and the stop line leaves."""
    path = Path(run_dir) / "journal.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert json.loads(lines[-1])["event"] == "stop"
    path.write_text("".join(lines[:-1]))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return run_local(baseline(), tmp_path_factory.mktemp("fresh") / "runs")


def test_resume_after_step_budget_grants_explicit_steps_and_ends_like_an_uninterrupted_run(runs_dir, uninterrupted):
    stopped = run_local(baseline(), runs_dir, max_steps=4)
    assert stopped.status is StopReason.STEP_BUDGET
    with pytest.raises(ResumeRefused, match="--max-steps"):
        resume_run(stopped.run_dir, runs_dir=runs_dir)  # no step was left: the grant must be stated

    resumed = resume_run(stopped.run_dir, extra_steps=3, runs_dir=runs_dir)
    assert resumed.status is StopReason.AWAITING_RELEASE_CONFIRMATION
    assert (resumed.diff_sha256, resumed.u_trajectory, resumed.steps_used) == (
        uninterrupted.diff_sha256, uninterrupted.u_trajectory, uninterrupted.steps_used)
    recs = records(stopped.run_dir)
    assert verify_chain(recs) == []
    resume = next(r for r in recs if r.get("event") == "resume")
    # B's new version: 4 used + 3 granted, chained to the checkpoint's version.
    assert resume["extra_steps"] == 3 and resume["state_after"]["budget"]["max_steps"] == 7
    before = [r for r in recs[:recs.index(resume)] if "state_after" in r][-1]["state_after"]
    assert resume["state_after"]["version"] == before["version"] + 1
    assert resume["state_before_hash"] == state_hash(before) == resume["state_after"]["parent_hash"]
    # The target-test verdict the journal holds was re-earned from the verifier, not trusted.
    assert [(x["evidence"], x["status"]) for x in resume["reverified"]] == [("E4", "ok")]
    assert [r["step"] for r in recs if r.get("event") == "step"] == [1, 2, 3, 4, 5, 6]
    rep = report(stopped.run_dir)
    assert [s["resumed_from"] for s in rep["sessions"]] == [None, "step_budget"]
    assert load_record(stopped.run_dir).sessions == 2 and rep["status"] == "awaiting_release_confirmation"
    # The replay CLI still checks the whole chain.
    out = subprocess.run([sys.executable, "-m", "repair_agent", "replay", stopped.run_dir], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0 and "hash chain: OK" in out.stdout and "resume from step_budget" in out.stdout


def test_nothing_resumes_a_run_awaiting_release_or_decided_or_at_a_final_exit(runs_dir, uninterrupted):
    with pytest.raises(ResumeRefused, match="awaiting_release_confirmation"):
        resume_run(uninterrupted.run_dir, runs_dir=runs_dir)
    done = run_local(baseline(), runs_dir)
    release.reject(Path(done.run_dir), "not this one")
    with pytest.raises(ResumeRefused, match="already rejected"):
        resume_run(done.run_dir, runs_dir=runs_dir)
    repeated = run_local(make_wrong_fix(), runs_dir, spec="test_resume:make_wrong_fix", max_steps=2)
    drop_stop_line(repeated.run_dir)  # killed at step 2 of 2: resumable, continues with its own chooser
    again = resume_run(repeated.run_dir, extra_steps=1, runs_dir=runs_dir)
    assert again.status is StopReason.STEP_BUDGET and again.steps_used == 3
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "resume", uninterrupted.run_dir],
                          capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "resume refused" in proc.stderr and "awaiting_release_confirmation" in proc.stderr


def test_a_torn_last_line_is_set_aside_reported_and_the_run_continues(runs_dir, uninterrupted):
    stopped = run_local(baseline(), runs_dir, max_steps=3)
    journal = Path(stopped.run_dir) / "journal.jsonl"
    data = journal.read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    torn = data[last:last + 57]  # the stop line, cut short mid-write
    journal.write_bytes(data[:last] + torn)
    with pytest.raises(ValueError, match="not a JSON line"):
        records(stopped.run_dir)  # as the kill left it: replay cannot read it

    resumed = resume_run(stopped.run_dir, extra_steps=3, runs_dir=runs_dir)
    assert resumed.status is StopReason.AWAITING_RELEASE_CONFIRMATION
    assert resumed.diff_sha256 == uninterrupted.diff_sha256 and resumed.u_trajectory == uninterrupted.u_trajectory
    kept = journal.with_name("journal.jsonl.torn-1")
    assert kept.read_bytes() == torn  # kept byte for byte, not dropped
    assert verify_chain(records(stopped.run_dir)) == []
    session = report(stopped.run_dir)["sessions"][1]
    assert session["resumed_from"] == "killed" and session["torn_tail"]["bytes"] == len(torn)
    assert "torn journal line" in (Path(stopped.run_dir) / "report.md").read_text()


def test_a_resumed_run_never_trusts_journaled_verdicts(runs_dir):
    """A journal claiming Uₜ = 0 (here forged, hash chain recomputed) gets the verdicts re-earned:
    the verifier says the fix is wrong, so the run cannot reach awaiting_release_confirmation."""
    stopped = run_local(make_wrong_fix(), runs_dir, spec="test_resume:make_wrong_fix", max_steps=5)
    assert stopped.status is StopReason.STEP_BUDGET and stopped.u_trajectory[-1] == 2
    recs = [r for r in records(stopped.run_dir) if r.get("event") != "stop"]
    last = recs[-1]
    by_tool = {r["result"]["tool"]: r["result"]["id"] for r in recs if r.get("result")}
    deciders = {"target_test": by_tool["run_full_suite"], "full_suite": by_tool["run_full_suite"],
                "diff_scope": by_tool["check_diff"]}
    for c in last["state_after"]["conditions"]:
        c.update(satisfied=True, evidence=deciders[c["name"]], stale=False)
    for r in recs:
        if (r.get("result") or {}).get("tool") in ("run_target_test", "run_full_suite"):
            r["result"]["status"] = "ok"
            r["result"]["data"].update(ok=True, targets_ok=True, problems=[])
    last["u"] = 0
    _rechain(recs)
    (Path(stopped.run_dir) / "journal.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in recs))
    assert verify_chain(records(stopped.run_dir)) == []

    resumed = resume_run(stopped.run_dir, extra_steps=1, runs_dir=runs_dir)
    assert resumed.status is not StopReason.AWAITING_RELEASE_CONFIRMATION
    resume = next(r for r in records(stopped.run_dir) if r.get("event") == "resume")
    assert {(x["journaled_status"], x["status"]) for x in resume["reverified"]} >= {("ok", "failed")}
    assert resume["u"] == 2


def _rechain(recs: list[dict]) -> None:
    previous, last_record = None, None
    for r in recs:
        if r.get("state_before_hash") is not None and previous is not None:
            r["state_before_hash"] = state_hash(previous)
        if r.get("state_after") is not None:
            state = r["state_after"]
            if previous is not None and state["version"] != previous["version"]:
                state["parent_hash"] = state_hash(previous)
            r["state_after_hash"] = state_hash(state)
            previous = state
        r["prev_record_sha256"] = last_record
        r["record_sha256"] = last_record = record_hash(r)


def test_grant_is_refused_unless_the_run_stopped_for_authorization(runs_dir):
    stopped = run_local(baseline(), runs_dir, max_steps=2)
    with pytest.raises(ResumeRefused, match="not authorization_required"):
        record_grant(Path(stopped.run_dir), ["README.md"], "why not")
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "grant", stopped.run_dir, "--allow", "README.md",
                           "--reason", "x"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "grant refused" in proc.stderr
    assert not any(r.get("event") == "grant" for r in records(stopped.run_dir))


def test_grant_readme_then_resume_reoffers_the_refused_patch_and_reaches_pending_release(runs_dir, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from docs_too_chooser import make

    refused = run_local(make(), runs_dir, spec="docs_too_chooser:make")
    assert refused.status is StopReason.AUTHORIZATION_REQUIRED and refused.steps_used == 3
    run_dir = Path(refused.run_dir)
    for bad, why in ((["docs/**"], "would still be refused"), (["../x"], "never absolute"),
                     ([".git/config"], "never absolute")):
        with pytest.raises(ResumeRefused, match=why):
            record_grant(run_dir, bad, "trying")
    grant, _ = record_grant(run_dir, ["README.md"], "the fix deserves a line in the README")
    assert grant.after_step == 3 and grant.who

    resumed = resume_run(run_dir, runs_dir=runs_dir)
    assert resumed.status is StopReason.AWAITING_RELEASE_CONFIRMATION
    recs = records(run_dir)
    assert verify_chain(recs) == []
    g = next(r for r in recs if r.get("event") == "grant")
    assert g["state_after"]["authorization"]["grants"][0]["allow"] == ["README.md"]
    assert g["state_after"]["version"] == [r for r in recs[:recs.index(g)] if "state_after" in r][-1]["state_after"]["version"] + 1
    step4 = next(r for r in recs if r.get("step") == 4)
    refused_step = next(r for r in recs if r.get("step") == 3)
    # The first step after the resume is the refused proposal, validated again and now accepted.
    assert step4["proposal"] == refused_step["proposal"] and step4["decision"]["accepted"]
    assert step4["chooser_call"]["reoffer_of_step"] == 3
    rep = report(run_dir)
    assert rep["grants"][0]["allow"] == ["README.md"] and "## Grants" in (run_dir / "report.md").read_text()
    assert {f["path"] for f in rep["diff_files"]} == {"README.md", "src/discount_shop/pricing.py"}
    # The person's release re-verifies under the same grant.
    decision = release.confirm(run_dir)
    assert decision["decision"] == "confirmed" and "README.md" in decision["committed_diff"]


def test_a_granted_test_edit_is_tested_as_the_pristine_test_and_cannot_help(runs_dir):
    refused = run_local(make_edits_the_test(), runs_dir, spec="test_resume:make_edits_the_test")
    assert refused.status is StopReason.AUTHORIZATION_REQUIRED
    record_grant(Path(refused.run_dir), [TEST_PRICING], "see what happens")
    resumed = resume_run(refused.run_dir, runs_dir=runs_dir)
    rep = report(refused.run_dir)
    conditions = {c["name"]: c["satisfied"] for c in rep["conditions"]}
    # In scope under the grant, but the verifier ran its own copy of the test: still failing.
    assert conditions == {"target_test": False, "full_suite": False, "diff_scope": True}
    assert resumed.status is StopReason.HANDOFF_REQUESTED
    assert rep["restored_by_verifier"] == [TEST_PRICING]
    assert "as its own pristine copy" in (Path(refused.run_dir) / "report.md").read_text()


# -- SIGKILL at every step, in Docker, through the CLI ---------------------------------------------

KILLER = """
import os, signal, sys
import repair_agent.loop.journal as journal
from repair_agent.cli import main

after = int(os.environ["KILL_AFTER_LINE"])
written = [0]
original = journal.Journal.write

def write_then_die(self, record):
    original(self, record)
    written[0] += 1
    if written[0] == after:
        os.kill(os.getpid(), signal.SIGKILL)  # right after the line is fsynced: no cleanup, no stop line

journal.Journal.write = write_then_die
sys.exit(main(sys.argv[1:]))
"""


def _cli(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "repair_agent", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=env)


def _containers_of(client, pid: int) -> list:
    from verifier.isolation import LABEL, OWNER_LABEL

    return client.containers.list(all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={pid}"]}, ignore_removed=True)


@pytest.mark.docker
def test_sigkill_after_each_step_then_resume_ends_like_an_uninterrupted_run(docker_client, sandbox_image, tmp_path,
                                                                           baseline_cache):
    """The run is SIGKILLed right after step 1's journal line, and each resume right after the
    next step's line, down to the last step; one more resume then ends the run exactly as an
    uninterrupted run ends. Every step is a kill point, and every resume starts from a killed
    session (the first from a fresh run's, the others from a resumed one's)."""
    runs = str(runs_dir_with_cache(tmp_path / "runs", baseline_cache))
    fresh = _cli("run", "discount-bug", "--json", "--runs-dir", runs)
    assert fresh.returncode == 0, fresh.stderr
    expected = json.loads(fresh.stdout)
    steps = expected["steps_used"]
    assert steps == 6

    def killed_after(lines: int, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", KILLER, *args, "--json", "--runs-dir", runs],
                              capture_output=True, text=True, cwd=ROOT, timeout=300,
                              env={**os.environ, "KILL_AFTER_LINE": str(lines)})

    # A fresh session writes setup, start, then one line per step; a resumed one setup, resume, then steps.
    killed = killed_after(3, "run", "discount-bug")
    run_dir = next(p for p in Path(runs).iterdir() if p.is_dir() and p.name != ".cache" and not (p / "run.json").exists())
    dead: list[int] = []
    for k in range(1, steps + 1):
        if k > 1:
            killed = killed_after(3, "resume", str(run_dir))
        assert killed.returncode == -signal.SIGKILL, (k, killed.stderr)
        pids = [r["pid"] for r in records(run_dir) if r.get("event") == "setup"]
        assert _containers_of(docker_client, pids[-1]), "a killed session leaves its sandbox container"
        assert all(_containers_of(docker_client, pid) == [] for pid in dead), "a resume removes the dead session's"
        dead.append(pids[-1])
        assert records(run_dir)[-1]["step"] == k and "stop" not in {r["event"] for r in records(run_dir)}
        if k == 1:
            listed = json.loads(_cli("runs", "--json", "--runs-dir", runs).stdout)
            assert {"run_id": run_dir.name, "status": "killed", "steps": "1/8"}.items() <= next(
                r for r in listed if r["run_id"] == run_dir.name).items()

    resumed = _cli("resume", str(run_dir), "--json", "--runs-dir", runs)
    assert resumed.returncode == 0, resumed.stderr
    got = json.loads(resumed.stdout)
    assert (got["status"], got["diff_sha256"], got["u_trajectory"], got["steps_used"]) == (
        expected["status"], expected["diff_sha256"], expected["u_trajectory"], steps)
    assert got["sessions"] == steps + 1
    assert all(_containers_of(docker_client, pid) == [] for pid in dead)  # every dead session's containers are gone
    replay = _cli("replay", str(run_dir))
    assert replay.returncode == 0 and "hash chain: OK" in replay.stdout, replay.stdout


def test_one_resume_at_a_time_and_never_of_a_live_run(runs_dir):
    import fcntl

    stopped = run_local(baseline(), runs_dir, max_steps=2)
    with open(Path(stopped.run_dir) / ".resume.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(ResumeRefused, match="being resumed by another process"):
            resume_run(stopped.run_dir, extra_steps=1, runs_dir=runs_dir)
    # A journal without a stop line whose process is alive is a run in progress, not a killed one.
    recs = [r for r in records(stopped.run_dir) if r.get("event") != "stop"]
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        next(r for r in recs if r.get("event") == "setup")["pid"] = alive.pid
        _rechain(recs)
        (Path(stopped.run_dir) / "journal.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in recs))
        with pytest.raises(ResumeRefused, match="still alive"):
            resume_run(stopped.run_dir, extra_steps=1, runs_dir=runs_dir)
    finally:
        alive.kill()
        alive.wait()
    assert load_checkpoint(Path(stopped.run_dir)).status == "killed"


def test_a_code_finding_is_granted_by_its_key_and_the_report_lists_it(runs_dir):
    """The gate stops a patch that reads the environment (and imports os anew); the refusal names each
    finding's key; a grant of one key is not enough, both are; resume then reaches pending release,
    and the report lists both findings as granted."""
    refused = run_local(make_env_knob(), runs_dir, spec="test_resume:make_env_knob")
    assert refused.status is StopReason.AUTHORIZATION_REQUIRED and refused.steps_used == 2, refused.detail
    assert "the patch adds code that needs a person's grant" in refused.detail
    run_dir = Path(refused.run_dir)
    stop = [r for r in records(run_dir) if r.get("event") == "stop"][-1]
    keys = stop["extra"]["grant"]
    assert len(keys) == 2 and all(k.startswith("code:") and "@src/discount_shop/pricing.py#" in k for k in keys)
    with pytest.raises(ResumeRefused, match="would still need a grant"):
        record_grant(run_dir, keys[:1], "only the import")
    record_grant(run_dir, keys, "a trace switch the maintainers asked for")
    resumed = resume_run(run_dir, runs_dir=runs_dir)
    assert resumed.status is StopReason.AWAITING_RELEASE_CONFIRMATION, resumed.detail
    findings = report(run_dir)["code_findings"]
    assert sorted(f["key"] for f in findings) == sorted(keys) and all(f["granted"] for f in findings)
    assert "What the diff adds that needed a person's grant" in (run_dir / "report.md").read_text()
