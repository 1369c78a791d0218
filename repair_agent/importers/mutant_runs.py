"""The projects mutants.py mutates and the host test runs that judge a mutant: the real and dev
corpora's pristine trees, their pinned packages installed once, one pytest session per check with
the mutants_trace plugin, and the Checker that keeps a mutant only when a few tests fail."""
from __future__ import annotations

from verifier.spec import glob_match

import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unidiff import PatchSet

from ..resources import cache_root, data_path
from ..scenarios.scenario import Manifest
from ..scenarios.sources import fetch_source
from .mutant_sites import Site, mutate_text

CORPORA = ("real", "dev")
# The pytest plugin each session loads. It is copied alone into the session's temporary directory,
# which goes on PYTHONPATH: none of this package's other modules can shadow a project's own.
PLUGIN = Path(__file__).with_name("mutants_trace.py")


# -- projects ----------------------------------------------------------------------------------

@dataclass
class Project:
    name: str                     # the project tag, e.g. more-itertools
    manifest: Path                # the corpus manifest its source and environment come from
    raw: dict[str, Any]           # that manifest's tables
    tree: Path                    # the pristine tree in the cache
    writable: list[str]
    protected: list[str]
    # Pristine lines the corpus's own bugs touch, by file: never mutated, so no tuning mutant is
    # one of the bugs a chooser is judged on.
    corpus_lines: dict[str, set[int]] = field(default_factory=dict)

    @property
    def layout_tags(self) -> list[str]:
        keep = ("layout:", "installed", "deps")
        return [t for t in self.raw.get("tags", []) if t.startswith(keep)]

    @property
    def version(self) -> str:
        return self.raw["source"]["pypi"].split("==")[1]


def corpus_projects(root: Path | None = None) -> dict[str, Project]:
    """One Project per `project:` tag of the real and dev corpora (the first manifest by name) under
    `root` (default: the scenarios that ship with the tool)."""
    root = root if root is not None else data_path("sandbox_repos")
    found: dict[str, Project] = {}
    for corpus in CORPORA:
        for path in sorted((root / corpus).glob("*.scenario.toml")):
            raw = tomllib.loads(path.read_text())
            tag = next((t.split(":", 1)[1] for t in raw.get("tags", []) if t.startswith("project:")), None)
            if tag is None or tag in found or "source" not in raw:
                continue
            m = Manifest.model_validate(raw)
            assert m.source is not None
            tree = fetch_source(m.source, path.parent, cache_root())
            found[tag] = Project(tag, path, raw, tree, list(m.acceptance.writable), list(m.acceptance.protected))
        for path in sorted((root / corpus).glob("*.scenario.toml")):
            raw = tomllib.loads(path.read_text())
            tag = next((t.split(":", 1)[1] for t in raw.get("tags", []) if t.startswith("project:")), None)
            if tag in found and raw.get("bug_patch"):
                for rel, lines in touched_lines((path.parent / raw["bug_patch"]).read_text()).items():
                    found[tag].corpus_lines.setdefault(rel, set()).update(lines)
    return found




def touched_lines(diff: str) -> dict[str, set[int]]:
    """The old-side lines a unified diff removes or inserts beside (with one line of margin)."""
    out: dict[str, set[int]] = {}
    for patched in PatchSet(diff):
        for hunk in patched:
            line = hunk.source_start
            for row in hunk:
                if row.is_removed:
                    out.setdefault(patched.path, set()).update({line - 1, line, line + 1})
                    line += 1
                elif row.is_added:
                    out.setdefault(patched.path, set()).update({line - 1, line})
                elif row.is_context:
                    line += 1
    return out


def _matches(rel: str, globs: list[str]) -> bool:
    """Read as the verifier reads a scenario's globs (`*` stops at `/`), so a mutant lands only where
    the scope check lets a fix go."""
    return glob_match(rel, globs) is not None


def source_files(project: Project) -> list[str]:
    """The writable, unprotected Python modules (tests and generated version files left out)."""
    out = []
    for path in sorted(project.tree.rglob("*.py")):
        rel = path.relative_to(project.tree).as_posix()
        parts = rel.split("/")
        if not _matches(rel, project.writable) or _matches(rel, project.protected):
            continue
        if any(p in ("tests", "testing", "test") or p.startswith("test_") for p in parts) or parts[-1] in (
                "_version.py", "version.py", "conftest.py", "__main__.py"):
            continue
        out.append(rel)
    return out


# -- the host test environment -----------------------------------------------------------------

