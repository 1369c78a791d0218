"""Mutant scenarios: many realistic one-to-few-line bugs in real projects, for tuning a chooser.

    .venv/bin/python bench/mutants.py --per-project 12 --seed 0 --out /tmp/mutants
    .venv/bin/python bench/mutants.py --projects iniconfig --per-project 4 --seed 1 --out /tmp/m

For each project of the real and development corpora (their manifests give the pinned source,
the environment, the writable and protected globs and the tests left out) it parses the writable
source files of the pristine tree, enumerates mutation sites inside function bodies, and picks,
deterministically by seed, a mix of kinds weighted like published studies of real one-line bugs
(ManySStuBs4J, PyTraceBugs, BugsInPy: a wrong identifier, a changed operator, a missing statement
or guard, a changed literal ...). About 30% of the kinds need an added line to fix.

A mutant is kept when, applied to the pristine tree, 1 to --max-targets tests fail (all of them
become the target tests, as the corpus check wants no other failing test) within the time limit;
equivalent, uncompilable and import-breaking mutants are dropped. Only the tests that executed a
mutated line on the pristine tree are run (a test that never reaches the line cannot change),
found once per project by tracing the pristine suite.

It writes ordinary scenario manifests (`corpus:mutants` tag) and bugs/*.diff into --out, plus
mutants.json (where each mutant is, for analysis; never shown to a chooser). The goal text is a
short symptom report made from the first failing test's output. This is a tuning distribution:
never quote a result on it as a measure of generalization (its bugs are synthetic, and whoever
tunes on it has seen it).
"""
from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from unidiff import PatchSet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.importers.common import manifest_text  # noqa: E402
from repair_agent.resources import cache_root  # noqa: E402
from repair_agent.scenarios.scenario import Manifest  # noqa: E402
from repair_agent.scenarios.sources import fetch_source  # noqa: E402

CORPORA = ("real", "dev")
HERE = Path(__file__).resolve().parent
# Kinds and their weights. Identifier and call mistakes dominate real one-line bugs, then
# operators, literals and missing code; the two `missing-*` kinds (and a dropped conjunct,
# whose fix re-adds code too) are the ones whose fix adds a line.
WEIGHTS: dict[str, int] = {
    "wrong-variable": 12, "wrong-function": 9, "wrong-attribute": 4, "swapped-arguments": 4,
    "comparison-operator": 9, "arithmetic-operator": 5, "augmented-assignment": 3, "boolean-operator": 4,
    "negation": 7, "off-by-one": 10, "wrong-constant": 5, "return-value": 6, "dropped-condition": 3,
    "missing-statement": 24, "missing-guard": 12,
}
ADDED_LINE = {"missing-statement", "missing-guard"}
COMPARE_SWAP = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "==",
                ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in"}
COMPARE_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
                ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
ARITH = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*"),
         ast.Div: ("/", "*"), ast.Mod: ("%", "//"), ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&")}
AUG = {ast.Add: ("+=", "-="), ast.Sub: ("-=", "+="), ast.Mult: ("*=", "+="), ast.BitOr: ("|=", "&="),
       ast.BitAnd: ("&=", "|=")}
BUILTIN_PAIRS = {"min": "max", "max": "min", "any": "all", "all": "any", "str": "repr", "repr": "str",
                 "sorted": "reversed", "reversed": "sorted", "list": "tuple", "tuple": "list",
                 "isinstance": "issubclass", "hasattr": "callable", "int": "float", "float": "int",
                 "zip": "enumerate", "enumerate": "zip", "filter": "map", "map": "filter"}
METHOD_PAIRS = {"lower": "upper", "upper": "lower", "startswith": "endswith", "endswith": "startswith",
                "lstrip": "rstrip", "rstrip": "lstrip", "strip": "rstrip", "find": "rfind", "rfind": "find",
                "index": "rindex", "rindex": "index", "split": "rsplit", "rsplit": "split",
                "append": "extend", "extend": "append", "keys": "values", "values": "keys",
                "items": "values", "get": "pop", "pop": "get", "add": "discard", "update": "setdefault",
                "match": "search", "search": "match", "fullmatch": "match", "sub": "subn",
                "isdigit": "isalpha", "isalpha": "isdigit", "isupper": "islower", "islower": "isupper",
                "title": "capitalize", "capitalize": "title", "join": "split", "replace": "split",
                "insert": "append", "remove": "discard", "copy": "items", "group": "groups"}
