"""The run's records: what a run leaves behind (RunRecord, run.json) and the report model (Report,
report.json), both built from what the controller ends with (RunOutcome, outcome.py). Renderers (report.py,
html_report.py) and every reader of a run import these; this module imports no renderer."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import BaseModel

from verifier import check_scope
from verifier.conditions import Condition
from verifier.scope import FileChange

from ..loop.actions import MAX_NESTING, nested_deeper_than
from .faults import Fault, attribute
from ..loop.journal import JournalRecord, ResumeRecord, SetupRecord, StepRecord, read_records
from ..loop.outcome import RunOutcome
from ..loop.state import Authorization, Goal, Grant, StopReason
from ..untrusted.bounded import capped
from ..loop.usage import UsageSummary

if TYPE_CHECKING:
    from ..scenarios.scenario import Scenario


class RunRecord(BaseModel):
    """The run's summary: what `--json` prints and what `show` and `release` read back."""

    run_id: str
    run_dir: str
    scenario: str
    status: StopReason
    exit_code: int
    detail: str
    next_attempt: str
    steps_used: int
    max_steps: int
    u_trajectory: list[int]
    diff_sha256: str
    chooser: str
    sandbox: dict[str, Any]
    image: str | None = None
    environment_id: str | None = None   # what the checks ran on (docker:<image id> or local:<python>)
    protected_manifest_sha256: str | None = None
    pristine_tree_sha256: str | None = None
    started_at: str
    wall_s: float
    timing: dict[str, float] = {}
    granted_paths: list[str] = []   # a person's grants (repair-agent grant); release re-verifies with them
    sessions: int = 1               # 1 + the number of resumes
    # The last test verdict on the final diff: correct (visible tests and held-out checks pass),
    # plausible (only the visible tests pass), unchecked (no held-out checks), None (no green tests).
    correctness: Literal["correct", "plausible", "unchecked"] | None = None
    # A model chooser's model, endpoint and parameters (never its API key), and what it cost:
    # tokens are None (unknown) when the endpoint reported no usage.
    model: dict[str, Any] | None = None
    usage: UsageSummary = UsageSummary()
    # Ended because the chooser's endpoint failed (after its retries): not the chooser's decision.
    infrastructure_failure: bool = False
    # Set when the runs directory could not take this run's files (read-only, full): where they went.
    report_dir: str | None = None
    storage_error: str | None = None


Correctness = Literal["correct", "plausible", "unchecked"]


def final_behaviour(outcome: "RunOutcome") -> dict[str, Any]:
    """What the held-out probe said about the final diff (verifier.behaviour.Behaviour, as the
    verifier wrote it next to its check), with the check's correctness; {} when there is none."""
    evidence = outcome.final_test_evidence()
    path = evidence.data.get("behaviour_file") if evidence else None
    try:
        found = json.loads(Path(path).read_text()) if path else {}
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def final_correctness(outcome: RunOutcome) -> Correctness | None:
    evidence = outcome.final_test_evidence()
    if evidence is None or evidence.status != "ok":
        return None
    value = final_behaviour(outcome).get("correctness", "unchecked")
    return cast(Correctness, value) if value in ("correct", "plausible", "unchecked") else None


class VerdictRow(BaseModel):
    evidence: str
    step: int
    check: str
    status: str
    summary: str
    diff_sha256: str
    protected_manifest_sha256: str | None
    current: bool  # made on the final diff (otherwise stale)


class EvidenceRow(BaseModel):
    id: str
    step: int
    tool: str
    status: str
    source: str
    duration_s: float
    summary: str
    raw_error: str | None
    diff_sha256: str


class Session(BaseModel):
    """One process's part of the run: the first start, or a resume from the journal."""

    started_at: str
    pid: int | None
    chooser: str | None
    resumed_from: str | None = None     # the checkpoint's status ("killed" when there was no stop line)
    extra_steps: int | None = None      # the budget this resume granted (a new version of B)
    deadline_s: float | None = None
    reverified: list[dict] = []         # verdicts re-earned from the verifier before the first new step
    torn_tail: dict | None = None       # a half-written journal line, set aside


