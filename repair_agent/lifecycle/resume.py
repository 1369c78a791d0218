"""Resuming a run, all of it here: every stop is a checkpoint read back from the journal, a
person's grant widens A, and a resumed controller re-earns its verdicts before its first new step.

The journal is the only source: its last complete line is the checkpoint (a torn line after it
is set aside and reported), its hash chains must verify, and what it says decides whether the
run may continue at all.

Kept in one module: resuming is one idea (checkpoint, grant, rebuilt session, resumed controller)
that was spread over three; every part of it is here and nowhere else.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import getpass
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from verifier import ScopeVerdict, TestVerdict, Verifier, check_scope, diff_sha256, unsatisfied

from ..loop.actions import CHECK_TOOLS, Action, ApplyPatch, InvalidAction, ReplaceInFile, parse_action
from ..choosers.base import Chooser, ChooserDescription, ChooserStep, DeadlineAware
from ..loop.controller import CHOOSER_TIMEOUT_S, Controller
from ..loop.loop_state import LoopState
from ..loop.journal import (GrantRecord, Journal, JournalRecord, ResumeRecord, Reverified, SetupRecord, StartRecord, StepRecord, StopRecord,
                            TornTail, parse_record, read_journal, set_aside_torn_tail, verify_chain)
from .outputs import write_results
from ..loop.plain import read_description
from ..reports.records import RunRecord, load_record
from .run import early_stop
from ..sandbox.backends import backend_named
from ..sandbox.leftovers import pid_alive
from .session import Session
from ..loop.state import Evidence, Grant, State, StepProgress, StopReason, View
from ..loop.tools import Executor, ToolOutcome
from ..loop.usage import CostLimit, model_record, summarize_usage

RESUMABLE = (StopReason.STEP_BUDGET, StopReason.DEADLINE, StopReason.DEPENDENCY_FAILURE,
             StopReason.AUTHORIZATION_REQUIRED, StopReason.HANDOFF_REQUESTED, StopReason.COST_BUDGET,
             StopReason.CHOOSER_ERROR)
KILLED = "killed"  # the journal ends without a stop line: SIGKILL, power loss


class ResumeRefused(ValueError):
    """This run cannot be continued (or granted); the message says why. Nothing was changed."""


class Checkpoint(BaseModel):
    """A run as its journal leaves it: enough for a controller to continue from."""

    run_dir: str
    status: str                      # a StopReason value, or "killed"
    detail: str
    state: State                     # the last journaled state version
    evidence: list[Evidence]
    actions: dict[str, Action]       # evidence id -> the action that produced it, as decided
    last_canonical: str | None
    u_trajectory: list[int]
    patches: list[str]               # accepted, applied patches in order: pristine + these = the diff
    refused_proposal: Any = None     # the proposal an authorization_required stop refused, as proposed
    refused_diff: str | None = None  # the diff that stop refused (replace_in_file's: the one it became)
    refused_step: int | None = None
    grants_since_stop: list[Grant] = []
    setup: SetupRecord               # the first session's setup line (scenario, chooser, sandbox)
    owner_pids: list[int]            # every session's process: their leftover containers are removed
    released: bool = False
    endpoint_failed: bool = False    # it stopped because the model's endpoint failed, not the model
    max_cost: float | None = None    # the latest session's --max-cost
    cost_spent: float = 0.0          # what its steps cost, priced from the models file
    torn: TornTail | None = None
    lines: int


def load_checkpoint(run_dir: Path, *, set_aside_torn: bool = True) -> Checkpoint:
    run_dir = Path(run_dir)
    path = run_dir / "journal.jsonl"
    torn = set_aside_torn_tail(path) if set_aside_torn else None
    lines = list(read_journal(path))
    problems = verify_chain(lines)
    if problems:
        raise ResumeRefused(f"{path}: the journal does not verify, nothing resumes from it: " + "; ".join(problems[:3]))
    records = [parse_record(line) for line in lines]
    setups = [r for r in records if isinstance(r, SetupRecord)]
    stated = [r for r in records if isinstance(r, (StartRecord, StepRecord, ResumeRecord, GrantRecord, StopRecord))]
    if not setups or not stated:
        raise ResumeRefused(f"{path}: the run stopped before its first step could be recorded "
                            "(no setup or state line); start a new run instead")
    evidence: list[Evidence] = []
    actions: dict[str, Any] = {}
    patches: list[str] = []
    u_trajectory: list[int] = []
    status, detail, last_canonical = KILLED, "the journal ends without a stop line (the process was killed)", None
    refused_proposal: Any = None
    refused_step: int | None = None
    refused_diff: str | None = None
    grants: list[Grant] = []
    endpoint_failed = False
    for rec in records:
        if isinstance(rec, StartRecord):
            u_trajectory = [rec.u]
        elif isinstance(rec, ResumeRecord):
            status, detail, grants = KILLED, "the journal ends without a stop line (the process was killed)", []
            if not u_trajectory or rec.u != u_trajectory[-1]:
                u_trajectory.append(rec.u)
        elif isinstance(rec, StepRecord):
            status, detail = KILLED, "the journal ends without a stop line (the process was killed)"
            u_trajectory.append(rec.u)
            last_canonical = rec.last_canonical if "last_canonical" in rec.model_fields_set else last_canonical
            e, action = rec.evidence, rec.decision.action
            if e is not None and action is not None:
                evidence.append(e)
                actions[e.id] = action
                if isinstance(action, ApplyPatch) and e.status == "ok" and rec.decision.accepted:
                    patches.append(action.diff)
                elif isinstance(action, ReplaceInFile) and e.status == "ok" and rec.decision.accepted:
                    patches.append(e.data["applied_diff"])  # the diff it became, applied as it was
            if rec.decision.exit:  # a rejected step is followed by its stop line, unless killed between
                status, detail = rec.decision.exit.value, rec.decision.error or ""
                refused_proposal, refused_step = rec.proposal, rec.step
        elif isinstance(rec, StopRecord):
            status, detail = rec.status.value, rec.detail
            endpoint_failed = rec.status is StopReason.DEPENDENCY_FAILURE and rec.extra.get("infrastructure") is True
            refused_diff = rec.extra.get("raw") if isinstance(rec.extra.get("raw"), str) else None
            u_trajectory = list(rec.u_trajectory or u_trajectory)
        elif isinstance(rec, GrantRecord):
            grants.append(rec.grant)
    if status != StopReason.AUTHORIZATION_REQUIRED.value:
        refused_proposal = refused_step = refused_diff = None
    state = stated[-1].state_after
    return Checkpoint(
        run_dir=str(run_dir), status=status, detail=detail, state=state,
        evidence=evidence, actions=actions, last_canonical=last_canonical,
        u_trajectory=u_trajectory or [state.u], patches=patches,
        refused_proposal=refused_proposal, refused_step=refused_step, refused_diff=refused_diff, grants_since_stop=grants, setup=setups[0],
        owner_pids=[s.pid for s in setups if s.pid], released=(run_dir / "release.json").exists(),
        endpoint_failed=endpoint_failed and status == StopReason.DEPENDENCY_FAILURE.value, torn=torn,
        max_cost=setups[-1].max_cost, cost_spent=summarize_usage(records).cost or 0.0,
        lines=len(records))


def check_resumable(cp: Checkpoint) -> None:
    if cp.released:
        decision = json.loads((Path(cp.run_dir) / "release.json").read_text()).get("decision", "decided")
        raise ResumeRefused(f"run {Path(cp.run_dir).name} was already {decision} by a person; it cannot be resumed")
    if cp.status == StopReason.AWAITING_RELEASE_CONFIRMATION.value:
        raise ResumeRefused(f"run {Path(cp.run_dir).name} is awaiting_release_confirmation: a person confirms or "
                            "rejects it (repair-agent release); there is nothing to resume")
    if cp.status != KILLED and cp.status not in {r.value for r in RESUMABLE}:
        raise ResumeRefused(f"run {Path(cp.run_dir).name} stopped with {cp.status}, which resuming cannot change "
                            f"({cp.detail}); resumable: {', '.join(r.value for r in RESUMABLE)}, or a killed run")


def _who() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry for this uid (some containers)
        return "unknown"


def record_grant(run_dir: Path, allow: list[str], reason: str) -> tuple[Grant, Checkpoint]:
    """`repair-agent grant`: a person widens A for a run that stopped with authorization_required.

    The grant must make the refused proposal acceptable (otherwise it would be refused again on
    resume), and it only ever covers paths a patch may edit: never escapes, `.git`, symlinks,
    binaries or added test infrastructure, and never what the verifier restores before it tests."""
    from ..scenarios.scenario import load_manifest

    cp = load_checkpoint(run_dir)
    if cp.status != StopReason.AUTHORIZATION_REQUIRED.value:
        raise ResumeRefused(f"run {Path(run_dir).name} stopped with {cp.status}, not authorization_required: "
                            "there is nothing to grant")
    if not reason.strip():
        raise ResumeRefused("a grant needs a reason (--reason TEXT)")
    for pattern in allow:
        parts = pattern.split("/")
        if not pattern or pattern.startswith("/") or ".." in parts or ".git" in parts or "\\" in pattern \
                or "\0" in pattern:
            raise ResumeRefused(f"--allow {pattern!r}: a grant names repository paths (globs like "
                                "'README.md' or 'docs/**'), never absolute paths, '..' or .git")
    try:
        action = parse_action(cp.refused_proposal)
    except InvalidAction:
        action = None
    # replace_in_file is granted on the diff it became (re-derived from the same tree on resume).
    diff = action.diff if isinstance(action, ApplyPatch) else \
        cp.refused_diff if isinstance(action, ReplaceInFile) else None
    if diff is None:
        raise ResumeRefused(f"step {cp.refused_step} was refused for {cp.detail!r}; a grant widens the paths a patch "
                            "may edit, which would not allow it")
    from verifier.gate import review

    scenario = load_manifest(Path(cp.setup.manifest))
    spec = scenario.spec
    granted = cp.state.authorization.granted_paths + tuple(allow)
    still = check_scope(diff, spec, granted=granted)
    if not still.ok:
        raise ResumeRefused(f"with this grant the refused patch of step {cp.refused_step} would still be refused "
                            f"for: {'; '.join(still.grants_needed)}. A grant covers 'protected' and 'not-writable' "
                            "paths and code findings ('code:...' keys); escapes, symlinks, binaries, renames, sizes "
                            "and added test infrastructure cannot be granted")
    gate = review(diff, scenario.repo, spec, granted=granted)
    if not gate.ok:
        raise ResumeRefused(f"with this grant the refused patch of step {cp.refused_step} would still need a grant "
                            f"for the code it adds: {'; '.join(gate.grants_needed)} (each is a --allow KEY)")
    grant = Grant(allow=tuple(allow), reason=reason, who=_who(), after_step=cp.refused_step or 0,
                  when=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    after = grant_authorization(cp.state, grant)
    journal = Journal.reopen(Path(run_dir) / "journal.jsonl")
    try:
        journal.write(GrantRecord(grant=grant, waives=[v.model_dump() for v in still.granted]
                                  + [f.model_dump() for f in gate.granted],
                                  state_before_hash=cp.state.hash, state_after=after, state_after_hash=after.hash))
    finally:
        journal.close()
    return grant, cp


def grant_authorization(state: State, grant: Grant) -> State:
    """The controller's rule for a person's grant: A widened by it, as a new state version chained
    to the last. Only `repair-agent grant` (a person) calls this; nothing in the loop can."""
    auth = state.authorization.model_copy(update={"grants": state.authorization.grants + (grant,)})
    return state.model_copy(update={"version": state.version + 1, "parent_hash": state.hash, "authorization": auth})


# -- continuing a run ---------------------------------------------------------------------------

def resume_run(run_dir: Path, *, chooser_spec: str | None = None, extra_steps: int | None = None,
               deadline_s: float | None = None, on_step: Callable[[StepProgress], None] | None = None,
               log: Callable[[str], None] = lambda m: None, client=None, runs_dir: Path = Path("runs"),
               model_options: dict | None = None, more_cost: float | None = None) -> RunRecord:
    """Continue a run from its journal: same journal, same run directory, the same writers at the end.
    `more_cost`: what this resume may spend beyond what was spent (default: the run's --max-cost holds).

    The workspace is rebuilt from the pristine tree plus the journaled patches (its diff must hash
    to the journaled one); the dead session's containers are removed first."""
    from ..choosers import load_chooser
    from ..scenarios.scenario import load_manifest

    t0 = time.monotonic()
    run_dir = Path(run_dir).resolve()
    with _exclusive(run_dir):
        checkpoint = load_checkpoint(run_dir)
        if checkpoint.torn:
            log(f"journal: a torn last line ({checkpoint.torn.bytes} bytes after line {checkpoint.torn.after_line}) "
                f"was set aside in {checkpoint.torn.kept_at}")
        check_resumable(checkpoint)
        live = [pid for pid in checkpoint.owner_pids if pid != os.getpid() and pid_alive(pid)]
        if checkpoint.status == "killed" and live:
            raise ResumeRefused(f"run {run_dir.name} has no stop line and its process {live[-1]} is still alive: "
                                "it is still running")
        budget = checkpoint.state.budget
        # The step whose endpoint failed got no answer from the model: it is given back, so the
        # model has the steps it would have had had the endpoint answered.
        steps = extra_steps if extra_steps is not None else budget.steps_left + checkpoint.endpoint_failed
        if steps < 1:
            raise ResumeRefused(f"run {run_dir.name} used all {budget.max_steps} steps: say how many more this resume "
                                "grants (--max-steps N)")
        setup = checkpoint.setup
        max_cost = checkpoint.max_cost if more_cost is None else round(checkpoint.cost_spent + more_cost, 6)
        if checkpoint.status == StopReason.COST_BUDGET.value and more_cost is None:
            raise ResumeRefused(f"run {run_dir.name} spent its cost budget ({checkpoint.cost_spent:g} of "
                                f"{checkpoint.max_cost:g}): say how much more this resume may spend (--max-cost USD)")
        scenario = load_manifest(Path(setup.manifest))
        spec = chooser_spec or setup.chooser_spec
        if not spec:
            raise ResumeRefused("the journal does not name the chooser this run used: pass --chooser")
        options = dict(model_options or {})
        if not options.get("models_file") and setup.models_file and spec == setup.chooser_spec:
            # model:NAME resolves where it did at the start. A path read back from the run directory
            # is not the person's word: it may name a key only if it is their config directory's.
            from ..choosers.models_file import ModelsFile, config_models_file

            journaled = Path(setup.models_file)
            options["models_file"] = ModelsFile(
                path=journaled, origin="config" if journaled == config_models_file().resolve() else "cwd")
        chooser = load_chooser(spec, scenario, seed=setup.seed or 0, **options)
        started_at = setup.started_at or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        session = Session(scenario, run_dir, setup.run_id, backend_named(setup.sandbox), client, log,
                          runs_dir=Path(runs_dir))
        session.remove_containers_of(checkpoint.owner_pids)
        journal = Journal.reopen(run_dir / "journal.jsonl")
        identity = ChooserDescription(name=spec)
        try:
            try:
                identity = read_description(chooser, min(CHOOSER_TIMEOUT_S, deadline_s or budget.deadline_s), spec)
                shutil.rmtree(run_dir / "workspace", ignore_errors=True)  # derived: the journal is the record
                session.open(granted=checkpoint.state.authorization.granted_paths)
                sandbox, verifier = session.live
                if verifier.snapshot is None or verifier.snapshot.tree_sha256 != setup.pristine_tree_sha256:
                    raise RuntimeError("the scenario's pristine repository changed since the run started; "
                                       "its journaled patches no longer describe a diff of it")
                diff = session.rebuild(checkpoint.patches, checkpoint.state.diff_sha256)
            except Exception as exc:  # nothing new ran: the checkpoint stays as it was, resumable again
                outcome = early_stop(checkpoint.state, journal, session.failure(exc),
                                     u_trajectory=checkpoint.u_trajectory, evidence=checkpoint.evidence,
                                     diff=_known_diff(run_dir, checkpoint.state.diff_sha256))
            else:
                journal.write(session.setup_record(identity, spec, started_at, resumed_from=checkpoint,
                                                   max_cost=max_cost))
                log(f"resuming {run_dir.name} from {checkpoint.status} at step {budget.steps_used}: "
                    f"{len(checkpoint.patches)} journaled patch(es) on the pristine tree, diff {diff_sha256(diff)[:12]}; "
                    f"granting {steps} more step(s) and {deadline_s or budget.deadline_s:g}s")
                controller = resumed_controller(
                    checkpoint, diff, chooser, Executor(sandbox, verifier, mutate=identity.mutation_analysis,
                                                     hidden_tests=session.scenario.hidden_tests is not None,
                                                     goal=session.scenario.goal.text), verifier,
                    journal, environment_id=verifier.environment_id, extra_steps=steps,
                    deadline_s=deadline_s or budget.deadline_s, on_step=on_step,
                    cost_limit=None if max_cost is None else CostLimit(max_cost=max_cost, model=model_record(identity),
                                                                       spent=checkpoint.cost_spent))
                outcome = controller.run()
        finally:
            session.close()
            journal.close()
        previous = load_record(run_dir).wall_s if (run_dir / "run.json").is_file() else 0.0
        return write_results(session, outcome, identity, started_at=started_at,
                              wall_s=previous + time.monotonic() - t0)


@contextlib.contextmanager
def _exclusive(run_dir: Path):
    """One resume of a run at a time."""
    with open(run_dir / ".resume.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ResumeRefused(f"run {run_dir.name} is being resumed by another process") from None
        yield


def _known_diff(run_dir: Path, expected_sha256: str) -> str:
    """The last written candidate.diff, if it is the journaled diff (a killed run may have none)."""
    path = run_dir / "candidate.diff"
    diff = path.read_text(encoding="utf-8", errors="surrogateescape") if path.is_file() else ""
    return diff if diff_sha256(diff) == expected_sha256 else ""


def rebuilt_loop(checkpoint: Checkpoint, diff: str) -> LoopState:
    """The controller's loop record as the journal leaves it, on the rebuilt workspace's `diff`.

    State, evidence, the last canonical action and the Uₜ trajectory are as journaled. Verdicts are
    not trusted from the journal: each is restored unable to satisfy anything (it can still mark a
    condition stale); those that satisfied a condition on the current diff are re-earned before the
    first new step (ResumeOpening). After a person's grant, proposing the refused action again is
    not a repeat."""
    if diff_sha256(diff) != checkpoint.state.diff_sha256:
        raise ValueError("the rebuilt workspace's diff is not the journaled one")
    return LoopState(state=checkpoint.state, diff=diff, evidence=tuple(checkpoint.evidence),
                     verdicts=tuple((e.id, _restored_verdict(e)) for e in checkpoint.evidence if e.tool in CHECK_TOOLS),
                     last_canonical=None if checkpoint.grants_since_stop else checkpoint.last_canonical,
                     u_trajectory=tuple(checkpoint.u_trajectory))


def resumed_controller(checkpoint: Checkpoint, diff: str, chooser: Chooser, executor: Executor,
                       verifier: Verifier, journal: Journal, *, environment_id: str, extra_steps: int,
                       deadline_s: float, on_step: Callable[[StepProgress], None] | None = None,
                       chooser_timeout_s: float = CHOOSER_TIMEOUT_S, cost_limit: CostLimit | None = None) -> Controller:
    """A controller that continues a stopped or killed run from its journal: the loop record rebuilt
    from it (rebuilt_loop), and an opening that re-earns the deciding verdicts and grants the extra
    steps and the new deadline as a new version of B."""
    if tuple(verifier.granted) != checkpoint.state.authorization.granted_paths:
        raise ValueError("the verifier must be built with the run's granted paths")
    reoffer = checkpoint.grants_since_stop and checkpoint.refused_proposal is not None
    if reoffer:
        chooser = _Reoffer(chooser, checkpoint.refused_proposal, checkpoint.refused_step)
    plan = _ResumePlan(checkpoint_status=checkpoint.status, extra_steps=extra_steps, deadline_s=deadline_s,
                       grants=[g.model_dump() for g in checkpoint.grants_since_stop],
                       reoffer_of_step=checkpoint.refused_step if reoffer else None, actions=checkpoint.actions)
    return Controller(rebuilt_loop(checkpoint, diff), chooser, executor, verifier, journal,
                      environment_id=environment_id, on_step=on_step, chooser_timeout_s=chooser_timeout_s,
                      cost_limit=cost_limit, opening=ResumeOpening(plan))


class ResumeOpening:
    """How a resumed run begins: re-earn the verdicts that satisfied a condition on the current diff,
    then record the budget this resume grants as a new version of B. A verdict that cannot be
    re-earned (engine down) ends the run dependency_failure before any budget is granted."""

    def __init__(self, plan: _ResumePlan):
        self.plan = plan

    def __call__(self, before: LoopState, dispatch: Callable[[Action], ToolOutcome],
                 write_journal: Callable[[JournalRecord, str], None]) -> LoopState:
        plan = self.plan
        verdicts, reverified = list(before.verdicts), []
        deciding = dict.fromkeys(c.evidence for c in before.state.conditions if c.satisfied and c.evidence)
        for evidence in (e for e in before.evidence if e.id in deciding and e.tool in CHECK_TOOLS
                         and e.diff_sha256 == before.state.diff_sha256):
            outcome = dispatch(plan.actions[evidence.id])
            if outcome.verdict is not None:  # the latest: it decides its conditions
                verdicts.append((evidence.id, outcome.verdict))
            reverified.append(Reverified(evidence=evidence.id, tool=evidence.tool, journaled_status=evidence.status,
                                         status=outcome.status, summary=outcome.summary,
                                         duration_s=outcome.duration_s))
        budget = before.state.budget.model_copy(update={"max_steps": before.state.budget.steps_used + plan.extra_steps,
                                                        "deadline_s": plan.deadline_s})
        state = before.state.model_copy(update={
            "version": before.state.version + 1, "parent_hash": before.state.hash, "budget": budget,
            "conditions": tuple(unsatisfied(verdicts, before.state.diff_sha256))})
        trajectory = before.u_trajectory + ((state.u,) if state.u != before.u_trajectory[-1] else ())
        write_journal(ResumeRecord(**plan.model_dump(exclude={"actions"}), reverified=reverified,
                                   state_before_hash=before.state.hash, state_after=state,
                                   state_after_hash=state.hash, u=state.u), "the resume")
        return before.advanced(state=state, verdicts=tuple(verdicts), u_trajectory=trajectory)


class _ResumePlan(BaseModel):
    checkpoint_status: str
    extra_steps: int
    deadline_s: float
    grants: list[dict]
    reoffer_of_step: int | None
    actions: dict[str, Action]  # what re-earns a journaled verdict: the same action, dispatched again


def _restored_verdict(evidence: Evidence) -> TestVerdict | ScopeVerdict:
    """A verdict read back from the journal, made unable to satisfy anything: it can still mark a
    condition stale, but only a verdict the verifier gives again in this process can satisfy one."""
    if evidence.tool == "check_diff":
        return ScopeVerdict.model_validate(evidence.data).model_copy(update={"ok": False})
    data = {k: v for k, v in evidence.data.items() if k != "pytest"}
    return TestVerdict.model_validate(data).model_copy(update={"ok": False, "targets_ok": False})


class ReofferCall(BaseModel):
    """The call record of a re-offered step: no chooser was asked."""

    reoffer_of_step: int | None
    note: str = "re-offered after a person's grant"


class _Reoffer:
    """After a person's grant, the proposal refused for lack of it comes back once, before the
    chooser is asked again. It is validated and authorized like any proposal."""

    def __init__(self, chooser: Chooser, proposal: Any, refused_step: int | None):
        self._inner, self._proposal, self._refused_step = chooser, proposal, refused_step

    def describe(self) -> ChooserDescription:
        return self._inner.describe()  # the run described the inner chooser at setup

    def set_deadline(self, deadline: float) -> None:
        if isinstance(self._inner, DeadlineAware):  # optional
            self._inner.set_deadline(deadline)

    def choose(self, view: View) -> Any:
        if self._proposal is not None:
            proposal, self._proposal = self._proposal, None
            return ChooserStep(proposal=proposal, call=ReofferCall(reoffer_of_step=self._refused_step))
        return self._inner.choose(view)  # read by the controller as the chooser's own answer
