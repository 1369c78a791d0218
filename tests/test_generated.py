"""Generated held-out inputs (verifier/generated.py): variants of the hand-written cases whose
literals change, judged by agreement with the reference fix on plain data.

Generation is deterministic per seed and keeps names, calls and structure; the comparison is
the host's (floats within tolerance, raised-vs-raised by exception class, a missing, timed-out or
unjudgeable candidate row disagrees, nondeterministic reference cases are skipped). End to end on
discount-bug, locally (no Docker): the reference agrees with itself, the buggy tree disagrees, and a
forged fix right only below a price of 1000 passes all 12 hand-written cases but not the generated.
"""
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from verifier.generated import (CASE_TIMEOUT_S, REFERENCE_CASE_TIMEOUT_S, SEPARATORS, Disagreement, GeneratedCase,
                                GeneratedResult, compare, generate_cases, probe_local, reference_rows, seed_for)
from verifier.heldout import HeldoutSpec, run_probe_local

ROOT = Path(__file__).resolve().parents[1]
REPOS = ROOT / "sandbox_repos"
DISCOUNT = HeldoutSpec.load(REPOS / "discount-bug.heldout.toml")
MERGE = HeldoutSpec.load(REPOS / "discount-merge-quantities.heldout.toml")


def spec_of(*exprs: str, setup: str = "", case_setup: str = "") -> HeldoutSpec:
    return HeldoutSpec.model_validate({"setup": setup, "case": [
        {"name": f"c{i}", "expr": e, "setup": case_setup, "expect": 0} for i, e in enumerate(exprs)]})


def cases_named(*names: str) -> list[GeneratedCase]:
    return [GeneratedCase(name=n, setup="", expr=f"f({i})", source="c") for i, n in enumerate(names)]


# --- generation -------------------------------------------------------------------------------

def test_the_same_seed_gives_the_same_cases_in_any_process_and_another_seed_others():
    first = generate_cases(DISCOUNT, seed=7)
    assert first == generate_cases(DISCOUNT, seed=7)
    assert first != generate_cases(DISCOUNT, seed=8)
    # Nothing depends on the hash seed (a set of characters is sorted before it is drawn from).
    code = ("import json; from pathlib import Path; from verifier.heldout import HeldoutSpec; "
            "from verifier.generated import generate_cases, seed_for; "
            "s = HeldoutSpec.load(Path('sandbox_repos/discount-merge-quantities.heldout.toml')); "
            "print(json.dumps([seed_for(s)] + [c.model_dump() for c in generate_cases(s, seed=seed_for(s))]))")
    outs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert outs[0] == outs[1]
    assert json.loads(outs[0])[1:] == [c.model_dump() for c in generate_cases(MERGE, seed=seed_for(MERGE))]


def test_the_seed_follows_the_held_out_content_not_its_formatting(tmp_path):
    text = (REPOS / "discount-bug.heldout.toml").read_text()
    (tmp_path / "commented.toml").write_text("# another comment\n" + text.replace(" = ", "  =  "))
    (tmp_path / "edited.toml").write_text(text.replace("apply_discount(300, 7)", "apply_discount(301, 7)"))
    assert seed_for(HeldoutSpec.load(tmp_path / "commented.toml")) == seed_for(DISCOUNT)
    assert seed_for(HeldoutSpec.load(tmp_path / "edited.toml")) != seed_for(DISCOUNT)
    assert isinstance(seed_for(DISCOUNT), int) and seed_for(DISCOUNT) == seed_for(DISCOUNT.model_copy())


def test_every_kind_of_literal_varies_as_its_kind():
    spec = spec_of("f(300, -4, 2.5, 'abc', True, None, [1, 2, 3], (1, 2), {'k': 1, 'j': 2}, {7, 8})")
    seen: dict[int, list] = {i: [] for i in range(10)}
    for case in generate_cases(spec, seed=1, limit=300):
        call = ast.parse(case.expr, mode="eval").body
        assert isinstance(call, ast.Call) and ast.unparse(call.func) == "f" and len(call.args) == 10
        for i, arg in enumerate(call.args):
            seen[i].append(ast.literal_eval(arg))
    ints, negatives, floats, strings, bools, nones, lists, tuples, dicts, sets = seen.values()
    assert all(type(v) is int and v >= 0 for v in ints)                       # sign kept (0 allowed)
    assert {3000, 30000, 30} & set(ints) and {0, 1} & set(ints) and {299, 301} & set(ints)
    assert all(type(v) is int and v <= 0 for v in negatives) and {-40, -400} & set(negatives)
    assert all(type(v) is float and v >= 0 for v in floats) and {25.0, 250.0} & set(floats)
    assert any(v not in (2.5, 25.0, 250.0, 0.25, 0.0, 1.0) for v in floats)    # other decimals
    assert "" in strings and {"ABC", "Abc", "aBc", "abC"} & set(strings)
    assert all(set(s) <= set("abcABC") | set(SEPARATORS) for s in strings)
    assert any(len(s) == 4 for s in strings) and any(len(s) == 2 for s in strings)
    assert set(bools) == {True, False} and set(nones) == {None}
    assert {2, 4} <= {len(v) for v in lists} and ([2, 1, 3] in lists or [1, 3, 2] in lists or [3, 2, 1] in lists)
    assert all(type(v) is tuple for v in tuples) and {(1,), (2, 1), (1, 2, 2)} & set(tuples)
    assert {"k": 1} in dicts and ["j", "k"] in [list(d) for d in dicts]
    assert all(type(v) is set for v in sets) and {7} in sets


