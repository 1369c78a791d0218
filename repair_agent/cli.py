"""repair-agent: run a scenario, list scenarios, replay a journal, show a report, release or reject."""
from __future__ import annotations

import argparse
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
        print(f"{'scenario':<28} {'repo':<16} {'kind':<20} {'expected':<10} tags")
        for s in scenarios.values():
            expected = "handoff" if s.expected == "handoff_requested" else "repair"
            print(f"{s.name:<28} {(s.source_repo or s.repo).name:<16} {s.kind:<20} {expected:<10} {','.join(s.tags)}")
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
    chooser = load_chooser(args.chooser, scenario, base_url=args.model_base_url, model=args.model)
    quiet = args.json

    def on_step(s: dict) -> None:
        if not quiet:
            outcome = s["status"] or s["decision"]
            print(f"step {s['step']}/{s['max_steps']}  {s['tool']:<16} {outcome:<9} U={s['u']}  {s['summary']}",
                  flush=True)

    log = (lambda m: print(m, file=sys.stderr, flush=True)) if quiet else (lambda m: print(m, flush=True))
    record = execute_run(scenario, chooser, sandbox_kind=args.sandbox, runs_dir=Path(args.runs_dir),
                         max_steps=args.max_steps, deadline_s=args.deadline, reserved_final_steps=args.reserve,
                         max_tokens=args.max_tokens,
                         on_step=on_step, log=log)
    if args.json:
        print(record.model_dump_json(indent=2))
    else:
        print(f"\n{record.status.value}: {record.detail}")
        print(f"U trajectory: {' -> '.join(map(str, record.u_trajectory))}   steps {record.steps_used}/{record.max_steps}"
              f"   diff sha256 {record.diff_sha256[:16]}")
        print(f"next attempt would need: {record.next_attempt}")
        print(f"report: {record.run_dir}/report.md   review: repair-agent show {record.run_dir} --diff")
    return record.exit_code


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
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'run id':<40} {'status':<31} {'steps':>5} {'U':>2}  {'release':<9} chooser")
    for r in rows:
        print(f"{r['run_id']:<40} {r['status']:<31} {r['steps']:>5} {r['u']:>2}  {r['release']:<9} {r['chooser']}")
    return 0


def cmd_replay(args) -> int:
    from .journal import read_journal, verify_chain
    from .run import find_run

    run_dir = find_run(args.run, Path(args.runs_dir))
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
    for r in steps:
        proposal = r.get("proposal")
        tool = proposal.get("tool", "?") if isinstance(proposal, dict) else "?"
        result = r.get("result") or {}
        print(f"{r['step']:>4}  v{r['state_before']['version']:>3}->{r['state_after']['version']:<3} {str(tool):<16} "
              f"{'accepted' if (r.get('decision') or {}).get('accepted') else 'rejected':<9} "
              f"{result.get('id', '-'):<8} {result.get('status', '-'):<8} {r['u']}")
    stop = next((r for r in records if r.get("event") == "stop"), None)
    if stop:
        print(f"stop: {stop['status']} — {stop['detail']}")
    print("hash chain: OK" if not problems else "hash chain: BROKEN\n  " + "\n  ".join(problems))
    return 0 if not problems else 1


def cmd_show(args) -> int:
    from .run import find_run

    run_dir = find_run(args.run, Path(args.runs_dir))
    if args.diff:
        sys.stdout.write((run_dir / "candidate.diff").read_text())
        return 0
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


def cmd_release(args) -> int:
    from . import release
    from .run import find_run

    run_dir = find_run(args.run, Path(args.runs_dir))
    try:
        if args.reject:
            d = release.reject(run_dir, args.reason or "")
            print(f"rejected run {d['run_id']} by {d['who']}: {d['reason']}")
            return 0
        if not args.yes:
            if not sys.stdin.isatty():
                _err("refusing to release without confirmation: pass --yes, or run in a terminal")
                return USAGE_ERROR
            print((run_dir / "candidate.diff").read_text())
            if input("Release this diff? Type 'yes' to confirm: ").strip() != "yes":
                print("not released")
                return 1
        d = release.confirm(run_dir, output_dir=Path(args.output_dir) if args.output_dir else None)
        print(f"released run {d['run_id']}: branch {d['branch']} commit {d['commit'][:12]} in {d['clone']}")
        return 0
    except release.ReleaseRefused as exc:
        _err(f"release refused: {exc}")
        return 1


