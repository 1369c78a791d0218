#!/usr/bin/env python3
"""Make a scenario's bug patch and reference fix from text edits of a pristine repository.

    scripts/make_bug_patch.py sandbox_repos/textkit wrap-exact-width \
        --edit src/textkit/wrap.py '<= width' '< width'

writes sandbox_repos/bugs/<name>.bug.diff (pristine -> buggy) and <name>.fix.diff (buggy ->
pristine), then runs the repository's tests on the buggy tree and prints which fail: those
are the manifest's target_tests (and nothing else may fail). Each edit replaces exactly one
occurrence of OLD by NEW (an OLD found twice is refused: make it longer).

It also starts sandbox_repos/<name>.heldout.toml (unless it exists): the import of the
module(s) the fix touches and a commented example case. Write the held-out cases there, add
`heldout = "<name>.heldout.toml"` to the manifest and check them with scripts/check_heldout.py.
"""
from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path


def unified(a: Path, b: Path, rel: str) -> str:
    proc = subprocess.run(["diff", "-u", "--label", f"a/{rel}", "--label", f"b/{rel}", str(a), str(b)],
                          capture_output=True, text=True)
    if proc.returncode > 1:
        raise SystemExit(proc.stderr)
    return proc.stdout


def _edited_copy(repo: Path, dest: Path, edits) -> Path:
    shutil.copytree(repo, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for rel, old, new in edits:
        path = dest / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise SystemExit(f"{rel}: {old!r} occurs {text.count(old)} times, need exactly 1")
        path.write_text(text.replace(old, new))
    return dest


def build(repo: Path, edits: list[tuple[str, str, str]], keep: int = 0) -> tuple[str, str, Path]:
    """The bug diff, the fix diff, and a temp copy of the buggy tree.

    The first `keep` edits are part of the scenario's starting point but not of the bug: the
    reference fix leaves them in (e.g. a variant of a repository that fixes its known bug)."""
    work = Path(tempfile.mkdtemp(prefix="bug-"))
    buggy = _edited_copy(repo, work / repo.name, edits)
    fixed = _edited_copy(repo, work / "fixed" / repo.name, edits[:keep])
    bug, fix = [], []
    for rel in dict.fromkeys(e[0] for e in edits):
        bug.append(unified(repo / rel, buggy / rel, rel))
        fix.append(unified(buggy / rel, fixed / rel, rel))
    return "".join(bug), "".join(fix), buggy


def failing_tests(tree: Path) -> dict[str, str]:
    """Node ids of the tests that do not pass in `tree`, with their first message line."""
    junit = tree.parent / "junit.xml"
    subprocess.run([sys.executable, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                    f"--rootdir={tree}"], cwd=tree, capture_output=True)
    out = {}
    for tc in ET.parse(junit).getroot().iter("testcase"):
        bad = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
        if bad is not None:
            module = tc.get("classname").replace(".", "/") + ".py"
            out[f"{module}::{tc.get('name')}"] = (bad.get("message") or "").splitlines()[0] if bad.get("message") else ""
    return out


HELDOUT_TEMPLATE = '''# Held-out behaviour checks for {name}: inputs the visible tests never use, expected values
# from the reference fix. 6-12 cases of the target behaviour (the bug's edge cases included) and
# 2-4 of neighbouring behaviour a careless fix could break. Format: verifier/heldout.py.
paths = {paths}
setup = """
{setup}
"""

# [[case]]
# name = "describe_the_input"
# expr = "function(argument)"
# expect = 42            # or expect_json = 'null' (for None), or raises = "ValueError"
'''


def heldout_template(name: str, repo: Path, rels: list[str]) -> str:
    """A held-out file to fill in: the import root and public names of each module the fix touches."""
    paths, imports = [], []
    for rel in dict.fromkeys(r for r in rels if r.endswith(".py")):
        root = (repo / rel).parent
        while root != repo and (root / "__init__.py").is_file():  # climb to the package's import root
            root = root.parent
        module = ".".join((repo / rel).relative_to(root).with_suffix("").parts)
        names = [n.name for n in ast.parse((repo / rel).read_text()).body
                 if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]
        paths.append(root.relative_to(repo).as_posix())
        imports.append(f"from {module} import {', '.join(names)}" if names else f"import {module}")
    return HELDOUT_TEMPLATE.format(name=name, paths=json.dumps(list(dict.fromkeys(paths)) or ["."]),
                                   setup="\n".join(imports))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("repo", type=Path)
    p.add_argument("name")
    p.add_argument("--edit", nargs=3, action="append", required=True, metavar=("PATH", "OLD", "NEW"))
    p.add_argument("--keep", type=int, default=0, help="leading edits the reference fix keeps (not part of the bug)")
    p.add_argument("--out", type=Path, default=None, help="default: <repo>/../bugs")
    args = p.parse_args()
    out = args.out or args.repo.parent / "bugs"
    bug, fix, buggy = build(args.repo, [tuple(e) for e in args.edit], args.keep)
    out.mkdir(exist_ok=True)
    (out / f"{args.name}.bug.diff").write_text(bug)
    (out / f"{args.name}.fix.diff").write_text(fix)
    for nodeid, message in failing_tests(buggy).items():
        print(f"{nodeid}\t{message}")
    shutil.rmtree(buggy.parent)
    heldout = out.parent / f"{args.name}.heldout.toml"
    if not heldout.exists():
        heldout.write_text(heldout_template(args.name, args.repo, [e[0] for e in args.edit[args.keep:]]))
    print(f"held-out checks: write cases in {heldout}, add heldout = \"{heldout.name}\" to the manifest, then "
          f"scripts/check_heldout.py {args.name} (the buggy tree must fail a case, the fix pass all)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
