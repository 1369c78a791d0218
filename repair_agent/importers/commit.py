"""`repair-agent import commit REPO FIX_COMMIT`: a scenario from a real bug-fix commit.

The commit's changes are split by path: test files (tests/, test/, test_*.py, *_test.py,
conftest.py) and the rest. The buggy tree is the commit's first parent plus the commit's test
changes; the reference fix is the rest. The targets are found by running the test files the commit
changed on the buggy tree and on the buggy tree with the fix (in a container of the scenario's
environment image, the one its runs and checks use, or locally with --sandbox local): every test that fails before and passes after. The scenario then
goes through the corpus check like any import. The suite condition is the whole suite, or with
suite="changed" a pass-to-pass list of the changed modules' tests that pass before and after.
"""
from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import git
from unidiff import PatchSet

from verifier.isolation import HardenedContainer
from verifier.junit import MAX_JUNIT_BYTES, collection_error_for, crash_cause, parse_junit_bytes, read_result_file
from verifier.spec import glob_match, nodeid_to_junit_key
from verifier.trees import copy_tree

from ..untrusted.hostgit import run_git
from ..sandbox.environment import add_generated
from .common import (OUT_DIR, CheckPlace, ImportResult, InstanceError, Written, apply_patch_text,
                     environment_sections, export_tree, fresh_data_dir, repo_path, resolve_commit, scenario_environment,
                     scenario_name, validate, write_scenario)
from .derived import derive_heldout

Suite = Literal["whole", "changed"]
TEST_GLOBS = ("tests/**", "test/**", "**/tests/**", "**/test/**", "**/test_*.py", "**/*_test.py", "**/conftest.py")
RUN_TIMEOUT_S = 600.0
# While importing, a test that takes longer than this fails alone (it loops on the buggy tree).
IMPORT_PER_TEST_S = 10.0
# An imported scenario's suite limit: a real project's whole suite takes minutes on a loaded machine
# (the hand-written corpora's 120 s cut dateutil's); a hanging test still fails alone in seconds,
# by the per-test limit fitted to the suite (per_test_limit).
SUITE_TIMEOUT_S = 600.0


def is_test_file(path: str) -> bool:
    return glob_match(path, TEST_GLOBS) is not None


