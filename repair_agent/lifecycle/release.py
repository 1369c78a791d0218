"""The release gate: a person's decision, never derived from all-green. Only the CLI calls this."""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import getpass
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Literal

from pydantic import BaseModel
from unidiff import PatchSet

from verifier import Verifier, diff_sha256, u_count, unsatisfied
from verifier.files import atomic_create

from ..untrusted.hostgit import run_git
from ..loop.journal import SetupRecord, StopRecord, parse_record, read_journal, verify_chain
from ..importers.local_repo import origin_of
from ..reports.records import RunRecord, load_record
from ..scenarios.scenario import load_manifest
from .seal import RunSeal, SealError, verify_seal
from ..loop.state import StopReason
from ..sandbox.backends import backend_named
from ..sandbox.workspace import BASE_IDENTITY, create_workspace


class ReleaseDecision(BaseModel):
    """`RUN/release.json`: who decided what, when, on which diff."""

    decision: Literal["confirmed", "rejected"]
    who: str
    when: str
    run_id: str
    diff_sha256: str                   # of the bytes re-verified and applied (the run's verified diff)
    environment_id: str | None = None  # what the re-verification ran on: docker:<image id> or local:<python>
    image_id: str | None = None        # the image of that id (docker), the one the run itself was verified on
    reason: str | None = None
    branch: str | None = None
    commit: str | None = None
    clone: str | None = None
    reverification: dict[str, Any] | None = None
    # A `run --repo` release: the user's repository it went into, or the patch file written instead.
    repository: str | None = None
    patch_file: str | None = None
    files: list[str] | None = None


class ReleaseRefused(RuntimeError):
    """The release cannot proceed; the message says why. Nothing was changed."""


def _decision_path(run_dir: Path) -> Path:
    return Path(run_dir) / "release.json"


@contextlib.contextmanager
def _deciding(run_dir: Path) -> Iterator[None]:
    """One decision on a run at a time: an exclusive lock on RUN/release.lock for the whole of a
    confirmation (re-verification included) or a rejection. Another decision in progress is
    refused at once, not waited for: the person is told, and then sees its outcome."""
    path = Path(run_dir) / "release.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
            raise ReleaseRefused(f"a release decision on run {Path(run_dir).name} is in progress ({holder}); "
                                 "nothing was changed: wait for it, then see `repair-agent show`") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} of {_who()}".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _sealed(run_dir: Path, record: RunRecord) -> RunSeal:
    """The run's seal, which must hold under this user's key and name this record's run and diff."""
    try:
        seal = verify_seal(run_dir)
    except SealError as exc:
        raise ReleaseRefused(f"{type(exc).__name__}: {exc}; nothing is released") from None
    if (seal.run_id, seal.diff_sha256) != (record.run_id, record.diff_sha256):
        raise ReleaseRefused("SealBroken: the seal names another run or diff; nothing is released")
    return seal


def _check_releasable(run_dir: Path) -> tuple[RunRecord, bytes]:
    """The run's record and candidate.diff's bytes, read once: these bytes, and no later read of the
    file, are what is re-verified and applied."""
    record = load_record(run_dir)
    if record.status.value != "awaiting_release_confirmation":
        raise ReleaseRefused(f"run {record.run_id} ended {record.status.value!r}, not awaiting_release_confirmation: "
                             f"there is nothing to release")
    if _decision_path(run_dir).exists():
        previous = ReleaseDecision.model_validate_json(_decision_path(run_dir).read_text())
        raise ReleaseRefused(f"run {record.run_id} was already {previous.decision} by {previous.who} "
                             f"at {previous.when}")
    data = (Path(run_dir) / "candidate.diff").read_bytes()
    if hashlib.sha256(data).hexdigest() != record.diff_sha256:
        raise ReleaseRefused(f"candidate.diff changed on disk since verification (sha256 "
                             f"{hashlib.sha256(data).hexdigest()[:16]} != verified {record.diff_sha256[:16]}); "
                             f"refusing to release an unverified diff")
    return record, data


