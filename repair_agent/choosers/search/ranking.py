"""Ranking: every candidate from the lines read, scored by priors per kind, the failure's hints and
closeness to a frame; among candidates of equal score, the more familiar edit first (familiar.py),
then the seed."""
from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from .catalogue import Candidate, line_mutations
from .context_rules import context_bonus, guard_features
from .context_edits import (counter_updates, dead_store_uses, raising_guards, sequence_arms, sibling_arm_statements,
                            sibling_wraps, unused_alias_calls, unused_param_returns, unused_params)
from .guards import copies_expected, frame_guards, guard_candidates
from .missing import missing_statements
from .smells import smell_features
from .failure import Failure, is_number
from .familiar import TOKEN, Familiarity
from .patch import _blocks
from .mutants import clean_behaviour, examples_held, examples_tell_apart, mutant_candidates, mutation_features
from .clean_order import examples_first, smaller_first
from .spectrum import spectrum_features
from .weights import Rule, active
from .values import magnitude_fix, separator_swaps
from ...in_sandbox.operators import attribute_names, callable_names, signatures_of
from ...in_sandbox.statement_edits import parses
from .source import Function, _code_lines, _numbers_in, functions_in, goal_calls, scope_names, string_lines

CLASS_WORDS = {"d": r"\bdigits?\b|\bnumbers?\b", "s": r"\bwhitespace\b|\bspaces?\b", "w": r"\bwords?\b|\bletters?\b",
               "b": r"\bboundary\b"}
MODULE_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]+)\s*(?::[^=]+)?=(?!=)")

JUSTIFIED_BY = {"none-guard": {"none"}, "empty-guard": {"empty"}, "swap": {"swap", "sign"}, "name": {"case", "strip"}, "default": {"default"},
                "percent": {"percent", "cents"}, "extreme": {"extreme", "range"}}


GOAL_FUNCTION_SUSPICION = 0.9


def score(c: Candidate, failure: Failure, goal_words: set[str], frame_lines: set[tuple[str, int]], line_text: str,
          params: tuple[str, ...] = (), def_line: int | None = None, proxy: float | None = None) -> float:
    """The candidate's score: its generator's base score plus its features (`features`, kept on the
    candidate) weighed by the table (weights.py). `proxy`: the suspicion a line that never runs
    inside a test inherits (a module constant takes that of the lines that use it)."""
    c.base = c.score
    c.features = features(c, failure, goal_words, frame_lines, line_text, params, def_line, proxy)
    return c.base + active().dot(c.features)


