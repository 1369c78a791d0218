"""Held-out cases derived at import from a fix's own tests, so `correct` means for an imported task
what it means for a corpus scenario (docs/verifier.md section 6).

An imported task has a reference fix but no hand-written held-out file. The tests the fix added
call the functions the fix touched with literal arguments (`span(2, 7)`): each such call, with
every argument a literal, becomes a held-out case, and its expected value is what the reference
fix answers (the probe of the verifier, run once on the fixed tree in the import's container).
The verifier then judges a candidate on those cases and, from them, on ~300 generated inputs
(literal variants: verifier/generated.py) against the reference fix, as for any scenario.
A call whose answer is not plain data, that times out, or that differs between two askings is left out; no call left: no file, and
the run is judged on its tests alone (`plausible` at best, since a reference fix exists).
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from unidiff import PatchSet

from verifier.heldout import PROBE_SOURCE, HeldoutSpec, parse_probe_output

from .common import CheckPlace, InstanceError, toml_document

MAX_CASES = 40
CASE_TIMEOUT_S = 2.0
PROBE_TIMEOUT_S = 120.0


def module_of(path: str) -> tuple[str, str] | None:
    """(import root, dotted module) of a repository .py path: `src/pkg/mod.py` -> ("src", "pkg.mod")."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    root = "."
    if parts and parts[0] == "src":
        root, parts = "src", parts[1:]
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return root, ".".join(parts)


