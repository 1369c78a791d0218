"""Generated held-out inputs: variants of the hand-written held-out cases, judged by agreement with
the reference fix instead of by expected values.

Why: ~12 hand-written cases are a sample; a forged fix can keep the bug where they never look (a
discount fix right only below 1000). Variants come from the cases themselves, so nothing needs new
authoring: `setup` and `expr` are parsed with `ast` and only literals change (numbers near, at 0/±1
and scaled beyond the examples, strings edited from their own alphabet, bools flipped, container
literals shortened, grown or reordered), in the source text, so a variant reads like its case.

Flow (verifier/runner.py): `generate_cases(spec, seed=seed_for(spec))`; the reference tree answers in
each environment of a check (REFERENCE_CASE_TIMEOUT_S per case); `reference_rows(a, b)` keeps the
answers they agree on; the candidate answers; `compare(reference, rows, cases)` judges, on plain data.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import random
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, cast

from pydantic import BaseModel, ConfigDict

from .heldout import PROBE_SOURCE, HeldoutCase, HeldoutSpec, parse_probe_output, same

# Per generated case (a scaled-up input may make the code loop). The reference is probed with a
# quarter of the candidate's limit: a case it kept ran well within it, so a correct candidate that
# is a little slower (or on a busier machine) does not time out where the reference answered.
CASE_TIMEOUT_S = 1.0
REFERENCE_CASE_TIMEOUT_S = CASE_TIMEOUT_S / 4
SEPARATORS = " ,-_./:\n\t"
# A case stops yielding after this many duplicate variants in a row: its literals are used up.
MAX_MISSES = 60
# Raised by either tree for reasons that say nothing about the code: such a case is not judged.
UNINFORMATIVE = {"builtins.RecursionError", "builtins.MemoryError"}


class GeneratedCase(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    setup: str
    expr: str
    source: str


class Disagreement(BaseModel):
    name: str
    source: str
    expr: str
    setup: str
    reference: Any
    candidate: Any


class GeneratedResult(BaseModel):
    """The host's comparison of a candidate with the reference fix on the generated inputs. `first`
    and `summary` show an input and the reference's answer: for the person's report. A chooser's
    view should get `public_summary`, as it gets no held-out input."""

    ok: bool
    total: int
    agreed: int
    skipped: int
    first: Disagreement | None
    problem: str | None = None

    @property
    def public_summary(self) -> str:
        if self.problem:
            return f"generated inputs: not judged ({self.problem})"
        skipped = f" ({self.skipped} skipped)" if self.skipped else ""
        return f"generated inputs: {self.agreed}/{self.total - self.skipped} agree with the reference fix{skipped}"

    @property
    def summary(self) -> str:
        if self.first is None:
            return self.public_summary
        d, shown = self.first, " ".join(f"{self.first.setup}; {self.first.expr}".split()).lstrip("; ")
        shown = shown if len(shown) <= 200 else shown[:197] + "..."
        return (f"{self.public_summary}; first disagreement: {d.name} {shown}: "
                f"reference {_show(d.reference)}, candidate {_show(d.candidate)}")


def seed_for(spec: HeldoutSpec) -> int:
    """The first 8 bytes of the sha256 of the held-out file's parsed content (canonical JSON): the same
    cases on every host and run; editing a case changes them, reformatting or comments do not."""
    return int.from_bytes(hashlib.sha256(spec.model_dump_json().encode()).digest()[:8], "big")


# --- generation -------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Site:
    """One literal of a case's source: its byte span in the UTF-8 source and what it is."""
    field: str            # "setup" or "expr"
    start: int
    end: int
    kind: str             # int float str bool list tuple set dict
    value: Any = None     # a number with its sign, a string, a bool
    parts: tuple[str, ...] = ()  # a container's elements, as source text ("k: v" for a dict)
    signed: bool = False  # written as `-3`: a negative replacement needs no parentheses
    weight: float = 1.0