def features(c: Candidate, failure: Failure, goal_words: set[str], frame_lines: set[tuple[str, int]], line_text: str,
             params: tuple[str, ...] = (), def_line: int | None = None, proxy: float | None = None) -> dict[str, float]:
    """What the evidence says about a candidate, as named features (weights.py names them all)."""
    x: dict[str, float] = {}

    def add(rule: Rule | str, value: float = 1.0) -> None:
        name = rule.value if isinstance(rule, Rule) else rule
        if value:
            x[name] = x.get(name, 0.0) + value

    kind = c.kind.value
    add(f"prior:{kind}")
    for h in sorted(failure.hints):
        if h == "none" and c.kind == "none-guard" and not frame_lines:
            continue   # None reached the test's own code: the function returned it, no guard inside it
            # raised; an early `return None`-like guard is the symptom, not the cure
        add(f"hint:{h}:{kind}")
    # Run by the failing tests, and the sharper the fewer passing tests run it (the spectrum is
    # sharper about the function than about the line: the line that shows a wrong value is often not
    # the one that computed it). When the list is complete, a line it lacks never ran in a failing
    # test (a def line's defaults aside).
    for rule, value in spectrum_features(c, failure, def_line, proxy) + mutation_features(c, failure):
        add(rule, value)
    if failure.have_values and type(failure.got) is float and type(failure.expected) is int and "/ -> //" in c.what:
        add(Rule.DIVISION_BY_VALUE_TYPES)   # the values' types say a true division should floor
    if failure.have_values and type(failure.got) is int and type(failure.expected) is float and "// -> /" in c.what:
        add(Rule.DIVISION_BY_VALUE_TYPES)
    if c.kind in ("offset", "argument", "percent", "negate") and failure.have_values and not (
            is_number(failure.got) or is_number(failure.expected)) and "number" not in failure.hints:   # '3.0.0' vs '4.0.0' is about a number
        add(Rule.NUMBER_EDIT_NON_NUMBERS)   # one more, one less, a hundredth: edits of numbers, and the values are not numbers
    if c.what in ("< -> !=", "> -> !="):
        add(Rule.ORDER_TO_INEQUALITY)   # an order test that should be an inequality: rarer than a boundary or a flipped order
    if c.kind == "regex" and (m := re.match(r"range (\[(\w)-(\w)\]) -> \[(\w)-(\w)\]", c.what)):
        if m.group(1) in failure.short_ranges and (m.group(4) < m.group(2) or m.group(5) > m.group(3)):
            add(Rule.REGEX_WIDENS_QUOTED_RANGE)   # widening the range the failure's quoted pattern gets wrong
        else:
            add(Rule.REGEX_RANGE_UNPOINTED)   # otherwise rarer than a class escape or a quantifier
    if c.kind == "regex" and (m := re.match(r"\\(\w) -> \\(\w) in the pattern", c.what)) and m.group(2).islower() and \
            re.search(CLASS_WORDS[m.group(2).lower()], " ".join(goal_words)):
        add(Rule.REGEX_ESCAPE_NAMED)   # the escape becomes the class the goal names (`\D` -> `\d` where it speaks of digits)
    if _direction(c, failure) > 0:
        add(Rule.MOVES_TOWARD_EXPECTED)   # a one-off value: the edit that moves it the way the test expects
    for rule, value in smell_features(c, line_text, failure):
        add(rule, value)
    if (c.path, c.line) in frame_lines:
        add(Rule.ON_FRAME_LINE)
    elif any(p == c.path and 0 < fl - c.line <= 2 for p, fl in frame_lines):
        add(Rule.ABOVE_FRAME_LINE)
    if c.kind in ("scale", "numeral") and failure.have_values:
        add(Rule.SCALES_AS_EXPECTED, float(magnitude_fix(c, line_text, failure) or 0))   # it scales the value as the test expects
    if c.kind == "percent":
        name = c.what.split(" ")[0]
        if ({"percent", "cents"} & failure.hints) and (name.lower() in goal_words
                                                       or re.search(r"pct|percent|rate|ratio|fraction", name, re.I)):
            add(Rule.PERCENT_NAMED)
        if name in params:
            add(Rule.PERCENT_PARAMETER)
        # percentages become fractions by / 100; cents become units by / 100 and back by * 100
        if {"div100", "mul100"} & failure.hints:   # the values say which way
            if ("* 100" in c.what) == ("mul100" in failure.hints):
                add(Rule.PERCENT_DIRECTION_BY_VALUES)
        elif ("* 100" in c.what) == ("cents" in failure.hints):
            add(Rule.PERCENT_DIRECTION_BY_CENTS)
    else:
        idents = re.findall(r"[a-z_]\w*", line_text.lower())
        add(Rule.GOAL_WORDS_ON_LINE,
            min(2, len(goal_words & (set(idents) | {part for i in idents for part in i.split("_") if len(part) > 3}))))
    # kinds that are rarely the bug unless the failure points at them
    if c.kind in JUSTIFIED_BY and not (JUSTIFIED_BY[c.kind] & failure.hints):
        add(Rule.UNJUSTIFIED_GUARD if c.kind.endswith("guard") else Rule.UNJUSTIFIED_KIND)
    if c.what in ("negate the condition", "drop `not`") and failure.exception in ("TypeError", "AttributeError") and any(
            p == c.path and 0 < fl - c.line <= 2 for p, fl in frame_lines):
        add(Rule.CONDITION_LET_WRONG_TYPE_IN)   # a value of the wrong type failed right under a condition: the condition let it in
    elif c.what == "negate the condition":
        add(Rule.NEGATE_CONDITION)   # rarely the whole bug
    if c.kind == "constant" and (m := re.match(r"(10+) -> ", c.what)) and re.search(rf"[%/*]\s*{m.group(1)}\b", line_text):
        add(Rule.POWER_OF_TEN_OFF_BY_ONE)   # a power of ten that scales or wraps a value is off by an order of magnitude, not by one
    if c.kind == "constant" and (m := re.match(r"(\d+) -> ", c.what)) and (re.search(
            rf"[(\[{{]\s*(?:\d+\s*,\s*)*{m.group(1)}\s*(?:,\s*\d+\s*)*,?\s*[)\]}}]", line_text) and re.search(
            r"[(\[{]\s*\d+\s*,\s*\d+", line_text) or re.match(rf"\s*{m.group(1)}\s*:", line_text)):
        add(Rule.TABLE_MEMBER_OFF_BY_ONE)   # one member of a literal table of numbers (or one key of a table written over lines) is rarely off by one
    if c.kind == "arguments" and (m := re.search(r", (16|8|2)\)$", c.what)):
        word = {"16": r"hex", "8": r"oct", "2": r"\bbin"}[m.group(1)]
        add(Rule.BASE_NAMED if re.search(word, line_text, re.I) else Rule.BASE_NOT_NAMED)   # the base the surrounding names say
    if "(named in the goal)" in c.what and c.kind == "default":
        add(Rule.GOAL_NUMBER_DEFAULT)
    return x


