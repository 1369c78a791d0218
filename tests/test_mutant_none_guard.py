"""A clean guard the mutation analysis wrote that checks for None is ranked as a none-guard: when the
failure says a None was used, it goes before a clean guard on another condition the tests cannot
tell from it (both raise on every failing test and on no passing one)."""
from __future__ import annotations

from repair_agent.choosers.search import Failure
from repair_agent.choosers.search.ranking import rank_candidates
from repair_agent.choosers.search.weights import Hint
from repair_agent.hints.mutation import MutantFix

SOURCE = '''\
class Table:
    def remove(self, key):
        idx = self._map.pop(key, None)
        self._body[idx] = None
'''
NONE_CHECK = ("        if idx is None:\n", "            raise KeyError(key)\n", "        self._body[idx] = None\n")
EMPTY_CHECK = ("        if not self:\n", "            raise KeyError(key)\n", "        self._body[idx] = None\n")


def _guards_ranked(message: str, seed: int) -> list[tuple[str, str]]:
    lines = {i + 1: t for i, t in enumerate(SOURCE.splitlines(keepends=True))}
    fixes = [MutantFix(path="m.py", line=4, text="".join(new).rstrip("\n"), what=f"guard `{new[0].strip()} raise`",
                       family="guard", fixed=1, of=1, broken=0, checked=5, behaviour="same", reached=1)
             for new in (EMPTY_CHECK, NONE_CHECK)]
    failure = Failure(message=message, exception=message.split(":")[0], exception_message=message.split(": ", 1)[1],
                      suspicious={("m.py", 4): 1.0, ("m.py", 3): 0.8}, frames=[("m.py", 4)],
                      callees=["remove"], mutant_fixes={("m.py", 4): fixes},
                      hints={Hint.NONE} if "NoneType" in message else set())   # as parse_failure reads it
    ranked = rank_candidates(failure, {"m.py": lines}, [], "removing a missing key raises TypeError", seed=seed)
    return [(c.new_lines[0].strip(), c.kind.value) for c in ranked if c.new_lines in (NONE_CHECK, EMPTY_CHECK)]


def test_a_none_check_goes_first_when_the_failure_says_a_none_was_used():
    message = "TypeError: list indices must be integers or slices, not NoneType"
    for seed in range(8):
        assert _guards_ranked(message, seed) == [("if idx is None:", "none-guard"), ("if not self:", "mutant")]
