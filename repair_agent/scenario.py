"""Scenarios: a pristine repository + a goal + an acceptance spec, declared in a small TOML manifest."""
from __future__ import annotations

import os
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from verifier.spec import AcceptanceSpec

from .state import Budget

BUILTIN_DIR = Path(__file__).resolve().parents[1] / "sandbox_repos"
SCENARIO_PATH_ENV = "REPAIR_AGENT_SCENARIO_PATH"
SUFFIX = ".scenario.toml"


class ManifestError(ValueError):
    """A scenario manifest that cannot be used; the message names the file and the field."""


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

    @field_validator("target_tests")
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


class BudgetSection(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_steps: int = Field(8, ge=1, le=1000)
    reserved_final_steps: int = Field(0, ge=0)
    deadline_s: float = Field(900.0, gt=0)


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    description: str = ""
    repo: str
    oracle: str | None = None
    goal: GoalSpec
    acceptance: AcceptanceSection
    budget: BudgetSection = BudgetSection()
    baseline: BaselineRecipe | None = None


class Scenario(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    description: str
    manifest_path: Path
    repo: Path
    oracle: Path | None
    goal: GoalSpec
    spec: AcceptanceSpec
    budget: Budget
    baseline: BaselineRecipe | None = None

    def summary(self) -> dict:
        return {"name": self.name, "repo": str(self.repo), "goal": self.goal.text,
                "failure_signature": self.goal.failure_signature, "manifest": str(self.manifest_path),
                "target_tests": list(self.spec.target_tests), "max_steps": self.budget.max_steps}


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
    repo = (path.parent / m.repo).resolve()
    if not repo.is_dir():
        raise ManifestError(f"{path}: field 'repo': {repo} is not a directory")
    oracle = (path.parent / m.oracle).resolve() if m.oracle else None
    if oracle and not oracle.is_file():
        raise ManifestError(f"{path}: field 'oracle': {oracle} is not a file")
    if m.budget.reserved_final_steps >= m.budget.max_steps:
        raise ManifestError(f"{path}: field 'budget.reserved_final_steps' must be below budget.max_steps")
    spec = AcceptanceSpec(scenario=m.name, target_tests=tuple(m.acceptance.target_tests),
                          writable=tuple(m.acceptance.writable), protected=tuple(m.acceptance.protected),
                          oracle=str(oracle) if oracle else None, test_timeout_s=m.acceptance.test_timeout_s)
    return Scenario(name=m.name, description=m.description, manifest_path=path.resolve(), repo=repo,
                    oracle=oracle, goal=m.goal, spec=spec,
                    budget=Budget(max_steps=m.budget.max_steps, reserved_final_steps=m.budget.reserved_final_steps,
                                  deadline_s=m.budget.deadline_s),
                    baseline=m.baseline)


def scenario_dirs(extra: list[Path] | None = None) -> list[Path]:
    dirs = [BUILTIN_DIR]
    dirs += [Path(p) for p in os.environ.get(SCENARIO_PATH_ENV, "").split(os.pathsep) if p]
    return dirs + list(extra or [])


def discover(extra: list[Path] | None = None) -> tuple[dict[str, Scenario], list[ManifestError]]:
    """Every usable scenario, and the errors of the manifests that are not: one broken manifest
    must not hide the others."""
    found: dict[str, Scenario] = {}
    errors: list[ManifestError] = []
    for directory in scenario_dirs(extra):
        for manifest in sorted(Path(directory).glob(f"*{SUFFIX}")):
            try:
                scenario = load_manifest(manifest)
            except ManifestError as exc:
                errors.append(exc)
                continue
            found.setdefault(scenario.name, scenario)
    return found, errors


def resolve(name_or_path: str, extra: list[Path] | None = None) -> Scenario:
    """A scenario by name, or by the path of its manifest."""
    candidate = Path(name_or_path)
    if candidate.suffix == ".toml" or candidate.is_file():
        return load_manifest(candidate)
    scenarios, errors = discover(extra)
    if name_or_path not in scenarios:
        broken = "".join(f"\n  unusable manifest: {e}" for e in errors)
        raise ManifestError(f"unknown scenario {name_or_path!r}; known: {', '.join(sorted(scenarios)) or 'none'}{broken}")
    return scenarios[name_or_path]
