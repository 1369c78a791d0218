"""repair-agent: run a scenario, list scenarios, replay a journal, show a report, release or reject.

The parser and `main` are here; each command group lives in its own module (running, runs,
sweeps, containers)."""
from __future__ import annotations

import argparse
import os
import sys

from ..loop.stops import EXIT_CODES
from .common import USAGE_ERROR, RunsDirAction, add_sandbox_option, err, reader_gone
from .containers import cmd_cleanup, cmd_image
from .importing import register as register_import
from .models import register as register_models
from .running import add_repo_arguments, cmd_grant, cmd_resume, cmd_run, cmd_scenarios
from .runs import cmd_release, cmd_replay, cmd_runs, cmd_show
from .sweeps import add_check_parser, cmd_compare, cmd_sweep


def build_parser() -> argparse.ArgumentParser:
    exits = "\n".join(f"  {code:>3}  {reason.value}" for reason, code in EXIT_CODES.items())
    p = argparse.ArgumentParser(prog="repair-agent", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="A coding-repair agent sandbox with a protected verifier.",
                                epilog=f"exit codes of `run`:\n{exits}\n    2  usage or manifest error")
    p.add_argument("--runs-dir", default=os.environ.get("REPAIR_AGENT_RUNS_DIR", "runs"), action=RunsDirAction)
    p.add_argument("--scenarios-dir", action="append", default=[], help="extra directory of *.scenario.toml")
    # The same two options after the subcommand too (`repair-agent run X --runs-dir D`); given
    # there, they win over the ones given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--runs-dir", default=argparse.SUPPRESS, action=RunsDirAction,
                        help="where runs are kept (default: ./runs)")
    common.add_argument("--scenarios-dir", action="append", default=argparse.SUPPRESS,
                        help="extra directory of *.scenario.toml (repeatable)")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("scenarios", parents=[common], help="list scenarios")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_scenarios)

    r = sub.add_parser("run", parents=[common], help="run a scenario")
    r.add_argument("scenario", nargs="?", help="a scenario name or the path of a *.scenario.toml manifest")
    add_repo_arguments(r)
    r.add_argument("--chooser", default="baseline", help="baseline | search | model | model:NAME (a model of the "
                   "models file) | package.module:attr")
    r.add_argument("--models", metavar="FILE", help="models file for --chooser model:NAME (default: "
                   "~/.config/repair-agent/models.toml, else ./models.toml outside the repository under repair; docs/models.md)")
    r.add_argument("--seed", type=int, default=0, help="seed for choosers that take one (search: the order in "
                   "which equally scored candidates are tried); default 0")
    add_sandbox_option(r, "docker (default, hardened) or local (NOT isolated: plain subprocesses on this host)")
    r.add_argument("--max-steps", type=int)
    r.add_argument("--reserve", type=int, help="steps reserved for the final handover: once only these are left, "
                   "the chooser may only stop")
    r.add_argument("--deadline", type=float, help="seconds for the whole loop")
    r.add_argument("--model", help="model name (or REPAIR_AGENT_MODEL)")
    r.add_argument("--model-base-url", help="OpenAI-compatible base URL (or REPAIR_AGENT_MODEL_BASE_URL)")
    r.add_argument("--max-tokens", type=int, help="token budget: the run stops (step_budget) once the chooser's "
                   "reported usage reaches it; an endpoint that reports no usage ends the run at its first reply "
                   "(dependency_failure)")
    r.add_argument("--max-cost", type=float, metavar="USD", help="cost budget, priced from the models file's "
                   "price_per_mtok_in/out: the run stops (cost_budget) once what its steps cost reaches it")
    r.add_argument("--json", action="store_true", help="print one final JSON object")
    r.set_defaults(func=cmd_run)

    rs = sub.add_parser("resume", parents=[common], help="continue a stopped or killed run from its journal")
    rs.add_argument("run", help="a run directory or a run id")
    rs.add_argument("--chooser", help="baseline | search | model | model:NAME | package.module:attr (default: the "
                    "run's own)")
    rs.add_argument("--models", metavar="FILE", help="models file for model:NAME (default: the one the run used, "
                    "else as for run)")
    rs.add_argument("--max-steps", type=int, help="further steps this resume grants (default: the steps left; "
                    "required after step_budget)")
    rs.add_argument("--deadline-s", type=float, help="seconds the resumed loop may take, from the resume "
                    "(default: the run's deadline)")
    rs.add_argument("--model", help="model name (or REPAIR_AGENT_MODEL)")
    rs.add_argument("--model-base-url", help="OpenAI-compatible base URL (or REPAIR_AGENT_MODEL_BASE_URL)")
    rs.add_argument("--max-cost", type=float, metavar="USD", help="what this resume may spend beyond what the "
                    "run spent (default: the run's --max-cost holds; required after cost_budget)")
    rs.add_argument("--json", action="store_true", help="print one final JSON object")
    rs.set_defaults(func=cmd_resume)

    g = sub.add_parser("grant", parents=[common], help="a person's grant after authorization_required")
    g.add_argument("run", help="a run directory or a run id")
    g.add_argument("--allow", action="append", required=True, help="a path glob the refused patch may edit, "
                   "e.g. 'README.md' or 'tests/test_pricing.py', or the key of a code finding the refusal named, "
                   "e.g. 'code:new-import@src/pkg/mod.py#1a2b3c4d5e' (repeatable)")
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
    rl.add_argument("--branch", help="branch name (default: repair/RUN-ID; for a run --repo run repair-agent/RUN-ID, "
                    "created in the user's repository)")
    rl.add_argument("--patch-file", metavar="PATH", help="write the verified diff to PATH instead of making a branch")
    rl.add_argument("--accept-plausible", action="store_true", help="release a diff that passes the tests although "
                    "the behaviour checks (held-out cases, the reference fix's answers) disagree with it")
    rl.set_defaults(func=cmd_release)

    sw = sub.add_parser("sweep", parents=[common], help="run scenarios × choosers × budgets × seeds; summarize "
                        "with run-to-run bands")
    sw.add_argument("--scenarios", nargs="+", metavar="NAME|GLOB|tag:T|kind:K",
                    help="which scenarios (default: all, broken manifests included as reported entries)")
    sw.add_argument("--chooser", action="extend", nargs="+", metavar="C", help="one or more (or repeat the flag): baseline | search | model | model:NAME | package.module:attr; default: baseline")
    sw.add_argument("--models", metavar="FILE", help="models file for model:NAME choosers (default: "
                    "~/.config/repair-agent/models.toml, else ./models.toml outside the repository under repair; docs/models.md)")
    sw.add_argument("--budgets", default="2,4,6,8,12", help="max_steps values (default: 2,4,6,8,12)")
    sw.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 per cell (default: 3); the band needs >= 2")
    sw.add_argument("--workers", type=int, default=None, help="parallel runs (default: CPU count)")
    sw.add_argument("--executor", choices=["local", "ray"], default="local",
                    help="local process pool, or Ray (pip install '.[ray]'; RAY_ADDRESS for a cluster)")
    add_sandbox_option(sw, "where each run's sandbox and checks run: docker (default) or local (NOT isolated)")
    sw.add_argument("--group-by", choices=["all", "kind", "tag", "scenario", "expected"], default="all")
    sw.add_argument("--out", default="sweeps/latest", help="output directory; re-running into it resumes")
    sw.add_argument("--max-cost", type=float, metavar="USD", help="what the sweep's runs may cost in all (the "
                    "models file's prices): no run starts once the finished runs' cost reaches it")
    sw.add_argument("--max-run-cost", type=float, metavar="USD", help="each run's --max-cost: a run stops "
                    "(cost_budget) once what its steps cost reaches it")
    sw.add_argument("--json", action="store_true", help="print the summary as JSON")
    sw.set_defaults(func=cmd_sweep)

    cp = sub.add_parser("compare", parents=[common], help="compare two sweeps of the same scenarios, cell by cell "
                        "(before and after a change)")
    cp.add_argument("a", help="the first sweep: its output directory or its summary.json")
    cp.add_argument("b", help="the second sweep")
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    cp.set_defaults(func=cmd_compare)

    c = sub.add_parser("cleanup", parents=[common], help="remove leftover containers of this project")
    c.add_argument("--all", action="store_true", help="also remove containers of runs still in progress")
    c.add_argument("--run", help="only the containers of this run id")
    c.set_defaults(func=cmd_cleanup)

    add_check_parser(sub, common)

    register_import(sub, common)

    register_models(sub, common)

    im = sub.add_parser("image", parents=[common], help="build (or find) the sandbox image and print its tag")
    im.add_argument("--base-image")
    env_mode = im.add_mutually_exclusive_group()
    env_mode.add_argument("--scenario", metavar="NAME", help="build (or find) this scenario's environment image")
    env_mode.add_argument("--list", action="store_true", help="list cached environment images")
    env_mode.add_argument("--prune", action="store_true", help="remove cached environment images")
    im.add_argument("--json", action="store_true", help="with --list: JSON")
    im.set_defaults(func=cmd_image)
    return p