def site_dir(project: Project) -> Path | None:
    """The manifest's pinned packages, installed once with pip into a cache directory."""
    packages = project.raw.get("environment", {}).get("packages", [])
    if not packages:
        return None
    key = hashlib.sha256("\0".join([sys.version, *packages]).encode()).hexdigest()[:16]
    target = cache_root() / "mutants" / f"site-{key}"
    if not target.is_dir():
        tmp = Path(tempfile.mkdtemp(dir=target.parent if target.parent.is_dir() else None))
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(tmp), *packages],
                       check=True)
        os.replace(tmp, target)
    return target


def test_env(project: Project, tree: Path, out: Path, trace: list[str] | None = None) -> dict[str, str]:
    env_section = project.raw.get("environment", {})
    paths = [str(out.parent)]  # where run_pytest put the plugin
    if (tree / "src").is_dir() and any(i.strip().startswith("pip install") for i in env_section.get("install", [])):
        paths.append(str(tree / "src"))  # the editable install of a src layout
    paths.append(str(tree))
    site = site_dir(project)
    if site:
        paths.append(str(site))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(env_section.get("env", {}))
    # No plugins of the host's environment: the sandbox image has pytest alone.
    env.update(PYTHONPATH=os.pathsep.join(paths), PYTHONDONTWRITEBYTECODE="1", MUTANTS_OUT=str(out),
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    if trace:
        env["MUTANTS_TRACE"] = json.dumps(trace)
    return env


def run_pytest(project: Project, tree: Path, nodeids: list[str] | None, *, trace: list[str] | None = None,
               timeout: float = 60.0, maxfail: int = 0) -> tuple[dict[str, Any] | None, float]:
    """Outcomes by node id (None: the session did not finish, or timed out) and the wall time."""
    with tempfile.TemporaryDirectory(prefix="mutants-run-") as tmp:
        out = Path(tmp) / "results.json"
        shutil.copy(PLUGIN, Path(tmp) / PLUGIN.name)
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "mutants_trace",
                "--tb=short", "-vv", "--color=no", "-W", "ignore", f"--rootdir={tree}"]
        if maxfail:
            argv.append(f"--maxfail={maxfail}")
        if nodeids is not None:
            args = Path(tmp) / "args.txt"
            args.write_text("\n".join(nodeids) + "\n")
            argv.append(f"@{args}")
        t0 = time.monotonic()
        try:
            subprocess.run(argv, cwd=tree, env=test_env(project, tree, out, trace), capture_output=True,
                           timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, time.monotonic() - t0
        wall = time.monotonic() - t0
        if not out.is_file():
            return None, wall
        return json.loads(out.read_text()), wall


@dataclass
class Pristine:
    passing: list[str]                          # tests that pass on the pristine tree, in run order
    coverage: dict[str, dict[int, list[str]]]   # file -> line -> passing tests that ran it
    wall_s: float
    imported: dict[str, list[int]]              # file -> lines run while the tests were collected


def pristine(project: Project, files: list[str]) -> Pristine:
    """The pristine suite's outcomes and per-test line coverage, cached by tree and environment."""
    key = hashlib.sha256(json.dumps([str(project.tree), project.raw.get("environment", {}), files,
                                     PLUGIN.read_text(), sys.version]).encode()).hexdigest()[:16]
    cached = cache_root() / "mutants" / f"pristine-{project.name}-{key}.json"
    if cached.is_file():
        data = json.loads(cached.read_text())
        return Pristine(data["passing"], {f: {int(k): v for k, v in lines.items()} for f, lines in
                                          data["coverage"].items()}, data["wall_s"], data["imported"])
    absolute = {str(project.tree / f): f for f in files}
    results, wall = run_pytest(project, project.tree, None, trace=list(absolute), timeout=1800)
    if results is None:
        raise RuntimeError(f"{project.name}: the pristine test suite did not finish")
    passing = [n for n, r in results.items() if r["outcome"] == "passed"]
    coverage: dict[str, dict[int, list[str]]] = {f: {} for f in files}
    for nodeid in passing:
        for filename, line in results[nodeid].get("lines", []):
            if filename in absolute:
                coverage[absolute[filename]].setdefault(line, []).append(nodeid)
    imported: dict[str, list[int]] = {f: [] for f in files}
    for filename, line in results.get("::collection", {}).get("lines", []):
        if filename in absolute:
            imported[absolute[filename]].append(line)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps({"passing": passing, "coverage": coverage, "wall_s": wall, "imported": imported}))
    return Pristine(passing, coverage, wall, imported)



