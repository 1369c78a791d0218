"""Every stop is a checkpoint: reading one back from the journal, and a person's grant.

The journal is the only source: its last complete line is the checkpoint (a torn line after it
is set aside and reported), its hash chains must verify, and what it says decides whether the
run may continue at all.
"""
from __future__ import annotations

import datetime as dt
import getpass
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from verifier import check_scope

from .actions import ApplyPatch, InvalidAction, parse_action
from .journal import Journal, TornTail, read_journal, set_aside_torn_tail, verify_chain
from .state import Evidence, Grant, State, StopReason

RESUMABLE = (StopReason.STEP_BUDGET, StopReason.DEADLINE, StopReason.DEPENDENCY_FAILURE,
             StopReason.AUTHORIZATION_REQUIRED, StopReason.HANDOFF_REQUESTED)
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
    fingerprints: dict[str, str]
    last_canonical: str | None
    u_trajectory: list[int]
    patches: list[str]               # accepted, applied patches in order: pristine + these = the diff
    refused_proposal: Any = None     # the proposal an authorization_required stop refused, as proposed
    refused_step: int | None = None
    grants_since_stop: list[Grant] = []
    setup: dict[str, Any]            # the first session's setup line (scenario, chooser, sandbox)
    owner_pids: list[int]            # every session's process: their leftover containers are removed
    released: bool = False
    torn: TornTail | None = None
    lines: int


def run_dir_of(run: str, runs_dir: Path) -> Path:
    """A run directory from a path or an id; a killed run has a journal but no run.json yet."""
    for candidate in (Path(run), Path(runs_dir) / run):
        if (candidate / "journal.jsonl").is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"no run {run!r} (looked for {run}/journal.jsonl and {Path(runs_dir) / run}/journal.jsonl)")


def load_checkpoint(run_dir: Path, *, set_aside_torn: bool = True) -> Checkpoint:
    run_dir = Path(run_dir)
    path = run_dir / "journal.jsonl"
    torn = set_aside_torn_tail(path) if set_aside_torn else None
    records = list(read_journal(path))
    problems = verify_chain(records)
    if problems:
        raise ResumeRefused(f"{path}: the journal does not verify, nothing resumes from it: " + "; ".join(problems[:3]))
    setups = [r for r in records if r.get("event") == "setup"]
    stated = [r for r in records if r.get("state_after") is not None]
    if not setups or not stated:
        raise ResumeRefused(f"{path}: the run stopped before its first step could be recorded "
                            "(no setup or state line); start a new run instead")
    evidence, fingerprints, patches, u_trajectory = [], {}, [], []
    status, detail, last_canonical = KILLED, "the journal ends without a stop line (the process was killed)", None
    refused_proposal = refused_step = None
    grants: list[Grant] = []
    for rec in records:
        event = rec.get("event")
        if event == "start":
            u_trajectory = [rec["u"]]
        elif event == "resume":
            status, detail, grants = KILLED, "the journal ends without a stop line (the process was killed)", []
            if not u_trajectory or rec["u"] != u_trajectory[-1]:
                u_trajectory.append(rec["u"])
        elif event == "step":
            status, detail = KILLED, "the journal ends without a stop line (the process was killed)"
            u_trajectory.append(rec["u"])
            last_canonical = rec.get("last_canonical", last_canonical)
            decision = rec.get("decision") or {}
            if rec.get("result"):
                e = Evidence.model_validate(rec["result"])
                evidence.append(e)
                fingerprints[e.fingerprint] = e.result_sha256
                if e.tool == "apply_patch" and e.status == "ok" and decision.get("accepted"):
                    patches.append(json.loads(decision["action"])["diff"])
            if decision.get("exit"):  # a rejected step is followed by its stop line, unless killed between
                status, detail = decision["exit"], decision.get("error", "")
                refused_proposal, refused_step = rec.get("proposal"), rec["step"]
        elif event == "stop":
            status, detail = rec["status"], rec.get("detail", "")
            u_trajectory = list(rec.get("u_trajectory") or u_trajectory)
        elif event == "grant":
            grants.append(Grant.model_validate(rec["grant"]))
    if status != StopReason.AUTHORIZATION_REQUIRED.value:
        refused_proposal = refused_step = None
    state = State.model_validate(stated[-1]["state_after"])
    return Checkpoint(
        run_dir=str(run_dir), status=status, detail=detail, state=state,
        evidence=evidence, fingerprints=fingerprints, last_canonical=last_canonical,
        u_trajectory=u_trajectory or [state.u], patches=patches,
        refused_proposal=refused_proposal, refused_step=refused_step, grants_since_stop=grants, setup=setups[0],
        owner_pids=[int(s["pid"]) for s in setups if s.get("pid")], released=(run_dir / "release.json").exists(),
        torn=torn, lines=len(records))


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
    from .controller import grant_authorization
    from .scenario import load_manifest

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
    if not isinstance(action, ApplyPatch):
        raise ResumeRefused(f"step {cp.refused_step} was refused for {cp.detail!r}; a grant widens the paths a patch "
                            "may edit, which would not allow it")
    spec = load_manifest(Path(cp.setup["manifest"])).spec
    granted = cp.state.authorization.granted_paths + tuple(allow)
    still = check_scope(action.diff, spec, granted=granted)
    if not still.ok:
        raise ResumeRefused(f"with this grant the refused patch of step {cp.refused_step} would still be refused "
                            f"for: {'; '.join(still.grants_needed)}. A grant covers 'protected' and 'not-writable' "
                            "paths; escapes, symlinks, binaries, renames, sizes and added test infrastructure "
                            "cannot be granted")
    grant = Grant(allow=tuple(allow), reason=reason, who=_who(), after_step=cp.refused_step,
                  when=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    after = grant_authorization(cp.state, grant)
    journal = Journal.reopen(Path(run_dir) / "journal.jsonl")
    try:
        journal.write({"event": "grant", "grant": grant.model_dump(mode="json"),
                       "waives": [v.model_dump() for v in still.granted],
                       "state_before": cp.state.model_dump(mode="json"), "state_before_hash": cp.state.hash,
                       "state_after": after.model_dump(mode="json"), "state_after_hash": after.hash})
    finally:
        journal.close()
    return grant, cp
