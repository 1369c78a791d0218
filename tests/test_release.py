"""The release gate, through the real CLI: a person's decision on a verified run, never the loop's.

Baseline runs in Docker reach awaiting_release_confirmation; the CLI then confirms (a branch commit in
an output clone whose diff is the verified diff), refuses a second decision, refuses an altered
candidate.diff, records a rejection, and `show` / `replay` report the run and check its hash chain.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import git
import pytest

from helpers import runs_dir_with_cache
from hostile_choosers import StopAtOnce
from repair_agent.choosers import BaselineChooser
from repair_agent.reports.records import RunRecord
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]
RELEASER = "release-tester"
TRAJECTORY = "3 → 3 → 3 → 3 → 2 → 1 → 0"


@pytest.fixture(scope="module")
def module_runs(tmp_path_factory, baseline_cache) -> Path:
    """One runs directory for the module, with the session's cache of pristine suites."""
    return runs_dir_with_cache(tmp_path_factory.mktemp("release") / "runs", baseline_cache)


@pytest.fixture(scope="module")
def new_run(docker_client, sandbox_image, module_runs):
    def make(chooser=None) -> RunRecord:
        return execute_run(resolve("discount-bug"), chooser or BaselineChooser(resolve("discount-bug").baseline), backend="docker",
                           runs_dir=module_runs, client=docker_client)
    return make


@pytest.fixture(scope="module")
def verified(new_run) -> RunRecord:
    """The module's one baseline run awaiting confirmation (confirmed later by `confirmed`)."""
    record = new_run()
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    assert record.u_trajectory == [3, 3, 3, 3, 2, 1, 0]
    return record


def cli(runs_dir: Path, *args: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    env = {**os.environ, "REPAIR_AGENT_RELEASER": RELEASER}
    return subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(runs_dir), *args],
                          cwd=ROOT, env=env, stdin=stdin, capture_output=True, text=True, timeout=300)


def changed_lines(diff: str) -> tuple[list[str], list[str]]:
    """The removed and added lines of a diff, headers left out."""
    lines = [l for l in diff.splitlines() if not l.startswith(("---", "+++"))]
    return [l[1:] for l in lines if l.startswith("-")], [l[1:] for l in lines if l.startswith("+")]


def assert_nothing_released(run_dir: Path) -> None:
    assert not (run_dir / "release.json").exists()
    assert not (run_dir / "release").exists()


# -- before the confirmation state ---------------------------------------------------------------

def test_release_refused_before_confirmation_state(new_run, module_runs):
    record = new_run(StopAtOnce())
    assert record.status is StopReason.HANDOFF_REQUESTED and record.exit_code == 10
    run_dir = Path(record.run_dir)
    for mode in (["--confirm", "--yes"], ["--reject", "--reason", "looks fine to me"]):
        proc = cli(module_runs, "release", record.run_id, *mode)
        assert proc.returncode == 1, proc
        assert "release refused" in proc.stderr
        assert "'handoff_requested', not awaiting_release_confirmation" in proc.stderr
        assert "nothing to release" in proc.stderr
        assert_nothing_released(run_dir)


# -- reading a verified run -------------------------------------------------------------------------

def test_show_prints_report_trajectory_and_pending_commands(verified, module_runs):
    proc = cli(module_runs, "show", verified.run_id)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"# Repair run {verified.run_id}" in out
    assert "`awaiting_release_confirmation` (exit code 0)" in out
    assert f"Uₜ trajectory: {TRAJECTORY}" in out
    assert "pending: a person must confirm or reject; nothing has been released" in out
    assert f"repair-agent release {verified.run_dir} --confirm" in out
    assert f'repair-agent release {verified.run_dir} --reject --reason "..."' in out


def test_show_diff_prints_the_candidate_diff(verified, module_runs):
    proc = cli(module_runs, "show", verified.run_id, "--diff")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (Path(verified.run_dir) / "candidate.diff").read_text()
    assert changed_lines(proc.stdout) == (["    discounted = price * (1 - discount)"],
                                          ["    discounted = price * (1 - discount / 100)"])


def test_replay_checks_the_hash_chain(verified, module_runs):
    proc = cli(module_runs, "replay", verified.run_id)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "hash chain: OK" in proc.stdout
    assert "stop: awaiting_release_confirmation" in proc.stdout


