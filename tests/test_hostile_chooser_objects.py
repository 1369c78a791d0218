"""Attacks through the chooser's own objects, and on the release step.

A plug-in chooser is trusted code in the controller's process, but what it is handed (the View)
and what it hands back (its proposal, name, usage and call records) are not shared state and are
read only under the chooser's time limit. Each attack must end in a named exit other than
awaiting_release_confirmation with its evidence kept (a journal whose chains verify and that ends
in a stop line, run.json, the report), never in a traceback or a hang.

`release --confirm` must apply exactly the bytes it verified, on the image the run was verified
on, and refuse a run whose own journal does not say it is awaiting confirmation.

Controller attacks use the local backend (real git, real pytest, real verifier); the image checks
of the release need the Docker Engine.
"""
from __future__ import annotations

import copy
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import git
import pytest
from pydantic import ValidationError

import hostile_objects as h
from repair_agent.lifecycle.seal import seal_run
from repair_agent.lifecycle import release
from repair_agent.loop.actions import TOOL_NAMES
from repair_agent.choosers import BaselineChooser
from repair_agent.loop.journal import StepRecord, evidence_by_id, read_journal, read_records, record_hash, verify_chain
from repair_agent.lifecycle.resume import ResumeRefused, load_checkpoint
from repair_agent.reports.records import RunRecord
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason, state_hash
from verifier import diff_sha256

ROOT = Path(__file__).resolve().parents[1]
PRICING = ROOT / "sandbox_repos/discount_shop/src/discount_shop/pricing.py"
FILES = ("journal.jsonl", "run.json", "report.json", "report.md", "candidate.diff")


@pytest.fixture(autouse=True)
def _release_blocked_calls():
    """Whatever a hostile object blocked on returns once the test is over."""
    h.RELEASE.clear()
    yield
    h.RELEASE.set()