def _journal_says(run_dir: Path, record: RunRecord) -> str:
    """The environment the run was verified on, from its journal, which must verify and end awaiting
    confirmation on this diff: run.json is a summary anyone can edit; the journal is hash-chained."""
    path = Path(run_dir) / "journal.jsonl"
    try:
        records = list(read_journal(path))
    except (OSError, ValueError) as exc:
        raise ReleaseRefused(f"the run's journal cannot be read ({exc}); nothing is released") from None
    problems = verify_chain(records)
    if problems:
        raise ReleaseRefused(f"the run's journal does not verify ({'; '.join(problems[:3])}); nothing is released")
    try:
        typed = [parse_record(r) for r in records]
    except ValueError as exc:
        raise ReleaseRefused(f"the run's journal holds a line that is no journal record ({str(exc)[:300]}); "
                             "nothing is released") from None
    last = typed[-1] if typed else None
    if not isinstance(last, StopRecord) or last.status is not StopReason.AWAITING_RELEASE_CONFIRMATION:
        ended = f"ended {last.status.value!r}" if isinstance(last, StopRecord) else "has no stop line"
        raise ReleaseRefused(f"run.json says awaiting_release_confirmation but the run's journal {ended}; "
                             f"nothing is released")
    if last.diff_sha256 != record.diff_sha256:
        raise ReleaseRefused("run.json and the run's journal name different diffs; nothing is released")
    setups = [r for r in typed if isinstance(r, SetupRecord)]
    environment = setups[-1].environment_id if setups else None
    if not isinstance(environment, str) or not environment:
        raise ReleaseRefused("the run's journal does not say what its checks ran on; re-run the scenario")
    if record.environment_id is not None and record.environment_id != environment:
        raise ReleaseRefused(f"run.json says the run was verified on {record.environment_id} but its journal says "
                             f"{environment}; nothing is released")
    return environment


def _who() -> str:
    try:
        return os.environ.get("REPAIR_AGENT_RELEASER") or getpass.getuser()
    except Exception:
        return "unknown"


