"""One run end to end: workspace, sandbox, verifier, controller, report. Cleans up on every way out."""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable, Literal

import docker
import requests
from pydantic import BaseModel

from verifier import CONDITIONS, Verifier, diff_sha256
from verifier.conditions import DESCRIPTIONS

from .choosers.base import Chooser
from .controller import CHOOSER_TIMEOUT_S, Controller, RunOutcome
from .journal import Journal, JournalWriteError, read_journal
from .plain import ChooserIdentity, read_identity
from .report import write_report
from .sandbox import DockerSandbox, LocalSandbox, NOT_ISOLATED, create_workspace
from .scenario import Scenario
from .state import NEXT_ATTEMPT, Authorization, Budget, ConditionState, Goal, State, StopReason
from .tools import Executor
from .usage import UsageSummary, model_of, summarize_usage


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


def initial_state(scenario: Scenario, budget: Budget) -> State:
    spec = scenario.spec
    goal = Goal(scenario=scenario.name, text=scenario.goal.text, failure_signature=scenario.goal.failure_signature,
                target_tests=spec.target_tests, acceptance=tuple(DESCRIPTIONS[c] for c in CONDITIONS),
                constraints=(f"write only {', '.join(spec.writable)}",
                             "never modify tests, conftest.py or test configuration",
                             "no network", "release needs a person's confirmation"))
    auth = Authorization(writable=spec.writable, protected=spec.all_protected)
    conditions = tuple(ConditionState(name=c, description=DESCRIPTIONS[c], satisfied=False) for c in CONDITIONS)
    return State(version=0, parent_hash=None, goal=goal, observation=None, history=(), budget=budget,
                 authorization=auth, conditions=conditions, diff_sha256=diff_sha256(""))


def new_run_id(scenario: str) -> str:
    return f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-{scenario}-{secrets.token_hex(3)}"


def execute_run(scenario: Scenario, chooser: Chooser, *, sandbox_kind: str = "docker", runs_dir: Path = Path("runs"),
                max_steps: int | None = None, deadline_s: float | None = None, reserved_final_steps: int | None = None,
                max_tokens: int | None = None,
                on_step: Callable[[dict], None] | None = None, log: Callable[[str], None] = lambda m: None,
                client=None, chooser_spec: str | None = None) -> RunRecord:
    t0 = time.monotonic()
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    budget = scenario.budget.model_copy(update={k: v for k, v in {
        "max_steps": max_steps, "deadline_s": deadline_s, "reserved_final_steps": reserved_final_steps,
        "max_tokens": max_tokens}.items()
        if v is not None})
    run_id = new_run_id(scenario.name)
    run_dir = (Path(runs_dir) / run_id).resolve()
    state = initial_state(scenario, budget)
    storage_error = None
    try:
        run_dir.mkdir(parents=True)
        journal = Journal(run_dir / "journal.jsonl")
    except OSError as exc:
        # Nothing can be kept where it belongs: the run does not start (dependency_failure), and its
        # journal and report go to a fallback directory the caller is told about.
        storage_error = f"{run_dir.parent} cannot be written: {type(exc).__name__}: {exc}"
        run_dir = fallback_run_dir(run_id)
        journal = Journal(run_dir / "journal.jsonl")
        log(f"WARNING: {storage_error}; this run's journal and report go to {run_dir}")
    session = _Session(scenario, run_dir, run_id, sandbox_kind, client, log, runs_dir=Path(runs_dir))
    # The chooser's name is read once, in setup; nothing later asks the chooser object for it again.
    identity = ChooserIdentity(name=chooser_spec or UNNAMED)
    try:
        try:
            if storage_error:
                raise OSError(f"the runs directory {storage_error}")
            identity = read_identity(chooser, min(CHOOSER_TIMEOUT_S, budget.deadline_s), chooser_spec)
            session.open(granted=())
            journal.write(session.setup_record(identity, chooser_spec, started_at))
        except Exception as exc:  # engine, image, scenario, workspace or journal: nothing ran yet, say why
            outcome = _early_stop(state, journal, session.failure(exc))
        else:
            controller = Controller(state, chooser, Executor(session.sandbox, session.verifier), session.verifier,
                                    journal, environment_id=session.verifier.environment_id, on_step=on_step)
            outcome = controller.run()
    finally:
        session.close()
        journal.close()
    return _write_results(session, outcome, identity, started_at=started_at, wall_s=time.monotonic() - t0,
                          storage_error=storage_error)


