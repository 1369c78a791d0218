"""repair-agent: run a scenario, list scenarios, replay a journal, show a report, release or reject."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import sys
from pathlib import Path

from .state import EXIT_CODES

USAGE_ERROR = 2


def _err(message: str) -> None:
    print(f"repair-agent: {message}", file=sys.stderr)


def cmd_scenarios(args) -> int:
    from .scenario import discover

    scenarios, errors = discover([Path(d) for d in args.scenarios_dir])
    for error in errors:
        _err(f"skipping an unusable manifest: {error}")
    if args.json:
        print(json.dumps([s.summary() for s in scenarios.values()], indent=2))
    else:
        width = max([28, *(len(name) for name in scenarios)])
        print(f"{'scenario':<{width}} {'repo':<16} {'kind':<20} {'expected':<10} tags")
        for s in scenarios.values():
            expected = "handoff" if s.expected == "handoff_requested" else "repair"
            print(f"{s.name:<{width}} {(s.source_repo or s.repo).name:<16} {s.kind:<20} {expected:<10} {','.join(s.tags)}")
        print(f"{len(scenarios)} scenario(s) over {len({(s.source_repo or s.repo) for s in scenarios.values()})} "
              f"repositories")
    return 0


def cmd_run(args) -> int:
    from .choosers import load_chooser
    from .run import execute_run
    from .scenario import ManifestError, resolve

    try:
        scenario = resolve(args.scenario, [Path(d) for d in args.scenarios_dir])
    except ManifestError as exc:
        _err(f"{exc}\n  kept in {_record_bad_manifest(args, exc)}")
        return USAGE_ERROR
    chooser = load_chooser(args.chooser, scenario, seed=args.seed, base_url=args.model_base_url, model=args.model,
                           models_file=args.models)
    on_step, log = _progress(args.json)
    record = execute_run(scenario, chooser, sandbox_kind=args.sandbox, runs_dir=Path(args.runs_dir),
                         max_steps=args.max_steps, deadline_s=args.deadline, reserved_final_steps=args.reserve,
                         max_tokens=args.max_tokens,
                         on_step=on_step, log=log, chooser_spec=args.chooser)
    return _print_outcome(record, args)


def _progress(quiet: bool):
    def on_step(s: dict) -> None:
        if not quiet:
            outcome = s["status"] or s["decision"]
            print(f"step {s['step']}/{s['max_steps']}  {s['tool']:<16} {outcome:<9} U={s['u']}  {s['summary']}",
                  flush=True)

    log = (lambda m: print(m, file=sys.stderr, flush=True)) if quiet else (lambda m: print(m, flush=True))
    return on_step, log


def _print_outcome(record, args) -> int:
    if args.json:
        print(record.model_dump_json(indent=2))
    else:
        print(f"\n{record.status.value}: {record.detail}")
        print(f"U trajectory: {' -> '.join(map(str, record.u_trajectory))}   steps {record.steps_used}/{record.max_steps}"
              f"   diff sha256 {record.diff_sha256[:16]}")
        print(f"next attempt would need: {record.next_attempt}")
        where = record.report_dir or record.run_dir
        print(f"report: {where}/report.md   review: repair-agent show {where} --diff")
    if record.storage_error:
        _err(f"{record.storage_error}; this run's report is in {record.report_dir}")
    return record.exit_code


def cmd_resume(args) -> int:
    from .resume import ResumeRefused, run_dir_of
    from .run import resume_run

    if args.max_steps is not None and args.max_steps < 1:
        _err("--max-steps is the number of further steps this resume grants: at least 1")
        return USAGE_ERROR
    if args.deadline_s is not None and args.deadline_s <= 0:
        _err("--deadline-s must be positive")
        return USAGE_ERROR
    on_step, log = _progress(args.json)
    try:
        record = resume_run(run_dir_of(args.run, Path(args.runs_dir)), chooser_spec=args.chooser,
                            extra_steps=args.max_steps, deadline_s=args.deadline_s, on_step=on_step, log=log,
                            runs_dir=Path(args.runs_dir),
                            model_options={"base_url": args.model_base_url, "model": args.model,
                                           "models_file": args.models})
    except ResumeRefused as exc:
        _err(f"resume refused: {exc}")
        return USAGE_ERROR
    return _print_outcome(record, args)


def cmd_grant(args) -> int:
    from .resume import ResumeRefused, record_grant, run_dir_of

    run_dir = run_dir_of(args.run, Path(args.runs_dir))
    try:
        grant, checkpoint = record_grant(run_dir, args.allow, args.reason)
    except ResumeRefused as exc:
        _err(f"grant refused: {exc}")
        return USAGE_ERROR
    print(f"granted {', '.join(grant.allow)} to run {run_dir.name} by {grant.who} at {grant.when}: {grant.reason}")
    print(f"the refused proposal of step {grant.after_step} will be offered again first: "
          f"repair-agent resume {run_dir}")
    print("the verifier still restores every protected file from its own copy before it tests")
    return 0


def _record_bad_manifest(args, exc: Exception) -> Path:
    """A refused manifest still leaves a record: its raw text and the error, in a journal."""
    from .journal import Journal
    from .run import new_run_id

    run_dir = Path(args.runs_dir) / new_run_id("invalid-manifest")
    run_dir.mkdir(parents=True)
    path = Path(args.scenario)
    raw = path.read_text(errors="replace") if path.is_file() else None
    journal = Journal(run_dir / "journal.jsonl")
    journal.write({"event": "manifest_error", "scenario": args.scenario, "error": str(exc), "raw": raw})
    journal.close()
    return run_dir / "journal.jsonl"


def cmd_runs(args) -> int:
    from .run import load_record

    rows = []
    for run_json in sorted(Path(args.runs_dir).glob("*/run.json")):  # refused manifests have no run.json
        record = load_record(run_json.parent)
        decision = run_json.parent / "release.json"
        released = json.loads(decision.read_text())["decision"] if decision.exists() else "-"
        rows.append({"run_id": record.run_id, "scenario": record.scenario, "status": record.status.value,
                     "steps": f"{record.steps_used}/{record.max_steps}", "u": record.u_trajectory[-1],
                     "chooser": record.chooser, "release": released, "run_dir": record.run_dir})
    rows += _killed_runs(Path(args.runs_dir))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'run id':<40} {'status':<31} {'steps':>5} {'U':>2}  {'release':<9} chooser")
    for r in rows:
        print(f"{r['run_id']:<40} {r['status']:<31} {r['steps']:>5} {r['u']:>2}  {r['release']:<9} {r['chooser']}")
    return 0


def _killed_runs(runs_dir: Path) -> list[dict]:
    """Runs whose process died before writing run.json: `repair-agent resume` continues them."""
    from .resume import ResumeRefused, load_checkpoint

    rows = []
    for journal in sorted(runs_dir.glob("*/journal.jsonl")):
        if (journal.parent / "run.json").exists():
            continue
        try:
            cp = load_checkpoint(journal.parent, set_aside_torn=False)
        except (ResumeRefused, ValueError):
            continue  # a refused manifest's record, or a torn tail: resume sets it aside and says so
        b = cp.state.budget
        rows.append({"run_id": journal.parent.name, "scenario": cp.state.goal.scenario, "status": cp.status,
                     "steps": f"{b.steps_used}/{b.max_steps}", "u": cp.state.u,
                     "chooser": cp.setup.get("chooser_spec") or cp.setup.get("chooser"), "release": "-",
                     "run_dir": str(journal.parent.resolve())})
    return rows


def cmd_replay(args) -> int:
    from .journal import read_journal, verify_chain
    from .run import find_run

    try:
        run_dir = find_run(args.run, Path(args.runs_dir))
    except FileNotFoundError:
        # A run killed before it could write run.json still has its journal: that is what to check.
        run_dir = next((d for d in (Path(args.run), Path(args.runs_dir) / args.run)
                        if (d / "journal.jsonl").is_file()), None)
        if run_dir is None:
            raise
    records = list(read_journal(run_dir / "journal.jsonl"))
    problems = verify_chain(records)
    steps = [r for r in records if r.get("event") == "step"]
    if args.faults:
        from .faults import attribute

        faults = attribute(records)
        if args.json:
            print(json.dumps([f.model_dump() for f in faults], indent=2))
        else:
            for f in faults:
                print(f"step {f.step:>3}  {f.kind:<22} {f.detail}")
            print(f"{len(faults)} finding(s); heuristics that say where to look, not verdicts")
        return 0 if not problems else 1
    if args.step is not None:
        match = [r for r in steps if r["step"] == args.step]
        if not match:
            _err(f"no step {args.step} in {run_dir} (steps 1..{len(steps)})")
            return USAGE_ERROR
        print(json.dumps({"view": match[0]["view"], "proposal": match[0]["proposal"],
                          "decision": match[0].get("decision")}, indent=2, ensure_ascii=False))
        return 0 if not problems else 1
    print(f"{'step':>4}  {'state':>9}  {'tool':<16} {'decision':<9} {'evidence':<8} {'status':<8} U")
    for r in records:
        if r.get("event") in ("grant", "resume"):
            _print_session_event(r)
        if r.get("event") != "step":
            continue
        proposal = r.get("proposal")
        tool = proposal.get("tool", "?") if isinstance(proposal, dict) else "?"
        result = r.get("result") or {}
        print(f"{r['step']:>4}  v{r['state_before']['version']:>3}->{r['state_after']['version']:<3} {str(tool):<16} "
              f"{'accepted' if (r.get('decision') or {}).get('accepted') else 'rejected':<9} "
              f"{result.get('id', '-'):<8} {result.get('status', '-'):<8} {r['u']}")
    stop = next((r for r in reversed(records) if r.get("event") == "stop"), None)
    if stop:
        print(f"stop: {stop['status']} — {stop['detail']}")
    print("hash chain: OK" if not problems else "hash chain: BROKEN\n  " + "\n  ".join(problems))
    return 0 if not problems else 1


def _print_session_event(r: dict) -> None:
    version = f"v{r['state_before']['version']:>3}->{r['state_after']['version']:<3}"
    if r["event"] == "grant":
        g = r["grant"]
        print(f"{'':>4}  {version} grant by {g['who']} at {g['when']}: {', '.join(g['allow'])} — {g['reason']}")
    else:
        b = r["state_after"]["budget"]
        again = ", ".join(f"{x['evidence']} {x['status']}" for x in r.get("reverified", [])) or "none"
        print(f"{'':>4}  {version} resume from {r['checkpoint_status']}: +{r['extra_steps']} step(s) "
              f"(max {b['max_steps']}), {b['deadline_s']:g}s; verdicts re-earned: {again}")


def cmd_show(args) -> int:
    from .run import find_run

    run_dir = find_run(args.run, Path(args.runs_dir))
    if args.diff:
        sys.stdout.write((run_dir / "candidate.diff").read_text())
        return 0
    if args.html or args.open:
        return _show_html(run_dir, args.open)
    if args.json:
        print((run_dir / "report.json").read_text())
    else:
        print((run_dir / "report.md").read_text())
        decision = run_dir / "release.json"
        if decision.exists():
            d = json.loads(decision.read_text())
            print(f"## Decision\n\n{d['decision']} by {d['who']} at {d['when']}"
                  + (f": {d.get('reason')}" if d.get("reason") else f" — branch {d.get('branch')} commit {d.get('commit')}"))
    return 0


def _show_html(run_dir: Path, open_it: bool) -> int:
    from .html_report import write_run_html

    # Rendered again from report.json: brings in a release decision taken since the run ended,
    # and gives runs from before report.html existed one.
    path = write_run_html(run_dir)
    print(path)
    if open_it:
        import webbrowser

        try:
            opened = webbrowser.get().open(path.as_uri())
        except webbrowser.Error:
            opened = False
        if not opened:
            _err(f"no system browser found to open it; open {path.as_uri()} in a browser")
            return 1
    return 0


def cmd_release(args) -> int:
    from . import release
    from .run import find_run

    run_dir = find_run(args.run, Path(args.runs_dir))
    try:
        if args.reject:
            d = release.reject(run_dir, args.reason or "")
            print(f"rejected run {d['run_id']} by {d['who']}: {d['reason']}")
            return 0
        shown = None
        if not args.yes:
            if not sys.stdin.isatty():
                _err("refusing to release without confirmation: pass --yes, or run in a terminal")
                return USAGE_ERROR
            data = (run_dir / "candidate.diff").read_bytes()
            print(data.decode("utf-8", errors="replace"))
            if input("Release this diff? Type 'yes' to confirm: ").strip() != "yes":
                print("not released")
                return 1
            shown = hashlib.sha256(data).hexdigest()  # what the person saw is what is released, or nothing
        d = release.confirm(run_dir, output_dir=Path(args.output_dir) if args.output_dir else None,
                            shown_sha256=shown)
        print(f"released run {d['run_id']}: branch {d['branch']} commit {d['commit'][:12]} in {d['clone']}")
        return 0
    except release.ReleaseRefused as exc:
        _err(f"release refused: {exc}")
        return 1


def cmd_sweep(args) -> int:
    from .choosers import load_chooser
    from .choosers.models_file import MODEL_PREFIX, find_models_file
    from .sweep import plan_jobs, render_markdown, select_scenarios, sweep
    from .sweep_stats import NO_BAND_NOTE

    try:
        budgets = sorted({int(b) for b in args.budgets.split(",") if b.strip()})
    except ValueError:
        _err(f"--budgets must be comma-separated integers, got {args.budgets!r}")
        return USAGE_ERROR
    if not budgets or min(budgets) < 1 or args.seeds < 1:
        _err("--budgets needs at least one budget >= 1 and --seeds at least 1")
        return USAGE_ERROR
    if _sweep_runs_dir_refused(args):
        return USAGE_ERROR
    if args.seeds == 1:
        _err(NO_BAND_NOTE)
    choosers = args.chooser or ["baseline"]
    selection = select_scenarios(args.scenarios, [Path(d) for d in args.scenarios_dir])
    if not selection.scenarios and not selection.broken:
        _err("no scenario selected")
        return USAGE_ERROR
    for name, error in selection.broken.items():
        _err(f"scenario {name} is unusable and will be reported, not run: {error}")
    models_file = find_models_file(args.models) if any(c.startswith(MODEL_PREFIX) for c in choosers) else None
    if selection.scenarios:  # an unknown chooser or model is a usage error before anything runs
        for spec in choosers:
            load_chooser(spec, selection.scenarios[0], seed=0, models_file=models_file)
    out = Path(args.out)
    jobs = plan_jobs(selection, choosers, budgets, args.seeds, out / "runs", sandbox=args.sandbox,
                     models_file=str(models_file) if models_file else None)
    command = "repair-agent " + shlex.join(sys.argv[1:])
    outcome = sweep(jobs, out, workers=args.workers, executor=args.executor, group_by=args.group_by,
                    command=command)
    if args.json:
        print(json.dumps(outcome.model_dump(), indent=2))
    else:
        print(render_markdown(outcome.summary, cost_comparisons=False))
        print(f"cost comparisons (steps, tokens, wall time) with their bands: {out.resolve() / 'summary.md'}")
        print(f"{outcome.ran} run(s) now, {outcome.skipped} already finished, of {outcome.total}; "
              f"results: {out.resolve() / 'results.jsonl'}")
    if outcome.interrupted:
        _err(f"interrupted: finished runs are kept in {out / 'results.jsonl'}; run the same command again to "
             "complete the rest")
        return 130
    return 0


def _check_selection(args):
    """The scenarios `check` looks at: the NAMEs/GLOBs given; else those of --scenarios-dir when
    given (a user validating their own); else every built-in one. Broken manifests are included."""
    from .scenario import SUFFIX
    from .sweep import select_scenarios

    extra = [Path(d) for d in args.scenarios_dir]
    missing = [str(d) for d in extra if not d.is_dir()]
    if missing:
        raise FileNotFoundError(f"no such scenario directory: {', '.join(missing)}")
    selection = select_scenarios(args.names or None, extra)
    if not args.names and extra:
        roots = {d.resolve() for d in extra}
        selection.scenarios = [s for s in selection.scenarios if s.manifest_path.parent in roots]
        selection.broken = {stem: error for stem, error in selection.broken.items()
                            if any((d / f"{stem}{SUFFIX}").is_file() for d in extra)}
    return selection


def cmd_check(args) -> int:
    """The corpus check on chosen scenarios: exit 0 when every one passes, 1 when any fails."""
    import tempfile

    from .corpus import broken_manifest, check_corpus, render_table

    selection = _check_selection(args)
    if not selection.scenarios and not selection.broken:
        _err("no scenario selected")
        return USAGE_ERROR
    kwargs: dict = {"backend": args.sandbox}
    if args.sandbox == "docker":
        import docker
        import requests

        from .sandbox.image import ImageBuildError, ensure_sandbox_image

        try:
            client = docker.from_env()
            kwargs.update(client=client, image=ensure_sandbox_image(client, log=lambda m: _err(m)))
        except (docker.errors.DockerException, requests.exceptions.RequestException, ImageBuildError) as exc:
            _err(f"the check runs the verifier in Docker and no engine answers or the image cannot be built: {exc}"
                 " (--sandbox local checks without containers, NOT isolated)")
            return USAGE_ERROR
    total = len(selection.scenarios)
    done = []

    def progress(c) -> None:
        done.append(c)
        if not args.json:
            _err(f"[{len(done)}/{total}] {c.scenario}: {'ok' if c.ok else 'FAIL'} ({c.wall_s:.1f}s)")

    with tempfile.TemporaryDirectory(prefix="repair-agent-check-") as state:
        checks = check_corpus(selection.scenarios, Path(state), workers=args.workers, on_result=progress,
                              log=_err, **kwargs)
    checks += [broken_manifest(stem, error) for stem, error in selection.broken.items()]
    if args.json:
        print(json.dumps([c.model_dump() for c in checks], indent=2))
    else:
        print(render_table(checks))
    return 0 if all(c.ok for c in checks) else 1


def _add_check_parser(sub, common) -> None:
    ck = sub.add_parser("check", parents=[common], help="the corpus check: each scenario's buggy tree fails exactly "
                        "its targets, and its reference fix passes (inside the scope, or outside it for a handoff)")
    ck.add_argument("names", nargs="*", metavar="NAME|GLOB",
                    help="scenarios, globs on names, tag:T, kind:K or manifest paths (default: those of "
                    "--scenarios-dir when given, else every built-in scenario)")
    ck.add_argument("--sandbox", choices=["docker", "local"], default="docker",
                    help="docker (default: the sandbox image, as runs see it) or local (NOT isolated)")
    ck.add_argument("--workers", type=int, default=2, help="scenarios checked at once (default: 2)")
    ck.add_argument("--json", action="store_true", help="print the checks as JSON")
    ck.set_defaults(func=cmd_check)


def _sweep_runs_dir_refused(args) -> bool:
    """A sweep keeps its runs in OUT/runs, so that OUT is whole and a re-run resumes from it; an
    explicit --runs-dir would be ignored, so it is refused instead of silently dropped."""
    if not getattr(args, "runs_dir_given", False):
        return False
    _err(f"sweep does not take --runs-dir: its runs go to OUT/runs (here {Path(args.out) / 'runs'}) so that the "
         "sweep directory is complete and resumable; choose the directory with --out")
    return True


class _RunsDirAction(argparse.Action):
    """Stores --runs-dir and notes that it was given (not the default), for the commands that
    do not keep runs there."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.runs_dir_given = True


