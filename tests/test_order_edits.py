"""A sort's missing key or order (in_sandbox/order_edits.py), and a header's comment that hid every
parsed edit of its line; the analysis run for real on a small repository."""
from __future__ import annotations

from repair_agent.hints.localization import localize
from repair_agent.in_sandbox import operators
from repair_agent.in_sandbox.order_edits import key_index, keys_at, order_edits

from helpers import calc_sandbox

CONFIG = '''\
class Config:
    def __init__(self, sections):
        self.sections = {name: {} for name in sections}
        self.lines = {name: n for n, name in enumerate(sections)}

    def lineof(self, name):
        return self.lines[name]

    def describe(self, name, verbose):
        return name if not verbose else name.upper()

    def names(self):
        return [name for name in sorted(self.sections)]  # in file order
'''

CONFIG_TESTS = '''\
from calc import Config


def test_names_in_file_order():
    assert Config(["zeta", "alpha", "mid"]).names() == ["zeta", "alpha", "mid"]


def test_lineof():
    assert Config(["a", "b"]).lineof("b") == 1
'''


def test_the_keys_of_a_sort_are_the_classs_one_argument_methods_then_the_modules_functions():
    index = key_index(CONFIG + "\n\ndef size(x, scale=1):\n    return x\n\n\ndef pair(a, b):\n    return a\n")
    # `describe` wants two arguments, `__init__` is no key; `size` takes one (its second has a default)
    assert keys_at(index, 13) == ["self.lineof", "size", "len", "str.lower"]
    assert keys_at(index, 16) == ["size", "len", "str.lower"]


def test_a_sort_gets_a_key_or_its_reverse_and_loses_the_one_it_has():
    line = "        for name in sorted(self.sections):  # type: ignore\n"
    assert [new for _, _, new in order_edits(line, ["self.lineof"])] == [
        "        for name in sorted(self.sections, key=self.lineof):  # type: ignore\n",
        "        for name in sorted(self.sections, reverse=True):  # type: ignore\n"]
    got = {what: new for _, what, new in order_edits("    y = sorted(a, key=f, reverse=True)\n", ["g"])}
    assert got == {"sorted(...) without key=": "    y = sorted(a, reverse=True)\n",
                   "sorted(...) without reverse=": "    y = sorted(a, key=f)\n"}
    assert [new for _, _, new in order_edits("    xs.sort()\n", ["len"])] == ["    xs.sort(key=len)\n", "    xs.sort(reverse=True)\n"]
    # an extreme of two values has no key to take; of one iterable it does
    assert order_edits("    m = min(a, b)\n", ["len"]) == []
    assert [new for _, _, new in order_edits("    m = max(words)\n", ["len"])] == ["    m = max(words, key=len)\n"]


def test_a_headers_trailing_comment_no_longer_hides_its_parsed_edits():
    # `if a < b:  # note` did not parse as a statement (the comment swallowed the `pass` body): every
    # edit placed by the parser was missing from such a line
    plain = {new.split("#")[0].rstrip() for _, _, new in operators.analysis_mutations("        if a < b:\n", ("a", "b"))}
    commented = {new.split("#")[0].rstrip() for _, _, new in operators.analysis_mutations("        if a < b:  # note\n", ("a", "b"))}
    assert commented == plain and len(plain) > 5


def test_the_analysis_finds_the_key_a_sort_lacked(tmp_path):
    sandbox = calc_sandbox(tmp_path, CONFIG, CONFIG_TESTS)
    m = localize(sandbox, ("tests/test_calc.py::test_names_in_file_order",), ("src/**",), mutate=True).mutation
    assert m is not None
    clean = [(f.line, f.text.strip(), f.family) for f in m.fixes if f.clean]
    assert (13, "return [name for name in sorted(self.sections, key=self.lineof)]  # in file order", "order") in clean
