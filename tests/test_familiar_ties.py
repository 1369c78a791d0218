"""The ranking's tie-break: among candidates of one score tier, the edit whose new code the file
already uses comes first (familiar.py); only then the seed."""
from __future__ import annotations

from repair_agent.choosers.search import Failure
from repair_agent.choosers.search.catalogue import Candidate
from repair_agent.choosers.search.familiar import Familiarity
from repair_agent.choosers.search.ranking import order, rank_candidates
from repair_agent.hints.mutation import MutantFix

HELPER = '''\
def greet(name):
    return "Hello " + name.capitalize()


'''
BUGGY = '''\
def surname(raw):
    first = raw.split("-")[0]
    return first.upper()
'''


def _lines(text: str) -> dict[int, str]:
    return {i + 1: t for i, t in enumerate(text.splitlines(keepends=True))}


def test_familiarity_counts_the_pairs_an_edit_adds_that_other_lines_use():
    lines = _lines(HELPER + BUGGY)
    fam = Familiarity(lines)
    line = 7   # `    return first.upper()`
    assert fam.of(line, 1, ("    return first.capitalize()\n",)) == 1.0   # `. capitalize`, `capitalize (`: line 2
    assert fam.of(line, 1, ("    return first.capitalize() + name\n",)) == 0.75   # `) +` is nowhere else
    assert fam.of(line, 1, ("    return first.title()\n",)) == 0.0
    assert fam.of(line, 1, ("    return first\n",)) == 1.0   # adds no pair: a deletion
    # the edited line's own pairs never vouch for the edit
    assert Familiarity(_lines(BUGGY)).of(3, 1, ("    return first.upper().upper()\n",)) == 0.0


def _two_clean_case_fixes(text: str, seed: int) -> list[str]:
    """The ranking of two clean fixes the tests cannot tell apart (one behaviour digest): the new
    lines of the two, in the order ranked."""
    lines = _lines(text)
    n = next(k for k, t in lines.items() if "first.upper()" in t)
    fixes = [MutantFix(path="m.py", line=n, text=f"    return first.{call}()", what=f"upper() -> {call}()",
                       family="case-call", fixed=1, of=1, broken=0, checked=3, behaviour="b1")
             for call in ("title", "capitalize")]
    failure = Failure(message="assert 'SMITH' == 'Smith'", got="SMITH", expected="Smith", have_values=True,
                      callees=["surname"], suspicious={("m.py", n): 1.0, ("m.py", n - 1): 0.5},
                      mutant_fixes={("m.py", n): fixes})
    ranked = rank_candidates(failure, {"m.py": lines}, [], "surname keeps the case", seed=seed)
    wanted = {f"    return first.{call}()\n" for call in ("title", "capitalize")}
    return [c.new_lines[0] for c in ranked if c.new_lines[0] in wanted]


def test_of_two_clean_fixes_alike_the_one_the_file_already_writes_comes_first_for_every_seed():
    orders = {tuple(_two_clean_case_fixes(HELPER + BUGGY, seed)) for seed in range(12)}
    assert orders == {("    return first.capitalize()\n", "    return first.title()\n")}
    # without the helper that writes `.capitalize()` the two are alike in every way: the seed orders them
    assert len({tuple(_two_clean_case_fixes(BUGGY, seed)) for seed in range(12)}) == 2


def test_familiarity_orders_only_within_a_tier():
    a = Candidate("m.py", 1, ("x = 1\n",), "constant", "a", score=5.0, familiar=0.0)
    b = Candidate("m.py", 2, ("y = 2\n",), "constant", "b", score=4.2, familiar=1.0)
    c = Candidate("m.py", 3, ("z = 3\n",), "constant", "c", score=4.9, familiar=0.0)
    for seed in range(6):
        assert [x.what for x in order([a, b, c], seed)] == ["a", "b", "c"]   # b and c share tier 4
