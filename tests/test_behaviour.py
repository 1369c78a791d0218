"""Clean fixes the tests cannot tell apart (in_sandbox/behaviour.py): the analysis records what each
did on the tests, run for real on small repositories, and the search chooser tries the simplest of
those that did the same."""
from __future__ import annotations

from repair_agent.choosers.search import Failure
from repair_agent.choosers.search.mutants import _clean_count, mutant_candidates, mutation_features
from repair_agent.choosers.search.weights import Rule
from repair_agent.hints.localization import localize
from repair_agent.in_sandbox.behaviour import Recorder, stable_repr

from helpers import calc_sandbox

CUT = '''\
def width(sep):
    return len(sep)


def cut(word, limit, sep="-"):
    size = limit - width(sep)
    return word[:size]
'''

CUT_TESTS = '''\
from calc import cut


def test_cut():
    assert cut("abcdef", 3) == "abc"


def test_short():
    assert cut("ab", 5) == "ab"
'''

PEEK = '''\
class Peek:
    def __init__(self, items):
        self.items = list(items)
        self.cache = []

    def get(self, i):
        n = min(i, len(self.items))
        while len(self.cache) < n:
            self.cache.append(self.items[len(self.cache)])
        return self.cache[i]
'''

PEEK_TESTS = '''\
from calc import Peek


def test_first():
    assert Peek([1, 2, 3]).get(0) == 1


def test_items():
    assert Peek((4, 5)).items == [4, 5]
'''


def test_a_repr_without_addresses_and_only_calls_from_outside_the_file_are_behaviour():
    assert stable_repr(object()).startswith("<object object") and " at 0x" not in stable_repr(object())
    rec = Recorder("src/calc.py")
    assert rec.digest({"t": "passed"}) == Recorder("src/calc.py").digest({"t": "passed"})
    assert rec.digest({"t": "passed"}) != rec.digest({"t": "failed: x"})


def test_fixes_that_did_the_same_on_every_test_share_a_behaviour_and_the_simplest_is_tried_first(tmp_path):
    # `size = limit`, `size = limit - width(word)`, `word[:size + 1]`, `word[:limit]` and `len(sep) - 1`
    # all return what the tests expect from `cut` (every separator tested is "-"): one behaviour, five
    # edits. The tests cannot tell them apart: the one that adds the fewest tokens goes first.
    m = localize(calc_sandbox(tmp_path, CUT, CUT_TESTS), ("tests/test_calc.py::test_cut",), ("src/**",),
                 mutate=True).mutation
    assert m is not None
    clean = [f for f in m.fixes if f.clean]
    assert len(clean) >= 4 and len({f.behaviour for f in clean}) == 1 and clean[0].behaviour
    f = Failure(mutant_fixes={})
    for fx in clean:
        f.mutant_fixes.setdefault((fx.path, fx.line), []).append(fx)
    assert _clean_count(f) == 1   # one behaviour: not a crowd
    lines = {i + 1: t for i, t in enumerate(CUT.splitlines(keepends=True))}
    longer = {"".join(c.new_lines).strip(): (Rule.MUTANT_EQUIVALENT_LONGER, 1.0) in mutation_features(c, f)
              for c in mutant_candidates("src/calc.py", lines, f)}
    assert longer.pop("size = limit") is False
    assert longer and all(longer.values()), longer


def test_a_fix_that_leaves_the_object_in_another_state_is_another_behaviour(tmp_path):
    # `min(i + 1, ...)` caches one item, `max(i, ...)` all three: `get` returns 1 either way, the
    # object differs (an iterator read to its end is another program)
    m = localize(calc_sandbox(tmp_path, PEEK, PEEK_TESTS), ("tests/test_calc.py::test_first",), ("src/**",),
                 mutate=True).mutation
    assert m is not None
    by_text = {f.text.strip(): f.behaviour for f in m.fixes if f.clean}
    assert "n = min(i + 1, len(self.items))" in by_text and "n = max(i, len(self.items))" in by_text, by_text
    assert by_text["n = min(i + 1, len(self.items))"] != by_text["n = max(i, len(self.items))"]