def resume_run(run_dir: Path, *, chooser_spec: str | None = None, extra_steps: int | None = None,
               deadline_s: float | None = None, on_step: Callable[[dict], None] | None = None,
               log: Callable[[str], None] = lambda m: None, client=None, runs_dir: Path = Path("runs"),
               model_options: dict | None = None) -> RunRecord:
    """Continue a run from its journal: same journal, same run directory, the same writers at the end.

    The workspace is rebuilt from the pristine tree plus the journaled patches (its diff must hash
    to the journaled one); the dead session's containers are removed first."""
    from .choosers import load_chooser
    from .resume import ResumeRefused, check_resumable, load_checkpoint
    from .scenario import load_manifest

    t0 = time.monotonic()
    run_dir = Path(run_dir).resolve()
    with _exclusive(run_dir):
        checkpoint = load_checkpoint(run_dir)
        if checkpoint.torn:
            log(f"journal: a torn last line ({checkpoint.torn.bytes} bytes after line {checkpoint.torn.after_line}) "
                f"was set aside in {checkpoint.torn.kept_at}")
        check_resumable(checkpoint)
        live = [pid for pid in checkpoint.owner_pids if pid != os.getpid() and _pid_alive(pid)]
        if checkpoint.status == "killed" and live:
            raise ResumeRefused(f"run {run_dir.name} has no stop line and its process {live[-1]} is still alive: "
                                "it is still running")
        budget = checkpoint.state.budget
        steps = extra_steps if extra_steps is not None else budget.steps_left
        if steps < 1:
            raise ResumeRefused(f"run {run_dir.name} used all {budget.max_steps} steps: say how many more this resume "
                                "grants (--max-steps N)")
        setup = checkpoint.setup
        scenario = load_manifest(Path(setup["manifest"]))
        spec = chooser_spec or setup.get("chooser_spec")
        if not spec:
            raise ResumeRefused("the journal does not name the chooser this run used: pass --chooser")
        options = dict(model_options or {})
        if not options.get("models_file") and setup.get("models_file") and spec == setup.get("chooser_spec"):
            options["models_file"] = setup["models_file"]  # model:NAME resolves where it did at the start
        chooser = load_chooser(spec, scenario, seed=setup.get("seed") or 0, **options)
        started_at = setup.get("started_at") or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        session = _Session(scenario, run_dir, setup["run_id"], setup["sandbox"], client, log, runs_dir=Path(runs_dir))
        session.remove_containers_of(checkpoint.owner_pids)
        journal = Journal.reopen(run_dir / "journal.jsonl")
        identity = ChooserIdentity(name=spec)
        try:
            try:
                identity = read_identity(chooser, min(CHOOSER_TIMEOUT_S, deadline_s or budget.deadline_s), spec)
                shutil.rmtree(run_dir / "workspace", ignore_errors=True)  # derived: the journal is the record
                session.open(granted=checkpoint.state.authorization.granted_paths)
                if session.verifier.snapshot.tree_sha256 != setup.get("pristine_tree_sha256"):
                    raise RuntimeError("the scenario's pristine repository changed since the run started; "
                                       "its journaled patches no longer describe a diff of it")
                diff = session.rebuild(checkpoint.patches, checkpoint.state.diff_sha256)
            except Exception as exc:  # nothing new ran: the checkpoint stays as it was, resumable again
                outcome = _early_stop(checkpoint.state, journal, session.failure(exc),
                                      u_trajectory=checkpoint.u_trajectory, evidence=checkpoint.evidence,
                                      diff=_known_diff(run_dir, checkpoint.state.diff_sha256))
            else:
                journal.write(session.setup_record(identity, spec, started_at, resumed_from=checkpoint))
                log(f"resuming {run_dir.name} from {checkpoint.status} at step {budget.steps_used}: "
                    f"{len(checkpoint.patches)} journaled patch(es) on the pristine tree, diff {diff_sha256(diff)[:12]}; "
                    f"granting {steps} more step(s) and {deadline_s or budget.deadline_s:g}s")
                controller = Controller.from_checkpoint(
                    checkpoint, diff, chooser, Executor(session.sandbox, session.verifier), session.verifier,
                    journal, environment_id=session.verifier.environment_id, extra_steps=steps,
                    deadline_s=deadline_s or budget.deadline_s, on_step=on_step)
                outcome = controller.run()
        finally:
            session.close()
            journal.close()
        previous = load_record(run_dir).wall_s if (run_dir / "run.json").is_file() else 0.0
        return _write_results(session, outcome, identity, started_at=started_at,
                              wall_s=previous + time.monotonic() - t0)


