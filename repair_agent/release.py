"""The release gate: a person's decision, never derived from all-green. Only the CLI calls this."""
from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import shutil
from pathlib import Path
from typing import Any, Literal

import git
from pydantic import BaseModel

from verifier import Verifier, diff_sha256, u_count, unsatisfied

from .run import RunRecord, load_record
from .scenario import load_manifest
from .sandbox.workspace import BASE_AUTHOR, create_workspace


class ReleaseDecision(BaseModel):
    """`RUN/release.json`: who decided what, when, on which diff."""

    decision: Literal["confirmed", "rejected"]
    who: str
    when: str
    run_id: str
    diff_sha256: str
    reason: str | None = None
    branch: str | None = None
    commit: str | None = None
    clone: str | None = None
    reverification: dict[str, Any] | None = None


class ReleaseRefused(RuntimeError):
    """The release cannot proceed; the message says why. Nothing was changed."""


def _decision_path(run_dir: Path) -> Path:
    return Path(run_dir) / "release.json"


def _check_releasable(run_dir: Path) -> tuple[RunRecord, str]:
    record = load_record(run_dir)
    if record.status.value != "awaiting_release_confirmation":
        raise ReleaseRefused(f"run {record.run_id} ended {record.status.value!r}, not awaiting_release_confirmation: "
                             f"there is nothing to release")
    if _decision_path(run_dir).exists():
        previous = ReleaseDecision.model_validate_json(_decision_path(run_dir).read_text())
        raise ReleaseRefused(f"run {record.run_id} was already {previous.decision} by {previous.who} "
                             f"at {previous.when}")
    diff = (Path(run_dir) / "candidate.diff").read_text(encoding="utf-8", errors="surrogateescape")
    if diff_sha256(diff) != record.diff_sha256:
        raise ReleaseRefused(f"candidate.diff changed on disk since verification (sha256 {diff_sha256(diff)[:16]} != "
                             f"verified {record.diff_sha256[:16]}); refusing to release an unverified diff")
    return record, diff


def _who() -> str:
    try:
        return os.environ.get("REPAIR_AGENT_RELEASER") or getpass.getuser()
    except Exception:
        return "unknown"


def reverify(run_dir: Path, record: RunRecord, diff: str) -> dict:
    """Re-run the protected checks on the diff, in fresh containers, against the pristine repository."""
    scenario = load_manifest(Path(json.loads((Path(run_dir) / "scenario.json").read_text())["manifest"]))
    client = image = None
    backend = record.sandbox["kind"]
    if backend == "docker":
        import docker

        from .sandbox.image import ensure_sandbox_image

        client = docker.from_env()
        image = ensure_sandbox_image(client)
    state_dir = Path(run_dir) / "release-verification"
    shutil.rmtree(state_dir, ignore_errors=True)
    # A person's grants widen the diff's scope here too; protected files are still restored before testing.
    verifier = Verifier(scenario.spec, scenario.repo, state_dir, backend=backend, client=client, image=image,
                        heldout=scenario.heldout, granted=tuple(record.granted_paths))
    with verifier:  # each check in its own fresh container; close() removes any pooled ones
        verifier.prepare()
        if verifier.snapshot.tree_sha256 != record.pristine_tree_sha256:
            raise ReleaseRefused("the scenario's pristine repository changed since the run; re-run the scenario")
        verdicts = [("R1", verifier.check_scope(diff)), ("R2", verifier.run_tests(diff, "target_test")),
                    ("R3", verifier.run_tests(diff, "full_suite"))]
    conditions = unsatisfied(verdicts, diff_sha256(diff))
    return {"u": u_count(conditions), "conditions": [c.model_dump() for c in conditions],
            "protected_manifest_sha256": verifier.snapshot.manifest_sha256, "scenario": scenario}


def confirm(run_dir: Path, *, output_dir: Path | None = None) -> dict:
    run_dir = Path(run_dir)
    record, diff = _check_releasable(run_dir)
    check = reverify(run_dir, record, diff)
    if check["u"] != 0:
        raise ReleaseRefused(f"re-verification gives Uₜ={check['u']}: "
                             + "; ".join(c["description"] for c in check["conditions"] if not c["satisfied"]))
    scenario = check.pop("scenario")
    clone = Path(output_dir or run_dir / "release") / scenario.name
    if clone.exists():
        raise ReleaseRefused(f"output clone {clone} already exists")
    if (scenario.repo / ".git").exists():
        git.Repo.clone_from(str(scenario.repo), str(clone), no_hardlinks=True)
    else:
        create_workspace(scenario.repo, clone, for_container=False)
    repo = git.Repo(clone)
    branch = f"repair/{record.run_id}"
    repo.git.checkout("-b", branch)
    patch = run_dir / "candidate.diff"
    repo.git.apply("--index", "--whitespace=nowarn", str(patch))
    who, when = _who(), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    message = (f"Repair {scenario.name}: {scenario.goal.failure_signature}\n\n{scenario.goal.text}\n\n"
               f"Run-Id: {record.run_id}\nVerified-Diff-Sha256: {record.diff_sha256}\n"
               f"Protected-Manifest-Sha256: {check['protected_manifest_sha256']}\nReleased-By: {who}\n")
    commit = repo.index.commit(message, author=git.Actor(who, f"{who}@localhost"), committer=BASE_AUTHOR)
    committed_diff = repo.git.diff(f"{commit.hexsha}~1", commit.hexsha)
    decision = ReleaseDecision(decision="confirmed", who=who, when=when, run_id=record.run_id,
                               diff_sha256=record.diff_sha256, branch=branch, commit=commit.hexsha,
                               clone=str(clone.resolve()), reverification=check)
    _record_decision(run_dir, decision)
    return {**decision.model_dump(), "committed_diff": committed_diff}


def reject(run_dir: Path, reason: str) -> dict:
    run_dir = Path(run_dir)
    record, _ = _check_releasable(run_dir)
    if not reason.strip():
        raise ReleaseRefused("a rejection needs a reason (--reason TEXT)")
    decision = ReleaseDecision(decision="rejected", who=_who(),
                               when=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                               run_id=record.run_id, diff_sha256=record.diff_sha256, reason=reason)
    _record_decision(run_dir, decision)
    return decision.model_dump()


def _record_decision(run_dir: Path, decision: "ReleaseDecision") -> None:
    """release.json, and report.html rendered again so the page a reviewer opens shows the decision."""
    from .html_report import write_run_html

    _decision_path(run_dir).write_text(decision.model_dump_json(indent=2))
    write_run_html(Path(run_dir))
