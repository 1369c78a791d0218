"""Commands that run a scenario: scenarios, run, resume, grant."""
from __future__ import annotations

import sys
from pathlib import Path

from typing import TYPE_CHECKING

from ..untrusted.visible import terminal, terminal_json
from .common import USAGE_ERROR, err, say

if TYPE_CHECKING:   # an annotation only: every command, --help too, would import pydantic for it
    from ..loop.state import StepProgress


def cmd_scenarios(args) -> int:
    from ..scenarios.scenario import discover

    scenarios, errors = discover([Path(d) for d in args.scenarios_dir])
    for error in errors:
        err(f"skipping an unusable manifest: {error}")
    if args.json:
        print(terminal_json([s.summary() for s in scenarios.values()]))
    else:
        width = max([28, *(len(name) for name in scenarios)])
        print(f"{'scenario':<{width}} {'repo':<16} {'kind':<20} {'expected':<10} tags")
        for s in scenarios.values():
            expected = "handoff" if s.expected == "handoff_requested" else "repair"
            say(f"{s.name:<{width}} {(s.source_repo or s.repo).name:<16} {s.kind:<20} {expected:<10} {','.join(s.tags)}")
        print(f"{len(scenarios)} scenario(s) over {len({(s.source_repo or s.repo) for s in scenarios.values()})} "
              f"repositories")
    return 0


def cmd_run(args) -> int:
    program = getattr(args, "program", False)
    if program:
        # Nothing the imports below build is garbage: no collection passes over it while they run
        # (~0.03 s of the start), and it is frozen out of the collector's way once they are done.
        import gc

        gc.disable()
    on_step, log = _progress(args.json)
    from ..sandbox.backends import backend_named
    from ..loop.state import BudgetLimits, budget_with

    # The options alone, before anything is made: a bad one leaves no run directory behind (the
    # scenario's own budget is checked with them once it is read).
    budget_with(BudgetLimits.model_validate({"max_steps": 1000}), max_steps=args.max_steps, deadline_s=args.deadline,
                max_tokens=args.max_tokens)
    if args.max_cost is not None and not args.max_cost > 0:
        err(f"--max-cost {args.max_cost}: must be positive")
        return USAGE_ERROR
    early = None
    backend = backend_named(args.sandbox)
    if backend.begins_early and args.scenario and not args.repo:
        early = _begin_sandbox(args, log)
    try:
        if early is not None:
            # The imports below wait until the container is asked for: they then run while the
            # engine starts it, instead of slowing the thread that asks for it.
            early.wait_requested()
        from ..scenarios.scenario import ManifestError, resolve

        try:
            if args.repo or not args.scenario:  # the user's own repository, as it is on disk
                from ..importers.local_repo import scenario_from_args

                scenario = scenario_from_args(args, log=log)
            else:
                scenario = resolve(args.scenario, [Path(d) for d in args.scenarios_dir])
            if early is not None and not early.provide(scenario):
                early.discard(unused_dir=True)
                early = None
        except ManifestError as exc:
            from ..scenarios.scenario_files import first_manifest

            # A manifest that does not load leaves a record of itself; a name that is no scenario
            # has nothing to keep.
            found = args.scenario and (Path(args.scenario).is_file()
                                       or first_manifest(args.scenario, [Path(d) for d in args.scenarios_dir]))
            err(f"{exc}\n  kept in {_record_bad_manifest(args, exc)}" if found else str(exc))
            return USAGE_ERROR
        from ..choosers import load_chooser
        from ..lifecycle.run import execute_run

        if program:
            # What the imports built lives as long as the process: out of the collector's way, so its
            # passes during the run do not walk it again and again (a tenth of a second or more).
            gc.freeze()
            gc.enable()
        chooser = load_chooser(args.chooser, scenario, seed=args.seed, base_url=args.model_base_url, model=args.model,
                               models_file=args.models)
        if (problem := unpriced(chooser, args.max_cost)) is not None:
            err(problem)
            return USAGE_ERROR
        record = execute_run(scenario, chooser, backend=backend, runs_dir=Path(args.runs_dir),
                             max_steps=args.max_steps, deadline_s=args.deadline, reserved_final_steps=args.reserve,
                             max_tokens=args.max_tokens, max_cost=args.max_cost,
                             on_step=on_step, log=log, chooser_spec=args.chooser, early=early)
    finally:
        if early is not None:
            early.discard(unused_dir=True)  # taken by the run (then a no-op), or never reached it: removed here
    return _print_outcome(record, args)


def _begin_sandbox(args, log):
    """The engine starts the sandbox container (and the workspace is then built) while the manifest
    is validated, the rest of the run imported and the chooser made; execute_run takes it, or
    cmd_run removes it. None where the manifest names its own environment image, whose first build
    must stay interruptible, or cannot be found or read (resolving it then says why)."""
    from ..scenarios.scenario_files import first_manifest
    from ..sandbox.early import EarlySandbox

    found = first_manifest(args.scenario, [Path(d) for d in args.scenarios_dir])
    if found is None or "environment" in found[1] or not isinstance(found[1].get("name"), str):
        return None
    return EarlySandbox(found[1]["name"], Path(args.runs_dir), log=log)


def _progress(quiet: bool):
    def on_step(s: StepProgress) -> None:
        if not quiet:
            outcome = s.status or s.decision
            # tool and summary are the chooser's and the sandbox's words: one line, shown by name
            say(f"step {s.step}/{s.max_steps}  {terminal(s.tool, keep_lines=False):<16} {outcome:<9} "
                f"U={s.u}  {terminal(s.summary, keep_lines=False)}")

    log = (lambda m: print(terminal(m), file=sys.stderr, flush=True)) if quiet else say
    return on_step, log


