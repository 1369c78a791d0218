"""`repair-agent import swebench|commit`: argument registration and the two commands."""
from __future__ import annotations

from pathlib import Path

from typing import TYPE_CHECKING

from .common import add_sandbox_option, err

if TYPE_CHECKING:
    from ..importers.common import CheckPlace, ImportResult


def register(sub, common) -> None:
    imp = sub.add_parser("import", parents=[common], help="scenarios from SWE-bench-style JSONL or a fix commit")
    kinds = imp.add_subparsers(dest="format", required=True)
    shared = [common]
    sw = kinds.add_parser("swebench", parents=shared, help="one scenario per SWE-bench-style instance")
    sw.add_argument("file", metavar="FILE.jsonl")
    sw.add_argument("--repos", required=True, metavar="DIR", help="local git clones: DIR/owner__name or DIR/name")
    cm = kinds.add_parser("commit", parents=shared, help="a scenario from a real bug-fix commit")
    cm.add_argument("repo", metavar="REPO", help="a local git repository")
    cm.add_argument("commit", metavar="FIX_COMMIT")
    cm.add_argument("--name", help="scenario name (default: REPO's name and the commit's short sha)")
    cm.add_argument("--suite", choices=["whole", "changed"], default="whole", help="the suite condition: the whole "
                    "suite (default), or a pass-to-pass list of the changed test modules' tests that pass before "
                    "and after the fix")
    for p in (sw, cm):
        p.add_argument("--out", default="imported", help="where scenarios are written (default: ./imported); "
                       "use it as --scenarios-dir")
        p.add_argument("--writable", action="append", metavar="GLOB", help="writable glob (repeatable; default: **, "
                       "tests and test configuration stay protected)")
        p.add_argument("--max-steps", type=int, default=12)
        add_sandbox_option(p, "where tests run for the check: docker (default) or local (NOT isolated)")
        p.add_argument("--json", action="store_true", help="print the summary as JSON")
        p.add_argument("--environment", metavar="auto|none|FILE", default="declared", help="auto: the packages the "
                       "tree declares (pyproject, setup.cfg, setup.py, requirements files, the tests' imports and "
                       "plugins) pinned, and the project installed editable; FILE: a TOML file with the fields of "
                       "[environment]; none: the sandbox image. Default: auto when the tree declares dependencies")
        p.add_argument("--hidden-tests", action="store_true",
                       help="hold the test changes back from the chooser (SWE-bench's protocol): the workspace is "
                            "the buggy tree without them; only the verifier's checks apply them")
    sw.set_defaults(func=cmd_import_swebench)
    cm.set_defaults(func=cmd_import_commit)


def _finish(args, out: Path, results: list[ImportResult], **extra) -> int:
    from ..importers.common import render_summary, save_summary

    summary = save_summary(out, results, **extra)
    from ..untrusted.visible import terminal

    if args.json:
        print(terminal(summary.read_text()))
    else:
        print(terminal(render_summary(results)))
        print(f"summary: {summary}   usable scenarios: repair-agent scenarios --scenarios-dir {out}")
    return 0 if any(r.status == "usable" for r in results) else 1


def _backend(args) -> CheckPlace | None:
    """Where the imports' code and the corpus check run, or None after saying why there is none."""
    from ..importers.common import CheckPlace

    try:
        return CheckPlace.named(args.sandbox, log=err)
    except Exception as exc:  # no engine, no socket, the image cannot be built
        err(f"imports are validated by the corpus check in Docker and no engine answers or the image cannot be "
             f"built: {type(exc).__name__}: {exc} (--sandbox local checks without containers, NOT isolated)")
        return None


def cmd_import_swebench(args) -> int:
    from ..importers.swebench import import_swebench

    out = Path(args.out)
    check = _backend(args)
    if check is None:
        return 2
    results = import_swebench(Path(args.file), Path(args.repos), out, check=check,
                              writable=tuple(args.writable or ["**"]), max_steps=args.max_steps,
                              environment=args.environment, hidden_tests=args.hidden_tests, log=err)
    return _finish(args, out, results, source=str(Path(args.file).resolve()), format="swebench")


def cmd_import_commit(args) -> int:
    from ..importers.commit import import_commit

    out = Path(args.out)
    check = _backend(args)
    if check is None:
        return 2
    result = import_commit(Path(args.repo), args.commit, out, check=check, name=args.name,
                           writable=tuple(args.writable or ["**"]), max_steps=args.max_steps, suite=args.suite,
                           environment=args.environment, hidden_tests=args.hidden_tests, log=err)
    return _finish(args, out, [result], source=str(Path(args.repo).resolve()), format="commit")