def split_commit(repo: git.Repo, parent: str, commit: str) -> tuple[str, str, list[str]]:
    """(the test changes, the other changes, the test files changed) as unified diffs."""
    # hostgit, and no textconv: the repository's diff drivers run nothing, and the diff is of the bytes.
    proc = run_git(["diff", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", parent, commit],
                   repo_path(repo), timeout=600)
    if proc.returncode:
        raise InstanceError(f"git diff {parent[:12]} {commit[:12]} failed: {proc.stderr.decode(errors='replace')[-500:]}")
    text = proc.stdout.decode("utf-8", errors="surrogateescape")
    tests, rest, test_paths = [], [], []
    for f in PatchSet(text if text.endswith("\n") else text + "\n"):
        if is_test_file(f.path):
            tests.append(str(f))
            test_paths.append(f.path)
        else:
            rest.append(str(f))
    return "".join(tests), "".join(rest), test_paths


@dataclass(frozen=True)
class TestRun:
    """The given test files run once with pytest."""
    __test__ = False  # not a pytest test class
    outcomes: dict[str, str]      # node id -> passed, failed, error, skipped
    unimported: dict[str, str]    # dotted path of a file pytest could not collect -> its cause
    messages: dict[str, str]      # node id -> pytest's one-line failure message
    seconds: dict[str, float]     # node id -> pytest's timing of it


def run_tests(tree: Path, files: list[str], check: CheckPlace) -> TestRun:
    """The given test files, run with pytest in a fresh container of the scenario's image (tree
    mounted read-only) or locally. A test that runs past IMPORT_PER_TEST_S fails alone."""
    with tempfile.TemporaryDirectory(prefix="repair-agent-import-run-") as tmp:
        runner = check.runner(tree)
        # A container writes its report to its own small writable directory; a local run, here.
        contained = isinstance(runner, HardenedContainer)
        junit = f"{OUT_DIR}/junit.xml" if contained else str(Path(tmp) / "junit.xml")
        # Plugins load as installed, as in the verifier's checks (the environment's pytest-mock gives `mocker`).
        env = {"PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
        base = [check.python, "-m", "pytest", "-p", "no:cacheprovider", f"--rootdir={check.root(tree)}"]
        try:
            result = runner.exec([*base, "-q", "-o", "junit_family=xunit2", f"--junitxml={junit}",
                                  "-o", f"timeout={IMPORT_PER_TEST_S:g}", "--continue-on-collection-errors", "--maxfail=0",
                                  *files],
                                 timeout_s=RUN_TIMEOUT_S, env=env, output_dir=Path(tmp))
            if result.timed_out:
                raise InstanceError(f"the commit's tests did not finish within {RUN_TIMEOUT_S:.0f}s")
            data, problem = (runner.read_file(junit, MAX_JUNIT_BYTES) if isinstance(runner, HardenedContainer)
                             else read_result_file(Path(junit)))
        finally:
            runner.close()
    cases, parse_problem = parse_junit_bytes(data) if not problem else ([], problem)
    if parse_problem or problem:
        raise InstanceError(f"the commit's tests could not be run ({parse_problem or problem}, pytest exit "
                            f"{result.exit_code}): {crash_cause(result.stderr.text + chr(10) + result.stdout.text)}")
    by_key = {c.key: n for c in cases if not c.collection for n in [junit_key_to_nodeid(c.key, files)] if n}
    tests = [c for c in cases if c.key in by_key]
    return TestRun(outcomes={by_key[c.key]: c.outcome for c in tests},
                   unimported={c.collected_path: c.message for c in cases if c.collection},
                   messages={by_key[c.key]: c.message for c in tests if c.message},
                   seconds={by_key[c.key]: c.seconds for c in tests})


def junit_key_to_nodeid(key: str, files: list[str]) -> str | None:
    """The node id of a JUnit key of a test in one of the test files that ran (`tests.test_x.TestA::
    test_y[1]` -> `tests/test_x.py::TestA::test_y[1]`). Read from the report, not from `--collect-only`'s
    listing, whose format a project's addopts (`-v`) change."""
    classname, _, name = key.partition("::")
    for path in sorted(files, key=len, reverse=True):
        dotted = path.removesuffix(".py").replace("/", ".")
        if classname == dotted or classname.startswith(dotted + "."):
            classes = classname[len(dotted):].strip(".")
            return "::".join([path, *(classes.split(".") if classes else []), name])
    return None


def per_test_limit(run: TestRun) -> float:
    """The manifest's per-test limit: generous for the slowest test that passed with the fix (20x,
    at least 2 s, at most the default 60 s), so that a test that loops on the buggy tree fails alone
    quickly and every looping case together stays within the suite's limit."""
    slowest = max([s for n, s in run.seconds.items() if run.outcomes.get(n) == "passed"], default=0.0)
    return float(min(60, max(2, math.ceil(20 * slowest))))


def _targets(before: dict[str, str], after: dict[str, str], unimported: dict[str, str]) -> list[str]:
    """The tests that fail before the fix and pass after. A test whose module cannot be imported
    before the fix (it imports a name the fix adds) fails there: SWE-bench counts it failing, and so
    does the verifier."""
    before.update({n: "error" for n in after if n not in before
                   and collection_error_for(nodeid_to_junit_key(n), unimported) is not None})
    return sorted(n for n, outcome in before.items() if outcome in ("failed", "error") and after.get(n) == "passed")


def import_commit(repo_path: Path, fix_commit: str, out: Path, *, check: CheckPlace, name: str | None = None,
                  writable: tuple[str, ...] = ("**",), max_steps: int = 12, suite: Suite = "whole",
                  environment: str = "declared", hidden_tests: bool = False,
                  log: Callable[[str], None] = lambda m: None) -> ImportResult:
    """One scenario from one fix commit, checked; an unusable commit is a skipped result saying why.
    `suite`: "whole" (the whole-suite rule) or "changed" (a pass-to-pass list: the tests of the
    changed test modules that pass both before and after the fix). `environment`: see
    sandbox.detect.environment_option ("declared", "auto", "none" or a TOML file). `hidden_tests`:
    the commit's test changes are held back from the chooser and applied only in the verifier's checks."""
    out.mkdir(parents=True, exist_ok=True)
    result = ImportResult(instance_id=f"{Path(repo_path).name}@{fix_commit}", status="skipped")
    try:
        manifest = _write(Path(repo_path), fix_commit, out, check, result, name=name, writable=writable,
                          max_steps=max_steps, suite=suite, environment=environment, hidden_tests=hidden_tests,
                          log=log)
    except InstanceError as exc:
        result.reason = str(exc)
        return result
    except (git.GitCommandError, OSError) as exc:  # the repository or the disk: a refusal, not a traceback
        result.reason = f"cannot be read: {exc}"[:600]
        return result
    validate(out, [Written(result=result, manifest=manifest)], log=log, check=check)
    return result


def _write(repo_path: Path, fix_commit: str, out: Path, check: CheckPlace, result: ImportResult, *, name: str | None,
           writable: tuple[str, ...], max_steps: int, suite: Suite, environment: str, hidden_tests: bool,
           log: Callable[[str], None]) -> Path:
    try:
        repo = git.Repo(repo_path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise InstanceError(f"{repo_path} is not a git repository: {exc}") from None
    commit = repo.commit(resolve_commit(repo, fix_commit))
    if not commit.parents:
        raise InstanceError(f"{commit.hexsha[:12]} is a root commit: there is no parent to be the buggy tree")
    parent = commit.parents[0].hexsha
    test_changes, fix, test_paths = split_commit(repo, parent, commit.hexsha)
    if not test_changes:
        raise InstanceError(f"{commit.hexsha[:12]} changes no test file: no test can show the bug it fixes")
    if not fix.strip():
        raise InstanceError(f"{commit.hexsha[:12]} changes only tests: there is no fix to make")
    name = name or scenario_name(f"{Path(repo.working_dir).name}-{commit.hexsha[:10]}")
    result.instance_id, result.scenario = f"{Path(repo.working_dir).name}@{commit.hexsha[:12]}", name
    tree = fresh_data_dir(out, name, Path(repo.working_dir).name)
    export_tree(repo, parent, tree)
    with tempfile.TemporaryDirectory(prefix="repair-agent-fixed-") as tmp:
        # Hidden tests: the scenario's tree stays the parent's; the test changes go to the verifier only.
        tested = Path(tmp) / "tested" if hidden_tests else tree
        if hidden_tests:
            copy_tree(tree, tested)
        apply_patch_text(tested, test_changes, "commit's test changes")
        runnable = [p for p in test_paths if (tested / p).is_file()
                    and (glob_match(p, ("**/test_*.py", "**/*_test.py")) is not None)]
        if not runnable:
            raise InstanceError(f"{commit.hexsha[:12]} changes no test module that pytest would run: {test_paths}")
        section, check = scenario_environment(environment, tested, name, check, log)
        if hidden_tests and check.image is not None and section is not None:
            add_generated(check.client, check.image, tree, log)
        log(f"running {len(runnable)} changed test file(s) before and after the fix of {commit.hexsha[:12]}")
        fixed = Path(tmp) / "fixed"
        copy_tree(tested, fixed)
        apply_patch_text(fixed, fix, "commit's non-test changes")
        run_before, run_after = run_tests(tested, runnable, check), run_tests(fixed, runnable, check)
        before, unimported, messages = run_before.outcomes, run_before.unimported, run_before.messages
        after, unimported_after = run_after.outcomes, run_after.unimported
        targets = _targets(before, after, unimported)
        heldout = tree.parent / f"{name}.heldout.toml"
        result.heldout_cases = derive_heldout(fixed, tested, targets, fix, check, heldout) if targets else 0
    result.target_tests = targets
    if not targets:
        errors = "; ".join(f"collection error in {path}: {cause}" for path, cause in
                           {**unimported, **unimported_after}.items())
        raise InstanceError(f"no test of {runnable} fails at the parent with the commit's test changes and passes "
                            f"at the commit ({sum(o == 'passed' for o in before.values())}/{len(before)} pass before, "
                            f"{sum(o == 'passed' for o in after.values())}/{len(after)} after)"
                            + (f"; {errors}" if errors else ""))
    listed = sorted(n for n, outcome in before.items() if outcome == "passed" and after.get(n) == "passed")
    result.pass_to_pass = len(listed) if suite == "changed" else 0
    message = commit.message if isinstance(commit.message, str) else commit.message.decode(errors="replace")
    subject = message.strip().splitlines()[0] if message.strip() else commit.hexsha[:12]
    hidden = tree.parent / "hidden.tests.diff"
    if hidden_tests:
        hidden.write_text(test_changes, encoding="utf-8")
    sections: dict[str, dict] = {
        "goal": {"text": _goal(subject, targets, messages if hidden_tests else None),
                 "failure_signature": f"failing: {', '.join(targets[:3])}" + (" ..." if len(targets) > 3 else "")},
        "acceptance": {"target_tests": targets, "pass_to_pass": listed if suite == "changed" else None,
                       "writable": list(writable), "protected": test_paths,
                       "per_test_timeout_s": per_test_limit(run_after), "test_timeout_s": SUITE_TIMEOUT_S},
        "budget": {"max_steps": max_steps, "deadline_s": 900.0},
        **environment_sections(section),
    }
    top = {"description": f"{Path(repo.working_dir).name}: {subject}"[:200], "kind": "fix-commit",
           "tags": ["fix-commit", f"repo:{Path(repo.working_dir).name}"],
           "heldout": f"../data/{name}/{heldout.name}" if result.heldout_cases else None,
           "hidden_tests": f"../data/{name}/{hidden.name}" if hidden_tests else None}
    return write_scenario(out, name, tree=tree, top=top, sections=sections, reference_fix=fix,
                          source={"format": "commit", "repo": str(Path(repo.working_dir).resolve()),
                                  "fix_commit": commit.hexsha, "parent": parent, "test_files": test_paths,
                                  "before": before, "after": after},
                          comment=f"Imported from fix commit {commit.hexsha} of {Path(repo.working_dir).resolve()}\n"
                                  f"buggy tree = its parent {parent} + its test changes"
                                  + (" (hidden: only the verifier applies them)" if hidden_tests else "")
                                  + "; reference fix = the rest")


def _goal(subject: str, targets: list[str], messages: dict[str, str] | None) -> str:
    """The commit's subject and the targets; with hidden tests, as a problem statement would, also how
    each fails on the buggy tree (pytest's one-line message: the failure, never the test's source)."""
    if messages is None:
        return f"{subject}\n\nThese tests fail and must pass: {', '.join(targets)}"
    lines = [f"- {n}: {messages.get(n) or 'fails'}" for n in targets]
    return (f"{subject}\n\nOn the current code these tests fail (their source is not in the repository you "
            "see; the verifier runs them):\n" + "\n".join(lines))
