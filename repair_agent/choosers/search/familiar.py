"""How familiar an edit's new code is to the file it goes into: the share of the token pairs it
introduces that the lines read elsewhere in that file already use.

The ranking breaks ties with it. Edits the evidence scores alike are often ones the tests cannot
tell apart (the mutation analysis found several clean fixes with the same behaviour); the one that
writes what the surrounding code already says is the likelier fix, since most fixes reuse code that
is already there (the "plastic surgery" hypothesis: Barr et al., FSE 2014)."""
from __future__ import annotations

import re
from collections import Counter

TOKEN = re.compile(r"\w+|\*\*=?|//=?|[<>=!]=|->|\S")


def token_pairs(text: str) -> Counter[tuple[str, str]]:
    """Each line's adjacent token pairs (never across a line break), counted."""
    pairs: Counter[tuple[str, str]] = Counter()
    for line in text.splitlines():
        tokens = TOKEN.findall(line)
        pairs.update(zip(tokens, tokens[1:]))
    return pairs


class Familiarity:
    """The token pairs of one file's lines read, counted once per line; `of` scores each edit against them."""

    def __init__(self, lines: dict[int, str]):
        self.by_line = {n: token_pairs(text) for n, text in lines.items()}
        self.counts: Counter[tuple[str, str]] = sum(self.by_line.values(), Counter())

    def of(self, line: int, span: int, new_lines: tuple[str, ...]) -> float:
        """The share (0 to 1) of the pairs the edit adds to lines `line`..`line + span - 1` that occur
        on some other line read; 1 when it adds none (a pure deletion)."""
        own = sum((self.by_line.get(k, Counter()) for k in range(line, line + span)), Counter())
        added = set(token_pairs("".join(new_lines))) - set(own)
        if not added:
            return 1.0
        return sum(self.counts[p] > own[p] for p in added) / len(added)