def cmd_sweep(args) -> int:
    from .choosers import load_chooser
    from .sweep import plan_jobs, render_markdown, select_scenarios, sweep

    try:
        budgets = sorted({int(b) for b in args.budgets.split(",") if b.strip()})
    except ValueError:
        _err(f"--budgets must be comma-separated integers, got {args.budgets!r}")
        return USAGE_ERROR
    if not budgets or min(budgets) < 1 or args.seeds < 1:
        _err("--budgets needs at least one budget >= 1 and --seeds at least 1")
        return USAGE_ERROR
    choosers = args.chooser or ["baseline"]
    selection = select_scenarios(args.scenarios, [Path(d) for d in args.scenarios_dir])
    if not selection.scenarios and not selection.broken:
        _err("no scenario selected")
        return USAGE_ERROR
    for name, error in selection.broken.items():
        _err(f"scenario {name} is unusable and will be reported, not run: {error}")
    if selection.scenarios:  # an unknown chooser is a usage error before anything runs
        for spec in choosers:
            load_chooser(spec, selection.scenarios[0], seed=0)
    out = Path(args.out)
    jobs = plan_jobs(selection, choosers, budgets, args.seeds, out / "runs", sandbox=args.sandbox)
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


def cmd_cleanup(args) -> int:
    import docker

    from verifier.isolation import LABEL, OWNER_LABEL

    client = docker.from_env()
    removed = kept = 0
    for c in client.containers.list(all=True, filters={"label": LABEL}):
        if not args.all and _pid_alive(c.labels.get(OWNER_LABEL)):
            kept += 1  # a run in progress on this machine: not a leftover
            continue
        c.remove(force=True, v=True)
        removed += 1
    print(f"removed {removed} container(s) labelled {LABEL}"
          + (f"; kept {kept} of runs still in progress (--all removes them too)" if kept else ""))
    return 0


def _pid_alive(pid: str | None) -> bool:
    try:
        os.kill(int(pid), 0)
    except (TypeError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def cmd_image(args) -> int:
    import docker

    from .sandbox.image import ensure_sandbox_image

    print(ensure_sandbox_image(docker.from_env(), log=print, base_image=args.base_image))
    return 0


def build_parser() -> argparse.ArgumentParser:
    exits = "\n".join(f"  {code:>3}  {reason.value}" for reason, code in EXIT_CODES.items())
    p = argparse.ArgumentParser(prog="repair-agent", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="A coding-repair agent sandbox with a protected verifier.",
                                epilog=f"exit codes of `run`:\n{exits}\n    2  usage or manifest error")
    p.add_argument("--runs-dir", default=os.environ.get("REPAIR_AGENT_RUNS_DIR", "runs"))
    p.add_argument("--scenarios-dir", action="append", default=[], help="extra directory of *.scenario.toml")
    # The same two options after the subcommand too (`repair-agent run X --runs-dir D`); given
    # there, they win over the ones given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--runs-dir", default=argparse.SUPPRESS, help="where runs are kept (default: ./runs)")
    common.add_argument("--scenarios-dir", action="append", default=argparse.SUPPRESS,
                        help="extra directory of *.scenario.toml (repeatable)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("scenarios", parents=[common], help="list scenarios")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_scenarios)

    r = sub.add_parser("run", parents=[common], help="run a scenario")
    r.add_argument("scenario", help="a scenario name or the path of a *.scenario.toml manifest")
    r.add_argument("--chooser", default="baseline", help="baseline | model | package.module:attr")
    r.add_argument("--sandbox", choices=["docker", "local"], default="docker",
                   help="docker (default, hardened) or local (NOT isolated: plain subprocesses on this host)")
    r.add_argument("--max-steps", type=int)
    r.add_argument("--reserve", type=int, help="steps reserved for the final handover (seed 004)")
    r.add_argument("--deadline", type=float, help="seconds for the whole loop")
    r.add_argument("--model", help="model name (or REPAIR_AGENT_MODEL)")
    r.add_argument("--model-base-url", help="OpenAI-compatible base URL (or REPAIR_AGENT_MODEL_BASE_URL)")
    r.add_argument("--max-tokens", type=int, help="token budget: the run stops (step_budget) once the chooser's "
                   "reported usage reaches it")
    r.add_argument("--json", action="store_true", help="print one final JSON object")
    r.set_defaults(func=cmd_run)

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
    sw.add_argument("--chooser", action="append", help="repeatable; default: baseline")
    sw.add_argument("--budgets", default="2,4,6,8,12", help="max_steps values (default: 2,4,6,8,12)")
    sw.add_argument("--seeds", type=int, default=2, help="seeds 0..N-1 per cell (default: 2); the band needs >= 2")
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
    c.set_defaults(func=cmd_cleanup)

    im = sub.add_parser("image", parents=[common], help="build (or find) the sandbox image and print its tag")
    im.add_argument("--base-image")
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
