"""Commands over many runs: sweep and check."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..untrusted.visible import terminal_json
from .common import USAGE_ERROR, add_sandbox_option, err, say


def cmd_sweep(args) -> int:
    from ..choosers import load_chooser
    from ..choosers.models_file import MODEL_PREFIX, find_models_file, untrusted_roots
    from ..sweep import plan_jobs, render_markdown, select_scenarios, sweep
    from ..sweep.statistics import NO_BAND_NOTE
    from .running import unpriced

    try:
        budgets = sorted({int(b) for b in args.budgets.split(",") if b.strip()})
    except ValueError:
        err(f"--budgets must be comma-separated integers, got {args.budgets!r}")
        return USAGE_ERROR
    if not budgets or min(budgets) < 1 or args.seeds < 1:
        err("--budgets needs at least one budget >= 1 and --seeds at least 1")
        return USAGE_ERROR
    if sweep_runs_dir_refused(args):
        return USAGE_ERROR
    if args.seeds == 1:
        err(NO_BAND_NOTE)
    choosers = args.chooser or ["baseline"]
    selection = select_scenarios(args.scenarios, [Path(d) for d in args.scenarios_dir])
    if not selection.scenarios and not selection.broken:
        err("no scenario selected")
        return USAGE_ERROR
    for name, error in selection.broken.items():
        err(f"scenario {name} is unusable and will be reported, not run: {error}")
    models_file = (find_models_file(args.models, untrusted=[*untrusted_roots(None),
                                                            *(Path(d) for d in args.scenarios_dir)])
                   if any(c.startswith(MODEL_PREFIX) for c in choosers) else None)
    for option, value in (("--max-cost", args.max_cost), ("--max-run-cost", args.max_run_cost)):
        if value is not None and not value > 0:
            err(f"{option} {value}: must be positive")
            return USAGE_ERROR
    limited = args.max_cost if args.max_cost is not None else args.max_run_cost
    if selection.scenarios:  # an unknown chooser or model is a usage error before anything runs
        for spec in choosers:
            chooser = load_chooser(spec, selection.scenarios[0], seed=0, models_file=models_file)
            if (problem := unpriced(chooser, limited)) is not None:
                err(problem)
                return USAGE_ERROR
    out = Path(args.out)
    jobs = plan_jobs(selection, choosers, budgets, args.seeds, out / "runs", sandbox=args.sandbox,
                     models_file=str(models_file) if models_file else None, max_run_cost=args.max_run_cost)
    command = "repair-agent " + shlex.join(sys.argv[1:])
    outcome = sweep(jobs, out, workers=args.workers, executor=args.executor, group_by=args.group_by,
                    command=command, max_cost=args.max_cost)
    if args.json:
        print(terminal_json(outcome.model_dump(mode="json")))
    else:
        say(render_markdown(outcome.summary, cost_comparisons=False))
        print(f"cost comparisons (steps, tokens, wall time) with their bands: {out.resolve() / 'summary.md'}")
        print(f"{outcome.ran} run(s) now, {outcome.skipped} already finished, of {outcome.total}; "
              f"results: {out.resolve() / 'results.jsonl'}")
    if outcome.interrupted:
        err(f"interrupted: finished runs are kept in {out / 'results.jsonl'}; run the same command again to "
             "complete the rest")
        return 130
    return 0


def cmd_compare(args) -> int:
    from ..sweep.compare import compare_sweeps, read_summary, render_comparison

    summaries = []
    for where in (args.a, args.b):
        path = Path(where)
        if not (path / "summary.json" if path.is_dir() else path).is_file():
            err(f"{where}: not a sweep's output directory or summary.json")
            return USAGE_ERROR
        summaries.append(read_summary(path))
    a_label, b_label = (Path(p).resolve().name if Path(p).is_dir() else Path(p).resolve().parent.name
                        for p in (args.a, args.b))
    if a_label == b_label:
        a_label, b_label = "a", "b"
    comparison = compare_sweeps(*summaries, a_label=a_label, b_label=b_label)
    if args.json:
        print(terminal_json(comparison.model_dump(mode="json")))
    else:
        say(render_comparison(comparison))
    return 0


def _check_selection(args):
    """The scenarios `check` looks at: the NAMEs/GLOBs given; else those of --scenarios-dir when
    given (a user validating their own); else every built-in one. Broken manifests are included."""
    from ..scenarios.scenario import SUFFIX
    from ..sweep import select_scenarios

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

    from ..scenarios.corpus import broken_manifest, check_corpus, render_table

    selection = _check_selection(args)
    if not selection.scenarios and not selection.broken:
        err("no scenario selected")
        return USAGE_ERROR
    import docker
    import requests

    from ..importers.common import CheckPlace
    from ..sandbox.image import ImageBuildError

    try:
        place = CheckPlace.named(args.sandbox, log=err)
    except (docker.errors.DockerException, requests.exceptions.RequestException, ImageBuildError) as exc:
        err(f"the check runs the verifier in Docker and no engine answers or the image cannot be built: {exc}"
             " (--sandbox local checks without containers, NOT isolated)")
        return USAGE_ERROR
    total = len(selection.scenarios)
    done = []

    def progress(c) -> None:
        done.append(c)
        if not args.json:
            err(f"[{len(done)}/{total}] {c.scenario}: {'ok' if c.ok else 'FAIL'} ({c.wall_s:.1f}s)")

    with tempfile.TemporaryDirectory(prefix="repair-agent-check-") as state:
        checks = check_corpus(selection.scenarios, Path(state), workers=args.workers, on_result=progress,
                              log=err, **place.corpus_check())
    checks += [broken_manifest(stem, error) for stem, error in selection.broken.items()]
    if args.json:
        print(terminal_json([c.model_dump(mode="json") for c in checks]))
    else:
        say(render_table(checks))
    return 0 if all(c.ok for c in checks) else 1


def add_check_parser(sub, common) -> None:
    ck = sub.add_parser("check", parents=[common], help="the corpus check: each scenario's buggy tree fails exactly "
                        "its targets, and its reference fix passes (inside the scope, or outside it for a handoff)")
    ck.add_argument("names", nargs="*", metavar="NAME|GLOB",
                    help="scenarios, globs on names, tag:T, kind:K or manifest paths (default: those of "
                    "--scenarios-dir when given, else every built-in scenario)")
    add_sandbox_option(ck, "docker (default: the sandbox image, as runs see it) or local (NOT isolated)")
    ck.add_argument("--workers", type=int, default=2, help="scenarios checked at once (default: 2)")
    ck.add_argument("--json", action="store_true", help="print the checks as JSON")
    ck.set_defaults(func=cmd_check)


def sweep_runs_dir_refused(args) -> bool:
    """A sweep keeps its runs in OUT/runs, so that OUT is whole and a re-run resumes from it; an
    explicit --runs-dir would be ignored, so it is refused instead of silently dropped."""
    if not getattr(args, "runs_dir_given", False):
        return False
    err(f"sweep does not take --runs-dir: its runs go to OUT/runs (here {Path(args.out) / 'runs'}) so that the "
         "sweep directory is complete and resumable; choose the directory with --out")
    return True