def rank_candidates(f: Failure, known: dict[str, dict[int, str]], search_hits: list[tuple[str, int]],
                    goal_text: str, seed: int, effects: dict[tuple[str, int], float] | None = None) -> list[Candidate]:
    """Every candidate from the lines read, best first; ties in a seed-dependent order. `effects`:
    what failed tries showed about their lines, as score bonuses."""
    return order(scored_candidates(f, known, search_hits, goal_text), seed, effects)


def scored_candidates(f: Failure, known: dict[str, dict[int, str]], search_hits: list[tuple[str, int]],
                      goal_text: str) -> list[Candidate]:
    """Every candidate from the lines read, with its score from the evidence before any try."""
    goal_words = set(re.findall(r"[a-z_]\w*", goal_text.lower())) - {"the", "a", "to", "of", "and", "that",
                                                                      "so", "make", "test", "tests", "its"}
    goal_words |= {w[:-1] for w in goal_words if w.endswith("s") and not w.endswith("ss") and len(w) > 4}   # plurals
    frame_lines = set(f.frames)
    prose = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", " ", goal_text)   # not numbers inside quoted examples
    goal_numbers = tuple(dict.fromkeys(n for n in _numbers_in(prose) if n <= 1000))[:6]
    called_by_goal = set(goal_calls(goal_text))
    cands: dict[str, Candidate] = {}
    for path, lines in known.items():
        fns = [fn for lo, hi in _blocks(lines)   # each window read, on its own
               for fn in functions_in(lo, [lines[i] for i in range(lo, hi + 1)])]
        # Lines worth mutating: inside a function near a frame, or a searched-for function.
        spans = []
        for fn in fns:
            hit = any(p == path and fn.def_line <= fl <= fn.end_line for p, fl in frame_lines)
            searched = (path, fn.def_line) in search_hits or fn.name in f.callees
            suspect = any(p == path and fn.def_line <= sl <= fn.end_line for p, sl in f.suspicious)
            if hit or searched or suspect:
                spans.append((fn, hit))
        # ... and the helpers they call that are in view (one level down)
        called = {name for fn, _ in spans for n in range(fn.def_line + 1, fn.end_line + 1)
                  for name in re.findall(r"\b([A-Za-z_]\w*)\(", lines.get(n, ""))}
        spans += [(fn, False) for fn in fns if fn.name in called and all(fn is not g for g, _ in spans)]
        if not spans:   # no def in view: the frame's neighbourhood
            spans = [(None, True)]
        targets = [(fn, hit, fn.def_line if fn else min(lines), fn.end_line if fn else max(lines)) for fn, hit in spans]
        # ... and a window read inside a long function whose `def` it does not show, when the failing
        # tests ran a line of it or a search found one there
        if any(fn is not None for fn, _ in spans):
            pointed = {n for p, n in f.suspicious if p == path} | {n for p, n in search_hits if p == path}
            for lo, hi in _blocks(lines):
                if not any(fn.def_line <= hi and lo <= fn.end_line for fn in fns) and any(lo <= n <= hi for n in pointed):
                    targets.append((None, False, lo, hi))
                # ... or the tail of such a function at the top of a window that goes on to other defs
                first_def = min((fn.def_line for fn in fns if lo <= fn.def_line <= hi), default=None)
                if first_def is not None and first_def > lo and any(lo <= n < first_def for n in pointed):
                    targets.append((None, False, lo, first_def - 1))
        # ... and the module constants they use (a pattern, a table, a limit), when in view
        used = {name for fn, _ in spans if fn for n in range(fn.def_line, fn.end_line + 1)
                for name in re.findall(r"\b([A-Z][A-Z0-9_]+)\b", lines.get(n, ""))}
        targets += [(None, False, n, n) for n in sorted(lines) if (m := MODULE_CONSTANT.match(lines[n])) and m.group(1) in used]
        # a constant runs at import, never inside a test: it is as suspicious as the lines that use it
        proxies: dict[int, float | None] = {}
        for fn, _, n, _ in targets:
            m = MODULE_CONSTANT.match(lines.get(n, "")) if fn is None else None
            if m:
                proxies[n] = max((v for (p, ln), v in f.suspicious.items()
                                  if p == path and re.search(rf"\b{m.group(1)}\b", lines.get(ln, ""))), default=None)
        # a function the goal calls that no failing test ran (a table built at import): as suspicious as
        # the spectrum's best lines, since the goal names it
        for fn, _, lo, hi in targets:
            if fn is not None and fn.name in called_by_goal and \
                    not any(p == path and fn.def_line <= n <= fn.end_line for p, n in f.suspicious):
                for n in range(fn.def_line, fn.end_line + 1):
                    proxies[n] = max(proxies.get(n) or 0.0, GOAL_FUNCTION_SUSPICION)
        # a handler that ran in the failing tests: the statement of its `try` body raised
        for n, v in _failed_try_bodies(lines, path, f.suspicious).items():
            proxies[n] = max(v, proxies.get(n) or 0.0)
        callables = callable_names(lines)
        attributes = attribute_names(lines)
        signatures = signatures_of(lines)
        strings = string_lines(lines)
        for fn, hit, lo, hi in targets:
            by_line: dict[int, list[Candidate]] = {}
            code_lines = _code_lines(lines, lo, hi, known_start=fn is not None, strings=strings)
            params = tuple(fn.params) if fn else ()
            # a window without its `def` (a long docstring above): its lines stand for the function,
            # and the names it assigns (loop variables, locals) are in scope
            scope = fn or Function(lo, "", [], lo, "", hi)
            names = scope_names(scope, lines)
            unused = unused_params(fn, lines) if fn else []
            for n in range(lo, hi + 1):
                text = lines.get(n)
                if text is None or n not in code_lines:
                    continue
                ok = parses(text)
                for kind, what, new in line_mutations(text, goal_numbers, names, callables, signatures, attributes):
                    new_line = new if new.endswith("\n") else new + "\n"
                    if new_line == text or (ok and parses(new_line) is False):
                        continue
                    c = Candidate(path, n, (new_line,), kind, what)
                    if c.key in cands:   # the same edit by another operator: the first is kept, unscored twice
                        continue
                    c.score = score(c, f, goal_words, frame_lines, text, params, fn.def_line if fn else None,
                                    proxies.get(n))
                    cands[c.key] = c
                    by_line.setdefault(n, []).append(c)
            for c in separator_swaps(path, lines, lo, hi, f):
                if c.line in code_lines:
                    c.score = score(c, f, goal_words, frame_lines, lines[c.line], params, fn.def_line if fn else None,
                                    proxies.get(c.line))
                    cands.setdefault(c.key, c)
            for fpath, fline in frame_lines:
                if fpath == path and lo <= fline <= hi:
                    for c in frame_guards(path, fline, lines, fn, f):
                        c.score = score(c, f, goal_words, frame_lines, lines[fline], params)
                        cands.setdefault(c.key, c)
            if fn is not None:
                for c in guard_candidates(path, fn, lines, f):
                    c.score = score(c, f, goal_words, frame_lines, lines[fn.body_line], params)
                    cands.setdefault(c.key, c)
                # an added line never ran: it is as suspicious as the function it completes
                ran_in_fn = max((v for (p, n), v in f.suspicious.items() if p == path and fn.def_line <= n <= fn.end_line),
                                default=None)
                for c in unused_param_returns(path, fn, lines, unused):
                    c.score = score(c, f, goal_words, frame_lines, lines[c.line], params, fn.def_line,
                                    proxies.get(c.line))
                    # the operator table returns any variable for `None`; this one knows the parameter is unused
                    if c.key not in cands or cands[c.key].score < c.score:
                        cands[c.key] = c
                for c in missing_statements(path, fn, lines, f, frame_lines):
                    c.score = score(c, f, goal_words, frame_lines, lines[c.line], params, fn.def_line, ran_in_fn)
                    cands.setdefault(c.key, c)
            if fn is not None or MODULE_CONSTANT.match(lines.get(lo, "")) is None:
                ran = {n for p, n in f.suspicious if p == path}
                for c in (sibling_wraps(path, scope, lines) + counter_updates(path, scope, lines)
                          + unused_alias_calls(path, scope, lines) + dead_store_uses(path, scope, lines)
                          + sequence_arms(path, scope, lines)
                          + sibling_arm_statements(path, scope, lines)
                          + raising_guards(path, scope, lines, f.not_raised, goal_text, ran)):
                    if c.line in code_lines:
                        c.score = score(c, f, goal_words, frame_lines, lines[c.line], params,
                                        fn.def_line if fn else None, proxies.get(c.line))
                        cands.setdefault(c.key, c)
                for n in range(scope.body_line, scope.end_line + 1):
                    for c in by_line.get(n, ()):
                        c.score += context_bonus(c, scope, lines, f, unused)
        for c in mutant_candidates(path, lines, f):   # a mutant that turned failing targets green
            c.score = score(c, f, goal_words, frame_lines, lines[c.line], (), None, proxies.get(c.line))
            extra = guard_features(c, lines, f)
            c.features.update(extra)
            c.score += active().dot(extra)
            cands.setdefault(c.key, c)
    # Never a candidate that writes a value the failing test expects into the code.
    kept = [c for c in cands.values() if not copies_expected(c, known[c.path].get(c.line, ""), f)]
    familiarity = {path: Familiarity(lines) for path, lines in known.items()}
    tell_apart = examples_tell_apart(f)
    for c in kept:
        c.familiar = familiarity[c.path].of(c.line, c.span, c.new_lines)
        c.behaviour = clean_behaviour(c, f)
        c.examples, c.deviation = examples_held(c, f, tell_apart)
        if c.behaviour is not None:   # only clean fixes are weighed by size (smaller_first)
            old = "".join(known[c.path].get(n, "") for n in range(c.line, c.line + c.span))
            c.shrink = len(TOKEN.findall(old)) - len(TOKEN.findall("".join(c.new_lines)))
    return kept