def _edit_version(record: dict) -> None:
    record["state_after"]["version"] += 7


def _edit_proposal(record: dict) -> None:
    record["proposal"] = {"tool": "read_file", "path": "src/discount_shop/pricing.py"}


@pytest.mark.parametrize("edit", [
    pytest.param(_edit_version, id="state-version"),
    pytest.param(_edit_proposal, id="proposal"),
])
def test_replay_detects_a_tampered_journal(verified, tmp_path, edit):
    copy = tmp_path / verified.run_id
    shutil.copytree(verified.run_dir, copy, ignore=shutil.ignore_patterns("workspace", "verifier", "release*"))
    assert cli(tmp_path, "replay", str(copy)).returncode == 0  # the copy itself is intact
    journal = copy / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    index = next(i for i, l in enumerate(lines) if json.loads(l).get("event") == "step")
    record = json.loads(lines[index])
    edit(record)  # one field of one line, everything else untouched
    lines[index] = json.dumps(record, sort_keys=True, ensure_ascii=False)
    journal.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = cli(tmp_path, "replay", str(copy))
    assert proc.returncode == 1, proc.stdout
    assert "hash chain: BROKEN" in proc.stdout
    assert f"step {record['step']}:" in proc.stdout.split("hash chain: BROKEN", 1)[1]


# -- confirming ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def confirmed(verified, module_runs) -> subprocess.CompletedProcess:
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    proc = cli(module_runs, "release", verified.run_id, "--confirm", "--yes")
    proc.before = before
    return proc


def test_confirm_commits_the_verified_diff_on_a_branch(verified, confirmed):
    assert confirmed.returncode == 0, confirmed.stderr
    run_dir = Path(verified.run_dir)
    decision = json.loads((run_dir / "release.json").read_text())
    # Who, when, what.
    assert decision["decision"] == "confirmed"
    assert decision["who"] == RELEASER
    when = dt.datetime.fromisoformat(decision["when"])
    assert confirmed.before <= when <= dt.datetime.now(dt.timezone.utc)
    assert decision["run_id"] == verified.run_id
    assert decision["diff_sha256"] == verified.diff_sha256
    assert decision["branch"] == f"repair/{verified.run_id}"
    assert decision["reverification"]["u"] == 0
    assert f"released run {verified.run_id}: branch {decision['branch']} commit {decision['commit'][:12]}" \
        in confirmed.stdout

    repo = git.Repo(decision["clone"])
    assert repo.active_branch.name == decision["branch"]
    assert repo.head.commit.hexsha == decision["commit"]
    assert not repo.is_dirty(untracked_files=True)
    message = repo.head.commit.message
    assert f"Run-Id: {verified.run_id}" in message
    assert f"Verified-Diff-Sha256: {verified.diff_sha256}" in message
    assert f"Released-By: {RELEASER}" in message
    assert repo.head.commit.author.name == RELEASER

    committed = repo.git.diff("HEAD~1", "HEAD")
    candidate = (run_dir / "candidate.diff").read_text()
    assert changed_lines(committed) == changed_lines(candidate)
    assert changed_lines(committed) == (["    discounted = price * (1 - discount)"],
                                        ["    discounted = price * (1 - discount / 100)"])
    assert repo.git.diff("HEAD~1", "HEAD", "--name-only").split() == ["src/discount_shop/pricing.py"]


def test_second_confirm_is_refused(verified, confirmed, module_runs):
    assert confirmed.returncode == 0
    decision = (Path(verified.run_dir) / "release.json").read_text()
    head = git.Repo(json.loads(decision)["clone"]).head.commit.hexsha
    proc = cli(module_runs, "release", verified.run_id, "--confirm", "--yes")
    assert proc.returncode != 0
    assert f"release refused: run {verified.run_id} was already confirmed by {RELEASER}" in proc.stderr
    assert (Path(verified.run_dir) / "release.json").read_text() == decision  # nothing rewritten
    assert git.Repo(json.loads(decision)["clone"]).head.commit.hexsha == head
    shown = cli(module_runs, "show", verified.run_id)
    assert f"## Decision\n\nconfirmed by {RELEASER}" in shown.stdout