class _Session:
    """One process's hold on a run: engine, image, workspace, verifier and sandbox, and their cleanup."""

    def __init__(self, scenario: Scenario, run_dir: Path, run_id: str, sandbox_kind: str, client,
                 log: Callable[[str], None], *, runs_dir: Path):
        self.scenario, self.run_dir, self.run_id, self.kind = scenario, run_dir, run_id, sandbox_kind
        self.client, self.log, self.runs_dir = client, log, runs_dir
        self.sandbox = self.verifier = self.image = self.base = None
        self.info = {"kind": sandbox_kind, "isolated": sandbox_kind == "docker"}
        if sandbox_kind == "local":
            self.info["warning"] = NOT_ISOLATED
            log(f"WARNING: {NOT_ISOLATED}")

    def open(self, granted: tuple[str, ...]) -> None:
        if self.kind == "docker":
            from .sandbox.environment import scenario_image

            self.client = self.client or docker.from_env()
            # The scenario's environment image (or the plain sandbox image): the sandbox and the
            # verifier's checks run the same one.
            self.image = scenario_image(self.client, self.scenario, log=self.log)
        # The verifier first: prepare() starts making its fresh check containers in the
        # background, while the workspace is built and the sandbox starts.
        self.verifier = Verifier(self.scenario.spec, self.scenario.repo, self.run_dir / "verifier", backend=self.kind,
                                 client=self.client, image=self.image, heldout=self.scenario.heldout,
                                 cache_dir=Path(self.runs_dir).resolve() / ".cache", granted=granted,
                                 labels={"org.repair-agent.run": self.run_id},
                                 site_packages=self.scenario.environment is not None)
        self.verifier.prepare()
        if self.verifier.cache_note:
            self.log(f"note: {self.verifier.cache_note}")
        workspace, tool_out = self.run_dir / "workspace", self.run_dir / "outputs"
        if self.kind == "docker":
            # The sandbox container starts while the workspace is built into its (bind-mounted)
            # directory: nothing runs in the container before the first tool call.
            workspace.mkdir()
            with ThreadPoolExecutor(1, thread_name_prefix="workspace") as builder:
                building = builder.submit(create_workspace, self.scenario.repo, workspace, for_container=True)
                try:
                    self.sandbox = DockerSandbox(self.client, self.image, workspace, "", run_id=self.run_id,
                                                 output_dir=tool_out)
                finally:
                    wait([building])
            self.base = self.sandbox.base_commit = building.result()
        else:
            self.base = create_workspace(self.scenario.repo, workspace, for_container=False)
            self.sandbox = LocalSandbox(workspace, self.base, output_dir=tool_out)

    def rebuild(self, patches: list[str], expected_sha256: str) -> str:
        """Pristine tree + the journaled patches, applied by the sandbox as they were the first time."""
        for number, patch in enumerate(patches, 1):
            res = self.sandbox.apply_patch(patch)
            if not res.ok:
                raise RuntimeError(f"journaled patch {number} of {len(patches)} no longer applies: {res.stderr.text[-500:]}")
        diff = self.sandbox.diff() if patches else ""
        if diff_sha256(diff) != expected_sha256:
            raise RuntimeError(f"the rebuilt workspace's diff ({diff_sha256(diff)[:12]}) is not the journaled one "
                               f"({expected_sha256[:12]})")
        return diff

    def setup_record(self, identity: ChooserIdentity, chooser_spec: str | None, started_at: str,
                     resumed_from=None) -> dict:
        """Who runs this session and on what: enough for a later resume to find everything again."""
        record = {"event": "setup", "run_id": self.run_id, "scenario": self.scenario.name,
                  "manifest": str(self.scenario.manifest_path), "chooser": identity.name,
                  "chooser_spec": chooser_spec, "seed": identity.seed, "sandbox": self.kind, "image": self.image,
                  "pid": os.getpid(), "model": identity.model, "models_file": identity.models_file,
                  "started_at": started_at, "environment_id": self.verifier.environment_id,
                  "pristine_tree_sha256": self.verifier.snapshot.tree_sha256,
                  "protected_manifest_sha256": self.verifier.snapshot.manifest_sha256}
        if resumed_from is not None:
            record["resume"] = {"from_status": resumed_from.status, "from_detail": resumed_from.detail,
                                "session_started_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                                "torn_tail": resumed_from.torn.model_dump() if resumed_from.torn else None,
                                "rebuilt_from_patches": len(resumed_from.patches)}
        return record

    def remove_containers_of(self, pids: list[int]) -> int:
        """A killed session leaves its sandbox (and maybe a verifier) container: remove those whose
        owner process is gone. A live owner's containers are never touched."""
        if self.kind != "docker":
            return 0
        from verifier.isolation import LABEL, OWNER_LABEL

        self.client = self.client or docker.from_env()
        removed = 0
        for pid in {p for p in pids if not _pid_alive(p)}:
            for c in self.client.containers.list(all=True, filters={"label": [LABEL, f"{OWNER_LABEL}={pid}"]}):
                c.remove(force=True, v=True)
                removed += 1
        if removed:
            self.log(f"removed {removed} container(s) left by the killed session")
        return removed

    def failure(self, exc: Exception) -> str:
        where = f" (Docker Engine at {_engine_address(self.client)})" if self.client is not None else ""
        hint = (" — is a Docker Engine running? `--sandbox local` works without one but does NOT isolate"
                if isinstance(exc, (docker.errors.DockerException, requests.exceptions.RequestException)) else "")
        return f"{type(exc).__name__}: {exc}{where}{hint}"

    def close(self) -> None:
        # Both at once: each waits on the engine to remove containers.
        closing = threading.Thread(target=self.verifier.close) if self.verifier is not None else None
        if closing:
            closing.start()  # its pooled, never-used verification containers
        try:
            if self.sandbox is not None and self.sandbox.close() is False:
                self.log(f"WARNING: could not remove this run's sandbox container; "
                         f"`repair-agent cleanup --run {self.run_id}` will")
        finally:
            if closing:
                closing.join()