def cmd_cleanup(args) -> int:
    import docker

    from verifier.isolation import LABEL, OWNER_LABEL

    from .run import _pid_alive

    client = docker.from_env()
    removed = kept = 0
    labels = [LABEL] + ([f"org.repair-agent.run={args.run}"] if args.run else [])
    for c in client.containers.list(all=True, filters={"label": labels}):
        if not args.all and _pid_alive(c.labels.get(OWNER_LABEL)):
            kept += 1  # a run in progress on this machine: not a leftover
            continue
        c.remove(force=True, v=True)
        removed += 1
    print(f"removed {removed} container(s) labelled {LABEL}"
          + (f"; kept {kept} of runs still in progress (--all removes them too)" if kept else ""))
    return 0


def cmd_image(args) -> int:
    import docker

    from .sandbox.image import ensure_sandbox_image

    if args.scenario or args.list or args.prune:  # scenario environments: sandbox/environment.py
        from .sandbox.environment import image_command
        from .scenario import resolve
        return image_command(args, lambda name: resolve(name, [Path(d) for d in args.scenarios_dir]))

    print(ensure_sandbox_image(docker.from_env(), log=print, base_image=args.base_image))
    return 0


def build_parser() -> argparse.ArgumentParser:
    exits = "\n".join(f"  {code:>3}  {reason.value}" for reason, code in EXIT_CODES.items())
    p = argparse.ArgumentParser(prog="repair-agent", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="A coding-repair agent sandbox with a protected verifier.",
                                epilog=f"exit codes of `run`:\n{exits}\n    2  usage or manifest error")
    p.add_argument("--runs-dir", default=os.environ.get("REPAIR_AGENT_RUNS_DIR", "runs"), action=_RunsDirAction)
    p.add_argument("--scenarios-dir", action="append", default=[], help="extra directory of *.scenario.toml")
    # The same two options after the subcommand too (`repair-agent run X --runs-dir D`); given
    # there, they win over the ones given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--runs-dir", default=argparse.SUPPRESS, action=_RunsDirAction,
                        help="where runs are kept (default: ./runs)")
    common.add_argument("--scenarios-dir", action="append", default=argparse.SUPPRESS,
                        help="extra directory of *.scenario.toml (repeatable)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("scenarios", parents=[common], help="list scenarios")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_scenarios)

    r = sub.add_parser("run", parents=[common], help="run a scenario")
    r.add_argument("scenario", help="a scenario name or the path of a *.scenario.toml manifest")
    r.add_argument("--chooser", default="baseline", help="baseline | search | model | model:NAME (a model of the "
                   "models file) | package.module:attr")
    r.add_argument("--models", metavar="FILE", help="models file for --chooser model:NAME (default: ./models.toml)")
    r.add_argument("--seed", type=int, default=0, help="seed for choosers that take one (search: the order in "
                   "which equally scored candidates are tried); default 0")
    r.add_argument("--sandbox", choices=["docker", "local"], default="docker",
                   help="docker (default, hardened) or local (NOT isolated: plain subprocesses on this host)")
    r.add_argument("--max-steps", type=int)
    r.add_argument("--reserve", type=int, help="steps reserved for the final handover (seed 004)")
    r.add_argument("--deadline", type=float, help="seconds for the whole loop")
    r.add_argument("--model", help="model name (or REPAIR_AGENT_MODEL)")
    r.add_argument("--model-base-url", help="OpenAI-compatible base URL (or REPAIR_AGENT_MODEL_BASE_URL)")
    r.add_argument("--max-tokens", type=int, help="token budget: the run stops (step_budget) once the chooser's "
                   "reported usage reaches it; an endpoint that reports no usage ends the run at its first reply "
                   "(dependency_failure)")
    r.add_argument("--json", action="store_true", help="print one final JSON object")
    r.set_defaults(func=cmd_run)

    rs = sub.add_parser("resume", parents=[common], help="continue a stopped or killed run from its journal")
    rs.add_argument("run", help="a run directory or a run id")
    rs.add_argument("--chooser", help="baseline | search | model | model:NAME | package.module:attr (default: the "
                    "run's own)")
    rs.add_argument("--models", metavar="FILE", help="models file for model:NAME (default: the one the run used, "
                    "else ./models.toml)")
    rs.add_argument("--max-steps", type=int, help="further steps this resume grants (default: the steps left; "
                    "required after step_budget)")
    rs.add_argument("--deadline-s", type=float, help="seconds the resumed loop may take, from the resume "
                    "(default: the run's deadline)")
    rs.add_argument("--model", help="model name (or REPAIR_AGENT_MODEL)")
    rs.add_argument("--model-base-url", help="OpenAI-compatible base URL (or REPAIR_AGENT_MODEL_BASE_URL)")
    rs.add_argument("--json", action="store_true", help="print one final JSON object")
    rs.set_defaults(func=cmd_resume)

    g = sub.add_parser("grant", parents=[common], help="a person's grant after authorization_required")
    g.add_argument("run", help="a run directory or a run id")
    g.add_argument("--allow", action="append", required=True, help="a path glob the refused patch may edit "
                   "(repeatable), e.g. 'README.md' or 'tests/test_pricing.py'")
    g.add_argument("--reason", required=True)
    g.set_defaults(func=cmd_grant)

    ls = sub.add_parser("runs", parents=[common], help="list runs with their status and release decision")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=cmd_runs)

    rp = sub.add_parser("replay", parents=[common], help="check a run's hash chain and print its steps")
    rp.add_argument("run")
    rp.add_argument("--step", type=int, help="show what the chooser saw at step K")
    rp.add_argument("--faults", action="store_true", help="attribute faults: oscillation, observation pollution, "
                    "goal drift, pseudo-completion, privilege escalation")
    rp.add_argument("--json", action="store_true", help="with --faults: JSON")
    rp.set_defaults(func=cmd_replay)

    sh = sub.add_parser("show", parents=[common], help="print a run's pending-release report")
    sh.add_argument("run")
    sh.add_argument("--diff", action="store_true")
    sh.add_argument("--json", action="store_true")
    sh.add_argument("--html", action="store_true", help="print the path of the run's self-contained report.html")
    sh.add_argument("--open", action="store_true", help="also open report.html with the system browser")
    sh.set_defaults(func=cmd_show)

    rl = sub.add_parser("release", parents=[common], help="confirm or reject a run's release (a person's decision)")
    rl.add_argument("run")
    mode = rl.add_mutually_exclusive_group(required=True)
    mode.add_argument("--confirm", action="store_true")
    mode.add_argument("--reject", action="store_true")
    rl.add_argument("--reason")
    rl.add_argument("--yes", action="store_true", help="do not ask")
    rl.add_argument("--output-dir", help="where the output clone goes (default: RUN/release)")
    rl.set_defaults(func=cmd_release)

    sw = sub.add_parser("sweep", parents=[common], help="run scenarios × choosers × budgets × seeds; summarize "
                        "with run-to-run bands")
    sw.add_argument("--scenarios", nargs="+", metavar="NAME|GLOB|tag:T|kind:K",
                    help="which scenarios (default: all, broken manifests included as reported entries)")
    sw.add_argument("--chooser", action="extend", nargs="+", metavar="C", help="one or more (or repeat the flag): baseline | search | model | model:NAME | package.module:attr; default: baseline")
    sw.add_argument("--models", metavar="FILE", help="models file for model:NAME choosers (default: ./models.toml)")
    sw.add_argument("--budgets", default="2,4,6,8,12", help="max_steps values (default: 2,4,6,8,12)")
    sw.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 per cell (default: 3); the band needs >= 2")
    sw.add_argument("--workers", type=int, default=None, help="parallel runs (default: CPU count)")
    sw.add_argument("--executor", choices=["local", "ray"], default="local",
                    help="local process pool, or Ray (pip install '.[ray]'; RAY_ADDRESS for a cluster)")
    sw.add_argument("--sandbox", choices=["docker", "local"], default="docker")
    sw.add_argument("--group-by", choices=["all", "kind", "tag", "scenario", "expected"], default="all")
    sw.add_argument("--out", default="sweeps/latest", help="output directory; re-running into it resumes")
    sw.add_argument("--json", action="store_true", help="print the summary as JSON")
    sw.set_defaults(func=cmd_sweep)

    c = sub.add_parser("cleanup", parents=[common], help="remove leftover containers of this project")
    c.add_argument("--all", action="store_true", help="also remove containers of runs still in progress")
    c.add_argument("--run", help="only the containers of this run id")
    c.set_defaults(func=cmd_cleanup)

    _add_check_parser(sub, common)

    im = sub.add_parser("image", parents=[common], help="build (or find) the sandbox image and print its tag")
    im.add_argument("--base-image")
    env_mode = im.add_mutually_exclusive_group()
    env_mode.add_argument("--scenario", metavar="NAME", help="build (or find) this scenario's environment image")
    env_mode.add_argument("--list", action="store_true", help="list cached environment images")
    env_mode.add_argument("--prune", action="store_true", help="remove cached environment images")
    im.add_argument("--json", action="store_true", help="with --list: JSON")
    im.set_defaults(func=cmd_image)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as exc:  # manifests, plug-ins, run ids: a clear message
        _err(str(exc))
        return USAGE_ERROR
    except KeyboardInterrupt:
        _err("interrupted; containers of this run were removed")
        return 130


if __name__ == "__main__":
    sys.exit(main())
