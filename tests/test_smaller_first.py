"""Clean fixes the tests cannot tell apart (the mutation analysis gave them one behaviour digest):
the one that takes code out goes before the ones that add code, whatever their scores say."""
from __future__ import annotations

from repair_agent.choosers.search import Failure
from repair_agent.choosers.search.catalogue import Candidate
from repair_agent.choosers.search.ranking import order, rank_candidates
from repair_agent.hints.mutation import MutantFix

# The slip: a limit that leaves room for a separator nobody appends. The tests use the default
# one-character separator, so `+ 1` after it fits every value they use as well as taking the term out.
SOURCE = '''\
def clip(text, limit, sep="-"):
    if len(text) <= limit:
        return text
    return text[:limit - len(sep)]
'''
DELETION = "    return text[:limit]\n"
ADDITION = "    return text[:limit - len(sep) + 1]\n"


def _ranked_fixes(seed: int, digests: tuple[str, str]) -> list[str]:
    lines = {i + 1: t for i, t in enumerate(SOURCE.splitlines(keepends=True))}
    fixes = [MutantFix(path="m.py", line=4, text=text.rstrip("\n"), what=what, family=family, fixed=1, of=1,
                       broken=0, checked=4, behaviour=digest)
             for text, what, family, digest in ((ADDITION, "limit - len(sep) -> limit - len(sep) + 1", "slice", digests[0]),
                                                (DELETION, "drop `- len(sep)`", "term", digests[1]))]
    failure = Failure(message="assert 'abc' == 'abcd'", got="abc", expected="abcd", have_values=True,
                      callees=["clip"], suspicious={("m.py", 4): 1.0, ("m.py", 2): 0.5},
                      mutant_fixes={("m.py", 4): fixes})
    ranked = rank_candidates(failure, {"m.py": lines}, [], "clip keeps one character too few", seed=seed)
    return [c.new_lines[0] for c in ranked if c.new_lines[0] in (DELETION, ADDITION)]


def test_of_two_clean_fixes_alike_the_deletion_comes_first_for_every_seed():
    assert {tuple(_ranked_fixes(seed, ("same", "same"))) for seed in range(8)} == {(DELETION, ADDITION)}


def test_clean_fixes_the_tests_tell_apart_keep_the_order_their_scores_give():
    # the same two edits with two digests: nothing groups them, and the addition's score puts it first
    assert {tuple(_ranked_fixes(seed, ("one", "other"))) for seed in range(8)} == {(ADDITION, DELETION)}


def _c(what: str, score: float, behaviour: str | None, shrink: int) -> Candidate:
    return Candidate("m.py", int(score), (f"{what}\n",), "constant", what, score=score, behaviour=behaviour,
                     shrink=shrink)


def test_only_the_group_moves_and_only_into_its_own_places():
    a = _c("a", 9.0, "d", -2)   # adds two tokens: first by score
    c = _c("c", 7.0, None, 3)   # takes more out, but is no clean fix of the group: stays
    b = _c("b", 5.0, "d", 2)    # takes two out: moves to the group's first place, a to b's
    d = _c("d", 3.0, "d", 0)
    e = _c("e", 2.0, "x", -1)   # a group where nothing takes code out keeps its order
    f = _c("f", 1.0, "x", 0)
    for seed in range(4):
        assert [x.what for x in order([f, e, d, c, b, a], seed)] == ["b", "c", "a", "d", "e", "f"]