def touched_functions(fix_diff: str, fixed: Path) -> dict[str, tuple[str, str]]:
    """Module-level functions whose body the fix changes: name -> (import root, module). Read from
    the fixed tree: a changed line (an added one, or the place a removed one was) inside a `def`."""
    found: dict[str, tuple[str, str]] = {}
    for f in PatchSet(fix_diff if fix_diff.endswith("\n") else fix_diff + "\n"):
        where = module_of(f.path)
        if where is None or not (fixed / f.path).is_file():
            continue
        lines: set[int] = set()
        for hunk in f:
            last = hunk.target_start
            for line in hunk:
                if line.target_line_no is not None:
                    last = line.target_line_no
                if line.is_added or line.is_removed:
                    lines.add(last)
        try:
            tree = ast.parse((fixed / f.path).read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_") \
                    and any(node.lineno <= n <= (node.end_lineno or node.lineno) for n in lines):
                found.setdefault(node.name, where)
    return found


def literal_calls(test_source: str, test_names: set[tuple[str | None, str]],
                  functions: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """(test name, call source) of each call to one of `functions` inside the named tests
    ((class or None, function)) whose arguments are all literals, as the test wrote them."""
    try:
        module = ast.parse(test_source)
    except SyntaxError:
        return []
    tests: list[tuple[str, ast.AST]] = []
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            tests += [(f"{node.name}.{m.name}", m) for m in node.body
                      if isinstance(m, ast.FunctionDef) and (node.name, m.name) in test_names]
        elif isinstance(node, ast.FunctionDef) and (None, node.name) in test_names:
            tests.append((node.name, node))
    calls = []
    for name, test in tests:
        for call in ast.walk(test):
            if not isinstance(call, ast.Call):
                continue
            callee = call.func.id if isinstance(call.func, ast.Name) else \
                call.func.attr if isinstance(call.func, ast.Attribute) else None
            if callee not in functions or any(isinstance(a, ast.Starred) for a in call.args) \
                    or any(k.arg is None for k in call.keywords):
                continue
            args = [*call.args, *(k.value for k in call.keywords)]
            if not all(_is_literal(a) for a in args):
                continue
            text = [ast.get_source_segment(test_source, a) or ast.unparse(a) for a in call.args]
            text += [f"{k.arg}={ast.get_source_segment(test_source, k.value) or ast.unparse(k.value)}"
                     for k in call.keywords]
            calls.append((name, f"{callee}({', '.join(text)})"))
    return calls


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def probe_cases(fixed: Path, test_tree: Path, targets: list[str], fix_diff: str) -> dict | None:
    """The probe request of the derived cases (no expectations yet), or None when no target test
    calls a touched function with literal arguments."""
    functions = touched_functions(fix_diff, fixed)
    if not functions:
        return None
    by_file: dict[str, set[tuple[str | None, str]]] = {}
    for nodeid in targets:
        path, *names = nodeid.split("::")
        function = re.sub(r"\[.*\]$", "", names[-1])
        by_file.setdefault(path, set()).add((names[0] if len(names) > 1 else None, function))
    cases: list[dict[str, str]] = []
    seen: set[str] = set()
    for path, wanted in sorted(by_file.items()):
        try:
            source = (test_tree / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for test, expr in literal_calls(source, wanted, functions):
            if expr in seen or len(cases) >= MAX_CASES:
                continue
            seen.add(expr)
            callee = expr.split("(", 1)[0]
            root, module = functions[callee]
            cases.append({"name": re.sub(r"[^A-Za-z0-9_.:-]", "_", f"{test}.{len(cases) + 1}"),
                          "setup": f"from {module} import {callee}", "expr": expr, "root": root})
    if not cases:
        return None
    paths = sorted({c.pop("root") for c in cases})
    return {"paths": paths, "setup": "", "cases": cases, "case_timeout_s": CASE_TIMEOUT_S}


def reference_answers(fixed: Path, request: dict, check: CheckPlace) -> list[dict]:
    """The probe's rows for `request` on the fixed tree, in the import's container (or locally)."""
    runner = check.runner(fixed)
    root = check.root(fixed)
    try:
        result = runner.exec([check.python, "-I", "-B", "-c", PROBE_SOURCE.read_text(encoding="utf-8")],
                             timeout_s=PROBE_TIMEOUT_S, env={"RA_PROBE": json.dumps({**request, "root": root}),
                                                             "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
    finally:
        runner.close()
    probe, problem = parse_probe_output(result.stdout.text)
    if probe is None:
        raise InstanceError(f"the reference fix's answers to the derived held-out cases could not be read: {problem}")
    return probe["results"]


_NO_JSON = object()


def as_json(plain: Any) -> Any:
    """The probe's plain form of an answer (`{"__tuple__": [...]}`, `{"__dict__": {...}}`) as the JSON
    an `expect_json` holds, which the verifier reads back into that same form: a tuple as a list (a
    tuple may stand where a list is expected), a dict of string keys as an object. An answer JSON
    cannot say (a set, a NaN, a dict with other keys, anything unjudgeable) is _NO_JSON: no case."""
    if plain is None or isinstance(plain, (bool, int, float, str)):
        return plain
    if isinstance(plain, list):
        items = [as_json(v) for v in plain]
        return _NO_JSON if any(v is _NO_JSON for v in items) else items
    if isinstance(plain, dict) and set(plain) == {"__tuple__"}:
        return as_json(plain["__tuple__"])
    if isinstance(plain, dict) and set(plain) == {"__dict__"} and isinstance(plain["__dict__"], dict):
        values = {k: as_json(v) for k, v in plain["__dict__"].items()}
        return _NO_JSON if any(v is _NO_JSON for v in values.values()) else values
    return _NO_JSON


def heldout_text(request: dict, rows: list[dict]) -> str | None:
    """NAME.heldout.toml for the cases the reference answered with plain data (its answer the
    expectation), or None when none did."""
    by_name = {r.get("name"): r for r in rows if isinstance(r, dict)}
    cases = []
    for case in request["cases"]:
        row = by_name.get(case["name"], {})
        natural = as_json(row["value"]) if "value" in row else _NO_JSON
        if natural is not _NO_JSON:
            expect = {"expect_json": json.dumps(natural)}
        elif isinstance(row.get("raised"), list) and row["raised"] and not row.get("fatal") \
                and "builtins.ImportError" not in row["raised"]:  # the code could not be imported: no answer
            expect = {"raises": row["raised"][0]}
        else:
            continue
        cases.append({"name": case["name"], "setup": case["setup"], "expr": case["expr"], **expect})
    if not cases:
        return None
    return toml_document({"paths": request["paths"], "case": cases},
                         "Derived at import from the fix's own tests: each literal call of a function the fix\n"
                         "changed; the expectations are the reference fix's answers.")


def derive_heldout(fixed: Path, test_tree: Path, targets: list[str], fix_diff: str, check: CheckPlace,
                   dest: Path) -> int:
    """Write the derived held-out file to `dest`; the number of cases (0: none, no file)."""
    request = probe_cases(fixed, test_tree, targets, fix_diff)
    if request is None:
        return 0
    # Asked twice, each in a fresh container: a case answered differently (a clock, a random draw, a
    # set's order) has no expected value, and is left out.
    try:
        first, second = (reference_answers(fixed, request, check) for _ in range(2))
    except InstanceError:  # no answers to expect: the task is judged on its tests alone, not refused
        return 0
    again = {r.get("name"): r for r in second if isinstance(r, dict)}
    text = heldout_text(request, [r for r in first if isinstance(r, dict) and again.get(r.get("name")) == r])
    if text is None:
        return 0
    dest.write_text(text, encoding="utf-8")
    return len(HeldoutSpec.load(dest).case)  # it must load as the manifest loader will load it