def _is_validation_error(exc: BaseException) -> bool:
    # pydantic is not imported up front (a run's command reaches its sandbox's start sooner); an
    # error of pydantic's means pydantic was loaded.
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(exc, pydantic.ValidationError)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.program = argv is None  # the process itself, not a caller in a longer-lived process
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as exc:  # manifests, plug-ins, run ids: a clear message
        if _is_validation_error(exc):
            # A stored record (run.json, a journal line, a summary) that does not fit its schema is
            # damaged data, not a mistyped command.
            err(f"a stored record does not read as its schema says: {exc}")
            return 1
        err(str(exc))
        # A damaged journal is damaged data, not a usage error. (Not imported up front: a run's
        # command reaches its sandbox's start sooner; a journal error means the module was loaded.)
        journal = sys.modules.get("repair_agent.loop.journal")
        return 1 if journal is not None and isinstance(exc, journal.JournalError) else USAGE_ERROR
    except KeyboardInterrupt:
        err("interrupted; containers of this run were removed")
        return 130
    except BrokenPipeError:   # a bare print() whose reader went away
        reader_gone()
        return 141
    finally:
        if args.program:  # about to exit, everything written and every container removed: spare the
            # interpreter's exit a collection pass over every object the process made (0.1-0.5 s)
            import gc

            gc.freeze()


if __name__ == "__main__":
    sys.exit(main())
