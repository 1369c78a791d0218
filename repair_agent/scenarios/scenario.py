"""Scenarios: a pristine repository + a goal + an acceptance spec, declared in a small TOML manifest."""
from __future__ import annotations

import hashlib
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from verifier.heldout import HeldoutError, HeldoutSpec
from verifier.spec import AcceptanceSpec
from verifier.trees import copy_tree, tree_sha256

from ..resources import CACHE_ENV, build_once, cache_root  # noqa: F401 (CACHE_ENV: where callers look)
from .scenario_files import BUILTIN_DIR, SCENARIO_PATH_ENV, SUFFIX, manifests_named, scenario_dirs  # noqa: F401
from ..sandbox.environment import EnvironmentSection
from .sources import SourceError, SourceSection, fetch_source
from ..loop.state import Budget, BudgetLimits

# What a scenario's right outcome is: most must be repairable; some are not, inside the
# writable scope, and then the honest ending is a handoff, not a forced green.
Expected = Literal["awaiting_release_confirmation", "handoff_requested"]
IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".git"}


class ManifestError(ValueError):
    """A scenario manifest that cannot be used; the message names the file and the field."""

    manifest: Path | None = None  # set by discover(): which file it was


class GoalSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)
    failure_signature: str = Field(min_length=1)


class AcceptanceSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target_tests: list[str] = Field(min_length=1)
    writable: list[str] = Field(default=["src/**"], min_length=1)
    protected: list[str] = []
    test_timeout_s: float = Field(120.0, gt=0, le=3600)
    per_test_timeout_s: float = Field(60.0, ge=0, le=3600)
    # Given: the suite condition is "these tests pass" (targets + these run); empty: the whole suite.
    pass_to_pass: list[str] = []
    # Tests that fail on the buggy tree for reasons other than the bug (the environment, a Python
    # version): named as the corpus check names them (`pkg.tests.test_x::test_y`, `::pkg.tests.test_x`
    # for a module that cannot be collected). They may stay failing; an importer writes them.
    known_failing: list[str] = []

    @field_validator("target_tests", "pass_to_pass")
    @classmethod
    def _node_ids(cls, value: list[str]) -> list[str]:
        for nodeid in value:
            if "::" not in nodeid or nodeid.startswith(("/", "-")) or ".." in nodeid.split("::")[0]:
                raise ValueError(f"{nodeid!r} is not a pytest node id like tests/test_x.py::test_y")
        return value


