"""The pending-release report: written whenever a run ends, whatever the exit."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from verifier import check_scope
from verifier.scope import FileChange

from .faults import Fault, attribute
from .journal import read_journal
from .usage import UsageSummary
from .state import Authorization, ConditionState, Goal, Grant

if TYPE_CHECKING:
    from .controller import RunOutcome
    from .run import RunRecord
    from .scenario import Scenario


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
    why: str
    next_attempt: str
    goal: Goal
    authorization: Authorization
    steps_used: int
    max_steps: int
    u_trajectory: list[int]
    conditions: list[ConditionState]
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


def build_report(record: "RunRecord", outcome: "RunOutcome", scenario: "Scenario", verifier) -> Report:
    state = outcome.final_state
    scope = check_scope(outcome.diff, scenario.spec) if outcome.diff else None
    verdicts = [VerdictRow(evidence=e.id, step=e.step, check=e.tool, status=e.status, summary=e.summary,
                           diff_sha256=e.diff_sha256,
                           protected_manifest_sha256=e.data.get("protected_manifest_sha256",
                                                                record.protected_manifest_sha256),
                           current=e.diff_sha256 == outcome.diff_sha256)
                for e in outcome.evidence if e.source.startswith("verifier")]
    journal = list(read_journal(Path(record.run_dir) / "journal.jsonl"))
    restored = sorted({path for e in outcome.evidence if e.diff_sha256 == outcome.diff_sha256
                       for path in (e.data.get("restored") or [])})
    pending = None
    if record.status.value == "awaiting_release_confirmation":
        pending = PendingRelease(confirm=f"repair-agent release {record.run_dir} --confirm",
                                 reject=f"repair-agent release {record.run_dir} --reject --reason \"...\"")
    return Report(
        run_id=record.run_id, scenario=record.scenario, status=record.status.value, exit_code=record.exit_code,
        correctness=record.correctness, heldout_cases=_heldout_cases(outcome),
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
    evidence = outcome.final_test_evidence()
    path = evidence.data.get("heldout_file") if evidence else None
    try:
        return json.loads(Path(path).read_text()).get("cases", []) if path else []
    except (OSError, ValueError):
        return []


def _sessions(journal: list[dict]) -> list[Session]:
    sessions: list[Session] = []
    for rec in journal:
        if rec.get("event") == "setup":
            resume = rec.get("resume") or {}
            sessions.append(Session(started_at=resume.get("session_started_at") or rec.get("started_at", ""),
                                    pid=rec.get("pid"), chooser=rec.get("chooser_spec") or rec.get("chooser"),
                                    resumed_from=resume.get("from_status"), torn_tail=resume.get("torn_tail")))
        elif rec.get("event") == "resume" and sessions:
            sessions[-1] = sessions[-1].model_copy(update={"extra_steps": rec.get("extra_steps"),
                                                           "deadline_s": rec.get("deadline_s"),
                                                           "reverified": rec.get("reverified", [])})
    return sessions


def step_rows(records: list[dict[str, Any]]) -> list[StepRow]:
    rows = []
    for r in (r for r in records if r.get("event") == "step"):
        proposal, decision = r.get("proposal"), dict(r.get("decision") or {})
        decision.pop("action", None)  # the canonical form of the proposal shown next to it
        result = r.get("result")
        if result:
            output = str(result.get("output") or "")
            result = StepResult(**{k: result.get(k) for k in ("id", "tool", "status", "summary", "raw_error",
                                                              "diff_sha256", "duration_s")},
                                output=output[:STEP_OUTPUT_CHARS], output_chars=len(output))
        rows.append(StepRow(step=r["step"], tool=str(proposal.get("tool", "?")) if isinstance(proposal, dict) else "?",
                            proposal=proposal, decision=decision, result=result, u=r["u"],
                            tokens=_step_tokens(r.get("usage"))))
    return rows


def _correctness_text(value: str | None) -> str:
    return {"correct": "correct — the visible tests and the held-out behaviour checks pass",
            "plausible": "plausible only — the visible tests pass, the held-out behaviour checks do not",
            "unchecked": "unchecked — this scenario has no held-out behaviour checks"}.get(
        value or "", "not judged — no green test run on the final diff")


def _step_tokens(usage: Any) -> int | None:
    usage = usage if isinstance(usage, dict) else {}
    if "total_tokens" in usage and usage["total_tokens"] is None:
        return None
    return int(usage.get("total_tokens") or 0)


def describe_model(model: dict | None) -> str | None:
    """One line: which model, where, with what (the reports and the sweep show the same)."""
    if not model:
        return None
    params = model.get("parameters") or {}
    shown = ", ".join(f"{k} {params[k]}" for k in ("temperature", "max_output_tokens", "max_concurrency")
                      if params.get(k) is not None)
    name = f"{model['name']}: " if model.get("name") else ""
    return f"{name}{model.get('model')} at {model.get('endpoint')}" + (f" ({shown})" if shown else "")


def describe_tokens(r: dict) -> str:
    usage = r.get("usage") or {}
    if r.get("tokens_used") is None:
        text = (f"unknown (the model endpoint reported no usage in {usage.get('unknown_steps', '?')} step(s))")
    else:
        text = str(r["tokens_used"]) + (f" of {r['max_tokens']}" if r.get("max_tokens") else "")
        if usage.get("prompt_tokens") or usage.get("completion_tokens"):
            text += f" ({usage.get('prompt_tokens')} prompt, {usage.get('completion_tokens')} completion)"
    if usage.get("cost") is not None:
        text += f"; cost {usage['cost']:.4f}"
    return text


def render_markdown(r: dict) -> str:
    lines = [f"# Repair run {r['run_id']}", "",
             f"**Status:** `{r['status']}` (exit code {r['exit_code']})  ", f"**Why:** {r['why']}  ",
             f"**Next attempt would need:** {r['next_attempt']}  ",
             f"**Correctness:** {_correctness_text(r.get('correctness'))}", "",
             "## Goal and constraints", "", r["goal"]["text"], "",
             f"- failure signature: `{r['goal']['failure_signature']}`",
             f"- target tests: {', '.join(f'`{t}`' for t in r['goal']['target_tests'])}"]
    lines += [f"- {c}" for c in r["goal"]["constraints"]]
    sandbox = r["sandbox"]
    lines += ["", f"Sandbox: {sandbox['kind']}" + ("" if sandbox.get("isolated") else f" — **{sandbox.get('warning')}**"),
              f"Chooser: {r['chooser']}"]
    if r.get("model"):
        lines += [f"Model: {describe_model(r['model'])}"]
        requests = (r.get("usage") or {}).get("requests")
        if requests:
            lines += [f"Model requests: {requests} (retries and re-asks included); median step latency "
                      f"{(r.get('usage') or {}).get('median_step_latency_s')}s"]
    lines += ["", "## Progress", "", f"Steps used: {r['steps_used']} of {r['max_steps']}  ",
              f"Tokens used: {describe_tokens(r)}" + f"  \nWall time: {r['wall_s']:.1f}s  ",
              f"Uₜ trajectory: {' → '.join(map(str, r['u_trajectory']))}", "",
              "| condition | satisfied | decided by |", "|---|---|---|"]
    lines += [f"| {c['description']} | {'yes' if c['satisfied'] else 'NO'} | {c['evidence'] or '—'} |"
              for c in r["conditions"]]
    if r.get("heldout_cases"):
        lines += ["", "## Held-out behaviour checks (never shown to the chooser)", "",
                  "| case | ok | got | expected |", "|---|---|---|---|"]
        lines += [f"| {c['name']} | {'yes' if c['ok'] else 'NO'} | `{json.dumps(c.get('got'))[:80]}` | "
                  f"`{json.dumps(c.get('expected'))[:80]}` |" for c in r["heldout_cases"]]
    lines += ["", "## Evidence", "", "| id | step | tool | status | source | seconds | summary |",
              "|---|---|---|---|---|---|---|"]
    lines += [f"| {e['id']} | {e['step']} | {e['tool']} | {e['status']} | {e['source']} | {e['duration_s']} | "
              f"{e['summary'].replace('|', '/')} |" for e in r["evidence"]]
    if r["verdicts"]:
        lines += ["", "## Verdicts and what they were made on", "",
                  "| evidence | check | status | diff sha256 | protected files sha256 | current |", "|---|---|---|---|---|---|"]
        lines += [f"| {v['evidence']} | {v['check']} | {v['status']} | `{v['diff_sha256'][:16]}` | "
                  f"`{(v['protected_manifest_sha256'] or '')[:16]}` | {'yes' if v['current'] else 'stale'} |"
                  for v in r["verdicts"]]
    if r["protected_files_sha256"]:
        lines += ["", "Protected files the verdicts were made with (restored from the verifier's own copy):", ""]
        lines += [f"- `{path}` `{digest[:16]}`" for path, digest in sorted(r["protected_files_sha256"].items())]
    if r["faults"]:
        lines += ["", "## Faults the journal shows (heuristics: where to look)", ""]
        lines += [f"- step {f['step']}: **{f['kind']}** — {f['detail']}" for f in r["faults"]]
    if r["grants"]:
        lines += ["", "## Grants (a person widened the authorization)", ""]
        lines += [f"- {g['who']} at {g['when']} allowed {', '.join(f'`{a}`' for a in g['allow'])} after step "
                  f"{g['after_step']}: {g['reason']}" for g in r["grants"]]
        lines += ["", "A grant widens what a patch may edit, never the protected suite: "
                  + (f"the verifier tested {', '.join(f'`{p}`' for p in r['restored_by_verifier'])} as its own "
                     "pristine copy, not as edited." if r["restored_by_verifier"] else
                     "every protected file is restored from the verifier's own copy before it tests.")]
    if len(r["sessions"]) > 1 or any(s["torn_tail"] for s in r["sessions"]):
        lines += ["", "## Sessions (the run was resumed from its journal)", ""]
        for n, s in enumerate(r["sessions"], 1):
            if not s["resumed_from"]:
                lines.append(f"- {n}. started {s['started_at']} (pid {s['pid']}, chooser {s['chooser']})")
                continue
            again = ", ".join(f"{x['evidence']} {x['tool']} {x['status']}" for x in s["reverified"]) or "none"
            lines.append(f"- {n}. resumed {s['started_at']} from `{s['resumed_from']}` (pid {s['pid']}, chooser "
                         f"{s['chooser']}): granted {s['extra_steps']} more step(s) and {s['deadline_s']}s; "
                         f"verdicts re-earned: {again}")
            if s["torn_tail"]:
                t = s["torn_tail"]
                lines.append(f"  - a torn journal line ({t['bytes']} bytes after line {t['after_line']}) was set "
                             f"aside in `{t['kept_at']}`")
    lines += ["", "## Unknowns", ""] + ([f"- {u}" for u in r["unknowns"]] or ["- none of the technical conditions"])
    lines += ["", f"## Diff (sha256 `{r['diff_sha256']}`)", ""]
    lines += [f"- {f['kind']} `{f['path']}` (+{f['added']} −{f['removed']})" for f in r["diff_files"]] or ["- no changes"]
    if r["diff"]:
        lines += ["", "```diff", r["diff"].rstrip("\n"), "```"]
    lines += ["", "## Release", ""]
    if r["release"]:
        lines += [r["release"]["state"], "", "```", r["release"]["confirm"], r["release"]["reject"], "```"]
    else:
        lines += ["Not releasable: the run did not reach `awaiting_release_confirmation`."]
    return "\n".join(lines) + "\n"


def write_report(run_dir: Path, record, outcome, scenario, verifier, write=None) -> Report:
    """`write(name, text)` puts one file in run_dir (run.py passes an all-or-nothing writer)."""
    from .html_report import render_run_html

    report = build_report(record, outcome, scenario, verifier)
    write = write or (lambda name, text: (Path(run_dir) / name).write_text(text, encoding="utf-8",
                                                                           errors="surrogateescape"))
    write("report.json", report.model_dump_json(indent=2))
    write("report.md", render_markdown(report.model_dump(mode="json")))
    write("report.html", render_run_html(report, None))
    return report