STRING_SWAP = {"-": "_", "_": "-", " ": "", "": " ", ".": ",", ",": ".", ":": ";", ";": ":", "/": "\\",
               "\\": "/", "\n": " ", "=": ":", "(": "[", ")": "]", "[": "(", "]": ")"}


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


def corpus_projects(root: Path = ROOT / "sandbox_repos") -> dict[str, Project]:
    """One Project per `project:` tag of the real and dev corpora (the first manifest by name)."""
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
    return any(fnmatch.fnmatch(rel, g) or (g.endswith("/**") and rel.startswith(g[:-2])) for g in globs)


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
    paths = [str(HERE)]
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
                                     (HERE / "mutants_trace.py").read_text(), sys.version]).encode()).hexdigest()[:16]
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


# -- mutation sites ----------------------------------------------------------------------------

@dataclass
class Site:
    kind: str
    file: str
    first: int                  # 1-based, inclusive: the pristine lines replaced
    last: int
    new: list[str]              # their replacement (no lines: a deletion)
    function: str
    note: str                   # what changed, for mutants.json only
    covered_by: list[str] = field(default_factory=list)


def _segment(lines: list[bytes], node: ast.AST) -> bytes:
    return lines[node.lineno - 1][node.col_offset:node.end_col_offset]  # type: ignore[attr-defined]


def _one_line(*nodes: ast.AST) -> bool:
    return all(getattr(n, "lineno", None) is not None and n.lineno == n.end_lineno == nodes[0].lineno  # type: ignore[attr-defined]
               for n in nodes)