def final_correctness(outcome: RunOutcome) -> str | None:
    evidence = outcome.final_test_evidence()
    value = evidence.data.get("correctness") if evidence else None
    return value if value in ("correct", "plausible", "unchecked") else None


def _write_results(session: _Session, outcome: RunOutcome, identity: ChooserIdentity, *, started_at: str, wall_s: float,
                   storage_error: str | None = None) -> RunRecord:
    """run.json, candidate.diff, scenario.json and the report: the same writers for a fresh run and a resume."""
    run_dir, scenario, verifier = session.run_dir, session.scenario, session.verifier
    journal = list(read_journal(run_dir / "journal.jsonl"))
    model = model_of(journal)
    record = RunRecord(
        run_id=session.run_id, run_dir=str(run_dir), scenario=scenario.name, status=outcome.status,
        exit_code=outcome.status.exit_code, detail=outcome.detail, next_attempt=outcome.next_attempt,
        steps_used=outcome.steps_used, max_steps=outcome.max_steps, u_trajectory=outcome.u_trajectory,
        diff_sha256=outcome.diff_sha256, chooser=identity.name, sandbox=session.info, image=session.image,
        environment_id=_environment_id(verifier),
        protected_manifest_sha256=verifier.snapshot.manifest_sha256 if verifier and verifier.snapshot else None,
        pristine_tree_sha256=verifier.snapshot.tree_sha256 if verifier and verifier.snapshot else None,
        started_at=started_at, wall_s=round(wall_s, 4), timing=outcome.timing,
        granted_paths=list(outcome.final_state.authorization.granted_paths),
        sessions=sum(1 for r in journal if r.get("event") == "setup") or 1,
        model=model, usage=summarize_usage(journal, model),
        infrastructure_failure=outcome.status is StopReason.DEPENDENCY_FAILURE and bool(outcome.extra.get("infrastructure")),
        report_dir=str(run_dir) if storage_error else None, storage_error=storage_error,
        correctness=final_correctness(outcome))
    try:
        _write_outputs(run_dir, record, outcome, scenario, verifier)
    except OSError as exc:
        # The run directory filled up or turned read-only mid-run. Its journal keeps every complete
        # line; the record and the report go to the fallback directory, and the caller is told.
        fallback = fallback_run_dir(session.run_id)
        record = record.model_copy(update={"report_dir": str(fallback),
                                           "storage_error": f"{run_dir} cannot be written: {type(exc).__name__}: {exc}"})
        session.log(f"WARNING: {record.storage_error}; the report goes to {fallback}")
        _write_outputs(fallback, record, outcome, scenario, verifier)
    return record


