"""One fresh run end to end: its first state, its session, the controller, its outputs. Cleans up on every
way out. Resuming a run is resume.py; what a run leaves behind is outputs.py."""
from __future__ import annotations

import datetime as dt
import contextlib
import threading
import time
from pathlib import Path
from typing import Callable

from verifier import CONDITIONS, diff_sha256
from verifier.conditions import DESCRIPTIONS, Condition

from ..choosers.base import Chooser
from ..loop.controller import CHOOSER_TIMEOUT_S, Controller
from ..loop.journal import Journal, JournalWriteError, StopRecord
from ..loop.loop_state import LoopState
from .outputs import write_results
from ..choosers.base import ChooserDescription
from ..loop.plain import read_description
from ..loop.outcome import RunOutcome
from ..reports.records import RunRecord
from ..sandbox.backends import Backend, backend_named
from ..sandbox.early import EarlySandbox, new_run_id
from ..scenarios.scenario import Scenario
from .session import Session, fallback_run_dir
from ..loop.state import NEXT_ATTEMPT, Authorization, Budget, Goal, State, StepProgress, StopReason, budget_with
from ..loop.tools import Executor
from ..loop.usage import CostLimit, model_record


def initial_state(scenario: Scenario, budget: Budget) -> State:
    spec = scenario.spec
    goal = Goal(scenario=scenario.name, text=scenario.goal.text, failure_signature=scenario.goal.failure_signature,
                target_tests=spec.target_tests, acceptance=tuple(DESCRIPTIONS[c] for c in CONDITIONS),
                constraints=(f"write only {', '.join(spec.writable)}",
                             "never modify tests, conftest.py or test configuration",
                             "no network", "release needs a person's confirmation"))
    auth = Authorization(writable=spec.writable, protected=spec.all_protected)
    conditions = tuple(Condition(name=c, description=DESCRIPTIONS[c], satisfied=False) for c in CONDITIONS)
    return State(version=0, parent_hash=None, goal=goal, observation=None, history=(), budget=budget,
                 authorization=auth, conditions=conditions, diff_sha256=diff_sha256(""))


def execute_run(scenario: Scenario, chooser: Chooser, *, backend: Backend | str = "docker", runs_dir: Path = Path("runs"),
                max_steps: int | None = None, deadline_s: float | None = None, reserved_final_steps: int | None = None,
                max_tokens: int | None = None, max_cost: float | None = None,
                on_step: Callable[[StepProgress], None] | None = None, log: Callable[[str], None] = lambda m: None,
                client=None, chooser_spec: str | None = None, early: EarlySandbox | None = None) -> RunRecord:
    """`backend`: the sandbox backend, or its name (BACKENDS). `early`: this run's sandbox, begun by
    the caller before its own imports (its run id becomes this run's); the session takes it, or
    removes it whichever way the run ends."""
    t0 = time.monotonic()
    started_at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    budget = budget_with(scenario.budget, max_steps=max_steps, deadline_s=deadline_s,
                         reserved_final_steps=reserved_final_steps, max_tokens=max_tokens)
    run_id = early.run_id if early is not None else new_run_id(scenario.name)
    run_dir = (Path(runs_dir) / run_id).resolve()
    state = initial_state(scenario, budget)
    storage_error = None
    try:
        run_dir.mkdir(parents=True, exist_ok=early is not None)  # the early sandbox may have made it
        journal = Journal(run_dir / "journal.jsonl")
    except OSError as exc:
        # Nothing can be kept where it belongs: the run does not start (dependency_failure), and its
        # journal and report go to a fallback directory the caller is told about.
        storage_error = f"{run_dir.parent} cannot be written: {type(exc).__name__}: {exc}"
        run_dir = fallback_run_dir(run_id)
        journal = Journal(run_dir / "journal.jsonl")
        log(f"WARNING: {storage_error}; this run's journal and report go to {run_dir}")
    session = Session(scenario, run_dir, run_id, backend_named(backend), client, log, runs_dir=Path(runs_dir),
                      early=early)
    # The chooser's name is read once, in setup; nothing later asks the chooser object for it again.
    identity = ChooserDescription(name=chooser_spec or UNNAMED)
    try:
        try:
            if storage_error:
                raise OSError(f"the runs directory {storage_error}")
            identity = read_description(chooser, min(CHOOSER_TIMEOUT_S, budget.deadline_s), chooser_spec)
            session.open(granted=())
            _warm_report_writer()
            journal.write(session.setup_record(identity, chooser_spec, started_at, max_cost=max_cost))
        except Exception as exc:  # engine, image, scenario, workspace or journal: nothing ran yet, say why
            outcome = early_stop(state, journal, session.failure(exc))
        else:
            sandbox, verifier = session.live
            executor = Executor(sandbox, verifier, mutate=identity.mutation_analysis,
                                hidden_tests=session.scenario.hidden_tests is not None, goal=session.scenario.goal.text)
            cost_limit = None if max_cost is None else CostLimit(max_cost=max_cost, model=model_record(identity))
            controller = Controller(LoopState.start(state), chooser, executor, verifier, journal, environment_id=verifier.environment_id,
                                    on_step=on_step, cost_limit=cost_limit)
            outcome = controller.run()
    except BaseException:  # interrupted or broken: remove the containers before anything else
        session.close()
        raise
    finally:
        journal.close()
    with _closing(session):
        return write_results(session, outcome, identity, started_at=started_at, wall_s=time.monotonic() - t0,
                              storage_error=storage_error)


@contextlib.contextmanager
def _closing(session: Session):
    """After the verdict the containers are removed while the results are written (one waits on the
    engine, the other on the disk); joined before returning, so removal stays as certain as before."""
    failed: list[BaseException] = []

    def close() -> None:
        try:
            session.close()
        except BaseException as exc:  # raised on the caller's thread once the results are written
            failed.append(exc)

    closer = threading.Thread(target=close, name="session-close")
    closer.start()
    try:
        yield
    finally:
        closer.join()
    if failed:
        raise failed[0]


def _warm_report_writer() -> None:
    """Import and compile what writing the report needs (jinja2, pygments, the template) in the
    background while the run waits on its containers, instead of after the verdict."""
    def warm() -> None:
        try:
            from ..reports import html_report

            html_report.warm()
        except Exception:  # the report writer itself will say what is wrong, on the main thread
            pass

    threading.Thread(target=warm, name="report-warmup", daemon=True).start()


UNNAMED = "unnamed chooser"


def early_stop(state: State, journal: Journal, detail: str, u_trajectory: list[int] | None = None,
                evidence: list | None = None, diff: str = "") -> RunOutcome:
    """Nothing could run (or, on resume, nothing new ran): the state is kept as it was."""
    reason = StopReason.DEPENDENCY_FAILURE
    u_trajectory = u_trajectory or [state.u]
    try:
        journal.write(StopRecord(status=reason, detail=detail, next_attempt=NEXT_ATTEMPT[reason], extra={"raw": detail},
                                 steps_used=state.budget.steps_used, u_trajectory=u_trajectory,
                                 diff_sha256=diff_sha256(diff), state_after=state, state_after_hash=state.hash))
    except JournalWriteError as exc:  # the report still says why; the journal keeps its earlier lines
        detail = f"{detail}; and the journal could not record this stop: {exc}"
    return RunOutcome(status=reason, detail=detail, next_attempt=NEXT_ATTEMPT[reason],
                      steps_used=state.budget.steps_used, max_steps=state.budget.max_steps, u_trajectory=u_trajectory,
                      diff=diff, diff_sha256=diff_sha256(diff), evidence=evidence or [], final_state=state,
                      extra={"raw": detail})


