"""One run end to end: workspace, sandbox, verifier, controller, report. Cleans up on every way out."""
from __future__ import annotations

import datetime as dt
import json
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, Callable

import docker
import requests
from pydantic import BaseModel

from verifier import CONDITIONS, Verifier, diff_sha256
from verifier.conditions import DESCRIPTIONS

from .choosers.base import Chooser
from .controller import Controller, RunOutcome
from .journal import Journal
from .report import write_report
from .sandbox import DockerSandbox, LocalSandbox, NOT_ISOLATED, create_workspace
from .scenario import Scenario
from .state import NEXT_ATTEMPT, Authorization, Budget, ConditionState, Goal, State, StopReason


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
    protected_manifest_sha256: str | None = None
    pristine_tree_sha256: str | None = None
    started_at: str
    wall_s: float
    timing: dict[str, float] = {}


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
                client=None) -> RunRecord:
    t0 = time.monotonic()
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    budget = scenario.budget.model_copy(update={k: v for k, v in {
        "max_steps": max_steps, "deadline_s": deadline_s, "reserved_final_steps": reserved_final_steps,
        "max_tokens": max_tokens}.items()
        if v is not None})
    run_id = new_run_id(scenario.name)
    run_dir = (Path(runs_dir) / run_id).resolve()
    run_dir.mkdir(parents=True)
    journal = Journal(run_dir / "journal.jsonl")
    state = initial_state(scenario, budget)
    sandbox = verifier = None
    image = None
    sandbox_info = {"kind": sandbox_kind, "isolated": sandbox_kind == "docker"}
    if sandbox_kind == "local":
        sandbox_info["warning"] = NOT_ISOLATED
        log(f"WARNING: {NOT_ISOLATED}")
    try:
        try:
            if sandbox_kind == "docker":
                from .sandbox.image import ensure_sandbox_image

                client = client or docker.from_env()
                image = ensure_sandbox_image(client, log=log)
            # The verifier first: prepare() starts making its fresh check containers in the
            # background, while the workspace is built and the sandbox starts.
            verifier = Verifier(scenario.spec, scenario.repo, run_dir / "verifier", backend=sandbox_kind,
                                client=client, image=image, oracle=scenario.oracle,
                                cache_dir=Path(runs_dir).resolve() / ".cache")
            verifier.prepare()
            workspace, tool_out = run_dir / "workspace", run_dir / "outputs"
            if sandbox_kind == "docker":
                # The sandbox container starts while the workspace is built into its (bind-mounted)
                # directory: nothing runs in the container before the first tool call.
                workspace.mkdir()
                with ThreadPoolExecutor(1, thread_name_prefix="workspace") as builder:
                    building = builder.submit(create_workspace, scenario.repo, workspace, for_container=True)
                    try:
                        sandbox = DockerSandbox(client, image, workspace, "", run_id=run_id, output_dir=tool_out)
                    finally:
                        wait([building])
                sandbox.base_commit = building.result()
            else:
                base = create_workspace(scenario.repo, workspace, for_container=False)
                sandbox = LocalSandbox(workspace, base, output_dir=tool_out)
        except Exception as exc:  # engine, image, scenario or workspace: nothing ran yet, say why
            where = f" (Docker Engine at {_engine_address(client)})" if client is not None else ""
            hint = (" — is a Docker Engine running? `--sandbox local` works without one but does NOT isolate"
                    if isinstance(exc, (docker.errors.DockerException, requests.exceptions.RequestException)) else "")
            outcome = _early_stop(state, journal, f"{type(exc).__name__}: {exc}{where}{hint}")
        else:
            from .tools import Executor

            controller = Controller(state, chooser, Executor(sandbox, verifier), verifier, journal,
                                    environment_id=verifier.environment_id, on_step=on_step)
            outcome = controller.run()
    finally:
        # Both at once: each waits on the engine to remove containers.
        closing = threading.Thread(target=verifier.close) if verifier is not None else None
        if closing:
            closing.start()  # its pooled, never-used verification containers
        try:
            if sandbox is not None:
                sandbox.close()
        finally:
            if closing:
                closing.join()
            journal.close()
    (run_dir / "candidate.diff").write_text(outcome.diff, encoding="utf-8", errors="surrogateescape")
    record = RunRecord(
        run_id=run_id, run_dir=str(run_dir), scenario=scenario.name, status=outcome.status,
        exit_code=outcome.status.exit_code, detail=outcome.detail, next_attempt=outcome.next_attempt,
        steps_used=outcome.steps_used, max_steps=outcome.max_steps, u_trajectory=outcome.u_trajectory,
        diff_sha256=outcome.diff_sha256, chooser=getattr(chooser, "name", type(chooser).__name__),
        sandbox=sandbox_info, image=image,
        protected_manifest_sha256=verifier.snapshot.manifest_sha256 if verifier and verifier.snapshot else None,
        pristine_tree_sha256=verifier.snapshot.tree_sha256 if verifier and verifier.snapshot else None,
        started_at=started_at, wall_s=round(time.monotonic() - t0, 4), timing=outcome.timing)
    (run_dir / "run.json").write_text(record.model_dump_json(indent=2))
    (run_dir / "scenario.json").write_text(json.dumps({"manifest": str(scenario.manifest_path),
                                                       **scenario.model_dump(mode="json")}, indent=2))
    write_report(run_dir, record, outcome, scenario, verifier)
    return record


def _engine_address(client) -> str:
    adapter = getattr(client.api, "_custom_adapter", None)
    socket_path = getattr(adapter, "socket_path", None)
    return f"unix://{socket_path}" if socket_path else client.api.base_url


def _early_stop(state: State, journal: Journal, detail: str) -> RunOutcome:
    reason = StopReason.DEPENDENCY_FAILURE
    journal.write({"event": "stop", "status": reason.value, "detail": detail, "next_attempt": NEXT_ATTEMPT[reason],
                   "steps_used": 0, "u_trajectory": [state.u], "state_after": state.model_dump(mode="json"),
                   "state_after_hash": state.hash})
    return RunOutcome(status=reason, detail=detail, next_attempt=NEXT_ATTEMPT[reason], steps_used=0,
                      max_steps=state.budget.max_steps, u_trajectory=[state.u], diff="",
                      diff_sha256=diff_sha256(""), evidence=[], final_state=state, extra={"raw": detail})


def find_run(run: str, runs_dir: Path = Path("runs")) -> Path:
    """A run directory from a path or a run id."""
    for candidate in (Path(run), Path(runs_dir) / run):
        if (candidate / "run.json").is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"no run {run!r} (looked for {run}/run.json and {Path(runs_dir) / run}/run.json)")


def load_record(run_dir: Path) -> RunRecord:
    return RunRecord.model_validate_json((Path(run_dir) / "run.json").read_text())