# What one step row may carry of a tool's output: the chooser never saw more than this either
# (controller.MAX_OBSERVATION_CHARS); the full streams stay under RUN/outputs/.
STEP_OUTPUT_CHARS = 16_000


class StepResult(BaseModel):
    id: str
    tool: str
    status: str
    summary: str
    output: str
    output_chars: int  # before the cut to STEP_OUTPUT_CHARS
    raw_error: str | None
    diff_sha256: str
    duration_s: float


class StepRow(BaseModel):
    """One journaled step as a reviewer reads it: what was proposed, what the controller decided,
    what the tool returned, and Uₜ after it."""

    step: int
    tool: str
    proposal: Any  # verbatim: a dict, or the raw text of a reply that did not parse
    decision: dict[str, Any]
    result: StepResult | None
    u: int
    tokens: int | None  # None: the endpoint reported no usage for this step


class PendingRelease(BaseModel):
    state: str = "pending: a person must confirm or reject; nothing has been released"
    confirm: str
    reject: str


class Report(BaseModel):
    """The pending-release report, `report.json`; `report.md` renders the same content."""

    run_id: str
    scenario: str
    status: str
    exit_code: int
    # correct / plausible / unchecked (see RunRecord.correctness), and the held-out cases of the
    # last test verdict on the final diff: inputs and values a person may see, a chooser never.
    correctness: str | None = None
    heldout_cases: list[dict[str, Any]] = []
    # What the behaviour checks said of the final diff (held-out cases, generated inputs against the
    # reference fix, the environments the probe ran in), as lines for a person.
    behaviour: list[str] = []
    # What the final diff adds that the gate asked a person about (verifier/gate.py), granted or not.
    code_findings: list[dict[str, Any]] = []
    why: str
    next_attempt: str
    goal: Goal
    authorization: Authorization
    steps_used: int
    max_steps: int
    u_trajectory: list[int]
    conditions: list[Condition]
    unknowns: list[str]
    evidence: list[EvidenceRow]
    verdicts: list[VerdictRow]
    protected_files_sha256: dict[str, str]
    protected_manifest_sha256: str | None
    diff_sha256: str
    diff_files: list[FileChange]
    diff: str
    sandbox: dict[str, Any]
    chooser: str
    image: str | None
    tokens_used: int | None   # None: unknown (the model endpoint reported no usage)
    max_tokens: int | None
    # The model behind a model chooser: name, model, endpoint and parameters (never the API key).
    model: dict[str, Any] | None = None
    usage: UsageSummary = UsageSummary()
    wall_s: float
    timing: dict[str, float]
    extra: dict[str, Any]
    faults: list[Fault]
    grants: list[Grant] = []
    restored_by_verifier: list[str] = []  # protected files a candidate edited, tested as their pristine copies
    sessions: list[Session] = []
    release: PendingRelease | None
    steps: list[StepRow] = []  # default: report.json files written before steps were recorded