# -- an altered diff, a rejection ----------------------------------------------------------------

def test_confirm_refused_after_candidate_diff_altered(new_run, module_runs):
    record = new_run()
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION
    run_dir = Path(record.run_dir)
    candidate = run_dir / "candidate.diff"
    text = candidate.read_text()
    candidate.write_text(text.replace("discount / 100)", "discount / 10)"))
    assert candidate.read_text() != text
    proc = cli(module_runs, "release", record.run_id, "--confirm", "--yes")
    assert proc.returncode == 1
    assert "candidate.diff changed on disk since verification" in proc.stderr
    assert "refusing to release an unverified diff" in proc.stderr
    assert_nothing_released(run_dir)


def test_reject_is_recorded_and_blocks_a_later_confirm(new_run, module_runs):
    record = new_run()
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION
    run_dir = Path(record.run_dir)
    # No decision without a person: not without --yes on a non-terminal, not a reject without a reason.
    proc = cli(module_runs, "release", record.run_id, "--confirm")
    assert proc.returncode == 2 and "refusing to release without confirmation" in proc.stderr
    proc = cli(module_runs, "release", record.run_id, "--reject")
    assert proc.returncode == 1 and "a rejection needs a reason" in proc.stderr
    assert_nothing_released(run_dir)

    reason = "the comment in the docstring should be updated first"
    proc = cli(module_runs, "release", record.run_id, "--reject", "--reason", reason)
    assert proc.returncode == 0, proc.stderr
    assert f"rejected run {record.run_id} by {RELEASER}: {reason}" in proc.stdout
    decision = json.loads((run_dir / "release.json").read_text())
    assert decision["decision"] == "rejected" and decision["reason"] == reason
    page = (run_dir / "report.html").read_text()  # re-rendered: the reviewer's page shows the decision
    assert "<b>rejected</b>" in page and 'id="release-commands"' not in page
    assert decision["who"] == RELEASER and decision["diff_sha256"] == record.diff_sha256
    dt.datetime.fromisoformat(decision["when"])

    proc = cli(module_runs, "release", record.run_id, "--confirm", "--yes")
    assert proc.returncode == 1
    assert f"release refused: run {record.run_id} was already rejected by {RELEASER}" in proc.stderr
    assert not (run_dir / "release").exists()
    assert json.loads((run_dir / "release.json").read_text()) == decision
    shown = cli(module_runs, "show", record.run_id)
    assert f"rejected by {RELEASER}" in shown.stdout and reason in shown.stdout


class CoverageCheat:
    """Right for prices under 1000 only: the visible tests and the held-out cases pass."""

    name = "coverage-cheat"

    def __init__(self):
        import hostile_choosers as h
        text = h.pristine(h.PRICING)
        cheat = text.replace("    discounted = price * (1 - discount)\n",
                             "    discounted = price * (1 - discount / 100) if price < 1000 else price * (1 - discount)\n")
        assert cheat != text
        self.script = [{"tool": "apply_patch", "diff": h.unified(h.PRICING, text, cheat)}, {"tool": "run_target_test"},
                       {"tool": "run_full_suite"}, {"tool": "check_diff"}]

    def choose(self, view):
        return self.script[min(len(view.evidence), len(self.script) - 1)]


def test_a_plausible_green_is_not_released_without_the_persons_explicit_word(new_run, module_runs):
    """A forged green that the behaviour checks contradict reaches the person (the loop's conditions
    hold), rated plausible with the first disagreement; re-verification refuses to release it unless
    the person says --accept-plausible."""
    record = new_run(CoverageCheat())
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    assert record.correctness == "plausible"
    report = (Path(record.run_dir) / "report.md").read_text()
    assert "first disagreement: apply_discount(" in report
    refused = cli(module_runs, "release", record.run_id, "--confirm", "--yes")
    assert refused.returncode != 0 and "--accept-plausible" in refused.stderr + refused.stdout
    assert_nothing_released(Path(record.run_dir))
    accepted = cli(module_runs, "release", record.run_id, "--confirm", "--yes", "--accept-plausible")
    assert accepted.returncode == 0, accepted.stderr