def reverify(run_dir: Path, record: RunRecord, diff: str, environment_id: str, seal: RunSeal) -> dict:
    """Re-run the protected checks on the diff, in fresh containers of the image the run was verified
    on (or the same local interpreter), against the pristine repository and the sealed manifest."""
    scenario = load_manifest(Path(seal.manifest))
    backend = backend_named(record.sandbox["kind"])
    client = backend.engine()
    try:
        image = backend.verified_image(client, environment_id, record.image)
    except LookupError as exc:
        raise ReleaseRefused(f"{exc}; release re-verifies only on the run's own image: re-run the scenario to verify "
                             "the diff on the current one") from None
    # Each attempt its own check directory: an earlier or failed attempt's is kept, never shared.
    attempts = Path(run_dir) / "release-verification"
    attempts.mkdir(exist_ok=True)
    state_dir = Path(tempfile.mkdtemp(dir=attempts, prefix=dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ-")))
    # A person's grants widen the diff's scope here too; protected files are still restored before testing.
    verifier = Verifier(scenario.spec, scenario.repo, state_dir, backend=backend.checks_on, client=client, image=image,
                        granted=tuple(record.granted_paths), **scenario.verifier_inputs())
    if verifier.environment_id != environment_id:
        raise ReleaseRefused(f"the run was verified on {environment_id}, and this release would run its checks on "
                             f"{verifier.environment_id}; re-run the scenario here to verify the diff on it")
    with verifier:  # each check in its own fresh container; close() removes any pooled ones
        verifier.prepare()
        snapshot = verifier.snapshot
        assert snapshot is not None  # prepare() took it
        if snapshot.tree_sha256 != record.pristine_tree_sha256:
            raise ReleaseRefused("the scenario's pristine repository changed since the run; re-run the scenario")
        if seal.protected_manifest_sha256 and snapshot.manifest_sha256 != seal.protected_manifest_sha256:
            raise ReleaseRefused("the scenario's protected files or acceptance rules changed since the run was "
                                 "verified; re-run the scenario")
        verdicts = [("R1", verifier.check_scope(diff)), ("R2", verifier.run_tests(diff, "target_test")),
                    ("R3", verifier.run_tests(diff, "full_suite"))]
    conditions = unsatisfied(verdicts, diff_sha256(diff))
    suite = verdicts[2][1]
    behaviour = suite.behaviour.summary if getattr(suite, "behaviour", None) is not None else None
    return {"u": u_count(conditions), "conditions": [c.model_dump() for c in conditions],
            "correctness": getattr(suite, "correctness", None), "behaviour": behaviour,
            "protected_manifest_sha256": snapshot.manifest_sha256, "environment_id": environment_id,
            "image_id": image, "scenario": scenario}


def confirm(run_dir: Path, *, output_dir: Path | None = None, shown_sha256: str | None = None,
            branch: str | None = None, patch_file: Path | None = None, accept_plausible: bool = False) -> dict:
    """Re-verify the run's diff and commit it on a branch of a fresh clone (a `run --repo` run: on a
    new branch of the user's repository), or write it to `patch_file`. The diff's bytes are read
    once: the bytes re-verified are the bytes applied (from memory, not from the file again).
    `shown_sha256`: the diff a person was shown, which must be the one released."""
    run_dir = Path(run_dir)
    with _deciding(run_dir):
        return _confirm(run_dir, output_dir=output_dir, shown_sha256=shown_sha256, branch=branch,
                        patch_file=patch_file, accept_plausible=accept_plausible)


def _confirm(run_dir: Path, *, output_dir: Path | None, shown_sha256: str | None, branch: str | None,
             patch_file: Path | None, accept_plausible: bool) -> dict:
    record, data = _check_releasable(run_dir)
    verified_sha256 = hashlib.sha256(data).hexdigest()
    if shown_sha256 is not None and shown_sha256 != verified_sha256:
        raise ReleaseRefused("candidate.diff changed after it was shown; nothing is released")
    seal = _sealed(run_dir, record)
    environment_id = _journal_says(run_dir, record)
    diff = data.decode("utf-8", errors="surrogateescape")  # the same bytes back when encoded
    check = reverify(run_dir, record, diff, environment_id, seal)
    if check["u"] != 0:
        raise ReleaseRefused(f"re-verification gives Uₜ={check['u']}: "
                             + "; ".join(c["description"] for c in check["conditions"] if not c["satisfied"]))
    if check["correctness"] == "plausible" and not accept_plausible:
        # The visible tests pass, but the behaviour checks (held-out cases, the reference fix's answers
        # to generated inputs) say otherwise: a person must say they release it anyway.
        raise ReleaseRefused(f"the diff passes the tests but not the behaviour checks ({check['behaviour']}); "
                             "release it anyway only with --accept-plausible")
    scenario = check.pop("scenario")
    origin = origin_of(scenario.manifest_path)
    if origin is not None or patch_file is not None:
        return _release_to_user(run_dir, record, data, scenario, origin, check, environment_id,
                                branch=branch, patch_file=patch_file)
    clone = Path(output_dir or run_dir / "release") / scenario.name
    if clone.exists():
        raise ReleaseRefused(f"output clone {clone} already exists")
    tree = scenario.workspace_tree  # the diff was made on it (without hidden tests)
    if (tree / ".git").exists():
        _clone_git("the scenario's repository cannot be cloned",
                   ["clone", "--quiet", "--no-hardlinks", "--", str(tree), str(clone)], tree,
                   cwd=clone.parent, make=clone.parent)
    else:
        create_workspace(tree, clone, for_container=False)
    branch = branch or f"repair/{record.run_id}"
    _clone_git("the clone's branch cannot be made", ["checkout", "--quiet", "-b", branch], clone)
    applied = run_git(["apply", "--index", "--whitespace=nowarn", "-"], clone, stdin=data, timeout=120)
    if applied.returncode:
        shutil.rmtree(clone, ignore_errors=True)
        raise ReleaseRefused(f"the verified diff does not apply to a fresh clone: "
                             f"{applied.stderr.decode(errors='replace')[-1000:]}")
    who, when = _who(), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    message = _message(scenario, record, verified_sha256, environment_id, check, who)
    identity = {"GIT_AUTHOR_NAME": who, "GIT_AUTHOR_EMAIL": f"{who}@localhost",
                "GIT_COMMITTER_NAME": BASE_IDENTITY[0], "GIT_COMMITTER_EMAIL": BASE_IDENTITY[1]}
    _clone_git("the release commit cannot be made", ["commit", "--quiet", "--no-verify", "-F", "-"], clone,
               stdin=message, env=identity)
    commit = _clone_git("the release commit cannot be read", ["rev-parse", "HEAD"], clone).strip()
    committed_diff = _clone_git("the release commit cannot be read",
                                ["diff", "--no-ext-diff", "--no-textconv", "--no-color", f"{commit}~1", commit], clone)
    decision = ReleaseDecision(decision="confirmed", who=who, when=when, run_id=record.run_id,
                               diff_sha256=verified_sha256, environment_id=environment_id,
                               image_id=check["image_id"], branch=branch, commit=commit,
                               clone=str(clone.resolve()), reverification=check)
    _record_decision(run_dir, decision)
    return {**decision.model_dump(), "committed_diff": committed_diff}


def _clone_git(what: str, args: list[str], repo: Path, *, cwd: Path | None = None, make: Path | None = None,
               stdin: str = "", env: dict | None = None) -> str:
    """Host git for the release clone (hostgit: no config, hooks or drivers of the repository run)."""
    if make is not None:
        make.mkdir(parents=True, exist_ok=True)
    proc = run_git(args, repo, cwd=cwd, stdin=stdin, env=env)
    if proc.returncode:
        raise ReleaseRefused(f"{what}: {proc.stderr.decode(errors='replace')[-1000:]}")
    return proc.stdout.decode("utf-8", errors="surrogateescape")


def _message(scenario, record: RunRecord, verified_sha256: str, environment_id: str, check: dict, who: str) -> str:
    return (f"Repair {scenario.name}: {scenario.goal.failure_signature}\n\n{scenario.goal.text}\n\n"
            f"Run-Id: {record.run_id}\nVerified-Diff-Sha256: {verified_sha256}\n"
            f"Verified-On: {environment_id}\n"
            f"Protected-Manifest-Sha256: {check['protected_manifest_sha256']}\nReleased-By: {who}\n")


def _release_to_user(run_dir: Path, record: RunRecord, data: bytes, scenario, origin, check: dict,
                     environment_id: str, *, branch: str | None, patch_file: Path | None) -> dict:
    """The re-verified diff as a patch file, or (a `run --repo` run) a new branch of the user's
    repository; `summary` says exactly what was written where."""
    from ..importers.local_repo import LocalRepoError, release_branch, write_patch_file

    verified_sha256 = hashlib.sha256(data).hexdigest()
    who, when = _who(), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    common = dict(decision="confirmed", who=who, when=when, run_id=record.run_id, diff_sha256=verified_sha256,
                  environment_id=environment_id, image_id=check["image_id"], reverification=check)
    try:
        if patch_file is not None:
            path = write_patch_file(patch_file, data)
            files = [f.path for f in PatchSet(data.decode("utf-8", errors="replace"))]
            decision = ReleaseDecision(**common, patch_file=str(path), files=files,
                                       repository=origin.path if origin else None)
            base = (f" against {origin.path} at {origin.head[:12] if origin.head else 'no commit'}"
                    + (f" with its {len(origin.uncommitted)} uncommitted file(s) as they were when the run began"
                       if origin.uncommitted else "")) if origin else ""
            summary = f"wrote the verified diff ({len(files)} file(s): {', '.join(files)}) to {path}; it applies{base}"
        else:
            done = release_branch(origin, scenario.repo, data, branch=branch or f"repair-agent/{record.run_id}",
                                  message=_message(scenario, record, verified_sha256, environment_id, check, who),
                                  who=who)
            decision = ReleaseDecision(**common, branch=done["branch"], commit=done["commit"],
                                       repository=done["repository"], files=done["files"])
            summary = (f"created branch {done['branch']} in {done['repository']} at commit {done['commit']}"
                       f" (on {str(done['base'])[:12]}"
                       + (f", after a commit {done['commits'][0][:12]} holding the {len(done['uncommitted_files'])} "
                          f"file(s) uncommitted when the run began: {', '.join(done['uncommitted_files'][:10])}"
                          if len(done["commits"]) > 1 else "")
                       + f"); files changed by the repair: {', '.join(done['files'])}; your working tree, index "
                         "and checked-out branch were not touched")
    except LocalRepoError as exc:
        raise ReleaseRefused(str(exc)) from None
    _record_decision(run_dir, decision)
    return {**decision.model_dump(), "summary": summary}


def reject(run_dir: Path, reason: str) -> dict:
    run_dir = Path(run_dir)
    if not reason.strip():
        raise ReleaseRefused("a rejection needs a reason (--reason TEXT)")
    with _deciding(run_dir):
        record, _ = _check_releasable(run_dir)
        _sealed(run_dir, record)
        return _reject(run_dir, record, reason)


def _reject(run_dir: Path, record: RunRecord, reason: str) -> dict:
    decision = ReleaseDecision(decision="rejected", who=_who(),
                               when=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                               run_id=record.run_id, diff_sha256=record.diff_sha256, reason=reason)
    _record_decision(run_dir, decision)
    return decision.model_dump()


def _record_decision(run_dir: Path, decision: "ReleaseDecision") -> None:
    """release.json, written once (never overwritten, even by a racing writer), and report.html
    rendered again so the page a reviewer opens shows the decision."""
    from ..reports.html_report import write_run_html

    try:
        atomic_create(_decision_path(run_dir), decision.model_dump_json(indent=2))
    except FileExistsError:
        raise ReleaseRefused(f"run {decision.run_id} was decided meanwhile; see {_decision_path(run_dir)}") from None
    write_run_html(Path(run_dir))