class SiteFinder:
    """Every mutation site of one module, inside function bodies, with one replacement each
    (picked by `rng` where several are possible)."""

    def __init__(self, rel: str, text: str, rng: random.Random):
        self.rel, self.text, self.rng = rel, text, rng
        self.lines = [l.encode() for l in text.splitlines(keepends=True)]
        self.tree = ast.parse(text)
        self.module_functions = {n.name for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.sites: list[Site] = []

    def find(self) -> list[Site]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self._function(item, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in self.tree.body:
                self._function(node, None)
        return self.sites

    # where the text of one line is edited between two byte offsets
    def _edit(self, kind: str, line: int, start: int, end: int, new: bytes, fn: str, note: str) -> None:
        old = self.lines[line - 1]
        changed = old[:start] + new + old[end:]
        if changed != old:
            self.sites.append(Site(kind, self.rel, line, line, [changed.decode()], fn, note))

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> None:
        name = f"{cls.name}.{fn.name}" if cls else fn.name
        locals_ = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                locals_.add(node.id)
        locals_.discard("self")
        locals_.discard("cls")
        self_attrs = sorted({n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)
                             and isinstance(n.value, ast.Name) and n.value.id == "self"}) if cls else []
        calls = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
        for stmt in fn.body:
            for node in ast.walk(stmt):
                self._expression(node, name, sorted(locals_), self_attrs, calls)
        self._blocks(fn, name)

    def _expression(self, node: ast.AST, fn: str, locals_: list[str], self_attrs: list[str], calls: set[int]) -> None:
        rng = self.rng
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and _one_line(node.left, node.comparators[0]):
            op = type(node.ops[0])
            line = self.lines[node.lineno - 1]
            a, b = node.left.end_col_offset, node.comparators[0].col_offset  # type: ignore[attr-defined]
            between = line[a:b]
            old = COMPARE_TEXT[op].encode()
            if between.strip() == old:
                i = a + between.index(old)
                self._edit("comparison-operator", node.lineno, i, i + len(old), COMPARE_SWAP[op].encode(), fn,
                           f"{COMPARE_TEXT[op]} -> {COMPARE_SWAP[op]}")
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITH and _one_line(node.left, node.right):
            if any(isinstance(s, ast.Constant) and isinstance(s.value, (str, bytes)) for s in (node.left, node.right)):
                return  # string formatting and concatenation: a type error, not a plausible slip
            old_t, new_t = ARITH[type(node.op)]
            line = self.lines[node.lineno - 1]
            a, b = node.left.end_col_offset, node.right.col_offset  # type: ignore[attr-defined]
            if line[a:b].strip() == old_t.encode():
                i = a + line[a:b].index(old_t.encode())
                self._edit("arithmetic-operator", node.lineno, i, i + len(old_t), new_t.encode(), fn, f"{old_t} -> {new_t}")
            for operand in (node.left, node.right):
                self._off_by_one(operand, fn)
        elif isinstance(node, ast.AugAssign) and _one_line(node.target, node.value):
            line = self.lines[node.lineno - 1]
            a, b = node.target.end_col_offset, node.value.col_offset  # type: ignore[attr-defined]
            ops = AUG.get(type(node.op))
            if ops and line[a:b].strip() == ops[0].encode():
                i = a + line[a:b].index(ops[0].encode())
                new = ops[1] if rng.random() < 0.6 else "="
                self._edit("augmented-assignment", node.lineno, i, i + len(ops[0]), new.encode(), fn, f"{ops[0]} -> {new}")
        elif isinstance(node, ast.BoolOp) and _one_line(*node.values):
            line = self.lines[node.lineno - 1]
            old_t, new_t = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            for left, right in zip(node.values, node.values[1:]):
                a, b = left.end_col_offset, right.col_offset  # type: ignore[attr-defined]
                if line[a:b].strip() == old_t.encode():
                    i = a + line[a:b].index(old_t.encode())
                    self._edit("boolean-operator", node.lineno, i, i + len(old_t), new_t.encode(), fn, f"{old_t} -> {new_t}")
                    break
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) and _one_line(node.test):
            test = node.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                self._edit("negation", test.lineno, test.col_offset, test.operand.col_offset, b"", fn, "not removed")
            elif isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
                self._edit("negation", test.lineno, test.col_offset, test.col_offset, b"not ", fn, "not added")
            if isinstance(test, ast.BoolOp) and len(test.values) == 2 and isinstance(node, (ast.If, ast.While)):
                keep = test.values[rng.randrange(2)]
                if _one_line(test, keep):
                    self._edit("dropped-condition", test.lineno, test.col_offset, test.end_col_offset,  # type: ignore[arg-type]
                               _segment(self.lines, keep), fn, "one operand of the condition dropped")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            for bound in (node.slice.lower, node.slice.upper):
                if bound is not None and isinstance(bound, (ast.Name, ast.Attribute, ast.Call)) and _one_line(bound):
                    delta = rng.choice((b" + 1", b" - 1"))
                    self._edit("off-by-one", bound.lineno, bound.end_col_offset, bound.end_col_offset, delta, fn,  # type: ignore[arg-type]
                               f"slice bound{delta.decode()}")
                elif bound is not None:
                    self._off_by_one(bound, fn)
        elif isinstance(node, ast.Call) and _one_line(node):
            self._call(node, fn, self_attrs)
            if isinstance(node.func, ast.Name) and node.func.id == "range":
                for arg in node.args:
                    self._off_by_one(arg, fn)
        elif isinstance(node, ast.Return) and node.value is not None and _one_line(node.value):
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                new = b"False" if v.value else b"True"
            elif isinstance(v, ast.Constant) and v.value is None:
                return
            else:
                new = b"None"
            self._edit("return-value", v.lineno, v.col_offset, v.end_col_offset, new, fn,  # type: ignore[arg-type]
                       f"return {new.decode()}")
        elif isinstance(node, ast.Constant) and _one_line(node):
            if isinstance(node.value, bool):
                self._edit("wrong-constant", node.lineno, node.col_offset, node.end_col_offset,  # type: ignore[arg-type]
                           str(not node.value).encode(), fn, f"{node.value} -> {not node.value}")
            elif isinstance(node.value, str) and node.value in STRING_SWAP:
                seg = _segment(self.lines, node)
                quote = seg[:1] if seg[:1] in (b"'", b'"') else None
                if quote and seg == quote + node.value.encode("unicode_escape") + quote:
                    new = quote + STRING_SWAP[node.value].encode("unicode_escape") + quote
                    self._edit("wrong-constant", node.lineno, node.col_offset, node.end_col_offset, new, fn,  # type: ignore[arg-type]
                               f"{node.value!r} -> {STRING_SWAP[node.value]!r}")
            elif isinstance(node.value, int) and not isinstance(node.value, bool):
                self._off_by_one(node, fn)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in locals_ \
                and id(node) not in calls and len(locals_) > 1:
            other = rng.choice([n for n in locals_ if n != node.id])
            self._edit("wrong-variable", node.lineno, node.col_offset, node.end_col_offset, other.encode(), fn,  # type: ignore[arg-type]
                       f"{node.id} -> {other}")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in calls \
                and isinstance(node.value, ast.Name) and node.value.id == "self" and _one_line(node):
            others = [a for a in self_attrs if a != node.attr and not a.startswith("__")]
            if others:
                other = rng.choice(others)
                end = node.end_col_offset
                self._edit("wrong-attribute", node.lineno, end - len(node.attr.encode()), end, other.encode(), fn,  # type: ignore[operator]
                           f"self.{node.attr} -> self.{other}")

    def _off_by_one(self, node: ast.AST, fn: str) -> None:
        if isinstance(node, ast.Constant) and type(node.value) is int and _one_line(node):
            seg = _segment(self.lines, node)
            if not seg.isdigit():
                return  # hex, octal, underscores: leave them alone
            negative = self.lines[node.lineno - 1][:node.col_offset].rstrip().endswith(b"-")  # type: ignore[attr-defined]
            # -1 becomes -2, not -0; a 0 becomes 1
            value = node.value + 1 if negative or not node.value else node.value + self.rng.choice((1, -1))
            self._edit("off-by-one", node.lineno, node.col_offset, node.end_col_offset, str(value).encode(), fn,  # type: ignore[arg-type]
                       f"{node.value} -> {value}")

    def _call(self, node: ast.Call, fn: str, self_attrs: list[str]) -> None:
        rng = self.rng
        func = node.func
        if isinstance(func, ast.Name):
            similar = [f for f in self.module_functions if f != func.id
                       and difflib.SequenceMatcher(None, f, func.id).ratio() >= 0.7]
            pick = BUILTIN_PAIRS.get(func.id) or (rng.choice(sorted(similar)) if similar else None)
            if pick:
                self._edit("wrong-function", func.lineno, func.col_offset, func.end_col_offset, pick.encode(), fn,  # type: ignore[arg-type]
                           f"{func.id}() -> {pick}()")
        elif isinstance(func, ast.Attribute) and _one_line(func):
            pick = METHOD_PAIRS.get(func.attr)
            if pick is None and isinstance(func.value, ast.Name) and func.value.id == "self":
                similar = [a for a in self_attrs if a != func.attr
                           and difflib.SequenceMatcher(None, a, func.attr).ratio() >= 0.7]
                pick = rng.choice(similar) if similar else None
            if pick:
                end = func.end_col_offset
                self._edit("wrong-function", func.lineno, end - len(func.attr.encode()), end, pick.encode(), fn,  # type: ignore[operator]
                           f".{func.attr}() -> .{pick}()")
        simple = (ast.Name, ast.Attribute, ast.Constant)
        if len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            a, b = node.args[0], node.args[1]
            if isinstance(a, simple) and isinstance(b, simple) and _one_line(a, b):
                sa, sb = _segment(self.lines, a), _segment(self.lines, b)
                if sa != sb:
                    line = self.lines[a.lineno - 1]
                    mid = line[a.end_col_offset:b.col_offset]  # type: ignore[misc]
                    self._edit("swapped-arguments", a.lineno, a.col_offset, b.end_col_offset, sb + mid + sa, fn,  # type: ignore[arg-type]
                               f"arguments {sa.decode()} and {sb.decode()} swapped")

    def _blocks(self, fn: ast.AST, name: str) -> None:
        """Deleted statements and deleted guards: the fix has to add the line(s) back."""
        for node in ast.walk(fn):
            for attr in ("body", "orelse", "finalbody"):
                block = getattr(node, attr, None)
                if not isinstance(block, list) or len(block) < 2 or node is not fn and isinstance(
                        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                for stmt in block:
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                        continue  # a docstring
                    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise,
                                         ast.Expr, ast.Continue, ast.Break)) and stmt.lineno == stmt.end_lineno \
                            and self._whole_lines(stmt):
                        self.sites.append(Site("missing-statement", self.rel, stmt.lineno, stmt.lineno, [], name,
                                               f"deleted: {ast.unparse(stmt)[:80]}"))
                    elif isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 \
                            and stmt.test.lineno == stmt.lineno and stmt.body[0].end_lineno == stmt.lineno + 1 \
                            and isinstance(stmt.body[0], (ast.Return, ast.Raise, ast.Assign, ast.AugAssign,
                                                          ast.Expr, ast.Continue, ast.Break)) \
                            and self._whole_lines(stmt):
                        self.sites.append(Site("missing-guard", self.rel, stmt.lineno, stmt.lineno + 1, [], name,
                                               f"deleted guard: if {ast.unparse(stmt.test)[:60]}: ..."))

    def _whole_lines(self, stmt: ast.stmt) -> bool:
        # The statement alone on its lines (no `a = 1; b = 2`, no trailing comment to keep).
        first = self.lines[stmt.lineno - 1]
        last = self.lines[stmt.end_lineno - 1]  # type: ignore[operator]
        return first[:stmt.col_offset].strip() == b"" and last[stmt.end_col_offset:].strip() == b""  # type: ignore[misc]


