"""What every importer shares: exporting a commit's tree (no history), applying a patch, writing a
manifest, validating each written scenario with the corpus check, and the summary.

Layout of an import directory OUT:
    OUT/NAME.scenario.toml          usable scenarios (passed the corpus check): --scenarios-dir OUT
    OUT/rejected/NAME.scenario.toml written, but refused by the check or the import (kept to inspect)
    OUT/data/NAME/REPO/             the buggy tree (files only: no .git, so no fix in its history)
    OUT/data/NAME/reference.fix.diff  the known fix; only the corpus check reads it
    OUT/data/NAME/source.json       the raw input this scenario came from
    OUT/import.json                 the summary: one entry per instance, usable or skipped and why
"""
from __future__ import annotations

import dataclasses
import io
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

import git
import tomli_w
from pydantic import BaseModel
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from verifier.isolation import HardenedContainer, LocalRunner
from verifier.spec import nodeid_to_junit_key
from verifier.trees import TreeRefused, extract_tar

from ..scenarios.corpus import CorpusCheck, check_corpus
from ..untrusted.hostgit import run_git
from ..sandbox.backends import Backend, backend_named
from ..sandbox.environment import EnvironmentSection
from ..scenarios.scenario import SUFFIX, ManifestError, Scenario, apply_patch_to_tree, load_manifest


OUT_DIR = "/import-out"  # the small writable directory of an import's container


class InstanceError(ValueError):
    """One instance cannot be imported; the message says why (the others go on)."""


class ImportResult(BaseModel):
    """One instance's outcome: usable (its manifest is in OUT) or skipped, and why."""

    instance_id: str
    scenario: str | None = None
    status: Literal["usable", "skipped"]
    reason: str = ""
    problems: list[str] = []
    manifest: str | None = None
    line: int | None = None                 # the JSONL line it came from
    ignored_fields: list[str] = []          # input fields kept in source.json but not used
    target_tests: list[str] = []
    pass_to_pass: int = 0
    heldout_cases: int = 0                  # held-out cases derived from the fix's tests (derived.py)
    known_failing: list[str] = []           # fail on the buggy tree and with the fix: not the bug's


def scenario_name(instance_id: str) -> str:
    """A manifest name from an instance id: lower case, anything but [a-z0-9_.-] becomes '-'."""
    name = re.sub(r"[^a-z0-9_.-]+", "-", instance_id.lower()).strip("-._")
    if not name:
        raise InstanceError(f"instance id {instance_id!r} gives no usable scenario name")
    return name


def repo_path(repo: git.Repo) -> Path:
    return Path(repo.working_tree_dir or repo.git_dir)


def export_tree(repo: git.Repo, rev: str, dest: Path) -> str:
    """The files of `rev` into `dest` (git archive: no .git, no history); returns the full sha.
    Through hostgit: the repository's filter drivers (archive smudges) run nothing."""
    sha = resolve_commit(repo, rev)
    proc = run_git(["archive", "--format=tar", sha], repo_path(repo), timeout=600)
    if proc.returncode:
        raise InstanceError(f"git archive {sha[:12]} failed: {proc.stderr.decode(errors='replace')[-500:]}")
    data = io.BytesIO(proc.stdout)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        extract_tar(None, dest, fileobj=data)  # no escaping member, no link out, no special file, bounded
    except TreeRefused as exc:
        raise InstanceError(f"the tree of {sha[:12]} is refused: {exc}") from None
    return sha


def resolve_commit(repo: git.Repo, rev: str) -> str:
    """The full sha of a commit that is really in the repository (its object present)."""
    proc = run_git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], repo_path(repo))
    if proc.returncode:
        raise InstanceError(f"no commit {rev!r} in {repo.working_dir}")
    return proc.stdout.decode().strip()


def apply_patch_text(tree: Path, text: str, what: str) -> None:
    """Apply a unified diff given as text to a tree (git apply, this tree only)."""
    if not text.strip():
        return
    with tempfile.NamedTemporaryFile("w", suffix=".diff", delete=False, encoding="utf-8") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    try:
        apply_patch_to_tree(tree, Path(f.name))
    except ValueError as exc:
        raise InstanceError(f"the {what} does not apply: {str(exc)[-400:]}") from None
    finally:
        Path(f.name).unlink(missing_ok=True)