_FRAME = re.compile(r"^(\S+?):(\d+): in (\S+)$")
# A test's tmp_path and an object's address (both differ from run to run) and terminal colours:
# not part of a symptom.
_TMP = re.compile(r"/tmp/pytest-of-[^/]+/pytest-\d+/|\x1b\[[0-9;]*m| at 0x[0-9a-f]+")


def symptom(nodeid: str, result: dict[str, Any]) -> tuple[str, str]:
    """(failure signature, goal sentence) from a failing test's short traceback: the test's own
    line that failed and the error it printed, never a line of the code under test."""
    text = result.get("longrepr", "")
    lines = text.splitlines()
    test_file = nodeid.split("::")[0]
    call = ""
    for i, line in enumerate(lines):
        m = _FRAME.match(line)
        if m and m.group(1) == test_file and i + 1 < len(lines):
            call = lines[i + 1].strip()
            break
    errors = [l[1:].strip() for l in lines if l.startswith("E ")]
    errors = [e for e in errors if re.search(r"\w", e) and (
        not e.startswith(("- ", "+ ", "? ", "Full diff", "Use -v", "...", "At index")) or "where" in e)]
    first = next((e for e in errors if e), "") or (result.get("crash") or "the test fails").splitlines()[0]
    signature = _TMP.sub("", first)[:300]
    detail = _TMP.sub("", "; ".join(errors[:3]))[:400] or signature
    test = nodeid.split("::", 1)[1]
    goal = (f"{test} fails: `{call[:200]}` gives {detail}" if call else f"{test} fails: {detail}")
    return signature, goal


class Checker:
    """Applies mutants to a private copy of a project's pristine tree, one at a time."""

    def __init__(self, project: Project, pristine: Pristine, max_targets: int, timeout: float):
        self.project, self.pristine, self.max_targets, self.timeout = project, pristine, max_targets, timeout
        # The cap counts test functions: the cases of one parametrized test are one symptom
        # (inflection checks each function on dozens), with a bound on the node ids as well.
        self.max_nodeids = 3 * max_targets
        self.work = Path(tempfile.mkdtemp(prefix=f"mutants-{project.name}-"))
        self.tree = self.work / project.tree.name
        shutil.copytree(project.tree, self.tree, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    def check(self, site: Site) -> tuple[list[str], dict[str, Any], float] | str:
        """(failing tests, their results, wall time) or why the mutant is dropped."""
        path = self.tree / site.file
        before = path.read_text()
        after = mutate_text(before, site)
        try:
            if ast.dump(ast.parse(after)) == ast.dump(ast.parse(before)):
                return "equivalent (same syntax tree)"
            compile(after, site.file, "exec")
        except SyntaxError:
            return "does not compile"
        selected = site.covered_by
        try:
            path.write_text(after)
            results, wall = run_pytest(self.project, self.tree, selected, timeout=self.timeout,
                                       maxfail=self.max_nodeids + 1)
        finally:
            path.write_text(before)
        if results is None:
            return "timed out or the session broke"
        failing = [n for n in selected if results.get(n, {}).get("outcome") != "passed"
                   and results.get(n, {}).get("outcome") != "skipped"]
        missing = [n for n in failing if n not in results]
        if missing and len(missing) < len(selected):
            # --maxfail stopped the session: more failed than a scenario may target.
            return f"more than {self.max_nodeids} tests fail"
        if missing:
            return "the tests do not even run (import or collection broken)"
        if not failing:
            return "no test fails (equivalent or untested)"
        functions = {n.split("[")[0] for n in failing}
        if len(functions) > self.max_targets or len(failing) > self.max_nodeids \
                or len(failing) > 0.3 * len(self.pristine.passing):
            return f"{len(functions)} test functions fail"
        modules = {n.split("::")[0] for n in selected}
        neighbours = [n for n in self.pristine.passing if n.split("::")[0] in modules]
        if len(neighbours) > len(selected):
            # Every test of those modules once more: one that reached the line only through state
            # set up for an earlier test (a module- or class-scoped fixture) fails there too.
            try:
                path.write_text(after)
                everything, _ = run_pytest(self.project, self.tree, neighbours, maxfail=self.max_nodeids + 1,
                                           timeout=max(self.timeout, 3 * self.pristine.wall_s))
            finally:
                path.write_text(before)
            passing = set(self.pristine.passing)
            if everything is None:
                return "timed out or the session broke (their modules)"
            others = sorted(n for n, r in everything.items() if n in passing and r["outcome"] == "failed"
                            and n not in failing)
            if others:
                return "other tests of their modules fail"
        return failing, results, wall