# -- checking a mutant -------------------------------------------------------------------------

@dataclass
class Mutant:
    name: str
    project: str
    kind: str
    file: str
    first: int
    last: int
    function: str
    note: str
    targets: list[str]
    failure: str
    goal: str
    bug_diff: str
    fix_diff: str
    baseline: dict[str, str] | None
    tests_run: int
    check_s: float


def mutate_text(text: str, site: Site) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[:site.first - 1] + site.new + lines[site.last:])


def unified(rel: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{rel}", f"b/{rel}", n=3))


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


# -- choosing and writing ----------------------------------------------------------------------

def quotas(n: int, available: dict[str, int], rng: random.Random) -> dict[str, int]:
    """n split over the kinds with sites, by weight: the whole parts as they are, the remaining
    slots drawn (seeded) in proportion to the fractions, so that over many projects every kind
    gets its share, the rare ones too, instead of the same rounding everywhere."""
    kinds = [k for k in WEIGHTS if available.get(k)]
    total = sum(WEIGHTS[k] for k in kinds)
    raw = {k: n * WEIGHTS[k] / total for k in kinds}
    out = {k: int(v) for k, v in raw.items()}
    fractions = {k: raw[k] - out[k] for k in kinds if raw[k] > out[k]}
    # Weighted sampling without replacement: the largest u ** (1 / weight) win.
    keyed = sorted(fractions, key=lambda k: -(rng.random() ** (1 / fractions[k])))
    for k in keyed[:n - sum(out.values())]:
        out[k] += 1
    return out


def enumerate_sites(project: Project, files: list[str], pristine: Pristine, seed: int) -> list[Site]:
    sites = []
    for rel in files:
        rng = random.Random(f"{seed}:{project.name}:{rel}")
        try:
            found = SiteFinder(rel, (project.tree / rel).read_text(), rng).find()
        except SyntaxError:
            continue
        cov = pristine.coverage.get(rel, {})
        taken = project.corpus_lines.get(rel, set())
        imported = set(pristine.imported.get(rel, []))
        for s in found:
            lines = set(range(s.first, s.last + 1))
            if taken & lines:
                continue
            tests: dict[str, None] = {}
            for line in lines:
                tests.update(dict.fromkeys(cov.get(line, [])))
            if tests:
                # A line run at import time can change what every test sees: all of them run.
                s.covered_by = list(pristine.passing) if imported & lines else [t for t in pristine.passing if t in tests]
                sites.append(s)
    return sites


def generate(project: Project, per_project: int, seed: int, *, max_targets: int = 3, timeout: float = 60.0,
             log=print) -> tuple[list[Mutant], dict[str, Any]]:
    t0 = time.monotonic()
    files = source_files(project)
    base = pristine(project, files)
    sites = enumerate_sites(project, files, base, seed)
    rng = random.Random(f"{seed}:{project.name}")
    by_kind: dict[str, list[Site]] = {}
    for s in sites:
        by_kind.setdefault(s.kind, []).append(s)
    for k in sorted(by_kind):
        rng.shuffle(by_kind[k])
    want = quotas(per_project, {k: len(v) for k, v in by_kind.items()}, rng)
    checker = Checker(project, base, max_targets, timeout)
    kept: list[Mutant] = []
    dropped: dict[str, int] = {}
    used_lines: set[tuple[str, int]] = set()
    used_functions: dict[str, int] = {}
    attempts = 0
    try:
        # Round robin over the kinds (in weight order) so an early stop still leaves a mix; a
        # kind that runs out of sites leaves its quota to the others.
        order = sorted(want, key=lambda k: -WEIGHTS[k])
        pending = dict(want)
        cursor = {k: 0 for k in by_kind}
        while len(kept) < per_project and attempts < 12 * per_project:
            open_kinds = [k for k in order if pending.get(k, 0) > 0 and cursor[k] < len(by_kind[k])]
            if not open_kinds:
                # A kind ran out of sites that fail well: its slot goes to a kind drawn by weight.
                spare = [k for k in sorted(by_kind) if cursor[k] < len(by_kind[k])]
                if not spare:
                    break
                pick = rng.choices(spare, weights=[WEIGHTS[k] for k in spare])[0]
                pending[pick] = pending.get(pick, 0) + 1
                continue
            for kind in open_kinds:
                if len(kept) >= per_project:
                    break
                site = by_kind[kind][cursor[kind]]
                cursor[kind] += 1
                # Diversity: one mutant per line, at most two per function.
                if (site.file, site.first) in used_lines or used_functions.get(f"{site.file}:{site.function}", 0) >= 2:
                    continue
                attempts += 1
                verdict = checker.check(site)
                if isinstance(verdict, str):
                    dropped[verdict.split(" (")[0]] = dropped.get(verdict.split(" (")[0], 0) + 1
                    continue
                failing, results, wall = verdict
                pending[kind] -= 1
                used_lines.add((site.file, site.first))
                key = f"{site.file}:{site.function}"
                used_functions[key] = used_functions.get(key, 0) + 1
                kept.append(make_mutant(project, site, seed, len(kept) + 1, failing, results, wall))
                log(f"  {project.name}: kept {kept[-1].name} ({kind}, {len(failing)} target(s), {wall:.1f}s)")
    finally:
        checker.close()
    stats = {"project": project.name, "sites": len(sites), "sites_by_kind": {k: len(v) for k, v in sorted(by_kind.items())},
             "attempts": attempts, "kept": len(kept), "dropped": dropped,
             "pristine_tests": len(base.passing), "pristine_wall_s": round(base.wall_s, 1),
             "wall_s": round(time.monotonic() - t0, 1)}
    return kept, stats


SHORT = {"more-itertools": "moreit", "python-slugify": "slugify"}


def make_mutant(project: Project, site: Site, seed: int, number: int, failing: list[str],
                results: dict[str, Any], wall: float) -> Mutant:
    before = (project.tree / site.file).read_text()
    after = mutate_text(before, site)
    signature, goal = symptom(failing[0], results[failing[0]])
    if len(failing) > 1:
        cases: dict[str, int] = {}
        for nodeid in failing[1:]:
            test = nodeid.split("::", 1)[1].split("[")[0]
            cases[test] = cases.get(test, 0) + 1
        goal += " Also failing: " + ", ".join(t + (f" ({n} cases)" if n > 1 else "") for t, n in cases.items()) + "."
    baseline = None
    if len(site.new) == 1 and site.first == site.last:
        search, replace = site.new[0].rstrip("\n"), before.splitlines()[site.first - 1]
        # The baseline patches the first line its literal search finds: only a unique line will do.
        hits = sum(((project.tree / f).read_text() if f != site.file else after).count(search)
                   for f in source_files(project))
        if hits == 1 and 0 < len(search) <= 200 and search.strip():
            baseline = {"search": search, "replace": replace, "path_glob": project.writable[0]}
    name = f"mut-s{seed}-{SHORT.get(project.name, project.name)}-{number:02d}-{site.kind}"
    return Mutant(name=name, project=project.name, kind=site.kind, file=site.file, first=site.first, last=site.last,
                  function=site.function, note=site.note, targets=failing, failure=signature, goal=goal,
                  bug_diff=unified(site.file, before, after), fix_diff=unified(site.file, after, before),
                  baseline=baseline, tests_run=len(site.covered_by), check_s=round(wall, 2))


def write_scenario(out: Path, project: Project, m: Mutant, seed: int) -> Path:
    (out / "bugs").mkdir(parents=True, exist_ok=True)
    (out / "bugs" / f"{m.name}.bug.diff").write_text(m.bug_diff)
    (out / "bugs" / f"{m.name}.fix.diff").write_text(m.fix_diff)
    fix_shape = "fix:added-line" if m.kind in ADDED_LINE or m.kind == "dropped-condition" else "fix:changed-line"
    tags = ["corpus:mutants", f"project:{project.name}", m.kind, "files:1", fix_shape, f"seed:{seed}",
            *project.layout_tags]
    raw = project.raw
    top = {"name": m.name, "description": f"{project.name} {project.version}: a generated bug (seed {seed})",
           "bug_patch": f"bugs/{m.name}.bug.diff", "reference_fix": f"bugs/{m.name}.fix.diff", "kind": m.kind,
           "tags": tags}
    sections: dict[str, dict] = {"source": raw["source"]}
    if raw.get("environment"):
        sections["environment"] = raw["environment"]
    sections |= {"goal": {"text": m.goal, "failure_signature": m.failure},
                 "acceptance": {"target_tests": m.targets, "writable": project.writable,
                                "protected": project.protected},
                 "budget": {"max_steps": 12, "deadline_s": 600}}
    if m.baseline:
        sections["baseline"] = m.baseline
    comment = (f"The source and environment as {project.manifest.parent.name}/{project.manifest.name} declares them."
               if raw.get("environment") else "")
    path = out / f"{m.name}.scenario.toml"
    path.write_text(manifest_text(top, sections, comment))
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--per-project", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="directory for the manifests and bugs/ (made if missing)")
    p.add_argument("--projects", nargs="*", help="project tags (default: every project of the real and dev corpora)")
    p.add_argument("--max-targets", type=int, default=3,
                   help="most failing test functions a kept mutant may have (the cases of a parametrized "
                        "test count once; at most 3x as many node ids)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds for one mutant's tests")
    p.add_argument("--workers", type=int, default=2, help="projects generated at once")
    args = p.parse_args(argv)
    t0 = time.monotonic()
    projects = corpus_projects()
    chosen = args.projects or sorted(projects)
    unknown = [n for n in chosen if n not in projects]
    if unknown:
        p.error(f"unknown project(s) {unknown}; known: {sorted(projects)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> tuple[list[Mutant], dict[str, Any]]:
        return generate(projects[name], args.per_project, args.seed, max_targets=args.max_targets,
                        timeout=args.timeout, log=lambda m: print(m, flush=True))

    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        done = list(pool.map(one, chosen))
    index = {"seed": args.seed, "per_project": args.per_project, "max_targets": args.max_targets,
             "projects": [], "mutants": []}
    for name, (mutants, stats) in zip(chosen, done):
        for m in mutants:
            write_scenario(out, projects[name], m, args.seed)
            index["mutants"].append(asdict(m))
        index["projects"].append(stats)
    index["wall_s"] = round(time.monotonic() - t0, 1)
    (out / "mutants.json").write_text(json.dumps(index, indent=1))
    kinds: dict[str, int] = {}
    for m in index["mutants"]:
        kinds[m["kind"]] = kinds.get(m["kind"], 0) + 1
    added = sum(n for k, n in kinds.items() if k in ADDED_LINE or k == "dropped-condition")
    for stats in index["projects"]:
        print(f"{stats['project']:<16} kept {stats['kept']:>3} of {stats['attempts']:>3} tried "
              f"({stats['sites']} sites, {stats['pristine_tests']} tests, {stats['wall_s']}s) dropped: {stats['dropped']}")
    print(f"kinds: {dict(sorted(kinds.items()))}")
    total = len(index["mutants"])
    print(f"{total} mutants in {out} ({added} need an added line: {added / max(1, total):.0%}), {index['wall_s']}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
