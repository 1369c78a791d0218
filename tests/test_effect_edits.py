"""A state change a sibling method makes, inserted before a `return` of a method that lacks it: which
statements qualify, where they go, and the mutation analysis finding the forgotten one on a real pytest
run of a small repository in the local sandbox."""
from __future__ import annotations

from repair_agent.hints.localization import localize
from repair_agent.in_sandbox import effect_edits as E

from helpers import calc_sandbox

CACHE = '''\
from collections import OrderedDict

LIMIT = 2


class Cache:
    def __init__(self, capacity=LIMIT):
        self.capacity = capacity
        self.cache = OrderedDict()
        self.hits = 0

    def get(self, key, default=None):
        value = self.cache.get(key)
        if value is not None:
            return value
        return default

    def set(self, key, value):
        if key in self.cache:
            self.cache.move_to_end(key, last=True)
        self.cache[key] = value
        if len(self.cache) > self.capacity:
            self.cache.popitem(last=False)

    def count(self, key):
        self.hits += 1
        return self.hits

    def keys(self):
        return list(self.cache)


def helper(cache, key):
    cache.clear()
    return key
'''

CACHE_TESTS = '''\
from calc import Cache


def test_a_read_entry_is_kept():
    c = Cache()
    c.set("a", 1)
    c.set("b", 2)
    c.get("a")
    c.set("c", 3)
    assert c.keys() == ["a", "c"]


def test_the_oldest_goes():
    c = Cache()
    c.set("a", 1)
    c.set("b", 2)
    c.set("c", 3)
    assert c.keys() == ["b", "c"]


def test_a_missing_key_gives_the_default():
    c = Cache()
    assert c.get("x", 5) == 5
    assert c.keys() == []
'''


def _edits(source: str) -> dict[int, list[str]]:
    methods, known = E.methods(source)
    out = {}
    for n, line in enumerate(source.splitlines(keepends=True), 1):
        if edits := E.effect_edits(line, n, methods, known):
            out[n] = [new.split("\n")[0].strip() for _, _, new in edits]
    return out


def test_a_siblings_change_of_a_shared_attribute_goes_before_each_return():
    edits = _edits(CACHE)
    # `return value` (line 15): the statements that use the method's own values first
    assert edits[15] == ["self.cache[key] = value", "self.cache.move_to_end(key, last=True)",
                         "self.cache = OrderedDict()", "self.cache.popitem(last=False)"]
    assert edits[16] == edits[15]
    # `count` changes `self.hits`, which `get` never uses; `__init__`'s `self.capacity = capacity` reads a
    # name `get` does not have; `keys` uses `self.cache` and has no `key`: only the statements it can run
    assert edits[30] == ["self.cache = OrderedDict()", "self.cache.popitem(last=False)"]
    assert edits[27] == ["self.hits = 0"]
    # nothing before a line that is not a `return`, nor in a function outside a class
    assert set(edits) == {15, 16, 27, 30}
    # a statement the method makes already is not offered again
    own = CACHE.replace("            return value", "            self.cache.move_to_end(key, last=True)\n            return value")
    assert "self.cache.move_to_end(key, last=True)" not in _edits(own)[16]


def test_a_name_bound_only_below_the_return_is_not_ready():
    source = '''\
class A:
    def f(self, x):
        if x:
            return 1
        y = x
        return y

    def g(self, y):
        self.items.append(y)
        return self.items
'''
    source = source.replace("        if x:", "        self.items = []\n        if x:")
    assert _edits(source).get(5) is None   # `return 1` comes before `y` is bound
    assert _edits(source)[7] == ["self.items.append(y)"]


def test_the_analysis_finds_the_forgotten_state_change(tmp_path):
    sandbox = calc_sandbox(tmp_path, CACHE, CACHE_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_a_read_entry_is_kept",), ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [f for f in m.fixes if f.clean]
    assert [(f.line, f.text.split("\n")[0]) for f in clean] == [(15, "            self.cache.move_to_end(key, last=True)")]
    assert clean[0].family == "transform" and clean[0].what.endswith("as `set` does")


def test_only_a_statement_alone_on_its_line_is_copied():
    source = '''\
class A:
    def f(self, x):
        if x: self.seen.add(x)
        self.seen.discard(x); self.n = 1
        self.seen.update(
            [x])
        return 0

    def g(self, x):
        return self.seen
'''
    assert _edits(source) == {}
    alone = source.replace("        return 0", "        self.seen.add(x)\n        return 0")
    assert _edits(alone) == {11: ["self.seen.add(x)"]}