@contextlib.contextmanager
def _exclusive(run_dir: Path):
    """One resume of a run at a time."""
    with open(run_dir / ".resume.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            from .resume import ResumeRefused

            raise ResumeRefused(f"run {run_dir.name} is being resumed by another process") from None
        yield


def _pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True




def fallback_run_dir(run_id: str) -> Path:
    """Where a run's files go when the runs directory cannot take them: $TMPDIR/repair-agent-runs/RUN_ID."""
    path = Path(tempfile.gettempdir()) / "repair-agent-runs" / run_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write_outputs(directory: Path, record: "RunRecord", outcome: RunOutcome, scenario: Scenario, verifier) -> None:
    # Each file whole or not at all (written aside, then renamed): a full disk must not leave a
    # truncated run.json that every later `runs` or `show` would stumble on.
    def put(name: str, text: str) -> None:
        tmp = directory / f".{name}.tmp"
        try:
            tmp.write_text(text, encoding="utf-8", errors="surrogateescape")
            os.replace(tmp, directory / name)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    put("candidate.diff", outcome.diff)
    put("run.json", record.model_dump_json(indent=2))
    put("scenario.json", json.dumps({"manifest": str(scenario.manifest_path), **scenario.model_dump(mode="json")},
                                    indent=2))
    write_report(directory, record, outcome, scenario, verifier, write=put)


def _environment_id(verifier) -> str | None:
    if verifier is None or verifier.snapshot is None:  # the run never got as far as its verifier
        return None
    try:
        return verifier.environment_id
    except Exception:  # the engine went away: run.json still gets written
        return None


UNNAMED = "unnamed chooser"


def _engine_address(client) -> str:
    adapter = getattr(client.api, "_custom_adapter", None)
    socket_path = getattr(adapter, "socket_path", None)
    return f"unix://{socket_path}" if socket_path else client.api.base_url


def _known_diff(run_dir: Path, expected_sha256: str) -> str:
    """The last written candidate.diff, if it is the journaled diff (a killed run may have none)."""
    path = run_dir / "candidate.diff"
    diff = path.read_text(encoding="utf-8", errors="surrogateescape") if path.is_file() else ""
    return diff if diff_sha256(diff) == expected_sha256 else ""


def _early_stop(state: State, journal: Journal, detail: str, u_trajectory: list[int] | None = None,
                evidence: list | None = None, diff: str = "") -> RunOutcome:
    """Nothing could run (or, on resume, nothing new ran): the state is kept as it was."""
    reason = StopReason.DEPENDENCY_FAILURE
    u_trajectory = u_trajectory or [state.u]
    try:
        journal.write({"event": "stop", "status": reason.value, "detail": detail, "next_attempt": NEXT_ATTEMPT[reason],
                       "steps_used": state.budget.steps_used, "u_trajectory": u_trajectory,
                       "state_after": state.model_dump(mode="json"), "state_after_hash": state.hash})
    except JournalWriteError as exc:  # the report still says why; the journal keeps its earlier lines
        detail = f"{detail}; and the journal could not record this stop: {exc}"
    return RunOutcome(status=reason, detail=detail, next_attempt=NEXT_ATTEMPT[reason],
                      steps_used=state.budget.steps_used, max_steps=state.budget.max_steps, u_trajectory=u_trajectory,
                      diff=diff, diff_sha256=diff_sha256(diff), evidence=evidence or [], final_state=state,
                      extra={"raw": detail})


def find_run(run: str, runs_dir: Path = Path("runs")) -> Path:
    """A run directory from a path or a run id."""
    for candidate in (Path(run), Path(runs_dir) / run):
        if (candidate / "run.json").is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"no run {run!r} (looked for {run}/run.json and {Path(runs_dir) / run}/run.json)")


def load_record(run_dir: Path) -> RunRecord:
    return RunRecord.model_validate_json((Path(run_dir) / "run.json").read_text())

