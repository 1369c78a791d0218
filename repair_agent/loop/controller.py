"""The controller: the only role holding budget, authorization and history. It validates,
authorizes, dispatches, records and stops; the chooser's "done" is only a prediction."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import time
from typing import Any, Callable, TypeVar

from verifier import EngineFailure, Verifier, VerifierCompromised, check_scope, diff_sha256, unsatisfied

from .actions import (REREAD_WINDOW, REREADABLE_TOOLS, TOOL_NAMES, ApplyPatch, InvalidAction, ReadFile,
                      ReplaceInFile, Search, Stop, TryPatches, parse_action, tool_schemas)
from ..choosers.base import Chooser, DeadlineAware
from .loop_state import LoopState, Opening
from .journal import (Decision, Journal, JournaledView, JournalRecord, JournalWriteError, StartRecord, StepRecord,
                      StopRecord)
from .plain import ChooserReply, call_with_timeout, consult
from .outcome import RunOutcome
from ..sandbox import SandboxError
from .state import (NEXT_ATTEMPT, STALE_SUFFIX, Evidence, HistoryEntry, Observation, State, StepProgress, StopReason,
                    View)
from .tools import MALFORMED_RULES, Edit, Executor, ToolOutcome, malformed_diff, unreadable_candidate
from .usage import CostLimit

T = TypeVar("T")
MAX_OBSERVATION_CHARS = 16_000  # what one observation may put in front of the chooser
CHOOSER_TIMEOUT_S = 300.0


class Stopped(Exception):
    def __init__(self, reason: StopReason, detail: str, extra: dict | None = None):
        super().__init__(detail)
        self.reason, self.detail, self.extra = reason, detail, extra or {}


class Controller:
    def __init__(self, loop: LoopState, chooser: Chooser, executor: Executor, verifier: Verifier, journal: Journal,
                 *, environment_id: str, on_step: Callable[[StepProgress], None] | None = None,
                 chooser_timeout_s: float = CHOOSER_TIMEOUT_S, cost_limit: CostLimit | None = None,
                 opening: Opening | None = None):
        """`loop`: LoopState.start(state) for a fresh run, or the record a resume rebuilt from the
        journal with its `opening`, which then runs in place of the start line."""
        self.cost_limit = cost_limit  # counted here, from each step's usage, like the token budget
        self.chooser, self.executor, self.verifier, self.opening = chooser, executor, verifier, opening
        self.loop = self.committed = loop  # the step under way's record; the last journaled one
        self.journal, self.environment_id, self.on_step = journal, environment_id, on_step or (lambda _: None)
        self.chooser_timeout_s = chooser_timeout_s
        self.started = time.monotonic()
        self.timing = {"chooser_s": 0.0, "tools_s": 0.0, "journal_s": 0.0}  # the rest is the controller's own

    @property
    def state(self) -> State:
        return self.loop.state

    # -- the loop: one step = one chooser invocation --------------------------------------------
    def run(self) -> RunOutcome:
        try:
            self._begin()                                        # a fresh start, or a journal checkpoint
            while True:
                self._check_bounds()                             # budget, deadline: before asking
                # Journaled as shown, before the chooser runs: nothing it does can reach these.
                view, view_text, allowed = self._view()
                before = self.committed.state
                reply, failure = self._ask(view_text)            # exactly one proposal, as plain data
                self._spend_step(reply.usage)                    # a stop request costs a step too
                shown = {"step": self.state.budget.steps_used, "view": JournaledView.of(view),
                         "proposal": reply.proposal, "usage": reply.usage, "chooser_call": reply.call,
                         "state_before_hash": before.hash}
                decision: Decision | None = None
                evidence: Evidence | None = None
                try:
                    if failure:
                        raise failure
                    action, edit = self._validate(reply.proposal, allowed)  # schema, reserve, repeat, authorization
                    decision = Decision(accepted=True, action=action)
                    if isinstance(action, Stop):
                        raise Stopped(StopReason.HANDOFF_REQUESTED, action.reason or "the chooser stopped",
                                      {"chooser_summary": action.summary})
                    outcome = edit.observation or self.dispatch(action, edit.diff)  # exactly one tool
                    self._check_deadline(outcome)                # a late observation is refused
                    evidence = self._record(action, outcome)     # evidence, verdicts, Uₜ
                    self._check_progress(evidence)               # no_new_evidence
                    if self.state.u == 0:
                        raise Stopped(StopReason.AWAITING_RELEASE_CONFIRMATION,
                                      "every acceptance condition holds on evidence for the current diff; "
                                      "release needs a person")
                except Stopped as stop:
                    # An error event: the rejected proposal stays in the record exactly as proposed.
                    decision = decision or Decision(accepted=False, exit=stop.reason, error=stop.detail)
                    raise
                finally:
                    self._close_step(shown, decision or Decision(accepted=False), evidence)
        except Stopped as stop:
            return self._finish(stop)
        except KeyboardInterrupt:
            # The person at the keyboard ended it: keep the evidence and say so, like any other exit.
            return self._finish(Stopped(StopReason.DEPENDENCY_FAILURE, "interrupted by the user (Ctrl-C)"))

    # -- pieces of the loop ---------------------------------------------------------------------
    def _begin(self) -> None:
        if self.opening is not None:
            self.loop = self.committed = self.opening(self.committed, self.dispatch, self.write_journal)
            if self.state.u == 0:  # killed after the last check, before its stop line: re-earned, so it holds
                raise Stopped(StopReason.AWAITING_RELEASE_CONFIRMATION, "every acceptance condition holds on "
                              "evidence for the current diff (re-earned on resume); release needs a person")
            return
        self.write_journal(StartRecord(state_after=self.state, state_after_hash=self.state.hash, u=self.state.u),
                           "the start of the run")

    def _check_bounds(self) -> None:
        b = self.state.budget
        if b.steps_left <= 0:
            raise Stopped(StopReason.STEP_BUDGET, f"all {b.max_steps} steps used")
        if b.max_tokens is not None and b.tokens_used >= b.max_tokens:
            raise Stopped(StopReason.STEP_BUDGET, f"token budget spent: {b.tokens_used} of {b.max_tokens} tokens used")
        if self.cost_limit is not None and (spent := self.cost_limit.exhausted()):
            raise Stopped(StopReason.COST_BUDGET, spent, self.cost_limit.model_dump(include={"spent", "max_cost"}))
        if time.monotonic() - self.started >= b.deadline_s:
            raise Stopped(StopReason.DEADLINE, f"deadline of {b.deadline_s:g}s passed before step {b.steps_used + 1}")

    def _view(self) -> tuple[View, str, tuple[str, ...]]:
        """The View as JSON text (each chooser gets its own objects parsed from it, never ours) and the
        tools it allows, which the controller keeps: it never reads a View back once handed out."""
        b = self.state.budget
        in_reserve = b.reserved_final_steps > 0 and b.exploration_left == 0
        allowed = ("stop",) if in_reserve else TOOL_NAMES
        unknowns = [f"{c.description}{STALE_SUFFIX if c.stale else ''}"
                    for c in self.state.conditions if not c.satisfied]
        if not self.loop.diff:
            unknowns.append("no candidate patch yet")
        view = View(step=b.steps_used + 1, state_version=self.state.version, goal=self.state.goal,
                    authorization=self.state.authorization, u=self.state.u, conditions=self.state.conditions,
                    unknowns=tuple(unknowns), evidence=self.loop.evidence, steps_left=b.steps_left,
                    exploration_left=b.exploration_left, allowed_tools=allowed,
                    action_schema=tuple(t for t in tool_schemas() if t["name"] in allowed),
                    current_diff_sha256=diff_sha256(self.loop.diff), current_diff=self.loop.diff)
        return view, view.model_dump_json(), allowed

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
            if isinstance(chooser, DeadlineAware):  # optional
                chooser.set_deadline(deadline)
            return consult(chooser, view, progress)
        try:
            reply = call_with_timeout(ask, limit)
        except TimeoutError:
            return self._late(progress.get("stage", "choose"), limit, remaining)
        finally:
            self.timing["chooser_s"] += time.monotonic() - asked
        if reply.failure is None:
            counted = self.state.budget.max_tokens is not None or self.cost_limit is not None
            if counted and "total_tokens" in reply.usage and reply.usage["total_tokens"] is None:
                # A budget that cannot be counted is not a budget: refused at the first such reply.
                which = (f"a token budget is set ({self.state.budget.max_tokens})" if self.cost_limit is None
                         else f"a cost budget is set ({self.cost_limit.max_cost:g})")
                return reply, Stopped(
                    StopReason.DEPENDENCY_FAILURE,
                    f"{which} but the model endpoint reports no token usage, so it cannot be enforced; run without "
                    "--max-tokens/--max-cost, or use an endpoint that returns `usage` in its replies",
                    {"raw": reply.call.get("raw") if isinstance(reply.call, dict) else None, "infrastructure": False})
            return reply, None
        reason = _FAILURES[reply.failure]
        extra: dict[str, Any] = {"raw": reply.raw, **({"traceback": reply.traceback} if reply.traceback else {})}
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
                StopReason.CHOOSER_ERROR, f"the chooser raised an exception whose text could not be read "
                f"within {limit:.1f}s", {"raw": placeholder})
        what = "proposal" if stage == "proposal" else f"{stage} record"
        return ChooserReply(proposal=placeholder if stage == "proposal" else None), Stopped(
            StopReason.INVALID_ACTION, f"the chooser's {what} could not be read within {limit:.1f}s "
            f"(the time left for this step)", {"raw": placeholder})

    def _spend_step(self, usage: dict) -> None:
        if self.cost_limit is not None:
            self.cost_limit.add(usage)
        b = self.state.budget
        reported = usage.get("total_tokens")
        tokens = b.tokens_used + (reported if isinstance(reported, int) and reported > 0 else 0)
        self.loop = self.loop.advanced(state=self.state.model_copy(update={"budget": b.model_copy(
            update={"steps_used": b.steps_used + 1, "tokens_used": tokens})}))

    def _validate(self, raw: Any, allowed: tuple[str, ...]) -> tuple[Any, Edit]:
        try:
            action = parse_action(raw)
        except InvalidAction as exc:
            raise Stopped(StopReason.INVALID_ACTION, str(exc), {"raw": exc.raw})
        if action.tool not in allowed:
            raise Stopped(StopReason.STEP_BUDGET, f"exploration allowance spent ({self.state.budget.reserved_final_steps} "
                          f"step(s) reserved for the handover); {action.tool} was not allowed, only stop")
        canonical = action.canonical()
        if canonical == self.loop.last_canonical:
            raise Stopped(StopReason.REPEATED_ACTION, f"the same action was proposed twice in a row: {canonical[:200]}")
        self.loop = self.loop.advanced(last_canonical=canonical)
        return action, self._authorize(action)

    def _authorize(self, action) -> Edit:
        paths = []
        if isinstance(action, ReadFile):
            paths = [action.path]
        elif isinstance(action, Search) and action.path_glob:
            paths = [action.path_glob]
        for path in paths:
            if (escape := _escape(path)) is not None:
                raise escape
        if isinstance(action, ReplaceInFile):
            if (escape := _escape(action.path)) is not None:
                raise escape
            diff, observation = self._tool(lambda: self.executor.replacement(action))
            return Edit(diff, self._authorize_diff(diff)) if diff is not None else Edit(observation=observation)
        if isinstance(action, ApplyPatch):
            return Edit(observation=self._authorize_diff(action.diff))
        if isinstance(action, TryPatches):   # each candidate as if it were applied: none runs unless all may
            found = [(n, o) for n, d in enumerate(action.diffs, 1) if (o := self._authorize_diff(d)) is not None]
            return Edit(observation=unreadable_candidate(*found[0]) if found else None)
        return Edit()

    def _authorize_diff(self, diff: str) -> ToolOutcome | None:
        """The scope check and the gate on a diff before it runs anywhere. A diff that cannot be read
        one way only is an observation (None: go ahead); what needs a grant stops the run."""
        verdict = check_scope(diff, self.verifier.spec, granted=self.state.authorization.granted_paths)
        if verdict.parse_error or verdict.violations and {v.rule for v in verdict.violations} <= MALFORMED_RULES:
            return malformed_diff(verdict.parse_error, [v.detail for v in verdict.violations])
        if not verdict.ok:
            raise Stopped(StopReason.AUTHORIZATION_REQUIRED,
                          "the patch needs a grant the run does not have: " + "; ".join(verdict.grants_needed),
                          {"asked": [v.model_dump() for v in verdict.violations], "grant": verdict.grants_needed,
                           "raw": diff})
        # What the patch adds is read before it runs anywhere: constructs that can reach the test
        # process's machinery or sense the check environment wait for a person.
        gate = self.verifier.review(diff, granted=self.state.authorization.granted_paths)
        if not gate.ok:
            raise Stopped(StopReason.AUTHORIZATION_REQUIRED,
                          "the patch adds code that needs a person's grant: "
                          + "; ".join(f"{f.rule} at {f.path}:{f.line} ({f.construct})" for f in gate.findings[:5])
                          + (f"; and {len(gate.findings) - 5} more" if len(gate.findings) > 5 else "")
                          + " — each is granted by its key (repair-agent grant RUN --allow KEY): "
                          + " ".join(gate.grants_needed),
                          {"asked": [f.model_dump() for f in gate.findings], "grant": gate.grants_needed,
                           "raw": diff})
        return None

    def dispatch(self, action, edit_diff: str | None = None) -> ToolOutcome:
        return self._tool(lambda: self.executor.dispatch(action, self.loop.diff, edit_diff))

    def _tool(self, work: Callable[[], T]) -> T:
        """Sandbox work (a tool, or reading the file a replace_in_file edits): its time is the tools'
        time, and a failure of the sandbox, engine or host ends the run as a dependency failure."""
        started = time.monotonic()
        try:
            return work()
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
        diff = self.loop.diff if outcome.new_diff is None else outcome.new_diff
        current = diff_sha256(diff)
        output, capped = outcome.output, outcome.capped or len(outcome.output) > MAX_OBSERVATION_CHARS
        if len(output) > MAX_OBSERVATION_CHARS:
            output = output[:MAX_OBSERVATION_CHARS] + f"\n[observation capped at {MAX_OBSERVATION_CHARS} characters]"
        result_sha = hashlib.sha256(json.dumps([outcome.status, outcome.output, outcome.raw_error,
                                                getattr(outcome.verdict, "ok", None),
                                                getattr(outcome.verdict, "problems", None)],
                                               default=str).encode()).hexdigest()
        # Input (the diff it ran on), check (the canonical action), environment (image/backend).
        fingerprint = hashlib.sha256(f"{current}|{action.canonical()}|{self.environment_id}".encode()).hexdigest()
        evidence = Evidence(id=f"E{len(self.loop.evidence) + 1}", step=self.state.budget.steps_used, tool=action.tool,
                            action=action.without_note(), status=outcome.status, source=outcome.source,
                            started_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
                            duration_s=outcome.duration_s, summary=outcome.summary, output=output, hits=outcome.hits,
                            raw_error=outcome.raw_error, diff_sha256=current, fingerprint=fingerprint, capped=capped,
                            result_sha256=result_sha, localization=outcome.localization,
                            failing=outcome.failing, targets_ok=outcome.targets_ok, tries=outcome.tries,
                            data=outcome.journal_data(), note=action.note)
        verdicts = self.loop.verdicts + (((evidence.id, outcome.verdict),) if outcome.verdict is not None else ())
        state = self.state.model_copy(update={"observation": evidence, "diff_sha256": current,
                                              "conditions": tuple(unsatisfied(list(verdicts), current))})
        self.loop = self.loop.advanced(state=state, diff=diff, evidence=self.loop.evidence + (evidence,),
                                       verdicts=verdicts)
        return evidence

    def _check_progress(self, evidence: Evidence) -> None:
        previous = self.loop.earlier_result(evidence.fingerprint)
        if previous == evidence.result_sha256 and evidence.tool in REREADABLE_TOOLS and not any(
                e.fingerprint == evidence.fingerprint for e in self.loop.evidence[-1 - REREAD_WINDOW:-1]):
            return  # a re-read of what has left the chooser's recent evidence, not a loop
        if previous == evidence.result_sha256:
            raise Stopped(StopReason.NO_NEW_EVIDENCE,
                          f"{evidence.id} repeats an earlier {evidence.tool} under the same input, check and "
                          f"environment with the same result", {"evidence": evidence.id})

    def _close_step(self, shown: dict[str, Any], decision: Decision, evidence: Evidence | None) -> None:
        step = shown["step"]
        entry = HistoryEntry(step=step, tool=_label(shown["proposal"]),
                             decision="accepted" if decision.accepted else "rejected",
                             evidence=evidence.id if evidence else None, status=evidence.status if evidence else None,
                             u=self.state.u)
        # One new version per step, chained to the version the chooser saw.
        state = self.state.model_copy(update={"version": self.committed.state.version + 1,
                                              "parent_hash": self.committed.state.hash,
                                              "history": self.state.history + (entry,)})
        self.loop = self.committed = self.loop.advanced(state=state, u_trajectory=self.loop.u_trajectory + (state.u,))
        record = StepRecord(**shown, decision=decision,
                            result=Observation(**evidence.model_dump(exclude={"action"})) if evidence else None,
                            state_after=self.state, state_after_hash=self.state.hash, u=self.state.u,
                            last_canonical=self.loop.last_canonical)  # what a resume needs for the repeat rule
        written = time.monotonic()
        self.write_journal(record, f"step {step}")
        self.timing["journal_s"] += time.monotonic() - written
        self.on_step(StepProgress(step=step, tool=entry.tool, decision=entry.decision, status=entry.status,
                                  summary=evidence.summary if evidence else "", u=self.state.u,
                                  max_steps=self.state.budget.max_steps))

    def _finish(self, stop: Stopped) -> RunOutcome:
        outcome = RunOutcome(status=stop.reason, detail=stop.detail, next_attempt=NEXT_ATTEMPT[stop.reason],
                             steps_used=self.state.budget.steps_used, max_steps=self.state.budget.max_steps,
                             u_trajectory=list(self.loop.u_trajectory), diff=self.loop.diff,
                             diff_sha256=diff_sha256(self.loop.diff), evidence=list(self.loop.evidence), final_state=self.state, extra=stop.extra,
                             timing={**{k: round(v, 4) for k, v in self.timing.items()},
                                     "loop_s": round(time.monotonic() - self.started, 4)})
        try:
            self.journal.write(StopRecord(status=stop.reason, detail=stop.detail, next_attempt=outcome.next_attempt,
                                          extra=stop.extra, steps_used=outcome.steps_used,
                                          u_trajectory=outcome.u_trajectory, diff_sha256=outcome.diff_sha256,
                                          state_after=self.state, state_after_hash=self.state.hash))
        except JournalWriteError as exc:
            # An ending the journal cannot show is not an ending anyone may act on: even a
            # would-be awaiting_release_confirmation becomes a dependency failure.
            reason = StopReason.DEPENDENCY_FAILURE
            outcome = outcome.model_copy(update={
                "status": reason, "next_attempt": NEXT_ATTEMPT[reason],
                "detail": f"the journal could not record the stop ({stop.reason.value}: {stop.detail}): {exc}",
                "extra": {**stop.extra, "journal_error": str(exc), "unrecorded_status": stop.reason.value}})
        return outcome

    def write_journal(self, record: JournalRecord, what: str) -> None:
        try:
            self.journal.write(record)
        except JournalWriteError as exc:
            # Earlier lines are intact; this one is lost, and the run must not go on without it.
            raise Stopped(StopReason.DEPENDENCY_FAILURE, f"the journal could not record {what}: {exc}",
                          {"raw": str(exc), "journal_error": str(exc)}) from None


def _escape(path: str) -> Stopped | None:
    """A path that reaches outside the repository's files: a read or an edit there needs a person."""
    parts = path.split("/")
    if path.startswith(("/", "-")) or ".." in parts or ".git" in parts or "\\" in path:
        return Stopped(StopReason.AUTHORIZATION_REQUIRED, f"access outside the repository's files: {path!r}",
                       {"asked": path, "grant": "read access beyond the repository's tracked files"})
    return None


def _label(proposal: Any) -> str:
    """The proposal's tool as a label for the history (the proposal itself is journaled verbatim)."""
    tool = proposal.get("tool") if isinstance(proposal, dict) else None
    return tool[:60] if isinstance(tool, str) else "?"


_FAILURES = {"token_budget": StopReason.STEP_BUDGET, "malformed": StopReason.INVALID_ACTION,
             "unavailable": StopReason.DEPENDENCY_FAILURE, "raised": StopReason.CHOOSER_ERROR,
             "unreadable": StopReason.INVALID_ACTION}  # a chooser that raises has a bug: its own exit