class BaselineRecipe(BaseModel):
    """What the deterministic baseline chooser does for this scenario: find a line, replace text in it."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    search: str = Field(min_length=1)
    replace: str
    path_glob: str | None = "src/**"


class BudgetSection(BudgetLimits):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    description: str = ""
    # The pristine repository: a directory next to the manifest, or a fetched and verified
    # `[source]` (a PyPI sdist or a git commit; see sources.py). Exactly one of the two.
    repo: str | None = None
    source: SourceSection | None = None
    # What the project needs to run its tests (see sandbox/environment.py); none: the sandbox image.
    environment: EnvironmentSection | None = None
    # A unified diff applied to the pristine `repo` to make this scenario's buggy tree, so one
    # repository serves many scenarios. The tree is built once into a content-addressed cache.
    bug_patch: str | None = None
    # A unified diff of test changes held back from the chooser (SWE-bench's protocol): the workspace
    # is `repo` (after bug_patch) without them; the verifier judges `repo` + this diff, so the targets
    # may name tests the chooser cannot see. Its files should be protected (the importers do so).
    hidden_tests: str | None = None
    # The known-good fix, relative to the manifest. Only the corpus check reads it: it is never
    # copied into a workspace, mounted, or shown to a chooser.
    reference_fix: str | None = None
    kind: str = Field("unspecified", pattern=r"^[a-z0-9][a-z0-9-]*$")
    tags: list[str] = []
    expected: Expected = "awaiting_release_confirmation"
    # Held-out behaviour checks (NAME.heldout.toml): inputs and expected values the chooser never
    # sees; the verifier runs the inputs after the tests and compares on the host.
    heldout: str | None = None
    goal: GoalSpec
    acceptance: AcceptanceSection
    budget: BudgetSection = BudgetSection()
    baseline: BaselineRecipe | None = None

    @model_validator(mode="after")
    def _one_repo(self) -> "Manifest":
        if (self.repo is None) == (self.source is None):
            raise ValueError("give exactly one of repo (a directory) or [source]")
        return self


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    description: str
    manifest_path: Path
    repo: Path
    heldout: Path | None
    goal: GoalSpec
    spec: AcceptanceSpec
    budget: Budget
    baseline: BaselineRecipe | None = None
    source_repo: Path | None = None      # the pristine repository `repo` was built from
    bug_patch: Path | None = None
    reference_fix: Path | None = None
    kind: str = "unspecified"
    tags: tuple[str, ...] = ()
    expected: Expected = "awaiting_release_confirmation"
    source: SourceSection | None = None
    environment: EnvironmentSection | None = None
    hidden_tests: Path | None = None
    # With hidden tests: the tree the chooser works in (`repo` without them); `repo` is the verifier's.
    visible_repo: Path | None = None
    known_failing: tuple[str, ...] = ()

    @property
    def workspace_tree(self) -> Path:
        """What a workspace (and a release clone) is made from: never the hidden tests."""
        return self.visible_repo or self.repo

    def verifier_inputs(self) -> dict:
        """What every Verifier of this scenario is built with besides where it runs: its held-out
        checks, its reference fix (the answers generated inputs are compared with) and the
        repository's name (the checks place the tree at an ordinary path ending in it)."""
        # Bytes, not text: a fix for a CRLF tree must keep its carriage returns to apply.
        reference = self.reference_fix.read_bytes().decode("utf-8", errors="surrogateescape") \
            if self.reference_fix is not None and self.reference_fix.is_file() else None
        return {"heldout": self.heldout, "reference_diff": reference, "repo_name": (self.source_repo or self.repo).name}

    def summary(self) -> dict:
        return {"name": self.name, "repo": str(self.repo), "repo_name": (self.source_repo or self.repo).name,
                "goal": self.goal.text, "failure_signature": self.goal.failure_signature,
                "manifest": str(self.manifest_path), "kind": self.kind, "tags": list(self.tags),
                "expected": self.expected, "target_tests": list(self.spec.target_tests),
                "writable": list(self.spec.writable), "max_steps": self.budget.max_steps,
                "has_reference_fix": self.reference_fix is not None, "has_heldout": self.heldout is not None,
                "hidden_tests": self.hidden_tests is not None,
                "source": self.source.describe() if self.source else None,
                "environment": self.environment.model_dump(mode="json") if self.environment else None}


def load_manifest(path: Path) -> Scenario:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ManifestError(f"{path}: no such manifest file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: not valid TOML: {exc}") from None
    try:
        m = Manifest.model_validate(raw)
    except ValidationError as exc:
        fields = "; ".join(f"field '{'.'.join(map(str, e['loc']))}': {e['msg']}" for e in exc.errors())
        raise ManifestError(f"{path}: {fields}") from None
    if m.source is not None:
        try:
            repo = fetch_source(m.source, path.parent, cache_root())
        except SourceError as exc:
            raise ManifestError(f"{path}: field 'source': {exc}") from None
    else:
        repo = (path.parent / (m.repo or "")).resolve()
        if not repo.is_dir():
            raise ManifestError(f"{path}: field 'repo': {repo} is not a directory")
    heldout = (path.parent / m.heldout).resolve() if m.heldout else None
    if heldout:
        try:
            HeldoutSpec.load(heldout)
        except HeldoutError as exc:
            raise ManifestError(f"{path}: field 'heldout': {exc}") from None
    extras = {}
    for field in ("bug_patch", "reference_fix", "hidden_tests"):
        value = getattr(m, field)
        extras[field] = (path.parent / value).resolve() if value else None
        if extras[field] and not extras[field].is_file():
            raise ManifestError(f"{path}: field '{field}': {extras[field]} is not a file")
    source_repo = repo
    if extras["bug_patch"]:
        try:
            repo = materialize(source_repo, extras["bug_patch"])
        except ValueError as exc:
            raise ManifestError(f"{path}: field 'bug_patch': {exc}") from None
    visible = None
    if extras["hidden_tests"]:
        try:
            visible, repo = repo, materialize(repo, extras["hidden_tests"])
        except ValueError as exc:
            raise ManifestError(f"{path}: field 'hidden_tests': {exc}") from None
    if m.budget.reserved_final_steps >= m.budget.max_steps:
        raise ManifestError(f"{path}: field 'budget.reserved_final_steps' must be below budget.max_steps")
    spec = AcceptanceSpec(scenario=m.name, target_tests=tuple(m.acceptance.target_tests),
                          writable=tuple(m.acceptance.writable), protected=tuple(m.acceptance.protected),
                          test_timeout_s=m.acceptance.test_timeout_s,
                          per_test_timeout_s=m.acceptance.per_test_timeout_s,
                          pass_to_pass=tuple(m.acceptance.pass_to_pass))
    return Scenario(name=m.name, description=m.description, manifest_path=path.resolve(), repo=repo,
                    heldout=heldout, goal=m.goal, spec=spec,
                    budget=Budget(**m.budget.model_dump()),
                    baseline=m.baseline, source_repo=source_repo, kind=m.kind, tags=tuple(m.tags),
                    expected=m.expected, source=m.source, environment=m.environment, visible_repo=visible,
                    known_failing=tuple(m.acceptance.known_failing), **extras)