def order(cands: list[Candidate], seed: int, effects: dict[tuple[str, int], float] | None = None) -> list[Candidate]:
    """Best first by score tier, after what failed tries showed about their lines; within a tier the
    more familiar edit first (familiar.py), then a seed-dependent order."""
    cands = [replace(c, score=c.score + (effects or {}).get((c.path, c.line), 0.0)) for c in cands]
    ordered = sorted(cands, key=lambda c: (c.path, c.line, c.kind, c.key))
    # Tries on one line fail together: once its two best scores have failed, the line itself is less
    # likely the fault, so each edit of the same line below them waits a point more per better score
    # (equal scores are never held back by each other; the seed orders them).
    line_scores: dict[tuple[str, int], list[float]] = {}
    for c in ordered:
        line_scores.setdefault((c.path, c.line), []).append(c.score)
    tiers: dict[int, list[Candidate]] = {}
    for c in ordered:
        better = len({v for v in line_scores[(c.path, c.line)] if v > c.score})   # distinct better scores there
        placed = replace(c, score=c.score - active().rule[Rule.SAME_LINE_PENALTY] * max(0, better - 1))   # its score in the order
        tiers.setdefault(int(placed.score), []).append(placed)
    # Within a tier, each candidate's place comes from its own familiarity, then the seed and the
    # candidate alone: adding or demoting another candidate never reorders the rest (one shuffled
    # sequence did).
    return examples_first(smaller_first([c for tier in sorted(tiers, reverse=True)
                                         for c in sorted(tiers[tier], key=lambda c: (-c.familiar, _tie_rank(seed, c)))]))


