"""Clean fixes the tests cannot tell apart (in_sandbox/behaviour.py): the analysis records what each
did on the tests, run for real on small repositories."""
from __future__ import annotations

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


def test_fixes_that_did_the_same_on_every_test_share_a_behaviour(tmp_path):
    # `size = limit`, `size = limit - width(word)`, `word[:size + 1]`, `word[:limit]` and `len(sep) - 1`
    # all return what the tests expect from `cut` (every separator tested is "-"): one behaviour, five
    # edits, each with the tokens it adds to its line (a term dropped removes five)
    m = localize(calc_sandbox(tmp_path, CUT, CUT_TESTS), ("tests/test_calc.py::test_cut",), ("src/**",),
                 mutate=True).mutation
    assert m is not None
    clean = {f.text.strip(): f for f in m.fixes if f.clean}
    assert len(clean) >= 4 and len({f.behaviour for f in clean.values()}) == 1 and clean["size = limit"].behaviour
    assert clean["size = limit"].tokens_added == -5 and clean["return word[:size + 1]"].tokens_added == 2


def test_a_fix_that_leaves_the_object_in_another_state_is_another_behaviour(tmp_path):
    # `min(i + 1, ...)` caches one item, `max(i, ...)` all three: `get` returns 1 either way, the
    # object differs (an iterator read to its end is another program)
    m = localize(calc_sandbox(tmp_path, PEEK, PEEK_TESTS), ("tests/test_calc.py::test_first",), ("src/**",),
                 mutate=True).mutation
    assert m is not None
    by_text = {f.text.strip(): f.behaviour for f in m.fixes if f.clean}
    assert "n = min(i + 1, len(self.items))" in by_text and "n = max(i, len(self.items))" in by_text, by_text
    assert by_text["n = min(i + 1, len(self.items))"] != by_text["n = max(i, len(self.items))"]
