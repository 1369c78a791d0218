"""What a run leaves in its directory: run.json, candidate.diff, scenario.json and the report in
three renderings. The same writers for a fresh run and a resume."""
from __future__ import annotations

import json
from pathlib import Path

from verifier.files import atomic_write

from ..loop.journal import JournalRecord, SetupRecord, read_records
from ..choosers.base import ChooserDescription
from ..untrusted.redaction import redact
from ..reports.records import Report, RunRecord, build_report, final_correctness
from ..loop.outcome import RunOutcome
from ..scenarios.scenario import Scenario
from .seal import SealError, seal_run
from .session import Session, fallback_run_dir
from ..loop.state import StopReason
from ..loop.usage import model_of, summarize_usage


def write_results(session: Session, outcome: RunOutcome, identity: ChooserDescription, *, started_at: str, wall_s: float,
                   storage_error: str | None = None) -> RunRecord:
    """run.json, candidate.diff, scenario.json and the report: the same writers for a fresh run and a resume."""
    run_dir, scenario, verifier = session.run_dir, session.scenario, session.verifier
    journal = read_records(run_dir / "journal.jsonl")
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
        sessions=sum(1 for r in journal if isinstance(r, SetupRecord)) or 1,
        model=model, usage=summarize_usage(journal, model),
        infrastructure_failure=outcome.status is StopReason.DEPENDENCY_FAILURE and bool(outcome.extra.get("infrastructure")),
        report_dir=str(run_dir) if storage_error else None, storage_error=storage_error,
        correctness=final_correctness(outcome))
    try:
        _write_outputs(run_dir, record, outcome, scenario, verifier, journal)
    except OSError as exc:
        # The run directory filled up or turned read-only mid-run. Its journal keeps every complete
        # line; the record and the report go to the fallback directory, and the caller is told.
        fallback = fallback_run_dir(session.run_id)
        record = record.model_copy(update={"report_dir": str(fallback),
                                           "storage_error": f"{run_dir} cannot be written: {type(exc).__name__}: {exc}"})
        session.log(f"WARNING: {record.storage_error}; the report goes to {fallback}")
        _write_outputs(fallback, record, outcome, scenario, verifier, journal)
    else:
        try:
            seal_run(run_dir)  # last: what release relies on, as written, under the user's key
        except (OSError, ValueError, SealError) as exc:  # an unreadable record: unsealed, said
            session.log(f"WARNING: the run could not be sealed ({exc}); release will refuse it")
    return record


def _write_outputs(directory: Path, record: RunRecord, outcome: RunOutcome, scenario: Scenario, verifier,
                   journal: list[JournalRecord]) -> None:
    # Each file whole or not at all: a full disk must not leave a truncated run.json that every
    # later `runs` or `show` would stumble on.
    def put(name: str, text: str) -> None:
        # candidate.diff is the exact bytes a release applies: never rewritten (the sandbox and the
        # chooser never hold a host key; the report shows the diff through redaction anyway).
        atomic_write(directory / name, text if name == "candidate.diff" else redact(text))

    put("candidate.diff", outcome.diff)
    put("run.json", record.model_dump_json(indent=2))
    put("scenario.json", json.dumps({"manifest": str(scenario.manifest_path), **scenario.model_dump(mode="json")},
                                    indent=2))
    write_report(directory, record, outcome, scenario, verifier, write=put, journal=journal)


def _environment_id(verifier) -> str | None:
    if verifier is None or verifier.snapshot is None:  # the run never got as far as its verifier
        return None
    try:
        return verifier.environment_id
    except Exception:  # the engine went away: run.json still gets written
        return None


def write_report(run_dir: Path, record: RunRecord, outcome: RunOutcome, scenario: Scenario, verifier,
                 write=None, journal: list[JournalRecord] | None = None) -> Report:
    """`write(name, text)` puts one file in run_dir (an all-or-nothing writer)."""
    from ..reports.html_report import render_run_html
    from ..reports.report import render_markdown

    report = build_report(record, outcome, scenario, verifier, journal)
    write = write or (lambda name, text: atomic_write(Path(run_dir) / name, redact(text)))
    write("report.json", report.model_dump_json(indent=2))
    write("report.md", render_markdown(report))
    write("report.html", render_run_html(report, None))
    return report