def _tie_rank(seed: int, c: Candidate) -> bytes:
    return hashlib.sha256(f"{seed}\0{c.kind.value}\0{c.key}".encode()).digest()



def _failed_try_bodies(lines: dict[int, str], path: str, suspicious: dict[tuple[str, int], float]) -> dict[int, float]:
    """The lines of a `try` body whose `except` handler's body is suspicious, with its suspicion."""
    out: dict[int, float] = {}
    for n in sorted(lines):
        m = re.match(r"^(\s*)except\b", lines[n])
        if not m:
            continue
        body = [n]
        while body[-1] + 1 in lines and (len(lines[body[-1] + 1]) - len(lines[body[-1] + 1].lstrip())) > len(m.group(1)):
            body.append(body[-1] + 1)
        sus = max(suspicious.get((path, k), 0.0) for k in body)
        if not sus:
            continue
        k = n - 1
        while k in lines and not re.match(rf"^{m.group(1)}try\s*:", lines[k]) and k > n - 30:
            if lines[k].strip():
                out[k] = sus
            k -= 1
    return out


def _direction(c: Candidate, f: Failure) -> int:
    """+1 when a ±1 edit moves a number the way the failing value must move (expected above the value
    got: `+ 1`), -1 the other way, 0 when it does not apply. A returned value one off is left out:
    it would fit the test's number rather than compute it."""
    if c.kind not in ("argument", "slice", "constant") or not (
            f.have_values and is_number(f.got) and is_number(f.expected) and abs(f.got - f.expected) == 1):
        return 0
    m = re.match(r"^(\d+) -> (\d+)$", c.what)
    if m:
        up = int(m.group(2)) > int(m.group(1))
    elif c.what.endswith("+ 1") or c.what.endswith("- 1"):
        up = c.what.endswith("+ 1")
    else:
        return 0
    return 1 if up == (f.expected > f.got) else -1