def _sites(source: str, field: str) -> list[_Site]:
    if not source.strip():
        return []
    try:
        tree = ast.parse(source, mode="exec" if field == "setup" else "eval")
    except SyntaxError:
        return []
    raw = source.encode()
    line_starts = [0]
    for line in raw.split(b"\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)

    def span(node: Any) -> tuple[int, int]:
        return (line_starts[node.lineno - 1] + node.col_offset, line_starts[node.end_lineno - 1] + node.end_col_offset)

    def text(node: Any) -> str:
        start, end = span(node)
        return raw[start:end].decode()

    sites: list[_Site] = []
    skip: set[int] = set()
    # A key looked up (`d['a']`) mostly turns into a KeyError on both trees: chosen less often.
    keys = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
    if isinstance(tree, ast.Expression) and isinstance(tree.body, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
        skip.add(id(tree.body))  # the result's own shape: dropping a part only observes less
    for node in ast.walk(tree):  # breadth first: a parent is seen before its children
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):  # f-string parts have no reliable positions in 3.11
            skip.update(id(n) for n in ast.walk(node))
        elif (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd))
              and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)):
            skip.add(id(node.operand))
            number = cast(float, node.operand.value)
            value = -number if isinstance(node.op, ast.USub) else number
            sites.append(_Site(field, *span(node), type(value).__name__, value, signed=True))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bool):
            sites.append(_Site(field, *span(node), type(node.value).__name__, node.value,
                               weight=0.25 if id(node) in keys else 1.0))
        elif (isinstance(node, (ast.List, ast.Tuple, ast.Set)) and node.elts
              and not isinstance(getattr(node, "ctx", None), ast.Store)):
            kind = {ast.List: "list", ast.Tuple: "tuple", ast.Set: "set"}[type(node)]
            sites.append(_Site(field, *span(node), kind, parts=tuple(text(e) for e in node.elts)))
        elif isinstance(node, ast.Dict) and node.keys:
            parts = tuple(f"**{text(v)}" if k is None else f"{text(k)}: {text(v)}"
                          for k, v in zip(node.keys, node.values))
            sites.append(_Site(field, *span(node), "dict", parts=parts))
    return sites


def _number(site: _Site, rng: random.Random) -> int | float | None:
    n = site.value
    if site.kind == "int":
        groups = [[n - 2, n - 1, n + 1, n + 2, n + rng.randint(-9, 9)],     # nearby
                  [0, 1, -1],                                                 # boundaries
                  [n * 10, n * 100, int(n / 10), n * rng.randint(2, 9)],      # beyond the examples
                  [n * 1000, n * 10 ** 6, n * 10 ** rng.randint(3, 9)],      # far beyond them
                  [rng.randint(0, 2 * abs(n) + 10) * (-1 if n < 0 else 1)]]   # anywhere in between
    else:
        groups = [[n - 1, n + 1, n - 0.01, n + 0.01, n * (1 + rng.uniform(-0.1, 0.1))],
                  [0.0, 1.0, -1.0],
                  [n * 10, n * 100, n / 10, n * rng.uniform(2, 50)],
                  [n * 1000, n * 1e6, n * 10.0 ** rng.randint(3, 9)],
                  [math.floor(n) + rng.randint(0, 99) / 100, round(n, 1), n + rng.randint(1, 999) / 1000,
                   round(rng.uniform(0, 2 * abs(n) + 10), 2) * (-1 if n < 0 else 1)]]
    value = rng.choice(rng.choice(groups))
    if site.kind == "float":
        value = float(f"{value:.10g}")  # 19.98 * 100 is 1998.0, not 1998.0000000000002
        if not math.isfinite(value):
            return None
    # Sign kept (the examples' sign is usually a domain rule), but 0 is a boundary of either.
    if value == n or (n != 0 and value != 0 and (value < 0) != (n < 0)):
        return None
    return value


def _string(s: str, rng: random.Random) -> str:
    alphabet = sorted(set(s)) + list(SEPARATORS)  # sorted: a set's order would follow the hash seed
    i = rng.randint(0, len(s))
    j = min(len(s), i + rng.randint(1, 3))
    op = rng.choice(["empty", "insert", "insert", "delete", "replace", "replace", "duplicate", "case"])
    if op == "empty" or not s:
        return "" if op == "empty" else rng.choice(alphabet)
    if op == "insert":
        return s[:i] + rng.choice(alphabet) + s[i:]
    k = min(i, len(s) - 1)
    if op == "delete":
        return s[:k] + s[k + 1:]
    if op == "replace":
        return s[:k] + rng.choice(alphabet) + s[k + 1:]
    if op == "duplicate":
        return s[:j] + s[k:j] + s[j:]
    return rng.choice([s.swapcase(), s.upper(), s.lower(), s[:k] + s[k].swapcase() + s[k + 1:]])


def _container(site: _Site, rng: random.Random) -> str:
    parts = list(site.parts)  # never empty: an empty literal is no site
    op = rng.choice(["drop"] + (["duplicate"] if site.kind in ("list", "tuple") else [])  # a set or dict collapses it
                    + (["reorder"] if len(parts) > 1 and site.kind != "set" else []))
    if op == "drop":
        del parts[rng.randrange(len(parts))]
    elif op == "duplicate":
        parts.insert(rng.randint(0, len(parts)), rng.choice(parts))
    else:
        a, b = rng.sample(range(len(parts)), 2)
        parts[a], parts[b] = parts[b], parts[a]
    body = ", ".join(parts) + ("," if site.kind == "tuple" and len(parts) == 1 else "")
    if site.kind == "set" and not parts:
        return "set()"
    return {"list": "[{}]", "tuple": "({})"}.get(site.kind, "{{{}}}").format(body)