def build_report(record: "RunRecord", outcome: "RunOutcome", scenario: "Scenario", verifier,
                 journal: list[JournalRecord] | None = None) -> Report:
    """The report from the run's records; `journal` when the caller has read it already."""
    state = outcome.final_state
    scope = check_scope(outcome.diff, scenario.spec) if outcome.diff else None
    verdicts = [VerdictRow(evidence=e.id, step=e.step, check=e.tool, status=e.status, summary=e.summary,
                           diff_sha256=e.diff_sha256,
                           protected_manifest_sha256=e.data.get("protected_manifest_sha256",
                                                                record.protected_manifest_sha256),
                           current=e.diff_sha256 == outcome.diff_sha256)
                for e in outcome.evidence if e.source.startswith("verifier")]
    if journal is None:
        journal = read_records(Path(record.run_dir) / "journal.jsonl")
    restored = sorted({path for e in outcome.evidence if e.diff_sha256 == outcome.diff_sha256
                       for path in (e.data.get("restored") or [])})
    pending = None
    if record.status.value == "awaiting_release_confirmation":
        pending = PendingRelease(confirm=f"repair-agent release {record.run_dir} --confirm",
                                 reject=f"repair-agent release {record.run_dir} --reject --reason \"...\"")
    return Report(
        run_id=record.run_id, scenario=record.scenario, status=record.status.value, exit_code=record.exit_code,
        correctness=record.correctness, heldout_cases=_heldout_cases(outcome),
        behaviour=_behaviour_lines(outcome), code_findings=_code_findings(outcome, verifier, state),
        why=record.detail, next_attempt=record.next_attempt, goal=state.goal, authorization=state.authorization,
        steps_used=record.steps_used, max_steps=record.max_steps, u_trajectory=record.u_trajectory,
        conditions=list(state.conditions), unknowns=[c.description for c in state.conditions if not c.satisfied],
        evidence=[EvidenceRow(**e.model_dump(include=set(EvidenceRow.model_fields))) for e in outcome.evidence],
        verdicts=verdicts,
        protected_files_sha256=verifier.snapshot.protected_sha256 if verifier and verifier.snapshot else {},
        protected_manifest_sha256=record.protected_manifest_sha256, diff_sha256=outcome.diff_sha256,
        diff_files=scope.files if scope else [], diff=outcome.diff, sandbox=record.sandbox,
        chooser=record.chooser, image=record.image, tokens_used=record.usage.total_tokens,
        max_tokens=state.budget.max_tokens, model=record.model, usage=record.usage, wall_s=record.wall_s, timing=record.timing,
        extra={**{k: v for k, v in outcome.extra.items() if k != "raw"},
               **({"storage_error": record.storage_error, "report_dir": record.report_dir}
                  if record.storage_error else {})},
        faults=attribute(journal), grants=list(state.authorization.grants), restored_by_verifier=restored,
        sessions=_sessions(journal), release=pending, steps=step_rows(journal))


def _heldout_cases(outcome: "RunOutcome") -> list[dict[str, Any]]:
    heldout = final_behaviour(outcome).get("heldout") or {}
    cases = heldout.get("cases", []) if isinstance(heldout, dict) else []
    return cases if isinstance(cases, list) else []


def _behaviour_lines(outcome: "RunOutcome") -> list[str]:
    found = final_behaviour(outcome)
    lines = []
    for key in ("heldout", "generated"):
        part = found.get(key)
        if isinstance(part, dict):
            lines.append(_behaviour_summary(key, part))
    lines += [f"environment: {e}" for e in found.get("environments", []) if isinstance(e, str)]
    lines += [p for p in found.get("environment_problems", []) if isinstance(p, str)]
    lines += [f"note: {n}" for n in found.get("notes", []) if isinstance(n, str)]
    return lines


def _behaviour_summary(key: str, part: dict[str, Any]) -> str:
    if key == "heldout":
        return (f"held-out checks: not judged ({part.get('problem')})" if part.get("problem")
                else f"held-out checks: {part.get('passed')}/{part.get('total')} passed")
    if part.get("problem"):
        return f"generated inputs: not judged ({part.get('problem')})"
    text = (f"generated inputs: {part.get('agreed')}/{(part.get('total') or 0) - (part.get('skipped') or 0)} "
            "agree with the reference fix")
    first = part.get("first")
    if isinstance(first, dict):
        text += (f"; first disagreement: {first.get('expr')} — the reference gives {json.dumps(first.get('reference'))}, "
                 f"this diff {json.dumps(first.get('candidate'))}")
    return text