def within(seconds: float, fn):
    """fn() in a thread: a hang fails the test instead of stalling the suite."""
    box: dict = {}

    def target():
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the test as is
            box["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds}s: the controller waited on a chooser object"
    if "error" in box:
        raise box["error"]
    return box["value"]


def run(chooser, runs_dir, *, bound_s: float = 180, **kw) -> RunRecord:
    return within(bound_s, lambda: execute_run(resolve("discount-bug"), chooser, backend="local",
                                               runs_dir=runs_dir, **kw))


def journal(run_dir) -> list[dict]:
    return list(read_journal(Path(run_dir) / "journal.jsonl"))


def steps(records) -> list[dict]:
    return [r for r in records if r.get("event") == "step"]


def assert_evidence_kept(record: RunRecord, status: StopReason) -> tuple[list[dict], dict]:
    """The named exit, with the record a person needs: files, a verifying journal, a stop line."""
    assert record.status is status, f"{record.status.value}: {record.detail}"
    assert record.status is not StopReason.AWAITING_RELEASE_CONFIRMATION
    assert record.exit_code == status.exit_code != 0
    run_dir = Path(record.run_dir)
    for name in FILES:
        assert (run_dir / name).is_file(), name
    assert RunRecord.model_validate_json((run_dir / "run.json").read_text()).status is status
    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == status.value and report["release"] is None
    records = journal(run_dir)
    assert verify_chain(records) == []
    stop = records[-1]
    assert stop["event"] == "stop" and stop["status"] == status.value
    assert stop["u_trajectory"] == record.u_trajectory
    return records, report


def bounded(value, limit: int = 10_000) -> bool:
    return len(json.dumps(value)) <= limit


# -- item: the View is a frozen deep copy, never read back -----------------------------------------

def test_a_chooser_that_rewrites_its_views_cannot_change_the_record(runs_dir):
    chooser = h.ViewVandal()
    record = run(chooser, runs_dir)
    assert chooser.landed > 0  # its writes did land, on its own copies
    records, report = assert_evidence_kept(record, StopReason.HANDOFF_REQUESTED)
    assert record.u_trajectory == [3, 3, 3, 3]
    assert [c["satisfied"] for c in report["conditions"]] == [False, False, False]
    target = [e for e in report["evidence"] if e["tool"] == "run_target_test"]
    assert [e["status"] for e in target] == ["failed"] and target[0]["summary"] != "1/1 passed"
    assert [e["id"] for e in report["evidence"]] == ["E1", "E2"]
    typed = read_records(Path(record.run_dir) / "journal.jsonl")
    for step, typed_step in zip(steps(records), [r for r in typed if isinstance(r, StepRecord)]):
        # What the chooser was shown, journaled before it could touch it (its evidence by id).
        view = typed_step.view.view(evidence_by_id(typed)).model_dump(mode="json")
        assert view["u"] == 3 and not any(c["satisfied"] for c in view["conditions"])
        assert [s["name"] for s in view["action_schema"]] == list(TOOL_NAMES)
        assert all(not e["data"].get("ok") for e in view["evidence"] if e["tool"] == "run_target_test")
        assert not any(c["satisfied"] for c in step["state_after"]["conditions"])
        assert step["state_after"]["goal"]["target_tests"] and step["state_after"]["authorization"]["protected"]
    assert not any(c["satisfied"] for c in records[-1]["state_after"]["conditions"])
    assert (Path(record.run_dir) / "candidate.diff").read_text() == ""


def test_a_chooser_cannot_widen_its_allowed_tools_through_the_view(runs_dir):
    record = run(h.WidensItsAllowedTools(), runs_dir, max_steps=2, reserved_final_steps=1)
    records, report = assert_evidence_kept(record, StopReason.STEP_BUDGET)
    assert "reserved" in record.detail and "search was not allowed" in record.detail
    first, second = steps(records)
    assert first["decision"]["accepted"] is True
    assert second["decision"]["accepted"] is False and "result" not in second
    assert second["view"]["allowed_tools"] == ["stop"]
    assert [e["id"] for e in report["evidence"]] == ["E1"]


class FrozenProbe:
    """Tries plain assignment on every nested model of the View and keeps what it was handed."""

    name = "frozen-probe"

    def __init__(self):
        self.views, self.accepted = [], []

    def choose(self, view):
        self.views.append(view)
        targets = [(view, "u", 0), (view.goal, "text", "x"), (view.authorization, "writable", ("**",))]
        targets += [(c, "satisfied", True) for c in view.conditions]
        targets += [(e, "status", "ok") for e in view.evidence]
        for obj, field, value in targets:
            try:
                setattr(obj, field, value)
                self.accepted.append(f"{type(obj).__name__}.{field}")
            except ValidationError:
                pass
        return [h.READ, h.TARGET, h.STOP][min(len(self.views) - 1, 2)]


def test_the_view_is_frozen_all_the_way_down_and_new_every_step(runs_dir):
    probe = FrozenProbe()
    record = run(probe, runs_dir)
    assert_evidence_kept(record, StopReason.HANDOFF_REQUESTED)
    assert probe.accepted == []  # every model in it refuses assignment
    first, second, third = probe.views
    # Nothing is shared between two steps' views (so nothing is shared with the controller either).
    assert third.evidence[0] is not second.evidence[0]
    assert third.evidence[0].data is not second.evidence[0].data
    assert third.conditions[0] is not second.conditions[0]
    assert third.action_schema[0] is not first.action_schema[0]
    assert third.goal is not first.goal and third.authorization is not first.authorization


# -- item: every chooser-supplied object is read as plain data, under the time limit -----------------

UNREADABLE = {
    "object-whose-every-method-raises": h.Bomb,
    "raising-value-inside-a-dict": lambda: {"tool": "stop", "reason": h.Bomb()},
    "model-whose-model_dump-raises": h.BombModel,
    "raising-value-in-a-list": lambda: [h.Bomb(), {"tool": "stop"}],
}


@pytest.mark.parametrize("make", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_proposal_that_raises_when_read_is_invalid_action_with_a_bounded_record(runs_dir, make):
    record = run(h.ProposesObject(make), runs_dir)
    records, report = assert_evidence_kept(record, StopReason.INVALID_ACTION)
    assert record.steps_used == 1 and record.u_trajectory == [3, 3]
    (step,) = steps(records)
    assert step["decision"]["accepted"] is False and step["decision"]["exit"] == "invalid_action"
    assert bounded(step["proposal"]) and bounded(records[-1]["extra"]["raw"])
    assert "proposal" in record.detail


BLOCKING = {
    "model_dump-never-returns": h.BlockingModel,
    "value-whose-str-never-returns": lambda: {"tool": "stop", "reason": h.Sleeper()},
}


@pytest.mark.parametrize("make", BLOCKING.values(), ids=BLOCKING.keys())
def test_a_proposal_that_blocks_when_read_cannot_overrun_the_deadline(runs_dir, make):
    record = run(h.ProposesObject(make), runs_dir, deadline_s=4, bound_s=90)
    records, _ = assert_evidence_kept(record, StopReason.INVALID_ACTION)
    assert record.timing["loop_s"] < 4 + 2, record.timing  # the chooser's time, not the controller's
    assert record.timing["chooser_s"] >= 3
    assert "could not be read within" in record.detail
    assert bounded(steps(records)[0]["proposal"]) and bounded(records[-1]["extra"]["raw"])


def test_through_the_cli_a_blocking_model_dump_keeps_the_deadline(tmp_path):
    """The reported case: a proposal whose model_dump blocks, `--deadline 5`."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tests'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "--runs-dir", str(tmp_path / "runs"), "run",
                           "discount-bug", "--sandbox", "local", "--chooser", "hostile_objects:proposes_blocking_model",
                           "--deadline", "5", "--json"], capture_output=True, text=True, env=env, timeout=120)
    elapsed = time.monotonic() - started
    out = json.loads(proc.stdout)
    assert proc.returncode == 15 and out["status"] == "invalid_action", proc.stderr[-2000:]
    assert out["timing"]["loop_s"] < 5 + 2 and elapsed < 60
    assert "Traceback" not in proc.stderr
    assert journal(out["run_dir"])[-1]["status"] == "invalid_action"


def test_a_proposal_read_twice_differently_is_journaled_as_it_was_executed(runs_dir):
    """A dict subclass that shows the real proposal to the first reader only: one read, of plain data."""
    record = run(h.ProposesObject(lambda: h.ShiftyDict(h.READ, h.STOP)), runs_dir)
    records, _ = assert_evidence_kept(record, StopReason.REPEATED_ACTION)
    first = steps(records)[0]
    assert first["proposal"] == h.READ
    assert first["decision"]["action"] == {**h.READ, "start_line": None, "end_line": None}
    assert first["result"]["tool"] == "read_file"


def test_lying_strings_are_judged_by_their_characters(runs_dir):
    escape = "../../../etc/passwd"
    record = run(h.ProposesObject(lambda: {"tool": h.LyingStr("read_file"), "path": h.LyingStr(escape)}), runs_dir)
    records, _ = assert_evidence_kept(record, StopReason.AUTHORIZATION_REQUIRED)
    assert steps(records)[0]["proposal"] == {"tool": "read_file", "path": escape}
    assert records[-1]["extra"]["asked"] == escape


@pytest.mark.parametrize("chooser_cls, deadline", [(h.NumberName, None), (h.RaisingName, None),
                                                   (h.BlockingName, 4)], ids=["int", "raises", "blocks"])
def test_a_chooser_whose_name_is_unusable_ends_cleanly(runs_dir, chooser_cls, deadline):
    record = run(chooser_cls(), runs_dir, deadline_s=deadline, bound_s=90)
    records, report = assert_evidence_kept(record, StopReason.DEPENDENCY_FAILURE)
    assert "name" in record.detail and record.steps_used == 0
    assert isinstance(record.chooser, str) and isinstance(report["chooser"], str)
    assert not steps(records)


@pytest.mark.parametrize("chooser_cls, deadline", [(h.RaisingDescription, None), (h.BlockingDescription, 4)],
                         ids=["raises", "blocks"])
def test_a_chooser_whose_description_is_unreadable_ends_cleanly(runs_dir, chooser_cls, deadline):
    record = run(chooser_cls(), runs_dir, deadline_s=deadline, bound_s=90)
    records, _ = assert_evidence_kept(record, StopReason.DEPENDENCY_FAILURE)
    assert "describe()" in record.detail and record.steps_used == 0 and not steps(records)


def test_a_choose_attribute_that_blocks_is_bounded_by_the_deadline(runs_dir):
    record = run(h.BlockingChooseAttribute(), runs_dir, deadline_s=4, bound_s=90)
    assert_evidence_kept(record, StopReason.DEADLINE)
    assert record.timing["loop_s"] < 4 + 2


def test_an_unreadable_usage_record_is_invalid_action(runs_dir):
    record = run(h.RaisingUsage(), runs_dir)
    records, _ = assert_evidence_kept(record, StopReason.INVALID_ACTION)
    assert "usage" in record.detail and record.steps_used == 1
    assert bounded(records[-1]["extra"]["raw"])


def test_a_call_record_that_blocks_is_bounded_by_the_deadline(runs_dir):
    record = run(h.BlockingCall(), runs_dir, deadline_s=4, bound_s=90)
    assert_evidence_kept(record, StopReason.INVALID_ACTION)
    assert "call record" in record.detail and record.timing["loop_s"] < 4 + 2


def test_a_huge_call_record_is_kept_bounded_and_the_run_goes_on(runs_dir):
    record = run(h.HugeCall(), runs_dir)
    records, _ = assert_evidence_kept(record, StopReason.HANDOFF_REQUESTED)
    for step in steps(records):
        call = step["chooser_call"]
        assert call["capped"] is True and call["chars"] > 12_000_000 and len(json.dumps(call)) < 100_000
    assert (Path(record.run_dir) / "journal.jsonl").stat().st_size < 2_000_000


def test_a_lying_token_count_is_counted_as_the_number_it_holds(runs_dir):
    record = run(h.LyingTokens(), runs_dir, max_tokens=1_500_000)
    records, _ = assert_evidence_kept(record, StopReason.STEP_BUDGET)
    assert "token budget" in record.detail and record.steps_used == 2
    assert [type(s["usage"]["total_tokens"]) for s in steps(records)] == [int, int]
    assert records[-1]["state_after"]["budget"]["tokens_used"] == 2_000_000


def test_a_chooser_raising_system_exit_is_a_chooser_error_with_its_traceback(runs_dir):
    record = run(h.SystemExiter(), runs_dir)
    records, _ = assert_evidence_kept(record, StopReason.CHOOSER_ERROR)
    assert "SystemExit" in record.detail and record.exit_code == 19
    assert "raise SystemExit(0)" in records[-1]["extra"]["traceback"]


def test_a_chooser_error_whose_text_blocks_is_bounded(runs_dir):
    record = run(h.UnreadableError(), runs_dir, deadline_s=4, bound_s=90)
    assert_evidence_kept(record, StopReason.CHOOSER_ERROR)
    assert record.timing["loop_s"] < 4 + 2


# -- item: verify_chain sees a state rewritten between two steps -----------------------------------

def rewrite_journal(path: Path, edit) -> None:
    """Apply edit(records) and re-chain every line's hashes, as a forger with the file would."""
    records = list(read_journal(path))
    edit(records)
    last = None
    lines = []
    for rec in records:
        rec = {k: v for k, v in rec.items() if k != "record_sha256"}
        rec["prev_record_sha256"] = last
        rec["record_sha256"] = last = record_hash(rec)
        lines.append(json.dumps(rec, sort_keys=True, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_state_rewritten_between_steps_breaks_the_chain(runs_dir, tmp_path):
    """What a chooser holding the controller's own condition objects did: from step 2 on, every
    state says the conditions hold; each line is consistent in itself and chained to the one before."""
    record = run(h.ProposesObject(lambda: h.READ), runs_dir)  # read, then the same read: repeated_action
    assert record.status is StopReason.REPEATED_ACTION
    forged = tmp_path / "forged"
    shutil.copytree(record.run_dir, forged, ignore=shutil.ignore_patterns("workspace", "verifier", "outputs"))

    def forge(records):
        target = [r for r in records if r.get("event") == "step"][-1]
        index = records.index(target)
        # The rewrite: this step starts from a state where all holds.
        previous = copy.deepcopy(records[index - 1]["state_after"])
        for c in previous["conditions"]:
            c["satisfied"] = True
        for rec in records[index:]:
            if rec.get("state_before_hash") is not None:
                rec["state_before_hash"] = state_hash(previous)
            if rec.get("state_after") is not None:
                after = rec["state_after"]
                if after["version"] == previous["version"]:
                    after = rec["state_after"] = copy.deepcopy(previous)
                else:
                    after["conditions"] = copy.deepcopy(previous["conditions"])
                    after["parent_hash"] = state_hash(previous)
                rec["state_after_hash"] = state_hash(after)
                if "u" in rec:
                    rec["u"] = 0
                previous = after

    rewrite_journal(forged / "journal.jsonl", forge)
    problems = verify_chain(list(read_journal(forged / "journal.jsonl")))
    # Every line's own hashes recompute: the seam between two lines gives the rewrite away.
    assert problems and "state_before_hash" in problems[0] and \
        "is not the state the line before ended in" in problems[0], problems
    proc = subprocess.run([sys.executable, "-m", "repair_agent", "replay", str(forged)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 1 and "hash chain: BROKEN" in proc.stdout
    with pytest.raises(ResumeRefused, match="does not verify"):
        load_checkpoint(forged)


# -- item: release applies the bytes it verified, on the run's image --------------------------------

def local_baseline_run(runs_dir) -> RunRecord:
    record = run(BaselineChooser(resolve("discount-bug").baseline), runs_dir)
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    return record


def assert_nothing_released(run_dir: Path) -> None:
    assert not (run_dir / "release.json").exists()
    assert not (run_dir / "release").exists()


def backdoored(diff: str) -> str:
    """The verified diff plus a new file: what a swap would smuggle into the commit."""
    return diff + ("diff --git a/src/discount_shop/backdoor.py b/src/discount_shop/backdoor.py\n"
                   "new file mode 100644\n--- /dev/null\n+++ b/src/discount_shop/backdoor.py\n"
                   "@@ -0,0 +1 @@\n+OWNED = True\n")


def test_release_commits_the_verified_bytes_even_if_the_file_is_swapped_meanwhile(runs_dir):
    record = local_baseline_run(runs_dir)
    run_dir = Path(record.run_dir)
    candidate = run_dir / "candidate.diff"
    verified = candidate.read_bytes()
    swapped = threading.Event()

    def swap_once_verification_starts():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (run_dir / "release-verification").exists():
            time.sleep(0.005)
        tmp = run_dir / ".swap.diff"
        tmp.write_text(backdoored(verified.decode()))
        os.replace(tmp, candidate)  # an atomic swap: a reader sees one file or the other
        swapped.set()

    swapper = threading.Thread(target=swap_once_verification_starts, daemon=True)
    swapper.start()
    decision = within(300, lambda: release.confirm(run_dir))
    swapper.join(5)
    assert swapped.is_set()
    assert "backdoor" in candidate.read_text()  # the swap really happened, during verification
    repo = git.Repo(decision["clone"])
    assert repo.git.diff("HEAD~1", "HEAD", "--name-only").split() == ["src/discount_shop/pricing.py"]
    assert not (Path(decision["clone"]) / "src/discount_shop/backdoor.py").exists()
    saved = json.loads((run_dir / "release.json").read_text())
    assert saved["diff_sha256"] == record.diff_sha256 == diff_sha256(verified.decode())
    assert saved["environment_id"] == json.loads((run_dir / "run.json").read_text())["environment_id"]


def test_release_refuses_a_run_whose_journal_did_not_end_awaiting(runs_dir):
    """run.json edited to awaiting_release_confirmation on a run that handed off with the real fix
    applied but never tested: re-verification alone would pass it, the journal does not."""
    from hostile_choosers import fix_diff

    chooser = _PatchThenStop(fix_diff())
    record = run(chooser, runs_dir)
    assert record.status is StopReason.HANDOFF_REQUESTED and record.u_trajectory[-1] == 3
    run_dir = Path(record.run_dir)
    forged = json.loads((run_dir / "run.json").read_text())
    forged.update(status="awaiting_release_confirmation", exit_code=0)
    (run_dir / "run.json").write_text(json.dumps(forged, indent=2))
    with pytest.raises(release.ReleaseRefused, match="SealBroken: changed since the run was sealed: run.json"):
        within(300, lambda: release.confirm(run_dir))
    # Sealed again with the user's own key (someone running as the user): the journal still refuses.
    seal_run(run_dir)
    with pytest.raises(release.ReleaseRefused, match="journal"):
        within(300, lambda: release.confirm(run_dir))
    assert_nothing_released(run_dir)


class _PatchThenStop:
    name = "patch-then-stop"

    def __init__(self, diff: str):
        self.script, self.calls = [{"tool": "apply_patch", "diff": diff}, h.STOP], 0

    def choose(self, view):
        self.calls += 1
        return self.script[min(self.calls - 1, 1)]


@pytest.fixture(scope="module")
def docker_awaiting(docker_client, sandbox_image, tmp_path_factory) -> RunRecord:
    """One baseline run in Docker awaiting confirmation; each test releases a copy of it."""
    record = execute_run(resolve("discount-bug"), BaselineChooser(resolve("discount-bug").baseline),
                         backend="docker", runs_dir=tmp_path_factory.mktemp("docker-release") / "runs",
                         client=docker_client)
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    return record


def copy_run(record: RunRecord, where: Path) -> Path:
    target = where / record.run_id
    shutil.copytree(record.run_dir, target, ignore=shutil.ignore_patterns("workspace", "verifier", "outputs",
                                                                       "release*"))
    data = json.loads((target / "run.json").read_text())
    data["run_dir"] = str(target)
    (target / "run.json").write_text(json.dumps(data, indent=2))
    return target


def record_image(run_dir: Path, *, image: str | None = None, environment_id: str | None = None) -> None:
    """Say the run was made on another image, in run.json and (re-chained) in the journal."""
    def edit(records):
        for rec in records:
            if rec.get("event") == "setup":
                rec.update({k: v for k, v in (("image", image), ("environment_id", environment_id)) if v})

    rewrite_journal(run_dir / "journal.jsonl", edit)
    data = json.loads((run_dir / "run.json").read_text())
    data.update({k: v for k, v in (("image", image), ("environment_id", environment_id)) if v})
    (run_dir / "run.json").write_text(json.dumps(data, indent=2))
    # Sealed again with the user's key: these tests stand for the machine's images changing after
    # a run, not for a rewritten run directory (tests/test_hostile_host.py has those).
    seal_run(run_dir)


def derived_image(client, base: str, tag: str) -> str:
    """A new image (the sandbox image plus a label) under a tag of this test's own; its id."""
    dockerfile = f"FROM {base}\nLABEL org.repair-agent.test={tag.replace(':', '-')}\n".encode()
    image, _ = client.images.build(fileobj=io.BytesIO(dockerfile), tag=tag, rm=True)
    return image.id


@pytest.mark.docker
def test_release_refuses_when_the_runs_image_is_gone(docker_awaiting, docker_client, sandbox_image, tmp_path):
    tag = f"repair-agent-test-gone:{os.getpid()}"
    gone = derived_image(docker_client, sandbox_image, tag)
    docker_client.images.remove(tag)  # our own image: built and removed by this test
    run_dir = copy_run(docker_awaiting, tmp_path)
    record_image(run_dir, environment_id=f"docker:{gone}")
    with pytest.raises(release.ReleaseRefused) as refused:
        within(300, lambda: release.confirm(run_dir))
    message = str(refused.value)
    assert gone[:19] in message and "not present" in message
    assert_nothing_released(run_dir)


@pytest.mark.docker
def test_release_verifies_on_the_runs_image_when_its_tag_moved(docker_awaiting, docker_client, sandbox_image,
                                                               tmp_path):
    """The run's tag now names another image: release re-verifies on the image the run used."""
    run_image = docker_client.images.get(sandbox_image).id
    tag = f"repair-agent-test-moved:{os.getpid()}"
    moved = derived_image(docker_client, sandbox_image, tag)
    try:
        assert moved != run_image
        run_dir = copy_run(docker_awaiting, tmp_path)
        record_image(run_dir, image=tag)
        decision = within(300, lambda: release.confirm(run_dir))
        saved = json.loads((run_dir / "release.json").read_text())
        assert saved["environment_id"] == f"docker:{run_image}" == docker_awaiting.environment_id
        assert saved["image_id"] == run_image
        assert saved["diff_sha256"] == docker_awaiting.diff_sha256
        assert decision["decision"] == "confirmed"
    finally:
        docker_client.images.remove(tag)
