"""The search chooser's weight table: complete, typed, and what decides the order of candidates."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from repair_agent.choosers.search import Failure
from repair_agent.choosers.search.catalogue import Candidate, line_mutations
from repair_agent.choosers.search.ranking import rank_candidates
from repair_agent.choosers.search.weights import WEIGHTS, Family, Rule, activate, active, load_weights
from repair_agent.in_sandbox import operators
from repair_agent.hints.mutation import MutantFix

SOURCE = '''\
def window(items, n):
    if n > len(items):
        return items
    return items[:n - 1]
'''
LINES = {i + 1: t for i, t in enumerate(SOURCE.splitlines(keepends=True))}


def test_the_committed_table_has_a_weight_for_every_family_and_rule():
    assert set(WEIGHTS.prior) == set(Family) and set(WEIGHTS.rule) == set(Rule)
    assert load_weights(WEIGHTS.to_json()) == WEIGHTS   # it round-trips through its file format


def test_a_table_missing_a_rule_or_naming_an_unknown_one_is_refused():
    data = json.loads(WEIGHTS.to_json())
    del data["rule"]["parameter_order"]
    with pytest.raises(ValidationError, match="parameter_order"):
        load_weights(json.dumps(data))
    data = json.loads(WEIGHTS.to_json())
    data["rule"]["parametre_order"] = 1.0
    with pytest.raises(ValidationError):
        load_weights(json.dumps(data))


def test_every_family_the_operator_table_emits_is_a_known_family():
    # the operator table's own source is a varied enough text: every line of it, mutated
    text = Path(operators.__file__).read_text()
    families = {f for line in text.splitlines(keepends=True) for f, _, _ in operators.line_mutations(line, (3,), ("a", "b"))}
    assert len(families) > 15 and families <= {f.value for f in Family}
    with pytest.raises(ValueError):
        Candidate("m.py", 1, ("x\n",), "guard", "an unknown family")


def test_the_table_decides_which_candidate_comes_first():
    f = Failure(message="assert [1] == [1, 2]", got=[1], expected=[1, 2], have_values=True, callees=["window"],
                assert_lines=["assert window([1, 2, 3], 2) == [1, 2]"], hints={"boundary"},
                suspicious={("m.py", 4): 1.0, ("m.py", 2): 0.5}, suspicious_complete=True,
                mutant_fixes={("m.py", 4): [MutantFix(path="m.py", line=4, text="    return items[:n]", what="drop - 1",
                                                      fixed=1, of=1, broken=0, checked=3)]})
    first = rank_candidates(f, {"m.py": LINES}, [], "window keeps the first n items", seed=0)[0]
    assert (first.line, first.new_lines) == (4, ("    return items[:n]\n",))   # the analysis's clean fix
    favours_swaps = WEIGHTS.model_copy(update={"prior": {**WEIGHTS.prior, Family.SWAP: 40.0}})
    activate(favours_swaps)
    try:
        assert active() is favours_swaps
        assert rank_candidates(f, {"m.py": LINES}, [], "window keeps the first n items", seed=0)[0].kind == Family.SWAP
    finally:
        activate(None)
    assert active() is WEIGHTS


def test_a_candidate_keeps_the_features_it_was_scored_by():
    f = Failure(hints={"boundary"}, suspicious={("m.py", 2): 1.0})
    c = next(c for c in rank_candidates(f, {"m.py": LINES}, [], "", seed=0) if c.what == "> -> >=")
    assert c.features["prior:boundary"] == 1 and c.features["hint:boundary:boundary"] == 1
    assert c.score == pytest.approx(c.base + WEIGHTS.dot(c.features))
    assert any(w == "> -> >=" for _, w, _ in line_mutations(LINES[2]))