def _code_findings(outcome: "RunOutcome", verifier, state) -> list[dict[str, Any]]:
    """Every gate finding of the final diff, each marked granted or not (a person's grant by its key);
    for a run the gate stopped, the refused patch's findings (never applied, so not in the final diff)."""
    asked = outcome.extra.get("asked") if outcome.status is StopReason.AUTHORIZATION_REQUIRED else None
    refused = [{**f, "granted": False} for f in asked or [] if isinstance(f, dict) and str(f.get("key")).startswith("code:")]
    if refused:
        return refused
    if not outcome.diff or verifier is None or not hasattr(verifier, "review"):
        return []
    try:
        gate = verifier.review(outcome.diff, granted=state.authorization.granted_paths)
    except Exception as exc:  # the report must still be written; say why the list is missing
        return [{"rule": "?", "path": "?", "line": 0, "construct": f"the gate could not read the diff: {exc}",
                 "granted": False}]
    return ([{**f.model_dump(), "granted": True} for f in gate.granted]
            + [{**f.model_dump(), "granted": False} for f in gate.findings])


def _sessions(journal: list[JournalRecord]) -> list[Session]:
    sessions: list[Session] = []
    for rec in journal:
        if isinstance(rec, SetupRecord):
            resume = rec.resume
            sessions.append(Session(started_at=resume.session_started_at if resume else rec.started_at,
                                    pid=rec.pid, chooser=rec.chooser_spec or rec.chooser,
                                    resumed_from=resume.from_status if resume else None,
                                    torn_tail=resume.torn_tail.model_dump() if resume and resume.torn_tail else None))
        elif isinstance(rec, ResumeRecord) and sessions:
            sessions[-1] = sessions[-1].model_copy(update={
                "extra_steps": rec.extra_steps, "deadline_s": rec.deadline_s,
                "reverified": [x.model_dump() for x in rec.reverified]})
    return sessions


def step_rows(records: list[JournalRecord]) -> list[StepRow]:
    rows = []
    for r in (r for r in records if isinstance(r, StepRecord)):
        # The action is the canonical form of the proposal shown next to it: not repeated here.
        decision = r.decision.model_dump(mode="json", exclude={"action"}, exclude_none=True)
        result = None
        if r.result is not None:
            output = r.result.output
            result = StepResult(**r.result.model_dump(include={"id", "tool", "status", "summary", "raw_error",
                                                               "diff_sha256", "duration_s"}),
                                output=output[:STEP_OUTPUT_CHARS], output_chars=len(output))
        # A proposal nested past what any action holds was refused for it; the report (whose serializer
        # has a depth limit) shows its JSON's head, the journal keeps it whole.
        proposal = capped(json.dumps(r.proposal)) if nested_deeper_than(r.proposal, MAX_NESTING) else r.proposal
        rows.append(StepRow(step=r.step, tool=r.tool if r.tool != "?" or not isinstance(r.proposal, dict) else "?",
                            proposal=proposal, decision=decision, result=result, u=r.u,
                            tokens=_step_tokens(r.usage)))
    return rows


def _step_tokens(usage: Any) -> int | None:
    usage = usage if isinstance(usage, dict) else {}
    if "total_tokens" in usage and usage["total_tokens"] is None:
        return None
    return int(usage.get("total_tokens") or 0)


# -- run lookup --------------------------------------------------------------------------------------

def find_run(run: str, runs_dir: Path = Path("runs"), *, finished: bool = True) -> Path:
    """A run directory from a path or a run id. `finished=False` also finds a run killed before it
    wrote run.json: its journal is what resume, grant and replay read."""
    marker = "run.json" if finished else "journal.jsonl"
    for candidate in (Path(run), Path(runs_dir) / run):
        if (candidate / marker).is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"no run {run!r} (looked for {run}/{marker} and {Path(runs_dir) / run}/{marker})")


def load_record(run_dir: Path) -> RunRecord:
    return RunRecord.model_validate_json((Path(run_dir) / "run.json").read_text())
