"""Wrong default values in the mutation analysis: a `def` line never runs inside a test (its defaults are
made when the module is imported), so the analysis edits the defaults of the functions the failing
tests run and puts each into the live function for the run (real pytest, local sandbox)."""
from __future__ import annotations

from repair_agent.hints.localization import localize
from repair_agent.in_sandbox.default_edits import default_mutants

from helpers import calc_sandbox

DEFAULTS = '''\
def put(doc, key, value, *, create=True):
    if key not in doc and not create:
        raise KeyError(key)
    doc[key] = value
    return doc


class Shelf:
    def __init__(self):
        self.items = {}

    def take(self, key, count=2, strict=None):
        have = self.items.get(key, 0)
        return min(have, count)
'''

DEFAULTS_TESTS = '''\
import pytest

from calc import Shelf, put


def test_a_missing_key_is_refused_unless_asked_for():
    with pytest.raises(KeyError):
        put({}, "a", 1)


def test_put():
    assert put({}, "a", 1, create=True) == {"a": 1}
    assert put({"a": 0}, "a", 1) == {"a": 1}


def test_take_one_by_default():
    shelf = Shelf()
    shelf.items["x"] = 5
    assert shelf.take("x") == 1


def test_take():
    shelf = Shelf()
    shelf.items["x"] = 5
    assert shelf.take("x", 3) == 3 and shelf.take("y", 3) == 0
'''


def test_the_defaults_of_a_def_become_mutants_of_its_line():
    lines = DEFAULTS.splitlines(keepends=True)
    made = default_mutants(DEFAULTS, 1)
    assert [(n, what, family) for n, _, what, family, _ in made] == [(1, "default create=True -> create=False", "default")]
    assert made[0][1] == "def put(doc, key, value, *, create=False):\n"
    take = default_mutants(DEFAULTS, 12)
    assert [what for _, _, what, _, _ in take] == ["default count=2 -> count=3", "default count=2 -> count=1",
                                                   "default count=2 -> count=0"]
    assert all(new != lines[11] for _, new, _, _, _ in take)


def test_a_keyword_only_default_is_found_wrong_by_the_analysis(tmp_path):
    sandbox = calc_sandbox(tmp_path, DEFAULTS, DEFAULTS_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_a_missing_key_is_refused_unless_asked_for",), ("src/**",),
                 mutate=True).mutation
    assert m is not None
    clean = [(f.line, f.text, f.what) for f in m.fixes if f.clean]
    assert clean == [(1, "def put(doc, key, value, *, create=False):", "default create=True -> create=False")], clean


def test_a_method_s_positional_default_is_found_wrong_and_the_original_put_back(tmp_path):
    # the attack on a default swap is one that leaks: `count=0` left in place would fail test_take
    sandbox = calc_sandbox(tmp_path, DEFAULTS, DEFAULTS_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_take_one_by_default",), ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [(f.line, f.what) for f in m.fixes if f.clean]
    assert [c for c in clean if c[1].startswith("default")] == [(12, "default count=2 -> count=1")], clean