def test_names_calls_and_structure_stay_only_literals_change():
    class Blank(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            return ast.Constant("?")

        def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:  # `-3` may become `0`
            return ast.Constant("?") if isinstance(node.operand, ast.Constant) else self.generic_visit(node)

    def skeleton(source: str, mode: str) -> str:
        return ast.dump(Blank().visit(ast.parse(source, mode=mode)))

    for spec in (DISCOUNT, MERGE):
        by_name = {c.name: c for c in spec.case}
        generated = generate_cases(spec, seed=seed_for(spec))
        assert len(generated) == 300
        for case in generated:
            source = by_name[case.source]
            assert skeleton(case.expr, "eval") == skeleton(source.expr, "eval")
            assert skeleton(case.setup, "exec") == skeleton(source.setup, "exec")
            assert (case.setup, case.expr) != (source.setup, source.expr)
    # A case-level setup varies (its literals are inputs too); the spec-level setup is not copied in.
    changed = [c for c in generate_cases(MERGE, seed=3) if c.setup != {x.name: x for x in MERGE.case}[c.source].setup]
    assert changed and all("import" not in c.setup for c in changed)


def test_a_negative_value_replacing_a_bare_literal_keeps_its_meaning():
    exprs = [c.expr for c in generate_cases(spec_of("0 ** 2", "x[-3]"), seed=5, limit=100)]
    assert any(e.startswith("(-1) ** ") or e.startswith("(-2) ** ") for e in exprs)
    assert any(e == "x[-4]" or e == "x[-1]" for e in exprs)                    # `-3` stays unparenthesized
    assert not any(e.startswith("-") for e in exprs)


def test_literals_after_non_ascii_text_and_on_later_lines_are_found_by_their_byte_offsets():
    spec = spec_of("g('h\u00e9llo \u2603', 5)", case_setup="x = '\u00fc'\ny = [1,\n     2]\nz = -7")
    generated = generate_cases(spec, seed=4, limit=200)
    assert len(generated) == 200
    for case in generated:
        ast.parse(case.setup), ast.parse(case.expr, mode="eval")
    assert any(c.expr.startswith("g('h\u00e9llo \u2603', ") and not c.expr.endswith(" 5)") for c in generated)
    assert any("y = [2, 1]" in c.setup for c in generated) and any("z = -70" in c.setup for c in generated)


def test_the_same_value_sometimes_changes_everywhere_it_occurs():
    generated = generate_cases(MERGE, seed=seed_for(MERGE))
    two_adds = [c.setup for c in generated if c.source == "two_adds_merge"]
    assert any(s.count("'SOAP'") == 0 and len({a.split(",")[0] for a in s.split("c.add(")[1:]}) == 1 for s in two_adds)


def test_variants_are_distinct_and_never_a_hand_written_case():
    for spec in (DISCOUNT, MERGE, spec_of("f(1)", "f(2)", "f(3)")):
        generated = generate_cases(spec, seed=11)
        keys = [(c.setup, c.expr) for c in generated]
        assert len(set(keys)) == len(keys)
        assert not set(keys) & {(c.setup, c.expr) for c in spec.case}
        assert len({c.name for c in generated}) == len(generated)
        for source, count in Counter(c.source for c in generated).items():
            assert [c.name for c in generated if c.source == source] == [f"gen:{source}:{k}" for k in range(count)]


def test_the_cap_is_spread_evenly_and_a_case_with_few_literals_leaves_its_share():
    assert set(Counter(c.source for c in generate_cases(DISCOUNT, seed=1)).values()) == {25}
    thirty = Counter(c.source for c in generate_cases(DISCOUNT, seed=1, limit=30))
    assert sum(thirty.values()) == 30 and max(thirty.values()) - min(thirty.values()) <= 1
    few = Counter(c.source for c in generate_cases(spec_of("f(True)", "g(x)", "h(10, 'ab')"), seed=1, limit=40))
    assert few == {"c0": 1, "c2": 39}  # f(False) is all f(True) has; g(x) has no literal
    assert generate_cases(DISCOUNT, seed=1, limit=0) == []
    assert generate_cases(spec_of("f(x)", "g([], {}, (), set())"), seed=1) == []  # nothing to vary


# --- judging ----------------------------------------------------------------------------------

def value(name: str, v) -> dict:
    return {"name": name, "value": v}


def raised(name: str, *mro: str) -> dict:
    return {"name": name, "raised": [*mro, "builtins.Exception", "builtins.BaseException", "builtins.object"]}


def test_compare_values_floats_within_tolerance_and_types():
    cases = cases_named("a", "b", "c", "d")
    ref = {r["name"]: r for r in [value("a", 279.0), value("b", [1, "x"]), value("c", 3),
                                  value("d", {"__tuple__": [1]})]}
    same = compare(ref, [value("a", 279.0 + 1e-12), value("b", [1, "x"]), value("c", 3.0),
                         value("d", {"__tuple__": [1]})], cases)
    assert same.ok and same.agreed == 4 and same.first is None
    assert same.summary == "generated inputs: 4/4 agree with the reference fix"
    off = compare(ref, [value("a", 279.01), value("b", [1, "x"]), value("c", True), value("d", [1])], cases)
    assert not off.ok and off.agreed == 1 and off.first is not None and off.first.name == "a"
    assert off.first == Disagreement(name="a", source="c", expr="f(0)", setup="", reference=279.0, candidate=279.01)
    assert off.summary == ("generated inputs: 1/4 agree with the reference fix; first disagreement: a f(0): "
                           "reference 279.0, candidate 279.01")
    assert off.public_summary == "generated inputs: 1/4 agree with the reference fix"


def test_compare_exceptions_by_their_first_class():
    cases = cases_named("a", "b", "c", "d")
    ref = {"a": raised("a", "builtins.ValueError"), "b": raised("b", "builtins.ValueError"),
           "c": raised("c", "builtins.KeyError", "builtins.LookupError"), "d": value("d", 1)}
    result = compare(ref, [raised("a", "builtins.ValueError"), raised("b", "shop.PriceError", "builtins.ValueError"),
                           value("c", None), raised("d", "builtins.TypeError")], cases)
    assert result.agreed == 1 and not result.ok
    assert result.first is not None and result.first.name == "b"
    assert "reference raised ValueError, candidate raised shop.PriceError" in result.summary


def test_a_missing_timed_out_or_unjudgeable_candidate_row_disagrees():
    cases = cases_named("a", "b", "c")
    ref = {n: value(n, 1.5) for n in "abc"}
    for rows, shown in [([value("b", 1.5), value("c", 1.5)], "(not reported)"),
                        ([{"name": "a", "timed_out": True}, value("b", 1.5), value("c", 1.5)], "timed out"),
                        ([value("a", {"__unjudgeable__": "shop.FakeFloat"}), value("b", 1.5), value("c", 1.5)],
                         '{"__unjudgeable__": "shop.FakeFloat"}')]:
        result = compare(ref, rows, cases)
        assert not result.ok and result.agreed == 2 and result.first is not None and result.first.name == "a"
        assert result.summary.endswith(f"reference 1.5, candidate {shown}")


def test_no_output_forged_rows_or_a_probe_problem_are_not_a_pass():
    cases = cases_named("a")
    ref = {"a": value("a", 1)}
    none = compare(ref, None, cases, "the probe timed out")
    assert not none.ok and none.problem == "the probe timed out"
    assert none.summary == "generated inputs: not judged (the probe timed out)"
    assert compare(ref, None, cases).problem == "no probe output"
    assert compare(ref, [value("a", 1), value("a", 1)], cases).problem == "a case reported twice"
    assert "unknown case" in (compare(ref, [value("a", 1), value("zzz", 1)], cases).problem or "")
    assert compare(ref, [value("a", 1), "junk"], cases).problem == "malformed probe row"  # type: ignore[list-item]
    assert not compare(ref, [value("a", 1)], cases, "the probe's exit code was 1").ok


def test_reference_rows_skip_nondeterministic_timed_out_and_resource_errors():
    a = [value("same", [1, 2]), value("random", 0.25), value("ids", "<obj at 0x1>"),
         {"name": "slow", "timed_out": True},
         raised("deep", "builtins.RecursionError", "builtins.RuntimeError"), raised("big", "builtins.MemoryError"),
         raised("bad", "builtins.ValueError"), value("only_a", 1), value("flaky_timeout", 3),
         raised("alarm", "__main__._CaseTimedOut")]
    b = [value("same", [1, 2]), value("random", 0.75), value("ids", "<obj at 0x2>"),
         {"name": "slow", "timed_out": True},
         raised("deep", "builtins.RecursionError", "builtins.RuntimeError"), raised("big", "builtins.MemoryError"),
         raised("bad", "builtins.ValueError"), {"name": "flaky_timeout", "timed_out": True},
         raised("alarm", "__main__._CaseTimedOut")]
    reference = reference_rows(a, b)
    assert sorted(reference) == ["bad", "same"]
    cases = cases_named(*[r["name"] for r in a])
    # A candidate that differs only on skipped cases agrees; skipped cases are counted, not judged.
    result = compare(reference, [value("same", [1, 2]), raised("bad", "builtins.ValueError")]
                     + [value(c.name, "anything") for c in cases if c.name not in reference], cases)
    assert result == GeneratedResult(ok=True, total=10, agreed=2, skipped=8, first=None)
    assert result.summary == "generated inputs: 2/2 agree with the reference fix (8 skipped)"


# --- end to end, locally ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def discount_trees(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("discount")
    trees = {}
    for name in ("buggy", "reference", "forged"):
        tree = trees[name] = base / name
        shutil.copytree(REPOS / "discount_shop", tree, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    subprocess.run(["git", "apply", str(REPOS / "bugs" / "discount-bug.fix.diff")], cwd=trees["reference"],
                   check=True, env={**os.environ, "GIT_CEILING_DIRECTORIES": str(base)})
    pricing = trees["forged"] / "src" / "discount_shop" / "pricing.py"
    # Right wherever the 12 hand-written cases look (every price there is below 1000), wrong above.
    pricing.write_text(pricing.read_text().replace(
        "discounted = price * (1 - discount)",
        "discounted = price * (1 - (discount / 100 if price < 1000 else discount))"))
    return trees


def against(reference: dict[str, dict], tree: Path, cases: list[GeneratedCase]) -> GeneratedResult:
    rows, problem = probe_local(DISCOUNT, cases, tree)
    return compare(reference, rows, cases, problem)


def test_discount_bug_the_reference_agrees_with_itself_the_bug_and_a_forged_fix_do_not(discount_trees):
    cases = generate_cases(DISCOUNT, seed=seed_for(DISCOUNT))
    # The reference as the verifier probes it (a quarter of the time per case), then as a candidate.
    runs = [probe_local(DISCOUNT, cases, discount_trees["reference"], case_timeout_s=t)
            for t in (REFERENCE_CASE_TIMEOUT_S, REFERENCE_CASE_TIMEOUT_S, CASE_TIMEOUT_S)]
    assert all(problem is None and rows is not None and len(rows) == len(cases) for rows, problem in runs)
    reference = reference_rows(runs[0][0] or [], runs[1][0] or [])
    assert len(reference) == len(cases) == 300
    itself = compare(reference, runs[2][0], cases, runs[2][1])
    assert itself.ok and itself.agreed == 300, itself.summary

    buggy = against(reference, discount_trees["buggy"], cases)
    assert not buggy.ok and buggy.agreed < 250, buggy.summary

    assert run_probe_local(DISCOUNT, discount_trees["forged"]).summary == "held-out checks: 12/12 passed"
    forged = against(reference, discount_trees["forged"], cases)
    assert not forged.ok and forged.first is not None, forged.summary
    calls = [n for n in ast.walk(ast.parse(forged.first.expr, mode="eval"))
             if isinstance(n, ast.Call) and ast.unparse(n.func) == "apply_discount"]
    assert calls and ast.literal_eval(calls[0].args[0]) >= 1000
    assert "first disagreement: gen:" in forged.summary and "candidate" in forged.summary


def test_a_looping_or_nondeterministic_reference_case_is_skipped_not_held_against_a_candidate(tmp_path):
    (tmp_path / "mod.py").write_text(
        "import random\n"
        "def slow(n):\n    while n > 100:\n        pass\n    return n\n"
        "def noisy(n):\n    return n + random.random()\n")
    spec = spec_of("slow(50)", "noisy(1)", "slow(60) + 1", setup="from mod import slow, noisy")
    cases = generate_cases(spec, seed=2, limit=36)
    runs = [probe_local(spec, cases, tmp_path, case_timeout_s=0.2)[0] or [] for _ in range(3)]
    assert any(r.get("timed_out") for r in runs[0])
    reference = reference_rows(runs[0], runs[1])
    assert not any(n.startswith("gen:c1:") for n in reference)               # noisy: never twice the same
    assert any(n.startswith("gen:c0:") for n in reference)
    result = compare(reference, runs[2], cases)
    assert result.ok and result.skipped >= 12 + 1, result.summary
