"""The controller: the only role holding budget, authorization and history. It validates,
authorizes, dispatches, records and stops; the chooser's "done" is only a prediction."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel

from verifier import (EngineFailure, ScopeVerdict, TestVerdict, Verifier, VerifierCompromised, check_scope,
                      diff_sha256, unsatisfied)

from .actions import ACTION_TYPES, ApplyPatch, InvalidAction, ReadFile, Search, Stop, parse_action, tool_schemas
from .choosers.base import Chooser
from .journal import Journal, JournalWriteError
from .plain import ChooserReply, call_with_timeout, consult
from .sandbox import SandboxError
from .state import (NEXT_ATTEMPT, ConditionState, Evidence, Grant, HistoryEntry, State, StopReason, View)
from .tools import Executor, ToolOutcome

if TYPE_CHECKING:
    from .resume import Checkpoint

MAX_OBSERVATION_CHARS = 16_000  # what one observation may put in front of the chooser
CHOOSER_TIMEOUT_S = 300.0


class Stopped(Exception):
    def __init__(self, reason: StopReason, detail: str, extra: dict | None = None):
        super().__init__(detail)
        self.reason, self.detail, self.extra = reason, detail, extra or {}


class RunOutcome(BaseModel):
    status: StopReason
    detail: str
    next_attempt: str
    steps_used: int
    max_steps: int
    u_trajectory: list[int]
    diff: str
    diff_sha256: str
    evidence: list[Evidence]
    final_state: State
    extra: dict[str, Any] = {}
    timing: dict[str, float] = {}

    def final_test_evidence(self) -> Evidence | None:
        """The last test verdict on the final diff: what correctness and held-out detail come from."""
        return next((e for e in reversed(self.evidence) if e.tool in ("run_target_test", "run_full_suite")
                     and e.diff_sha256 == self.diff_sha256), None)


class Controller:
    def __init__(self, state: State, chooser: Chooser, executor: Executor, verifier: Verifier, journal: Journal,
                 *, environment_id: str, on_step: Callable[[dict], None] | None = None,
                 chooser_timeout_s: float = CHOOSER_TIMEOUT_S):
        self.state, self.chooser, self.executor, self.verifier = state, chooser, executor, verifier
        self.committed = state  # the last versioned, journaled state; self.state is the working copy
        self.journal, self.environment_id, self.on_step = journal, environment_id, on_step or (lambda _: None)
        self.chooser_timeout_s = chooser_timeout_s
        self.diff = ""
        self.evidence: list[Evidence] = []
        self.verdicts: list[tuple[str, Any]] = []
        self.fingerprints: dict[str, str] = {}  # fingerprint -> result hash
        self.last_canonical: str | None = None
        self.u_trajectory = [state.u]
        self.started = time.monotonic()
        self.timing = {"chooser_s": 0.0, "tools_s": 0.0, "journal_s": 0.0}  # the rest is the controller's own
        self.resume: _ResumePlan | None = None  # set only by from_checkpoint

    @classmethod
    def from_checkpoint(cls, checkpoint: "Checkpoint", diff: str, chooser: Chooser, executor: Executor,
                        verifier: Verifier, journal: Journal, *, environment_id: str, extra_steps: int,
                        deadline_s: float, on_step: Callable[[dict], None] | None = None,
                        chooser_timeout_s: float = CHOOSER_TIMEOUT_S) -> "Controller":
        """A controller that continues a stopped or killed run from its journal.

        State, history, evidence, fingerprints, the last canonical action and the Uₜ trajectory are
        restored as journaled. Verdicts are not trusted from the journal: those for other diffs can
        only mark conditions stale, and those that satisfied a condition on the current diff are
        re-earned from the verifier before the first new step (see _resume). The extra steps and
        the new deadline become a new version of B when the run begins."""
        if tuple(verifier.granted) != checkpoint.state.authorization.granted_paths:
            raise ValueError("the verifier must be built with the run's granted paths")
        if diff_sha256(diff) != checkpoint.state.diff_sha256:
            raise ValueError("the rebuilt workspace's diff is not the journaled one")
        ctl = cls(checkpoint.state, chooser, executor, verifier, journal, environment_id=environment_id,
                  on_step=on_step, chooser_timeout_s=chooser_timeout_s)
        ctl.diff = diff
        ctl.evidence = list(checkpoint.evidence)
        ctl.fingerprints = dict(checkpoint.fingerprints)
        ctl.u_trajectory = list(checkpoint.u_trajectory)
        ctl.verdicts = [(e.id, _restored_verdict(e)) for e in checkpoint.evidence if e.tool in _CHECK_TOOLS]
        # A person's grant changed A: proposing the refused action again is not a repeat.
        ctl.last_canonical = None if checkpoint.grants_since_stop else checkpoint.last_canonical
        if checkpoint.grants_since_stop and checkpoint.refused_proposal is not None:
            ctl.chooser = _Reoffer(chooser, checkpoint.refused_proposal, checkpoint.refused_step)
        ctl.resume = _ResumePlan(checkpoint_status=checkpoint.status, extra_steps=extra_steps, deadline_s=deadline_s,
                                 grants=[g.model_dump() for g in checkpoint.grants_since_stop],
                                 reoffer_of_step=checkpoint.refused_step if isinstance(ctl.chooser, _Reoffer) else None)
        return ctl

    # -- the loop: one step = one chooser invocation --------------------------------------------
    def run(self) -> RunOutcome:
        try:
            self._begin()                                        # a fresh start, or a journal checkpoint
            while True:
                self._check_bounds()                             # budget, deadline: before asking
                # Journaled as shown, before the chooser runs: nothing it does can reach these.
                view_text, allowed = self._view()
                before = self.committed
                reply, failure = self._ask(view_text)            # exactly one proposal, as plain data
                self._spend_step(reply.usage)                    # a stop request costs a step too
                record = {"event": "step", "step": self.state.budget.steps_used, "view": json.loads(view_text),
                          "proposal": reply.proposal, "usage": reply.usage, "chooser_call": reply.call,
                          "state_before": self._dump(before), "state_before_hash": before.hash}
                try:
                    if failure:
                        raise failure
                    action = self._validate(reply.proposal, allowed)  # schema, reserve, repeat, authorization
                    record["decision"] = {"accepted": True, "action": action.canonical()}
                    if isinstance(action, Stop):
                        raise Stopped(StopReason.HANDOFF_REQUESTED, action.reason or "the chooser stopped",
                                      {"chooser_summary": action.summary})
                    outcome = self._dispatch(action)             # exactly one tool
                    self._check_deadline(outcome)                # a late observation is refused
                    evidence = self._record(action, outcome)     # evidence, verdicts, Uₜ
                    record["result"] = evidence.model_dump(mode="json")
                    self._check_progress(evidence)               # no_new_evidence
                    if self.state.u == 0:
                        raise Stopped(StopReason.AWAITING_RELEASE_CONFIRMATION,
                                      "every acceptance condition holds on evidence for the current diff; "
                                      "release needs a person")
                except Stopped as stop:
                    # An error event: the rejected proposal stays in the record exactly as proposed.
                    record.setdefault("decision", {"accepted": False, "exit": stop.reason.value, "error": stop.detail})
                    raise
                finally:
                    self._close_step(record)
        except Stopped as stop:
            return self._finish(stop)
        except KeyboardInterrupt:
            # The person at the keyboard ended it: keep the evidence and say so, like any other exit.
            return self._finish(Stopped(StopReason.DEPENDENCY_FAILURE, "interrupted by the user (Ctrl-C)"))

    # -- pieces of the loop ---------------------------------------------------------------------
    def _begin(self) -> None:
        if self.resume is not None:
            return self._resume()
        self._write_journal({"event": "start", "state_after": self._dump(self.state),
                             "state_after_hash": self.state.hash, "u": self.state.u}, "the start of the run")

    def _resume(self) -> None:
        """Re-earn the verdicts that satisfied a condition on the current diff, then record the
        budget this resume grants as a new version of B. A verdict that cannot be re-earned
        (engine down) ends the run dependency_failure before any budget is granted."""
        plan, before = self.resume, self.committed
        if plan is None:
            raise RuntimeError("_resume() without a resume plan")
        reverified = []
        deciding = dict.fromkeys(c.evidence for c in before.conditions if c.satisfied and c.evidence)
        for evidence in (e for e in self.evidence if e.id in deciding and e.tool in _CHECK_TOOLS
                         and e.diff_sha256 == before.diff_sha256):
            outcome = self._dispatch(parse_action(json.loads(evidence.action)))
            self.verdicts.append((evidence.id, outcome.verdict))  # the latest: it decides its conditions
            reverified.append({"evidence": evidence.id, "tool": evidence.tool, "journaled_status": evidence.status,
                               "status": outcome.status, "summary": outcome.summary, "duration_s": outcome.duration_s})
        conditions = tuple(ConditionState(**c.model_dump()) for c in unsatisfied(self.verdicts, before.diff_sha256))
        budget = before.budget.model_copy(update={"max_steps": before.budget.steps_used + plan.extra_steps,
                                                  "deadline_s": plan.deadline_s})
        self.state = self.committed = before.model_copy(update={
            "version": before.version + 1, "parent_hash": before.hash, "budget": budget, "conditions": conditions})
        if self.state.u != self.u_trajectory[-1]:
            self.u_trajectory.append(self.state.u)
        self._write_journal({"event": "resume", **plan.model_dump(), "reverified": reverified,
                             "state_before": self._dump(before), "state_before_hash": before.hash,
                             "state_after": self._dump(self.state), "state_after_hash": self.state.hash,
                             "u": self.state.u}, "the resume")
        if self.state.u == 0:  # killed after the last check, before the stop line: re-earned, so it holds
            raise Stopped(StopReason.AWAITING_RELEASE_CONFIRMATION,
                          "every acceptance condition holds on evidence for the current diff (re-earned on resume); "
                          "release needs a person")

    def _check_bounds(self) -> None:
        b = self.state.budget
        if b.steps_left <= 0:
            raise Stopped(StopReason.STEP_BUDGET, f"all {b.max_steps} steps used")
        if b.max_tokens is not None and b.tokens_used >= b.max_tokens:
            raise Stopped(StopReason.STEP_BUDGET, f"token budget spent: {b.tokens_used} of {b.max_tokens} tokens used")
        if time.monotonic() - self.started >= b.deadline_s:
            raise Stopped(StopReason.DEADLINE, f"deadline of {b.deadline_s:g}s passed before step {b.steps_used + 1}")

    def _view(self) -> tuple[str, tuple[str, ...]]:
        """The View as JSON text (each chooser gets its own objects parsed from it, never ours) and the
        tools it allows, which the controller keeps: it never reads a View back once handed out."""
        b = self.state.budget
        in_reserve = b.reserved_final_steps > 0 and b.exploration_left == 0
        allowed = ("stop",) if in_reserve else tuple(t.model_fields["tool"].default for t in ACTION_TYPES)
        unknowns = [f"{c.description}{' (earlier evidence is stale: the diff changed)' if c.stale else ''}"
                    for c in self.state.conditions if not c.satisfied]
        if not self.diff:
            unknowns.append("no candidate patch yet")
        view = View(step=b.steps_used + 1, state_version=self.state.version, goal=self.state.goal,
                    authorization=self.state.authorization, u=self.state.u, conditions=self.state.conditions,
                    unknowns=tuple(unknowns), evidence=tuple(self.evidence), steps_left=b.steps_left,
                    exploration_left=b.exploration_left, allowed_tools=allowed,
                    action_schema=tuple(t for t in tool_schemas() if t["name"] in allowed),
                    current_diff_sha256=diff_sha256(self.diff), current_diff=self.diff)
        return view.model_dump_json(), allowed

    def _ask(self, view_text: str) -> tuple[ChooserReply, Stopped | None]:
        """One chooser invocation. Everything the chooser supplies is read into plain data in its own
        thread, under one time limit; its failures become the step's outcome, not a crash."""
        remaining = self.state.budget.deadline_s - (time.monotonic() - self.started)
        limit = max(0.0, min(remaining, self.chooser_timeout_s))
        view = View.model_validate_json(view_text)  # the chooser's own copy
        chooser, progress, asked = self.chooser, {"stage": "choose"}, time.monotonic()
        # A chooser that retries inside its step stops a little before this bound, so that its own
        # account of the attempts, not a bare timeout, ends the step.
        deadline = asked + max(0.0, limit - min(1.0, limit * 0.05))

        def ask() -> ChooserReply:
            set_deadline = getattr(chooser, "set_deadline", None)
            if callable(set_deadline):
                set_deadline(deadline)
            return consult(chooser, view, progress)
        try:
            reply = call_with_timeout(ask, limit)
        except TimeoutError:
            return self._late(progress.get("stage", "choose"), limit, remaining)
        finally:
            self.timing["chooser_s"] += time.monotonic() - asked
        if reply.failure is None:
            if self.state.budget.max_tokens is not None and "total_tokens" in reply.usage \
                    and reply.usage["total_tokens"] is None:
                # A token budget that cannot be counted is not a budget: refused at the first such reply.
                return reply, Stopped(
                    StopReason.DEPENDENCY_FAILURE,
                    f"a token budget is set ({self.state.budget.max_tokens}) but the model endpoint reports no "
                    "token usage, so it cannot be enforced; run without --max-tokens, or use an endpoint that "
                    "returns `usage` in its replies",
                    {"raw": reply.call.get("raw") if isinstance(reply.call, dict) else None, "infrastructure": False})
            return reply, None
        reason = _FAILURES[reply.failure]
        extra: dict[str, Any] = {"raw": reply.raw}
        if reply.failure == "unavailable":
            extra["infrastructure"] = reply.infrastructure  # the endpoint failed, not the model's repair
        return reply, Stopped(reason, reply.detail, extra)

    def _late(self, stage: str, limit: float, remaining: float) -> tuple[ChooserReply, Stopped]:
        """The time limit passed. Before choose() returned, it is the chooser's slowness (the deadline,
        or a dead plug-in); after, what it handed over could not be read in time: invalid_action."""
        if stage == "choose":
            reason = StopReason.DEADLINE if remaining <= self.chooser_timeout_s else StopReason.DEPENDENCY_FAILURE
            return ChooserReply(), Stopped(reason, f"the chooser did not answer within {limit:.1f}s")
        placeholder = {"unreadable": stage, "why": f"not read within {limit:.1f}s"}
        if stage == "error":
            return ChooserReply(proposal=placeholder), Stopped(
                StopReason.DEPENDENCY_FAILURE, f"the chooser raised an exception whose text could not be read "
                f"within {limit:.1f}s", {"raw": placeholder})
        what = "proposal" if stage == "proposal" else f"{stage} record"
        return ChooserReply(proposal=placeholder if stage == "proposal" else None), Stopped(
            StopReason.INVALID_ACTION, f"the chooser's {what} could not be read within {limit:.1f}s "
            f"(the time left for this step)", {"raw": placeholder})

    def _spend_step(self, usage: dict) -> None:
        b = self.state.budget
        reported = usage.get("total_tokens")
        tokens = b.tokens_used + (reported if isinstance(reported, int) and reported > 0 else 0)
        self.state = self.state.model_copy(update={"budget": b.model_copy(update={"steps_used": b.steps_used + 1,
                                                                                   "tokens_used": tokens})})

    def _validate(self, raw: Any, allowed: tuple[str, ...]):
        try:
            action = parse_action(raw)
        except InvalidAction as exc:
            raise Stopped(StopReason.INVALID_ACTION, str(exc), {"raw": exc.raw})
        if action.tool not in allowed:
            raise Stopped(StopReason.STEP_BUDGET, f"exploration allowance spent ({self.state.budget.reserved_final_steps} "
                          f"step(s) reserved for the handover); {action.tool} was not allowed, only stop")
        canonical = action.canonical()
        if canonical == self.last_canonical:
            raise Stopped(StopReason.REPEATED_ACTION, f"the same action was proposed twice in a row: {canonical[:200]}")
        self.last_canonical = canonical
        self._authorize(action)
        return action

    def _authorize(self, action) -> None:
        paths = []
        if isinstance(action, ReadFile):
            paths = [action.path]
        elif isinstance(action, Search) and action.path_glob:
            paths = [action.path_glob]
        for path in paths:
            parts = path.split("/")
            if path.startswith(("/", "-")) or ".." in parts or ".git" in parts or "\\" in path:
                raise Stopped(StopReason.AUTHORIZATION_REQUIRED, f"access outside the repository's files: {path!r}",
                              {"asked": path, "grant": "read access beyond the repository's tracked files"})
        if isinstance(action, ApplyPatch):
            verdict = check_scope(action.diff, self.verifier.spec, granted=self.state.authorization.granted_paths)
            if verdict.parse_error or any(v.rule in ("unparsable", "empty") for v in verdict.violations):
                raise Stopped(StopReason.INVALID_ACTION, f"the diff is not a usable unified diff: "
                              f"{verdict.parse_error or verdict.violations[0].detail}", {"raw": action.diff})
            if not verdict.ok:
                raise Stopped(StopReason.AUTHORIZATION_REQUIRED,
                              "the patch needs a grant the run does not have: " + "; ".join(verdict.grants_needed),
                              {"asked": [v.model_dump() for v in verdict.violations], "grant": verdict.grants_needed,
                               "raw": action.diff})

    def _dispatch(self, action) -> ToolOutcome:
        started = time.monotonic()
        try:
            return self.executor.dispatch(action, self.diff)
        except (EngineFailure, SandboxError) as exc:
            raise Stopped(StopReason.DEPENDENCY_FAILURE, f"sandbox or engine failure: {exc}", {"raw": str(exc)})
        except VerifierCompromised as exc:
            raise Stopped(StopReason.DEPENDENCY_FAILURE, f"verifier compromised: {exc}", {"raw": str(exc)})
        except OSError as exc:  # the host side: a full or read-only runs directory, an I/O error
            raise Stopped(StopReason.DEPENDENCY_FAILURE, f"host I/O failure: {exc}", {"raw": str(exc)})
        finally:
            self.timing["tools_s"] += time.monotonic() - started

    def _check_deadline(self, outcome: ToolOutcome) -> None:
        elapsed = time.monotonic() - self.started
        if elapsed >= self.state.budget.deadline_s:
            raise Stopped(StopReason.DEADLINE, f"the observation arrived after the {self.state.budget.deadline_s:g}s "
                          f"deadline ({elapsed:.1f}s) and was refused", {"late_observation": outcome.summary})

    def _record(self, action, outcome: ToolOutcome) -> Evidence:
        if outcome.new_diff is not None:
            self.diff = outcome.new_diff
        current = diff_sha256(self.diff)
        output = outcome.output
        if len(output) > MAX_OBSERVATION_CHARS:
            output = output[:MAX_OBSERVATION_CHARS] + f"\n[observation capped at {MAX_OBSERVATION_CHARS} characters]"
        result_sha = hashlib.sha256(json.dumps([outcome.status, outcome.output, outcome.raw_error,
                                                getattr(outcome.verdict, "ok", None),
                                                getattr(outcome.verdict, "problems", None)],
                                               default=str).encode()).hexdigest()
        # Input (the diff it ran on), check (the canonical action), environment (image/backend).
        fingerprint = hashlib.sha256(f"{current}|{action.canonical()}|{self.environment_id}".encode()).hexdigest()
        evidence = Evidence(id=f"E{len(self.evidence) + 1}", step=self.state.budget.steps_used, tool=action.tool,
                            action=action.canonical(), status=outcome.status, source=outcome.source,
                            started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
                            duration_s=outcome.duration_s, summary=outcome.summary, output=output,
                            raw_error=outcome.raw_error, diff_sha256=current, fingerprint=fingerprint,
                            result_sha256=result_sha, data=outcome.data, localization=outcome.localization)
        self.evidence.append(evidence)
        if outcome.verdict is not None:
            self.verdicts.append((evidence.id, outcome.verdict))
        conditions = tuple(ConditionState(**c.model_dump()) for c in unsatisfied(self.verdicts, current))
        self.state = self.state.model_copy(update={"observation": evidence, "conditions": conditions,
                                                   "diff_sha256": current})
        return evidence

    def _check_progress(self, evidence: Evidence) -> None:
        previous = self.fingerprints.get(evidence.fingerprint)
        self.fingerprints[evidence.fingerprint] = evidence.result_sha256
        if previous == evidence.result_sha256:
            raise Stopped(StopReason.NO_NEW_EVIDENCE,
                          f"{evidence.id} repeats an earlier {evidence.tool} under the same input, check and "
                          f"environment with the same result", {"evidence": evidence.id})

    def _close_step(self, record: dict) -> None:
        decision = record.get("decision", {"accepted": False})
        evidence = record.get("result")
        proposal = record.get("proposal")
        tool = proposal.get("tool") if isinstance(proposal, dict) else None
        tool = tool[:60] if isinstance(tool, str) else "?"  # a label for the history, not the record
        entry = HistoryEntry(step=record["step"], tool=tool,
            decision="accepted" if decision.get("accepted") else "rejected",
            evidence=(evidence or {}).get("id"), status=(evidence or {}).get("status"), u=self.state.u)
        # One new version per step, chained to the version the chooser saw.
        self.state = self.state.model_copy(update={"version": self.committed.version + 1,
                                                   "parent_hash": self.committed.hash,
                                                   "history": self.state.history + (entry,)})
        self.committed = self.state
        self.u_trajectory.append(self.state.u)
        record.update({"state_after": self._dump(self.state), "state_after_hash": self.state.hash,
                       "u": self.state.u, "conditions": [c.model_dump() for c in self.state.conditions],
                       "last_canonical": self.last_canonical})  # what a resume needs for the repeat rule
        written = time.monotonic()
        self._write_journal(record, f"step {record['step']}")
        self.timing["journal_s"] += time.monotonic() - written
        self.on_step({"step": record["step"], "tool": entry.tool, "decision": entry.decision,
                      "status": entry.status, "summary": (evidence or {}).get("summary", ""), "u": self.state.u,
                      "max_steps": self.state.budget.max_steps})

    def _finish(self, stop: Stopped) -> RunOutcome:
        outcome = RunOutcome(status=stop.reason, detail=stop.detail, next_attempt=NEXT_ATTEMPT[stop.reason],
                             steps_used=self.state.budget.steps_used, max_steps=self.state.budget.max_steps,
                             u_trajectory=self.u_trajectory, diff=self.diff, diff_sha256=diff_sha256(self.diff),
                             evidence=self.evidence, final_state=self.state, extra=stop.extra,
                             timing={**{k: round(v, 4) for k, v in self.timing.items()},
                                     "loop_s": round(time.monotonic() - self.started, 4)})
        try:
            self.journal.write({"event": "stop", "status": stop.reason.value, "detail": stop.detail,
                                "next_attempt": outcome.next_attempt, "extra": stop.extra,
                                "steps_used": outcome.steps_used, "u_trajectory": self.u_trajectory,
                                "diff_sha256": outcome.diff_sha256, "state_after": self._dump(self.state),
                                "state_after_hash": self.state.hash})
        except JournalWriteError as exc:
            # An ending the journal cannot show is not an ending anyone may act on: even a
            # would-be awaiting_release_confirmation becomes a dependency failure.
            reason = StopReason.DEPENDENCY_FAILURE
            outcome = outcome.model_copy(update={
                "status": reason, "next_attempt": NEXT_ATTEMPT[reason],
                "detail": f"the journal could not record the stop ({stop.reason.value}: {stop.detail}): {exc}",
                "extra": {**stop.extra, "journal_error": str(exc), "unrecorded_status": stop.reason.value}})
        return outcome

    def _write_journal(self, record: dict, what: str) -> None:
        try:
            self.journal.write(record)
        except JournalWriteError as exc:
            # Earlier lines are intact; this one is lost, and the run must not go on without it.
            raise Stopped(StopReason.DEPENDENCY_FAILURE, f"the journal could not record {what}: {exc}",
                          {"raw": str(exc), "journal_error": str(exc)}) from None

    @staticmethod
    def _dump(state: State) -> dict:
        return state.model_dump(mode="json")