def _new_value(site: _Site, rng: random.Random) -> Any:
    """A scalar's new value (None: no change this time)."""
    if site.kind in ("int", "float"):
        return _number(site, rng)
    return _string(site.value, rng) if site.kind == "str" else not site.value


def _render(site: _Site, value: Any) -> str | None:
    if value is None:
        return None
    text = repr(value)
    # `x ** -1` and `(-1).bit_length()` need the parentheses; a literal written `-3` does not.
    return f"({text})" if isinstance(value, (int, float)) and value < 0 and not site.signed else text


def _edits(sites: list[_Site], rng: random.Random) -> list[tuple[_Site, str]]:
    """One literal changed; or one value changed everywhere it occurs (the same SKU added twice, the
    expiry day that is also the day checked: the relation between literals is often the point);
    or two unrelated literals changed."""
    first = rng.choices(sites, [s.weight for s in sites])[0]
    twins = [s for s in sites if not s.parts and s.kind == first.kind and s.value == first.value]
    if not first.parts and len(twins) > 1 and rng.random() < 0.4:
        value = _new_value(first, rng)
        edits = [(s, _render(s, value)) for s in twins]
    else:
        chosen = [first]
        apart = [s for s in sites if s.field != first.field or s.end <= first.start or s.start >= first.end]
        if apart and rng.random() < 0.3:
            chosen.append(rng.choice(apart))
        edits = [(s, _container(s, rng) if s.parts else _render(s, _new_value(s, rng))) for s in chosen]
    return [(s, text) for s, text in edits if text is not None]