def tree_digest(root: Path) -> str:
    """The tree's identity, by the verifier's one tree hash (caches and .git excluded)."""
    return tree_sha256(root)


def apply_patch_to_tree(tree: Path, patch: Path) -> None:
    # GIT_CEILING_DIRECTORIES: apply to this tree only, never to an enclosing repository.
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tree.parent)}
    proc = subprocess.run(["git", "apply", "--whitespace=nowarn", str(patch)], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=60)
    if proc.returncode:
        raise ValueError(f"{patch.name} does not apply to {tree.name}: {proc.stderr.strip()[:500]}")


def materialize(source: Path, bug_patch: Path) -> Path:
    """The pristine repository with the bug patch applied, built once per content hash.

    Concurrent loaders race safely: each builds in a private temp dir and renames it into
    place; the loser (rename onto a non-empty directory fails) discards its copy."""
    key = hashlib.sha256(f"{tree_digest(source)}\0{hashlib.sha256(bug_patch.read_bytes()).hexdigest()}"
                         .encode()).hexdigest()[:16]
    target = cache_root() / "trees" / f"{source.name}-{key}"

    def build(tree: Path) -> None:
        copy_tree(source, tree, ignore=tuple(IGNORED_PARTS))
        apply_patch_to_tree(tree, bug_patch)

    return build_once(target, build)


def discover(extra: list[Path] | None = None) -> tuple[dict[str, Scenario], list[ManifestError]]:
    """Every usable scenario, and the errors of the manifests that are not: one broken manifest
    must not hide the others."""
    found: dict[str, Scenario] = {}
    errors: list[ManifestError] = []
    for directory in scenario_dirs(extra):
        if not Path(directory).is_dir():  # a mistyped directory must not look like an empty one
            errors.append(ManifestError(f"{directory}: no such scenario directory"))
            continue
        for manifest in sorted(Path(directory).glob(f"*{SUFFIX}")):
            try:
                scenario = load_manifest(manifest)
            except ManifestError as exc:
                exc.manifest = manifest
                errors.append(exc)
                continue
            found.setdefault(scenario.name, scenario)
    return found, errors


def resolve(name_or_path: str, extra: list[Path] | None = None) -> Scenario:
    """A scenario by name, or by the path of its manifest."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.is_file():
        return load_manifest(candidate)
    # The scenario discover() would pick (the first usable manifest of that name, in its order),
    # without validating every other manifest (or fetching their sources) first.
    for manifest, _ in manifests_named(name_or_path, extra):
        try:
            return load_manifest(manifest)
        except ManifestError:
            continue
    scenarios, errors = discover(extra)
    if name_or_path not in scenarios:
        broken = "".join(f"\n  unusable manifest: {e}" for e in errors)
        raise ManifestError(f"unknown scenario {name_or_path!r}; known: {', '.join(sorted(scenarios)) or 'none'}{broken}")
    return scenarios[name_or_path]


def select(names: list[str], scenarios_dirs: list[Path], *, log=lambda message: None) -> list[Scenario]:
    """What an author's script checks: the named scenarios, or, with no names, every scenario with a
    held-out file (only those of `scenarios_dirs` when some are given). Raises ManifestError."""
    if names:
        return [resolve(name, scenarios_dirs) for name in names]
    found, errors = discover(scenarios_dirs)
    if scenarios_dirs:
        roots = {d.resolve() for d in scenarios_dirs}
        found = {n: s for n, s in found.items() if s.manifest_path.parent in roots}
    for error in errors:
        log(f"unusable manifest: {error}")
    return [s for _, s in sorted(found.items()) if s.heldout is not None]