_CHECK_TOOLS = ("run_target_test", "run_full_suite", "check_diff")
_FAILURES = {"token_budget": StopReason.STEP_BUDGET, "malformed": StopReason.INVALID_ACTION,
             "unavailable": StopReason.DEPENDENCY_FAILURE, "raised": StopReason.DEPENDENCY_FAILURE,
             "unreadable": StopReason.INVALID_ACTION}  # a plug-in that raises is a broken dependency


class _ResumePlan(BaseModel):
    checkpoint_status: str
    extra_steps: int
    deadline_s: float
    grants: list[dict]
    reoffer_of_step: int | None


def _restored_verdict(evidence: Evidence) -> TestVerdict | ScopeVerdict:
    """A verdict read back from the journal, made unable to satisfy anything: it can still mark a
    condition stale, but only a verdict the verifier gives again in this process can satisfy one."""
    if evidence.tool == "check_diff":
        return ScopeVerdict.model_validate(evidence.data).model_copy(update={"ok": False})
    data = {k: v for k, v in evidence.data.items() if k != "pytest"}
    return TestVerdict.model_validate(data).model_copy(update={"ok": False, "targets_ok": False})


class _Reoffer:
    """After a person's grant, the proposal refused for lack of it comes back once, before the
    chooser is asked again. It is validated and authorized like any proposal."""

    name = "re-offer"  # the run records the inner chooser's name, read once at setup

    def __init__(self, chooser: Chooser, proposal: Any, refused_step: int | None):
        self._inner, self._proposal, self._refused_step = chooser, proposal, refused_step
        self.last_call: Any = {"reoffer_of_step": refused_step, "note": "re-offered after a person's grant"}
        self.last_usage: dict | None = None

    def set_deadline(self, deadline: float) -> None:
        inner = getattr(self._inner, "set_deadline", None)
        if callable(inner):
            inner(deadline)

    def choose(self, view: View) -> Any:
        if self._proposal is not None:
            proposal, self._proposal = self._proposal, None
            return proposal
        proposal = self._inner.choose(view)
        self.last_call = getattr(self._inner, "last_call", None)
        self.last_usage = getattr(self._inner, "last_usage", None)
        return proposal


def grant_authorization(state: State, grant: Grant) -> State:
    """The controller's rule for a person's grant: A widened by it, as a new state version chained
    to the last. Only `repair-agent grant` (a person) calls this; nothing in the loop can."""
    auth = state.authorization.model_copy(update={"grants": state.authorization.grants + (grant,)})
    return state.model_copy(update={"version": state.version + 1, "parent_hash": state.hash, "authorization": auth})