def _variants(case: HeldoutCase, rng: random.Random, seen: set[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """Distinct (setup, expr) variants of one case until MAX_MISSES attempts in a row bring nothing new."""
    sites = _sites(case.setup, "setup") + _sites(case.expr, "expr")
    misses = 0
    while sites and misses < MAX_MISSES:
        new = {"setup": case.setup, "expr": case.expr}
        edits = _edits(sites, rng)
        for field in ("setup", "expr"):
            raw = new[field].encode()
            for site, text in sorted((e for e in edits if e[0].field == field), key=lambda e: -e[0].start):
                raw = raw[:site.start] + text.encode() + raw[site.end:]
            new[field] = raw.decode()
        key = (new["setup"], new["expr"])
        try:
            fresh = key not in seen and bool(ast.parse(key[0], mode="exec")) and bool(ast.parse(key[1], mode="eval"))
        except SyntaxError:
            fresh = False
        misses = 0 if fresh else misses + 1
        if fresh:
            seen.add(key)
            yield key


def generate_cases(spec: HeldoutSpec, *, seed: int, limit: int = 300) -> list[GeneratedCase]:
    """Up to `limit` distinct variants, spread evenly over the held-out cases (taken in turn, so a
    case with few literals leaves its share to the others); the same for the same spec and seed."""
    seen = {(c.setup, c.expr) for c in spec.case}  # a variant never repeats a hand-written case
    streams = {c.name: _variants(c, random.Random(f"{seed}:{c.name}"), seen) for c in spec.case}
    taken: dict[str, list[tuple[str, str]]] = {c.name: [] for c in spec.case}
    total = 0
    while streams and total < limit:
        for name in list(streams):
            if total >= limit:
                break
            variant = next(streams[name], None)
            if variant is None:
                del streams[name]
                continue
            taken[name].append(variant)
            total += 1
    return [GeneratedCase(name=f"gen:{name}:{k}", setup=setup, expr=expr, source=name)
            for name, variants in taken.items() for k, (setup, expr) in enumerate(variants)]


# --- judging ----------------------------------------------------------------------------------

def _index(rows: list[dict]) -> dict[str, dict]:
    return {row["name"]: row for row in reversed(rows) if isinstance(row, dict) and isinstance(row.get("name"), str)}


def _usable(row: dict) -> bool:
    """A reference row that says something about the code: a value, or an ordinary exception."""
    if row.get("timed_out") or row.get("fatal"):
        return False
    raised = row.get("raised")
    if raised is not None:
        return (isinstance(raised, list) and bool(raised) and all(isinstance(n, str) for n in raised)
                and not any(n in UNINFORMATIVE or n.endswith("._CaseTimedOut") for n in raised))
    return "value" in row


def _agree(reference: dict, candidate: dict) -> bool:
    if "raised" in reference:
        got = candidate.get("raised")
        return isinstance(got, list) and bool(got) and got[0] == reference["raised"][0]
    return ("value" in candidate and "raised" not in candidate and not candidate.get("timed_out")
            and same(reference["value"], candidate["value"]))


def reference_rows(rows_a: list[dict], rows_b: list[dict]) -> dict[str, dict]:
    """Two probe runs of the reference tree -> the expectations to judge by: a case is left out
    when either run timed out or raised RecursionError/MemoryError, or the runs disagree
    (nondeterminism: hash order, addresses, clocks)."""
    a, b = _index(rows_a), _index(rows_b)
    return {name: row for name, row in a.items()
            if name in b and _usable(row) and _usable(b[name]) and _agree(row, b[name])}


def _shown(row: dict | None) -> Any:
    return ("(not reported)" if row is None else {"raised": row["raised"]} if "raised" in row
            else {"timed_out": True} if row.get("timed_out") else row.get("value"))


def _show(value: Any) -> str:
    if isinstance(value, dict) and "raised" in value and isinstance(value["raised"], list) and value["raised"]:
        return f"raised {str(value['raised'][0]).removeprefix('builtins.')}"
    if isinstance(value, dict) and value.get("timed_out") is True:
        return "timed out"
    text = value if value == "(not reported)" else json.dumps(value, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


def compare(reference: dict[str, dict], candidate_rows: list[dict] | None, cases: list[GeneratedCase],
            problem: str | None = None) -> GeneratedResult:
    """Pure: the candidate's rows against the reference's, case by case. A case the reference has no
    usable row for is skipped; a missing, timed-out or differently typed candidate row disagrees."""
    total = len(cases)
    judged = [c for c in cases if c.name in reference]
    skipped = total - len(judged)
    if candidate_rows is None:
        return GeneratedResult(ok=False, total=total, agreed=0, skipped=skipped, first=None,
                               problem=problem or "no probe output")
    well_formed = all(isinstance(row, dict) and isinstance(row.get("name"), str) for row in candidate_rows)
    names = [str(row["name"]) for row in candidate_rows] if well_formed else []
    if not well_formed:
        problem = problem or "malformed probe row"
    elif len(set(names)) != len(names):
        problem = problem or "a case reported twice"
    elif unknown := sorted(set(names) - {c.name for c in cases}):
        problem = problem or f"unknown case(s) reported: {unknown[:3]}"
    rows = _index(candidate_rows)
    agreed, first = 0, None
    for case in judged:
        row = rows.get(case.name)
        if row is not None and _agree(reference[case.name], row):
            agreed += 1
        elif first is None:
            first = Disagreement(name=case.name, source=case.source, expr=case.expr, setup=case.setup,
                                 reference=_shown(reference[case.name]), candidate=_shown(row))
    return GeneratedResult(ok=problem is None and first is None, total=total, agreed=agreed, skipped=skipped,
                           first=first, problem=problem)


def request(spec: HeldoutSpec, cases: list[GeneratedCase], root: str, *,
            case_timeout_s: float = CASE_TIMEOUT_S) -> dict:
    """What the probe receives for generated cases: the spec's paths and setup, the cases' inputs."""
    return {"root": root, "paths": list(spec.paths), "setup": spec.setup, "case_timeout_s": case_timeout_s,
            "cases": [{"name": c.name, "setup": c.setup, "expr": c.expr} for c in cases]}


def probe_local(spec: HeldoutSpec, cases: list[GeneratedCase], root: Path, *,
                case_timeout_s: float = CASE_TIMEOUT_S) -> tuple[list[dict] | None, str | None]:
    """The probe in a plain local subprocess (NOT isolated, as `heldout.run_probe_local`): for
    scenario authors, tests and the corpus script. Returns (rows, problem)."""
    data = json.dumps(request(spec, cases, str(Path(root).resolve()), case_timeout_s=case_timeout_s))
    timeout_s = 30 + case_timeout_s * len(cases)
    try:  # under 2 GiB: a scaled-up input must not take the host's memory (a container has its own limit)
        proc = subprocess.run([sys.executable, "-I", "-S", str(PROBE_SOURCE)], input=data.encode(),
                              capture_output=True, timeout=timeout_s,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30)))
    except subprocess.TimeoutExpired:
        return None, f"the probe did not finish within {timeout_s:g}s"
    parsed, problem = parse_probe_output(proc.stdout.decode(errors="replace"))
    return (parsed["results"], None) if parsed is not None else (None, problem)