def _print_outcome(record, args) -> int:
    if args.json:
        print(terminal_json(record.model_dump(mode="json")))
    else:
        say(f"\n{record.status.value}: {record.detail}")
        say(f"U trajectory: {' -> '.join(map(str, record.u_trajectory))}   steps {record.steps_used}/{record.max_steps}"
            f"   diff sha256 {record.diff_sha256[:16]}")
        say(f"next attempt would need: {record.next_attempt}")
        if record.correctness:  # after the stop: the chooser never saw it
            say(f"behaviour checks: {record.correctness}")
        where = record.report_dir or record.run_dir
        say(f"report: {where}/report.md   review: repair-agent show {where} --diff")
    if record.storage_error:
        err(f"{record.storage_error}; this run's report is in {record.report_dir}")
    return record.exit_code


def cmd_resume(args) -> int:
    from ..reports.records import find_run
    from ..lifecycle.resume import ResumeRefused, resume_run

    if args.max_steps is not None and args.max_steps < 1:
        err("--max-steps is the number of further steps this resume grants: at least 1")
        return USAGE_ERROR
    if args.deadline_s is not None and args.deadline_s <= 0:
        err("--deadline-s must be positive")
        return USAGE_ERROR
    if args.max_cost is not None and not args.max_cost > 0:
        err(f"--max-cost {args.max_cost}: must be positive")
        return USAGE_ERROR
    on_step, log = _progress(args.json)
    try:
        record = resume_run(find_run(args.run, Path(args.runs_dir), finished=False), chooser_spec=args.chooser,
                            extra_steps=args.max_steps, deadline_s=args.deadline_s, on_step=on_step, log=log,
                            runs_dir=Path(args.runs_dir),
                            model_options={"base_url": args.model_base_url, "model": args.model,
                                           "models_file": args.models}, more_cost=args.max_cost)
    except ResumeRefused as exc:
        err(f"resume refused: {exc}")
        return USAGE_ERROR
    return _print_outcome(record, args)


def cmd_grant(args) -> int:
    from ..reports.records import find_run
    from ..lifecycle.resume import ResumeRefused, record_grant

    run_dir = find_run(args.run, Path(args.runs_dir), finished=False)
    try:
        grant, checkpoint = record_grant(run_dir, args.allow, args.reason)
    except ResumeRefused as exc:
        err(f"grant refused: {exc}")
        return USAGE_ERROR
    say(f"granted {', '.join(grant.allow)} to run {run_dir.name} by {grant.who} at {grant.when}: {grant.reason}")
    say(f"the refused proposal of step {grant.after_step} will be offered again first: "
        f"repair-agent resume {run_dir}")
    say("the verifier still restores every protected file from its own copy before it tests")
    return 0


def _record_bad_manifest(args, exc: Exception) -> Path:
    """A refused manifest still leaves a record: its raw text and the error, in a journal."""
    from ..loop.journal import Journal, ManifestErrorRecord
    from ..lifecycle.run import new_run_id

    run_dir = Path(args.runs_dir) / new_run_id("invalid-manifest")
    run_dir.mkdir(parents=True)
    path = Path(args.scenario)
    raw = path.read_text(errors="replace") if path.is_file() else None
    journal = Journal(run_dir / "journal.jsonl")
    journal.write(ManifestErrorRecord(scenario=args.scenario, error=str(exc), raw=raw))
    journal.close()
    return run_dir / "journal.jsonl"


def add_repo_arguments(run_parser) -> None:
    """`run --repo PATH --test NODEID [--test ...] [--writable GLOB ...] [--goal TEXT]`."""
    g = run_parser.add_argument_group("your own repository (instead of a scenario)")
    g.add_argument("--repo", metavar="PATH", help="a git repository: its HEAD plus uncommitted changes are repaired "
                   "in the sandbox; nothing in PATH is modified (release --confirm makes a branch or a patch file)")
    g.add_argument("--test", action="append", metavar="NODEID", help="a failing pytest node id to make pass "
                   "(repeatable, or @FILE: one id a line), e.g. tests/test_x.py::test_y")
    g.add_argument("--pass-to-pass", action="extend", nargs="+", metavar="NODEID", help="tests that must keep "
                   "passing, as node ids or @FILE (one id a line); only they and the targets run (default: the "
                   "whole suite must keep passing)")
    g.add_argument("--writable", action="append", metavar="GLOB", help="what the repair may edit (repeatable; "
                   "default **: everything but tests and test configuration)")
    g.add_argument("--goal", metavar="TEXT", help="the goal the chooser is given (default: make the tests pass)")
    g.add_argument("--environment", metavar="auto|none|FILE", default="auto", help="auto (default): what the "
                   "repository declares (dependencies, test extras, requirements files, the tests' imports and "
                   "plugins) pinned, and the project itself installed editable, in an environment image built once "
                   "with the network; FILE: a TOML file with the fields of [environment]; none: the plain sandbox "
                   "image")


def unpriced(chooser, max_cost: float | None) -> str | None:
    """Why --max-cost cannot hold for this chooser: a model without prices could spend without
    limit. A chooser that is no model spends nothing (one whose description cannot be read is
    refused by the run itself, which says why)."""
    if max_cost is None:
        return None
    from ..loop.controller import CHOOSER_TIMEOUT_S
    from ..loop.plain import UnusableChooser, read_description
    from ..loop.usage import model_record, priced

    try:
        model = model_record(read_description(chooser, CHOOSER_TIMEOUT_S, None))
    except UnusableChooser:
        return None
    if model is None or priced(model):
        return None
    return (f"--max-cost needs the model's prices: {model.get('name') or model.get('model')} has no "
            "price_per_mtok_in / price_per_mtok_out in the models file (docs/models.md)")
