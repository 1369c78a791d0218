"""`repair-agent import swebench FILE.jsonl --repos DIR`: one scenario per SWE-bench-style instance.

Each instance names a repository (`owner/name`) that must be a local git clone under DIR, found as
DIR/owner__name (SWE-bench's own naming) or else DIR/name. The scenario's buggy tree is
`base_commit`'s files (no history) with `test_patch` applied; its targets are FAIL_TO_PASS, its
suite condition is PASS_TO_PASS (an empty list: the whole suite), the files `test_patch` touches
are protected, the gold `patch` is the reference fix (read only by the corpus check) and the goal
is the problem statement. Every written scenario goes through the corpus check; only those that
pass it are written where `--scenarios-dir OUT` finds them.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Callable

import git
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verifier.trees import copy_tree

from ..sandbox.environment import EnvironmentSection
from .common import (CheckPlace, ImportResult, InstanceError, Written, apply_patch_text, detect_environment,
                     environment_check, environment_sections, export_tree, fresh_data_dir, local_check, patch_paths,
                     scenario_name, validate, write_scenario)
from .commit import SUITE_TIMEOUT_S, per_test_limit, run_tests
from .derived import derive_heldout

# The fields a scenario is made of; every other field is kept in source.json and named as ignored.
USED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS",
        "problem_statement")
# Used for the environment (unless --environment none): instances of one repo and version share one,
# detected on environment_setup_commit's tree (or the first instance's).
ENVIRONMENT_FIELDS = ("environment_setup_commit", "version")
# Known SWE-bench fields with no counterpart here: the environment of an imported scenario is its
# [environment] section, not a prebuilt per-instance image.
KNOWN_IGNORED = ("image_name", "docker_image", "instance_image", "hints_text", "created_at")


class SwebenchInstance(BaseModel):
    """One JSONL line. FAIL_TO_PASS / PASS_TO_PASS may be lists or JSON-encoded lists (as in the
    published datasets)."""

    model_config = ConfigDict(extra="allow")

    instance_id: str = Field(min_length=1)
    repo: str = Field(pattern=r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
    base_commit: str = Field(min_length=4)
    patch: str = Field(min_length=1)
    test_patch: str = Field(min_length=1)
    FAIL_TO_PASS: list[str] = Field(min_length=1)
    PASS_TO_PASS: list[str]
    problem_statement: str = Field(min_length=1)
    environment_setup_commit: str | None = None
    version: str | None = None

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _json_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise ValueError(f"neither a list nor a JSON-encoded list: {value[:80]!r}") from None
        return value

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS")
    @classmethod
    def _node_ids(cls, value: list[str]) -> list[str]:
        for nodeid in value:
            if "::" not in nodeid or nodeid.startswith(("/", "-")) or ".." in nodeid.split("::")[0]:
                raise ValueError(f"{nodeid!r} is not a pytest node id like tests/test_x.py::test_y "
                                 "(only pytest-run repositories can be imported)")
        return value


def find_clone(repos_dir: Path, repo: str) -> Path:
    """DIR/owner__name, else DIR/name: a local git clone of `owner/name`, never outside DIR (no `..`,
    no link out: the instance's author may be the attacker)."""
    owner, name = repo.split("/", 1)
    if {owner, name} & {".", ".."}:
        raise InstanceError(f"repo {repo!r} is not owner/name: '.' and '..' are not names")
    root = repos_dir.resolve()
    candidates = [repos_dir / f"{owner}__{name}", repos_dir / name]
    for c in candidates:
        if (c / ".git").exists() or (c / "HEAD").is_file():  # a working clone or a bare one
            if not c.resolve().is_relative_to(root):
                raise InstanceError(f"the clone of {repo} ({c}) resolves to {c.resolve()}, outside {root}")
            return c
    raise InstanceError(f"no local clone of {repo} (looked for {', '.join(str(c) for c in candidates)})")


def instance_environment(inst: SwebenchInstance, repo: git.Repo, tree: Path, name: str, *, option: str,
                         shared: dict[tuple[str, str], EnvironmentSection | None], check: CheckPlace,
                         log: Callable[[str], None]) -> EnvironmentSection | None:
    """The instance's environment: one per (repo, version), detected on environment_setup_commit's
    tree when the clone has it, else on this instance's tree; without a version, its own."""
    key = (inst.repo, inst.version) if inst.version else None
    if key in shared:
        return shared[key]
    with tempfile.TemporaryDirectory(prefix="repair-agent-envsetup-") as tmp:
        where = tree
        if key and inst.environment_setup_commit:
            try:
                export_tree(repo, inst.environment_setup_commit, Path(tmp) / "tree")
                where = Path(tmp) / "tree"
            except InstanceError as exc:
                log(f"{inst.instance_id}: environment_setup_commit not used ({exc}); detecting on its own tree")
        section = detect_environment(option, where, check, log)  # built later, for each instance's tree
    if key:
        shared[key] = section
    return section


def write_instance(inst: SwebenchInstance, repos_dir: Path, out: Path, *, writable: tuple[str, ...],
                   max_steps: int, raw: dict, environment: str = "none",
                   shared: dict[tuple[str, str], EnvironmentSection | None] | None = None,
                   check: CheckPlace | None = None,
                   hidden_tests: bool = False, log: Callable[[str], None] = lambda m: None) -> tuple[Path, int]:
    """The instance as a scenario in OUT/rejected/ (moved to OUT once the corpus check passes it), and
    the number of held-out cases derived for it. `hidden_tests`: test_patch is held back from the
    chooser, applied only in the verifier's checks."""
    name = scenario_name(inst.instance_id)
    clone = find_clone(repos_dir, inst.repo)
    try:
        repo = git.Repo(clone)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise InstanceError(f"{clone} is not a git repository: {exc}") from None
    test_files = patch_paths(inst.test_patch, "test_patch")
    patch_paths(inst.patch, "gold patch")  # a gold patch that is not a diff is refused here, not later
    tree = fresh_data_dir(out, name, inst.repo.split("/", 1)[1])
    sha = export_tree(repo, inst.base_commit, tree)
    heldout, hidden = tree.parent / f"{name}.heldout.toml", tree.parent / "hidden.tests.diff"
    with tempfile.TemporaryDirectory(prefix="repair-agent-swebench-") as tmp:
        with_tests = Path(tmp) / "with_tests" if hidden_tests else tree
        if hidden_tests:
            copy_tree(tree, with_tests)
            hidden.write_text(inst.test_patch if inst.test_patch.endswith("\n") else inst.test_patch + "\n",
                              encoding="utf-8")
        apply_patch_text(with_tests, inst.test_patch, "test_patch")
        section = instance_environment(inst, repo, with_tests, name, option=environment,
                                       shared={} if shared is None else shared, check=check or local_check(), log=log)
        cases, per_test_s = _derived(with_tests, Path(tmp) / "fixed", inst, check or local_check(), section,
                                     name, heldout, log)
        if hidden_tests:  # the workspace's tree gets what the install generates too (a version file)
            try:
                environment_check(check or local_check(), section, tree, name, log)
            except InstanceError:
                pass  # no image: _derived said nothing either, and the corpus check will say why
    # The files the test patch touches and the modules the named tests live in: never writable.
    tested = [n.split("::")[0] for n in inst.FAIL_TO_PASS + inst.PASS_TO_PASS]
    protected = list(dict.fromkeys(test_files + tested))
    f2p = inst.FAIL_TO_PASS
    top = {"description": f"{inst.repo} at {sha[:12]} ({inst.instance_id})", "kind": "swebench",
           "tags": ["swebench", f"repo:{inst.repo}"],
           "heldout": f"../data/{name}/{heldout.name}" if cases else None,
           "hidden_tests": f"../data/{name}/{hidden.name}" if hidden_tests else None}
    sections: dict[str, dict] = {
        "goal": {"text": inst.problem_statement.strip(),
                 "failure_signature": f"failing: {', '.join(f2p[:3])}" + (" ..." if len(f2p) > 3 else "")},
        "acceptance": {"target_tests": f2p, "pass_to_pass": inst.PASS_TO_PASS, "writable": list(writable),
                       "protected": protected, "test_timeout_s": SUITE_TIMEOUT_S,
                       **({"per_test_timeout_s": per_test_s} if per_test_s else {})},
        "budget": {"max_steps": max_steps, "deadline_s": 900.0},
        **environment_sections(section),
    }
    return write_scenario(out, name, tree=tree, top=top, sections=sections, reference_fix=inst.patch,
                          source={"format": "swebench", "instance": raw, "clone": str(clone), "base_commit": sha},
                          comment=f"Imported from a SWE-bench-style instance: {inst.instance_id}\n"
                                  f"buggy tree = {inst.repo} at {sha} + test_patch"
                                  + (" (hidden: only the verifier applies it)" if hidden_tests else "")
                                  + "; reference fix = the gold patch"), cases


def _derived(tested: Path, fixed: Path, inst: SwebenchInstance, check: CheckPlace, section: EnvironmentSection | None,
             name: str, dest: Path, log: Callable[[str], None]) -> tuple[int, float | None]:
    """Held-out cases from FAIL_TO_PASS's literal calls (derived.py), answered in the instance's
    environment, and the per-test limit FAIL_TO_PASS's timings with the gold patch call for
    (commit.per_test_limit); none when the gold patch does not apply (the corpus check then says
    so), the environment cannot be built, or the reference's answers cannot be read."""
    try:
        env_check = environment_check(check, section, tested, name, log)
        copy_tree(tested, fixed)
        apply_patch_text(fixed, inst.patch, "gold patch")
        files = sorted({n.split("::")[0] for n in inst.FAIL_TO_PASS})
        per_test = per_test_limit(run_tests(fixed, files, env_check))
        return derive_heldout(fixed, tested, inst.FAIL_TO_PASS, inst.patch, env_check, dest), per_test
    except InstanceError:
        return 0, None


def import_swebench(jsonl: Path, repos_dir: Path, out: Path, *, check: CheckPlace, writable: tuple[str, ...] = ("**",),
                    max_steps: int = 12, workers: int = 1, environment: str = "declared", hidden_tests: bool = False,
                    log: Callable[[str], None] = lambda m: None) -> list[ImportResult]:
    """Every line of `jsonl` imported and checked, in order; a bad line is a skipped entry, never an abort.
    `check`: where the imports' code and the corpus check run. `environment`: see
    sandbox.detect.environment_option; instances of one repo and version share one."""
    used = USED + (ENVIRONMENT_FIELDS if environment != "none" else ())
    shared: dict[tuple[str, str], EnvironmentSection | None] = {}
    out.mkdir(parents=True, exist_ok=True)
    results: list[ImportResult] = []
    written: list[Written] = []
    seen: set[str] = set()
    for number, line in enumerate(Path(jsonl).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            results.append(ImportResult(instance_id=f"line-{number}", status="skipped", line=number,
                                        reason=f"not JSON: {exc}", problems=[line[:300]]))
            continue
        instance_id = str(raw.get("instance_id") or f"line-{number}") if isinstance(raw, dict) else f"line-{number}"
        try:
            inst = SwebenchInstance.model_validate(raw)
        except ValidationError as exc:
            fields = "; ".join(f"field '{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors())
            results.append(ImportResult(instance_id=instance_id, status="skipped", line=number,
                                        reason=f"not a SWE-bench instance: {fields}"[:600]))
            continue
        result = ImportResult(instance_id=inst.instance_id, status="skipped", line=number,
                              ignored_fields=sorted(k for k in raw if k not in used),
                              target_tests=inst.FAIL_TO_PASS, pass_to_pass=len(inst.PASS_TO_PASS))
        results.append(result)
        try:
            name = scenario_name(inst.instance_id)
            result.scenario = name
            if name in seen:
                raise InstanceError(f"a second instance named {name!r} (instance ids must be unique)")
            seen.add(name)
            log(f"writing {inst.instance_id} -> {name}")
            manifest, result.heldout_cases = write_instance(
                inst, Path(repos_dir), out, writable=writable, max_steps=max_steps, raw=raw, environment=environment,
                shared=shared, check=check, hidden_tests=hidden_tests, log=log)
        except InstanceError as exc:
            result.reason = str(exc)
            continue
        except (git.GitCommandError, OSError) as exc:  # the clone or the disk: a line of the table, not a traceback
            result.reason = f"cannot be read: {exc}"[:600]
            continue
        written.append(Written(result=result, manifest=manifest))
    validate(out, written, workers=workers, log=log, check=check)
    return results