def patch_paths(text: str, what: str) -> list[str]:
    """Every repository path a unified diff touches (sources and targets, /dev/null left out)."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise InstanceError(f"the {what} is not a unified diff: {exc}") from None
    paths: list[str] = []
    for f in patch:
        for p in (f.source_file, f.target_file):
            if p and p != "/dev/null":
                paths.append(p[2:] if p.startswith(("a/", "b/")) else p)
    return list(dict.fromkeys(paths))


def toml_document(data: dict[str, Any], comment: str = "") -> str:
    """`data` as a TOML document (written by tomli_w; keys holding None left out), after `comment`
    as `#` lines: the one writer of the manifests and held-out files the importers and the mutant
    generator write."""
    head = "".join(f"# {line}\n" for line in comment.splitlines())
    return head + tomli_w.dumps(_without_none(data))


def _without_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _without_none(v) if isinstance(v, dict) else v for k, v in data.items() if v is not None}


def manifest_text(top: dict, sections: dict[str, dict], comment: str = "") -> str:
    return toml_document({**top, **sections}, comment)


@dataclass
class Written:
    """A scenario written into OUT/rejected/ (where it stays until the corpus check passes it)."""

    result: ImportResult  # updated in place by validate()
    manifest: Path


def write_scenario(out: Path, name: str, *, tree: Path, top: dict, sections: dict[str, dict], reference_fix: str,
                   source: dict, comment: str) -> Path:
    """The manifest (in OUT/rejected/ until validated), the reference fix and the raw source.
    The buggy tree must already be in `tree` (OUT/data/NAME/REPO, from fresh_data_dir)."""
    data = out / "data" / name
    (data / "reference.fix.diff").write_text(reference_fix if reference_fix.endswith("\n") else reference_fix + "\n",
                                             encoding="utf-8")
    (data / "source.json").write_text(json.dumps(source, indent=1, ensure_ascii=False), encoding="utf-8")
    manifest = out / "rejected" / f"{name}{SUFFIX}"
    manifest.parent.mkdir(parents=True, exist_ok=True)
    # Paths relative to the manifest: the same text is valid in OUT/ and in OUT/rejected/ because
    # both point through OUT/data (see _repoint).
    body = {"name": name, **top, "repo": f"../data/{name}/{tree.name}",
            "reference_fix": f"../data/{name}/reference.fix.diff"}
    manifest.write_text(manifest_text(body, sections, comment), encoding="utf-8")
    return manifest


def fresh_data_dir(out: Path, name: str, repo_name: str) -> Path:
    """OUT/data/NAME/REPO_NAME, empty (an earlier import of the same instance is replaced)."""
    data = out / "data" / name
    shutil.rmtree(data, ignore_errors=True)
    for stale in (out / f"{name}{SUFFIX}", out / "rejected" / f"{name}{SUFFIX}"):
        stale.unlink(missing_ok=True)
    tree = data / (re.sub(r"[^A-Za-z0-9_.-]+", "-", repo_name).strip(".") or "repo")
    tree.mkdir(parents=True)
    return tree


def _repoint(text: str, name: str) -> str:
    """A manifest of OUT/rejected/ made valid in OUT/: its paths into OUT/data lose one '../'."""
    return text.replace(f'"../data/{name}/', f'"data/{name}/')


def validate(out: Path, written: list[Written], *, check: CheckPlace, workers: int = 1,
             log: Callable[[str], None] = lambda m: None) -> list[ImportResult]:
    """The corpus check on every written scenario; those that pass move from OUT/rejected/ to OUT/."""
    loaded: list[tuple[Written, Scenario]] = []
    for w in written:
        try:
            loaded.append((w, load_manifest(w.manifest)))
        except ManifestError as exc:
            w.result.status, w.result.reason = "skipped", f"manifest: {exc}"
    checks: dict[str, CorpusCheck] = {}

    def progress(c: CorpusCheck) -> None:
        checks[c.scenario] = c
        log(f"checked {c.scenario}: {'usable' if c.ok else 'skipped'} ({c.wall_s:.1f}s)")

    with tempfile.TemporaryDirectory(prefix="repair-agent-import-") as state:
        check_corpus([s for _, s in loaded], Path(state), workers=workers, on_result=progress,
                     **check.corpus_check())
    for w, scenario in loaded:
        c = checks[scenario.name]
        w.result.problems = c.problems
        if not c.ok and _only_known_failures(c, scenario):
            # Tests that fail on the buggy tree and still fail with the real fix fail for reasons
            # outside the bug (SWE-bench judges neither): the manifest names them, the check passes.
            known = sorted({*c.known_failing, *(f"::{path}" for path in c.uncollectable)})
            _declare_known_failing(w.manifest, known)
            w.result.known_failing = known
            log(f"{scenario.name}: usable after all: {len(known)} test(s) fail on the buggy tree and with the real fix "
                "too (known failures, named in the manifest)")
            c = c.model_copy(update={"ok": True})
        if c.ok:
            usable = out / w.manifest.name
            usable.write_text(_repoint(w.manifest.read_text(encoding="utf-8"), scenario.name), encoding="utf-8")
            w.manifest.unlink()
            w.result.status, w.result.manifest = "usable", str(usable)
        else:
            w.result.status, w.result.reason = "skipped", _why(c)
            w.result.manifest = str(w.manifest)
    return [w.result for w in written]


def _only_known_failures(c: CorpusCheck, scenario: Scenario) -> bool:
    """Refused only because other tests fail (or modules cannot be collected) on the buggy tree: it
    fails exactly the targets, the reference fix passes the whole-suite rule (each test that passed
    still passes) and lies in scope; with those settled, other failures are all the check can have
    found. Only under the whole-suite rule: a pass-to-pass list names what must pass."""
    return (not scenario.spec.pass_to_pass and c.reference_fix_ok is True and c.scope_ok is True
            and sorted(c.target_failures) == sorted(nodeid_to_junit_key(t) for t in scenario.spec.target_tests)
            and bool(c.known_failing or c.uncollectable))


def _declare_known_failing(manifest: Path, known: list[str]) -> None:
    text = manifest.read_text(encoding="utf-8")
    # Inserted, not rewritten: the manifest's comments stay.
    line = toml_document({"known_failing": known})
    manifest.write_text(text.replace("[acceptance]\n", "[acceptance]\n" + line, 1), encoding="utf-8")


def _why(c: CorpusCheck) -> str:
    """The corpus check's verdict in the words an importer's user needs."""
    text = "; ".join(c.problems)
    cause = re.search(r"collection error: ([^;\]]+)", text)
    if cause:  # pytest's own words for why a file could not be imported (a missing dependency, ...)
        said = cause.group(1).strip()
        return "collection error: " + (said[:-1] if said.count(")") > said.count("(") else said)
    if "already pass" in text:
        return "a FAIL_TO_PASS test already passes on the buggy tree"
    if c.buggy_tree_ok is False:
        return "the buggy tree does not fail exactly the targets: " + _first(c.problems, ("the buggy tree fails",
                                                                                       "tests other than"))
    if c.reference_fix_ok is False:
        return ("the reference (gold) patch does not make the targets and the suite pass: "
                + _first(c.problems, ("reference fix",)))
    if c.scope_ok is False:
        return "the reference (gold) patch edits files outside the writable scope (or protected ones)"
    return "the corpus check refused it: " + _first(c.problems, ("prepare",))


def _first(problems: list[str], starts: tuple[str, ...]) -> str:
    """The first problem that starts so, on one line, short."""
    said = next((p for p in problems if p.startswith(starts)), problems[0] if problems else "")
    said = " ".join(said.split())
    return said if len(said) <= 300 else said[:297] + "..."


def save_summary(out: Path, results: list[ImportResult], **extra) -> Path:
    path = out / "import.json"
    path.write_text(json.dumps({**extra, "usable": sum(r.status == "usable" for r in results),
                                "skipped": sum(r.status == "skipped" for r in results),
                                "results": [r.model_dump() for r in results]}, indent=1), encoding="utf-8")
    return path


def render_summary(results: list[ImportResult]) -> str:
    width = max([20, *(len(r.instance_id) for r in results)])
    rows = [f"{'instance':<{width}}  {'status':<7}  {'targets':>7}  {'p2p':>4}  reason"]
    for r in results:
        rows.append(f"{r.instance_id:<{width}}  {r.status:<7}  {len(r.target_tests):>7}  {r.pass_to_pass:>4}  "
                    f"{r.reason or '-'}")
    usable = sum(r.status == "usable" for r in results)
    rows.append(f"{usable}/{len(results)} instance(s) usable")
    for r in results:
        if r.status == "skipped" and r.problems:
            rows += [f"\n{r.instance_id}:"] + [f"  - {p[:400]}" for p in r.problems]
    return "\n".join(rows)


@dataclass(frozen=True)
class CheckPlace:
    """Where an import runs a tree's code (its tests, the held-out probe) and the corpus check its
    checks: a sandbox backend, its engine and its image (the sandbox image, or an environment's)."""

    backend: Backend
    client: Any = None
    image: str | None = None

    @classmethod
    def named(cls, sandbox: str, log: Callable[[str], None] = lambda m: None) -> CheckPlace:
        """The backend called `sandbox` (BACKENDS), with its engine and the sandbox image."""
        backend = backend_named(sandbox)
        client = backend.engine()
        return cls(backend, client, backend.image(client, None, log=log))

    @property
    def python(self) -> str:
        return self.backend.python

    def runner(self, tree: Path) -> HardenedContainer | LocalRunner:
        """A fresh runner for code of `tree`, mounted read-only, with a small writable OUT_DIR where
        the backend has places of its own."""
        return self.backend.tree_runner(self.client, self.image, tree,
                                        writable={OUT_DIR: "rw,nosuid,nodev,noexec,size=16m,mode=1777"})

    def root(self, tree: Path) -> str:
        """Where the runner's code sees `tree`."""
        return self.backend.tree_root(tree)

    def corpus_check(self) -> dict[str, Any]:
        """The corpus check's arguments (corpus.check_scenario)."""
        return {"backend": self.backend, "client": self.client, "image": self.image}


def local_check() -> CheckPlace:
    """Tree code run on this host (NOT isolated): what an import without a configured place uses."""
    return CheckPlace(backend_named("local"))


def detect_environment(option: str, tree: Path, check: CheckPlace, log: Callable[[str], None]) -> EnvironmentSection | None:
    """The `--environment` of an imported tree (sandbox.detect.environment_option); nothing built."""
    from ..sandbox.detect import environment_option
    from ..sandbox.environment import EnvironmentBuildError

    try:
        return environment_option(option, tree, client=check.client, log=log)
    except EnvironmentBuildError as exc:
        raise InstanceError(f"environment: {exc}") from None


def scenario_environment(option: str, tree: Path, name: str, check: CheckPlace,
                         log: Callable[[str], None]) -> tuple[EnvironmentSection | None, CheckPlace]:
    """The `--environment` of an imported tree, and where its tests run: with images, in its
    environment image (built now, the one the corpus check and its runs then reuse)."""
    section = detect_environment(option, tree, check, log)
    return section, environment_check(check, section, tree, name, log)


def environment_check(check: CheckPlace, section: EnvironmentSection | None, tree: Path, name: str,
                      log: Callable[[str], None]) -> CheckPlace:
    """Where `tree`'s code runs in `section`'s environment: with images, its image (built now, once;
    the corpus check and the runs then reuse it), with the modules its install generates (a
    version file) written into `tree`."""
    from ..sandbox.environment import EnvironmentBuildError, add_generated

    if section is None:
        return check
    try:
        image = check.backend.environment_image(check.client, section, tree, name, log=log)
    except EnvironmentBuildError as exc:
        raise InstanceError(f"environment: {exc}") from None
    if image is None:
        return check
    add_generated(check.client, image, tree, log)
    return dataclasses.replace(check, image=image)


def environment_sections(section: EnvironmentSection | None) -> dict[str, dict]:
    """The manifest's `[environment]` table for a section (nothing for none)."""
    return {"environment": section.model_dump(mode="json", exclude_defaults=True)} if section else {}



