"""The search chooser's catalogue, ranking and the expected-literal rule: pure logic, fast."""
from __future__ import annotations

from repair_agent.choosers.search import Failure, functions_in, guard_candidates, line_mutations
from repair_agent.choosers.search.guards import copies_expected, documented_returns, frame_guards
from repair_agent.choosers.search.ranking import rank_candidates, scope_names
from repair_agent.in_sandbox.operators import signatures_of

from helpers import target_observation

SOURCE = '''\
def is_member(name, members):
    """Whether ``name`` is one of ``members`` (a bool)."""
    found = members.get(name)
    return found.active


def label(code):
    """The label text for ``code``."""
    parts = code.split("-")
    return parts[0].title()


def total(values, start):
    acc = start
    for v in values:
        acc -= v
    return acc


def answer(x):
    return 41
'''
LINES = {i + 1: text for i, text in enumerate(SOURCE.splitlines(keepends=True))}


def _fn(name):
    return next(f for f in functions_in(1, list(LINES.values())) if f.name == name)


def _whats(line: str, names=()) -> set[str]:
    return {what for _, what, _ in line_mutations(line, (), names)}


def test_catalogue_has_augmented_operators_variables_and_offsets():
    assert {"-= -> +=", "-= -> ="} <= _whats("        acc -= v\n")
    assert {"*= -> /=", "*= -> +="} <= _whats("    acc *= v\n")
    # a variable read becomes another variable in scope; the assignment target and calls do not
    names = scope_names(_fn("total"), LINES)
    assert names == ("values", "start", "acc", "v")
    whats = _whats("    acc = start\n", names)
    assert {"start -> values", "start -> acc", "start -> v"} <= whats and not any(w.startswith("acc ->") for w in whats)
    assert "v -> acc" in _whats("    return fn(v)\n", names) and "fn -> v" not in _whats("    return fn(v)\n", ("fn", "v"))
    # a returned or compared subexpression one off
    assert {"return len(xs) + 1", "return len(xs) - 1"} <= _whats("    return len(xs)\n")
    assert {"compare with len(xs) - 1", "compare with len(xs) + 1"} <= _whats("    if i < len(xs):\n")


def test_guards_return_the_documented_type():
    f = Failure(exception="AttributeError", exception_message="'NoneType' object has no attribute 'active'",
                frames=[("src/m.py", 4)], hints={"none"})
    assert documented_returns(_fn("is_member"), LINES, f)[:2] == ["False", "True"]   # the docstring says bool
    assert documented_returns(_fn("label"), LINES, f)[0] == "''"
    guards = frame_guards("src/m.py", 4, LINES, _fn("is_member"), f)
    best = max(guards, key=lambda c: c.score)
    assert best.new_lines[:2] == ("    if found is None:\n", "        return False\n")
    assert not any("return None" in line for c in guards if c.score >= 2 for line in c.new_lines)


def test_a_guard_never_returns_the_tests_expected_literal():
    # The test expects "N/A" for None and 42 elsewhere: no guard or mutation may write either.
    for expected in ("N/A", 42, [1, 2], "Unknown"):
        f = Failure(message=f"assert None == {expected!r}", got=None, expected=expected, have_values=True,
                    exception="AttributeError", exception_message="'NoneType' object has no attribute 'split'",
                    frames=[("src/m.py", 9)], callees=["label", "answer"], hints={"none"},
                    assert_lines=[f"assert label(None) == {expected!r}"], expected_literals={repr(expected)})
        cands = (frame_guards("src/m.py", 9, LINES, _fn("label"), f) + guard_candidates("src/m.py", _fn("label"), LINES, f)
                 + rank_candidates(f, {"src/m.py": LINES}, [], "label must not fail on None", seed=0))
        assert any(c.kind.endswith("guard") for c in cands)
        for c in cands:
            added = "".join(c.new_lines)
            assert repr(expected) not in added and str(expected) not in added.replace(LINES[c.line], ""), c.label()


def test_a_mutation_that_happens_to_write_the_expected_value_is_dropped():
    f = Failure(message="assert 41 == 42", got=41, expected=42, have_values=True, callees=["answer"],
                hints={"boundary"}, assert_lines=["assert answer(1) == 42"], expected_literals={"42"})
    ranked = rank_candidates(f, {"src/m.py": LINES}, [], "answer must be right", seed=0)
    assert not any("42" in "".join(c.new_lines) for c in ranked)
    assert any("return 40" in "".join(c.new_lines) for c in ranked)   # the same mutation the other way stays
    c41 = next(c for c in ranked if c.line == 21)
    assert copies_expected(c41.__class__(c41.path, 21, ("    return 42\n",), "constant", "41 -> 42"), LINES[21], f)


def test_the_spectrum_moves_candidates_on_suspicious_lines_up():
    base = dict(message="assert 7 == 3", got=7, expected=3, have_values=True, callees=["total", "label"],
                assert_lines=["assert total([1, 2], 0) == 3"], expected_literals={"3"})
    blind = rank_candidates(Failure(**base), {"src/m.py": LINES}, [], "total adds the values", seed=0)
    seen = rank_candidates(Failure(**base, suspicious={("src/m.py", 16): 1.0, ("src/m.py", 14): 0.5},
                                   suspicious_complete=True), {"src/m.py": LINES}, [], "total adds the values", seed=0)
    fix = "        acc += v\n"
    fix_of = lambda cands: next(c for c in cands if c.new_lines == (fix,))
    # the most suspicious line gains the most; the fix is first with the spectrum
    assert fix_of(seen).features["spectrum_sharpness"] == 1.0 and "spectrum_ran" not in fix_of(blind).features
    assert fix_of(seen).score > fix_of(blind).score and seen[0].score == fix_of(seen).score
    # without the spectrum label()'s slice edit comes third; with it, after everything total() ran
    assert [c.line for c in blind[:3]] == [16, 16, 10]
    # label() never ran in the failing test: its candidates fall below every line that did
    first_label = min(i for i, c in enumerate(seen) if 7 <= c.line <= 10)
    assert all(c.line in (14, 15, 16, 17) for c in seen[:first_label])


def test_an_early_return_is_also_offered_after_the_argument_checks():
    src = '''\
def split(line, sep=","):
    """The fields of ``line``; an empty line has none."""
    if len(sep) != 1:
        raise ValueError(
            "sep must be one character")
    fields = []
    return fields
'''
    lines = {i + 1: t for i, t in enumerate(src.splitlines(keepends=True))}
    fn = functions_in(1, list(lines.values()))[0]
    f = Failure(message="assert [''] == []", got=[""], expected=[], have_values=True, callees=["split"],
                assert_lines=["assert split('') == []"], hints={"empty"}, expected_literals={"[]"})
    guards = [c for c in guard_candidates("src/m.py", fn, lines, f) if c.kind == "empty-guard"]
    best = max(guards, key=lambda c: c.score)
    # after the check, so `split('', sep='ab')` still raises; the list type the docstring implies
    assert best.line == 6 and best.new_lines == ("    if not line:\n", "        return []\n", "    fields = []\n")
    assert {c.line for c in guards} == {3, 6}


def test_two_separate_windows_of_one_file_are_ranked_each_on_its_own():
    known = {n: t for n, t in LINES.items() if n <= 10 or n >= 13}   # line 11-12 never read
    f = Failure(message="assert 7 == 3", got=7, expected=3, have_values=True, callees=["total", "label"],
                assert_lines=["assert total([1, 2], 0) == 3"], expected_literals={"3"})
    ranked = rank_candidates(f, {"src/m.py": known}, [], "total adds the values", seed=0)
    assert {"        acc += v\n"} <= {c.new_lines[0] for c in ranked} and any(c.line == 10 for c in ranked)


def test_catalogue_offsets_call_arguments_flips_slice_signs_and_accumulates():
    # a call argument one off (semver's bump_minor), never a class or `self` passed along
    whats = _whats("        return cls(self._major, self._minor)\n")
    assert {"argument self._minor + 1", "argument self._major - 1"} <= whats
    assert not any(w.startswith(("argument cls", "argument self ", "return cls(")) for w in whats)
    assert "argument n + 1" in _whats("    return last(islice(iterable, n), default=default)\n")
    # a slice bound with the wrong sign (toolz's tail), both ways
    assert "n -> -n" in _whats("        return seq[n:]\n") and "-n -> n" in _whats("        return seq[-n:]\n")
    # an accumulation written as an assignment (toolz's frequencies), a floor division for a remainder
    assert "= -> +=" in _whats("        d[item] = 1\n")
    assert "// -> %" in _whats("            yield prev[:len(seq) // n]\n")
    # k largest / k smallest, on the module's attribute only
    assert "nsmallest -> nlargest" in _whats("    return tuple(heapq.nsmallest(k, seq, key=key))\n")
    assert not any("nlargest" in w for w in _whats("    nlargest = 3\n"))


def test_text_formatting_is_not_arithmetic():
    whats = _whats('        return "%s(%s)" % (type(self).__name__, s)\n')
    assert not any(w.startswith(("% ->", "return ", "swap operands")) for w in whats)
    assert "% -> //" in _whats("    return total % size\n")
    assert "+ -> -" not in _whats('            prerelease = str(token) + ".0"\n')
    # the arguments of zip, map, ... are iterables, not counts
    assert not any(w.startswith("argument") for w in _whats("    inposed = concat(zip(seq, itertools.repeat(el)))\n"))
    assert not any(w.startswith("return str(") for w in _whats("    return str(Version.parse(version).bump_major())\n"))


def test_a_type_error_under_a_condition_ranks_negating_it_first():
    src = '''\
def nth(n, seq):
    """The nth element in a sequence."""
    if not isinstance(seq, (tuple, list)):
        return seq[n]
    else:
        return next(itertools.islice(seq, n, None))
'''
    lines = {i + 1: t for i, t in enumerate(src.splitlines(keepends=True))}
    f = Failure(message="TypeError: 'str_ascii_iterator' object is not subscriptable", exception="TypeError",
                exception_message="'str_ascii_iterator' object is not subscriptable", frames=[("src/it.py", 4)],
                callees=["nth"], assert_lines=["assert nth(2, iter('ABCDE')) == 'C'"])
    ranked = rank_candidates(f, {"src/it.py": lines}, [], "nth(n, seq) fails on iterators", seed=0)
    assert ranked[0].line == 3 and ranked[0].new_lines == ("    if isinstance(seq, (tuple, list)):\n",)


def test_reads_after_a_patch_learn_only_unpatched_lines():
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.chooser import _unpatched

    one = Candidate("src/a.py", 10, ("x = 1\n",), "constant", "0 -> 1")
    guard = Candidate("src/a.py", 10, ("if x is None:\n", "    return 0\n", "y = x\n"), "none-guard", "guard")
    assert _unpatched(None, "src/a.py", 10) and _unpatched(one, "src/b.py", 10)
    assert _unpatched(one, "src/a.py", 9) and not _unpatched(one, "src/a.py", 10) and _unpatched(one, "src/a.py", 11)
    assert _unpatched(guard, "src/a.py", 9) and not _unpatched(guard, "src/a.py", 12)   # lines after it moved


def test_before_the_first_candidate_every_place_as_suspicious_as_the_best_is_read():
    from repair_agent.loop.actions import ReadFile
    from repair_agent.choosers.search.chooser import Plan, SearchChooser

    # a wrapper and the method it calls tie in the spectrum; only the wrapper was read
    f = Failure(message="assert '3.0.0' == '4.0.0'", suspicious={("src/v/_deprecated.py", 264): 1.0,
                ("src/v/version.py", 277): 1.0, ("src/v/version.py", 278): 1.0, ("src/v/version.py", 536): 0.3})
    plan = Plan(failure=f, known={"src/v/_deprecated.py": {n: "x = 1\n" for n in range(239, 275)}},
                reads=["src/v/_deprecated.py:239"])
    step = SearchChooser(0)._read_tied_suspects(plan)
    assert isinstance(step, ReadFile) and step.path == "src/v/version.py" and step.start_line <= 277 <= step.end_line
    plan.reads.append(f"src/v/version.py:{step.start_line}")
    assert SearchChooser(0)._read_tied_suspects(plan) is None   # at most two reads before trying


def test_a_window_that_starts_inside_a_docstring_mutates_no_prose():
    from repair_agent.choosers.search.source import _code_lines

    window = ['        Replace one or more parts of a version.\n', '\n', "        >>> v.replace(major=4)\n",
              '        """\n', '        if not parts:\n', '            return self\n']
    lines = {100 + i: t for i, t in enumerate(window)}
    assert _code_lines(lines, 100, 105, known_start=False) == {104, 105}
    # a docstring that opens inside the window is still seen as one
    opened = {1: "def f(x):\n", 2: '    """Doc.\n', 3: "    >>> f(1)\n", 4: '    """\n', 5: "    return x\n"}
    assert _code_lines(opened, 1, 5, known_start=False) == {1, 5}


def test_code_that_names_a_triple_quote_is_still_code():
    """A whole file is read by the tokenizer: `'\"\"\"'` in code opens no string, and a string over
    several lines that a statement assigns leaves that statement's line code."""
    from repair_agent.choosers.search.source import _code_lines, string_lines

    source = ['def unquote(text):\n', '    """Drop a docstring\'s quotes."""\n', "    if text.startswith('\"\"\"'):\n",
              '        return text[3:]\n', '    return text[1:]\n', '\n', 'HELP = """one\n', 'two"""\n',
              'def after():\n', '    return 1\n']
    lines = {i + 1: t for i, t in enumerate(source)}
    assert _code_lines(lines, 1, 10, known_start=True, strings=string_lines(lines)) == {1, 3, 4, 5, 6, 7, 9, 10}
    assert 4 not in _code_lines(lines, 1, 10, known_start=True)   # counting quotes loses the count there


def _edits(line: str) -> dict[str, str]:
    return {what: new.rstrip("\n") for _, what, new in line_mutations(line)}


def test_single_statement_taxonomy_edits():
    # same function, fewer arguments: the last positional argument, or one keyword argument
    assert _edits("    parts = text.split(',', 2)\n")["drop the argument 2 of split()"] == "    parts = text.split(',')"
    assert _edits("    return open(p, mode='rb')\n")["drop mode='rb' of open()"] == "    return open(p)"
    # ... never below what a builtin takes (`hasattr(k)` can only raise TypeError); a third of getattr's may go
    assert not any(w.startswith("drop the argument") for w in _edits("    ok = hasattr(k, 'default')\n"))
    assert not any(w.startswith("drop the argument") for w in _edits("    ok = isinstance(k, Optional)\n"))
    assert _edits("    v = getattr(k, 'default', None)\n")["drop the argument None of getattr()"] == "    v = getattr(k, 'default')"
    # same function, more arguments: a builtin's documented optional argument
    assert _edits("    value = int(token)\n")["int(token) -> int(token, 16)"] == "    value = int(token, 16)"
    # a power of ten one order of magnitude off
    assert _edits("    cents = amount * 10\n")["10 -> 100"] == "    cents = amount * 100"
    # a normalizing call missing from, or extra on, a compared value
    assert _edits("    if key in RESERVED:\n")["key -> key.lower()"] == "    if key.lower() in RESERVED:"
    assert _edits("    return name.strip() == other\n")["name.strip() -> name"] == "    return name == other"
    # the branches of a conditional expression swapped, or one off
    edits = _edits("    size = small if compact else large\n")
    assert edits["swap the branches of `small if compact else large`"] == "    size = large if compact else small"
    assert "large -> large + 1 (a branch of a conditional)" in edits
    # a regular expression's class escape or quantifier inverted, only inside a pattern
    edits = _edits("    WORD = re.compile(r'\\w+\\s')\n")
    assert edits["\\s -> \\S in the pattern"] == "    WORD = re.compile(r'\\w+\\S')"
    assert edits["quantifier + -> * in the pattern"] == "    WORD = re.compile(r'\\w*\\s')"
    assert not any("pattern" in w for w in _edits("    a, b = text.split('+')\n"))
    # a less specific condition
    assert _edits("    if ready and not closed:\n")["`ready and not closed` -> `ready`"] == "    if ready:"
    # a deleted call or transformation; never an assignment whose name nothing else defines
    assert _edits("    text = text.strip()\n")["delete `text = text.strip()`"] == "    pass"
    assert not any(w.startswith("delete") for w in _edits("    total = compute(a)\n"))


def test_module_constants_used_by_a_suspect_function_are_mutated():
    source = ("import re\n", "SEP = re.compile(r'\\s+')\n", "OTHER = re.compile(r'\\d')\n", "\n",
              "def words(text):\n", "    return SEP.split(text)\n")
    lines = {i + 1: t for i, t in enumerate(source)}
    f = Failure(message="assert ['a b'] == ['a', 'b']", suspicious={("m.py", 6): 1.0}, suspicious_complete=True)
    cands = rank_candidates(f, {"m.py": lines}, [], "split words", seed=0)
    on_constants = {c.line for c in cands if c.line in (2, 3)}
    assert on_constants == {2}   # the pattern the suspect function uses, not the one it does not
    best_on_pattern = max(c.score for c in cands if c.line == 2)
    assert best_on_pattern >= max(c.score for c in cands if c.line == 6) - 3   # it inherits the user's suspicion


def test_colour_codes_and_unittest_messages_are_read_as_values():
    from repair_agent.choosers.search import parse_failure
    output = ("--- pytest output (failures) ---\n"
              "    def test_join(self):\n"
              ">       self.assertEqual(join_words(['a', 'b']), 'a b')\n"
              "\x1b[1m\x1b[31mE       AssertionError: 'a,b' != 'a b'\x1b[0m\n")
    f = parse_failure(target_observation(output), "join words", ("pkg/**",))
    assert f.have_values and (f.got, f.expected) == ("a,b", "a b")
    assert "separators" in f.hints and "boundary" not in f.hints   # only punctuation differs, not a length
    assert "join_words" in f.callees


def test_a_recased_input_in_the_failing_assertion_hints_at_case_handling():
    from repair_agent.choosers.search import parse_failure
    output = ("--- pytest output (failures) ---\n"
              ">       assert lookup(word.title()) == 'x'\n"
              "E       AssertionError: assert 'y' == 'x'\n")
    assert "case" in parse_failure(target_observation(output), "lookup", ("pkg/**",)).hints


def test_ranking_rules_for_scales_bases_tables_and_failed_try_bodies():
    from repair_agent.choosers.search.ranking import _failed_try_bodies, score
    from repair_agent.choosers.search.catalogue import Candidate

    def s(line, kind, what):
        return score(Candidate("m.py", 1, (line,), kind, what), Failure(), set(), set(), line)

    wrap = "    if n % 10 in (3, 4, 5):\n"
    assert "10 -> 100" in _whats(wrap) and "10 -> 1" not in _whats(wrap)   # `n % 1` is never meant
    assert s(wrap, "scale", "10 -> 100") > s(wrap, "constant", "10 -> 9")
    assert s(wrap, "scale", "10 -> 100") > s(wrap, "constant", "4 -> 5")   # one member of a table
    hexa = "    code = int(HEX_RE.match(s).group(1))\n"
    base16 = next(w for w in _whats(hexa) if w.endswith(", 16)"))
    base8 = next(w for w in _whats(hexa) if w.endswith(", 8)"))
    assert s(hexa, "arguments", base16) > s(hexa, "arguments", base8)
    lines = {1: "def f(s):\n", 2: "    try:\n", 3: "        v = int(s)\n", 4: "    except ValueError:\n",
             5: "        pass\n", 6: "    return s\n"}
    assert _failed_try_bodies(lines, "m.py", {("m.py", 5): 1.0}) == {3: 1.0}
    assert _failed_try_bodies(lines, "m.py", {("m.py", 6): 1.0}) == {}


def test_a_key_of_a_table_written_over_lines_is_not_a_likely_off_by_one():
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.ranking import score
    key, wrap = '        3: "rd",\n', "    return table.get(n % 10)\n"
    key_score = score(Candidate("m.py", 1, (key,), "constant", "3 -> 2"), Failure(), set(), set(), key)
    scale_score = score(Candidate("m.py", 2, (wrap,), "scale", "10 -> 100"), Failure(), set(), set(), wrap)
    assert scale_score > key_score


# -- rules and edits read from how bugs look in general (see docs/search-chooser.md) ------------------

def _lines(src: str) -> dict[int, str]:
    return {i + 1: t for i, t in enumerate(src.splitlines(keepends=True))}


def test_a_self_assignment_is_offered_its_lost_sign_and_negative_indices_never_become_minus_zero():
    edits = _edits("        offset = offset\n")
    assert edits["restore the sign: `offset = -offset`"] == "        offset = -offset"
    assert "restore the sign: `offset = -offset`" not in _edits("        offset = other\n")
    assert _edits("    return offset\n")["offset -> -offset"] == "    return -offset"
    assert not any(new.endswith("[-0]") for new in _edits("    return items[-1]\n").values())
    assert _edits("    return items[-1]\n")["1 -> 2"] == "    return items[-2]"


def test_a_character_range_of_a_pattern_is_one_off_at_either_end():
    raw = _edits('        s = r"(0[oO])?[0-6]+"\n')
    assert raw["range [0-6] -> [0-7] in the pattern"] == '        s = r"(0[oO])?[0-7]+"'
    assert "range [0-6] -> [0-5] in the pattern" in raw and "range [0-6] -> [1-6] in the pattern" in raw
    assert "range [a-y] -> [a-z] in the pattern" in _edits('    m = re.match("[a-y]+", s)\n')
    assert not any(w.startswith("range") for w in _edits('    label = "[0-6]"\n'))   # plain text, not a pattern


def test_a_failure_quoting_a_pattern_that_stops_one_short_of_its_input_names_the_class():
    from repair_agent.choosers.search.failure import short_ranges
    message = "AssertionError: 'a 12345670 b' does not match 'a {:o} b' ('a ([-+ ]?(0[oO])?[0-6]+) b')"
    assert short_ranges([message]) == (["[0-6]"], ["a ([-+ ]?(0[oO])?[0-6]+) b"])
    assert short_ranges(["AssertionError: 'a 123 b' does not match ('a ([0-6]+) b')"]) == ([], [])


def test_the_chooser_searches_for_that_class_and_reads_the_hit_most_like_the_pattern():
    from repair_agent.loop.actions import ReadFile, Search
    from repair_agent.choosers.search.chooser import Plan
    from repair_agent.choosers.search.reads import find_quoted_pattern as _find_quoted_pattern
    f = Failure(short_ranges=["[0-6]"], quoted_patterns=["a ([-+ ]?(0[oO])?[0-6]+) b"])
    plan = Plan(failure=f)
    step = _find_quoted_pattern(plan, ("pkg/**",))
    assert isinstance(step, Search) and step.query == "[0-6]" and step.path_glob == "pkg/**"
    plan.searches.append("[0-6]")
    plan.hits_by_query["[0-6]"] = [("pkg/a.py", 305, '    "%w": "[0-6]",'), ("pkg/a.py", 725, '    s = r"(0[oO])?[0-6]+"')]
    step = _find_quoted_pattern(plan, ("pkg/**",))
    assert isinstance(step, ReadFile) and step.start_line <= 725 <= step.end_line


def test_a_function_the_goal_calls_is_searched_for_and_read_when_the_tests_ran_no_line():
    # a table built at import by a helper the goal names: no failing test ran a line of the scope
    from types import SimpleNamespace
    from repair_agent.loop.actions import ReadFile, Search
    from repair_agent.choosers.search.chooser import Plan
    from repair_agent.choosers.search.reads import read_goal_function
    view = SimpleNamespace(goal=SimpleNamespace(text="slugify('Щука') gives 'SCHyka': add_uppercase_char([('ж', 'zh')]) "
                                                     "returns [('Ж', 'ZH')]; str.upper() is fine"),
                           authorization=SimpleNamespace(writable=("slugify/**",)))
    plan = Plan(failure=Failure(callees=["assertEqual", "slugify"]))
    assert read_goal_function(plan, view) is None   # nothing read yet: the plain localization goes first
    plan.reads.append("slugify/slugify.py:100")
    plan.known["slugify/slugify.py"] = {100: "def slugify(text):\n", 101: "    return text\n"}
    step = read_goal_function(plan, view)   # `slugify` is read already: the next name
    assert isinstance(step, Search) and step.query == "def add_uppercase_char(" and step.path_glob == "slugify/**"
    plan.searches.append("def add_uppercase_char(")
    plan.hits_by_query["def add_uppercase_char("] = [("slugify/special.py", 4, "def add_uppercase_char(char_list):")]
    step = read_goal_function(plan, view)
    assert isinstance(step, ReadFile) and (step.path, step.start_line) == ("slugify/special.py", 4)
    plan.reads.append("slugify/special.py:4")
    assert read_goal_function(plan, view) is None   # never `upper` (a method), never twice
    # when the failing tests ran lines of the scope, the spectrum's reads are the lead: no search
    ran = Plan(failure=Failure(callees=["slugify"], suspicious={("slugify/slugify.py", 101): 1.0}), reads=["x:1"])
    assert read_goal_function(ran, view) is None


def test_texts_that_differ_only_in_case_hint_at_a_case_change_even_in_a_cut_message():
    from repair_agent.choosers.search.failure import _texts_differ_in_case
    cut = "AssertionError: Lists differ: [('Ю', 'U'), ('Щ', 'SCH')[309 chars]'y')] != [('Ю', 'U'), ('Щ', 'Sch')[309 chars]'y')]"
    assert _texts_differ_in_case(cut)
    assert not _texts_differ_in_case("AssertionError: ['a', 'b'] != ['a', 'c']")
    assert not _texts_differ_in_case("AssertionError: ['a'] != ['a']")


def test_ranking_widens_the_range_the_failure_names():
    from repair_agent.choosers.search.ranking import score
    from repair_agent.choosers.search.catalogue import Candidate
    f = Failure(short_ranges=["[0-6]"])
    line = '        s = r"(0[oO])?[0-6]+"\n'
    wide = score(Candidate("m.py", 1, (line,), "regex", "range [0-6] -> [0-7] in the pattern"), f, set(), set(), line)
    narrow = score(Candidate("m.py", 1, (line,), "regex", "range [0-6] -> [0-5] in the pattern"), f, set(), set(), line)
    assert wide >= narrow + 6


UPDATE = '''\
def update(d, k, func, default=None):
    out = dict(d)
    if k in d:
        out[k] = func(d[k])
    else:
        out[k] = default
    return out


def kind(t):
    if t == "o":
        conv = int_convert(8)
    elif t == "%":
        conv = percentage
    return conv
'''


def test_a_value_written_without_the_call_its_sibling_branch_applies_gets_it():
    from repair_agent.choosers.search.context_edits import sibling_wraps
    lines = _lines(UPDATE)
    fns = {fn.name: fn for fn in functions_in(1, list(lines.values()))}
    wraps = sibling_wraps("m.py", fns["update"], lines)
    assert [(c.line, c.new_lines) for c in wraps] == [(6, ("        out[k] = func(default)\n",))]
    assert sibling_wraps("m.py", fns["kind"], lines) == []   # arms of an elif chain, a constant argument


SPLIT = '''\
def split_at(iterable, pred, maxsplit=-1):
    if maxsplit == 0:
        yield list(iterable)
        return
    buf = []
    it = iter(iterable)
    for item in it:
        if pred(item):
            yield buf
            if maxsplit == 1:
                yield list(it)
                return
            buf = []
        else:
            buf.append(item)
    yield buf


def take(n, items):
    out = []
    for x in items:
        if n <= 0:
            break
        out.append(x)
        n -= 1
    return out
'''


def test_a_counter_a_loop_tests_but_never_updates_gets_its_update_inserted():
    from repair_agent.choosers.search.context_edits import counter_updates
    lines = _lines(SPLIT)
    fns = {fn.name: fn for fn in functions_in(1, list(lines.values()))}
    ups = counter_updates("m.py", fns["split_at"], lines)
    assert [(c.line, c.new_lines[1]) for c in ups] == [(13, "            maxsplit -= 1\n"), (13, "            maxsplit += 1\n")]
    assert ups[0].new_lines[0] == lines[13] and ups[0].score > ups[1].score   # counting down first
    assert counter_updates("m.py", fns["take"], lines) == []   # it updates n


TZ = '''\
def tz_offset(tz):
    sign = tz[0]
    tzh, tzm = tz[1:3], tz[4:6]
    offset = int(tzm) + int(tzh) * 60
    return -offset if sign == "-" else offset
'''


def test_a_test_expecting_an_exception_gets_a_raising_guard_bounded_by_the_goals_range():
    from repair_agent.choosers.search.context_edits import raising_guards
    from repair_agent.choosers.search.failure import parse_failure
    lines = _lines(TZ)
    fn = functions_in(1, list(lines.values()))[0]
    goal = "tz_offset('+01:60') returns 60 instead of raising ValueError: minutes out of 0..59 are accepted."
    f = parse_failure(target_observation("--- pytest output (failures) ---\nE       Failed: DID NOT RAISE "
                                          "<class 'ValueError'>\n"), goal, ("pkg/**",))
    assert f.not_raised == "ValueError"
    guards = raising_guards("m.py", fn, lines, f.not_raised, goal, {4})
    assert [c.new_lines[:2] for c in guards] == [
        ("    if not 0 <= int(tzm) <= 59:\n", '        raise ValueError("tzm must be in 0..59")\n'),
        ("    if not 0 <= int(tzh) <= 59:\n", '        raise ValueError("tzh must be in 0..59")\n')]
    assert raising_guards("m.py", fn, lines, f.not_raised, "minutes over 59 are accepted", {4}) == []   # no range
    assert raising_guards("m.py", fn, lines, "", goal, {4}) == []   # no exception expected
    assert "ValueError" == parse_failure(target_observation("E   AssertionError: ValueError not raised by f\n"),
                                         "", ("pkg/**",)).not_raised


def test_ranking_rules_from_the_code_around_a_line():
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.context_rules import context_bonus, context_features
    src = '''\
def search(self, string, pos=0, endpos=None):
    m = self._re.search(string, endpos, pos)
    am = groups[1].lower()
    if am == "AM" and h == 12:
        h = 0
    for sub in keys:
        d = result.setdefault(k, {})
        k = sub
    if len(chunk) > n:
        raise ValueError("iterable is not divisible by n.")
'''
    lines = _lines(src)
    fn = functions_in(1, list(lines.values()))[0]
    f = Failure()
    rules = lambda line, kind, what, failure=f: set(context_features(
        Candidate("m.py", line, (lines[line],), kind, what), fn, lines, failure))
    # a function passing its own parameters on in another order than it declares them
    assert rules(2, "swap", "swap arguments endpos, pos") == {"parameter_order"}
    assert rules(2, "swap", "swap arguments string, endpos") == set()
    # a value re-cased one way and compared with literals of the other case
    assert rules(3, "name", "lower -> upper") == {"case_agrees"}
    # a walk down a nested structure that restarts every iteration
    assert rules(7, "variable", "result -> d") == rules(7, "variable", "k -> d") == {"walk_restarts"}
    assert rules(3, "variable", "groups -> am") == set()   # not in a loop
    # the condition in front of the raise a test expected, which raises the message it looks for
    expects = Failure(not_raised="ValueError", assert_lines=[
        'self.assertRaisesRegex(ValueError, "iterable is not divisible by n", f)'])
    assert rules(9, "comparison", "> -> !=", expects) == {"expected_raise_condition", "expected_raise_message"}
    assert rules(9, "comparison", "> -> !=") == set()
    # and each rule that fires raises the candidate's score (the table weighs them positive)
    c = Candidate("m.py", 2, (lines[2],), "swap", "swap arguments endpos, pos")
    assert context_bonus(c, fn, lines, f) > 0 and "parameter_order" in c.features


def test_ranking_rules_from_the_failures_values():
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.ranking import score
    line = "    return last(islice(iterable, n), default=default)\n"
    off = Failure(got=0, expected=1, have_values=True, hints={"boundary"})
    up, down = (Candidate("m.py", 1, (line,), "argument", f"argument n {d} 1") for d in "+-")
    assert score(up, off, set(), set(), line) > score(down, off, set(), set(), line)   # it moves the value the
    assert "moves_toward_expected" in up.features and "moves_toward_expected" not in down.features   # test's way
    assert "argument iterable + 1" not in _whats(line)   # a collection is never offset
    # the arguments of an exception being raised do not decide whether it is raised
    assert not any(w.startswith("argument") for w in _whats("        raise Short(sku, quantity, available)\n"))
    assert "argument quantity + 1" in _whats("        take(sku, quantity, available)\n")
    # None reached the test's own code: a guard inside the function is not the cure
    none = Failure(exception="AttributeError", hints={"none"})
    at_frame, no_frame = (Candidate("m.py", 1, (line,), "none-guard", "guard") for _ in range(2))
    assert score(at_frame, none, set(), {("m.py", 1)}, line) > score(no_frame, none, set(), set(), line)
    assert "hint:none:none-guard" in at_frame.features and "hint:none:none-guard" not in no_frame.features
    # a callee refused a value out of its stated bounds: a clamp computed it
    from repair_agent.choosers.search.failure import parse_failure
    bounded = parse_failure(target_observation(
        "E   ValueError: Indices for islice() must be None or an integer: 0 <= x <= sys.maxsize.\n"), "tail", ("m/**",))
    assert "range" in bounded.hints
    clamp = "    return islice(it, min(0, size - n), None)\n"
    assert score(Candidate("m.py", 1, (clamp,), "extreme", "min -> max"), bounded, set(), set(), clamp) > \
        score(Candidate("m.py", 1, (clamp,), "arithmetic", "- -> +"), bounded, set(), set(), clamp)
    # unittest's sequence messages give the values
    lists = parse_failure(target_observation("E   AssertionError: Lists differ: ['A', 'B'] != ['B']\n"), "", ("m/**",))
    assert lists.have_values and (lists.got, lists.expected) == (["A", "B"], ["B"])


def test_after_two_tries_on_a_line_a_nearly_as_good_edit_elsewhere_comes_first():
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.ranking import order

    def cand(line, what, score):
        c = Candidate("m.py", line, (f"x = {what}\n",), "constant", what)
        c.score = score
        return c
    same = [cand(2, f"{k} -> {k + 1}", 10.0 - 0.2 * k) for k in range(4)]   # 10, 9.8, 9.6, 9.4
    other = cand(3, "7 -> 8", 9.0)
    for seed in range(5):
        ranked = order(same + [other], seed)
        # level with line 2's second best (the seed decides), before its third and fourth
        whats = [c.what for c in ranked]
        assert whats.index(other.what) in (1, 2) and whats[3:] == [c.what for c in same[2:]]
        assert [c.score for c in ranked[3:]] == [9.6 - 1, 9.4 - 2]   # each ranked at its score in the order
        assert [c.what for c in order(same + [other], seed)] == whats   # a function of the seed
    assert {[c.what for c in order(same + [other], seed)].index(other.what) for seed in range(8)} == {1, 2}
    tied = [cand(2, f"{k} -> {k + 1}", 10.0) for k in range(4)]
    assert order(tied + [other], 0)[-1].what == other.what   # equal scores never hold each other back


def test_taking_a_candidate_out_of_its_tier_never_reorders_the_others():
    # A demoted candidate (a refuted edit) leaves its tier: the ties after it must keep their order,
    # or a demotion moves the right edit behind others by chance.
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.ranking import order

    tied = []
    for n in range(12):
        c = Candidate("m.py", 1 + n % 3, (f"x = {n}\n",), "constant", f"0 -> {n}")
        c.score = 5.0
        tied.append(c)
    for seed in range(6):
        full = [c.what for c in order(tied, seed)]
        for gone in range(len(tied)):
            rest = [c.what for c in order(tied[:gone] + tied[gone + 1:], seed)]
            assert rest == [w for w in full if w != tied[gone].what], (seed, gone)
    assert len({tuple(c.what for c in order(tied, seed)) for seed in range(6)}) > 1   # the seed still decides


def test_a_read_never_repeats_known_lines_and_follows_a_chain_of_suspicious_lines():
    from repair_agent.loop.actions import ReadFile
    from repair_agent.choosers.search.chooser import Plan, _cluster, _read_suspects
    sus = {("m.py", n): 1.0 for n in (196, 197, 221, 240, 263)} | {("m.py", 400): 1.0}
    assert _cluster(sus, "m.py", 196) == (196, 263)   # gaps under 25 lines; 400 is another stretch
    f = Failure(suspicious={("m.py", 72): 1.0, ("m.py", 114): 1.0})
    plan = Plan(failure=f, known={"m.py": {n: "x = 1\n" for n in range(47, 105)}}, reads=["m.py:47"])
    step = _read_suspects(plan, 0.5)
    assert isinstance(step, ReadFile) and step.start_line == 105 and step.end_line >= 124


SECTIONS = '''\
def parse(path, lines):
    sections = {}
    for lineno, name in lines:
        if not name:
            raise ParseError(path, lineno, "empty section name")
        sections[name] = lineno
    return sections
'''


def test_a_duplicate_refused_raises_the_way_the_function_already_raises():
    from repair_agent.choosers.search.context_edits import raising_guards
    lines = _lines(SECTIONS)
    fn = functions_in(1, list(lines.values()))[0]
    goal = "a duplicate section must raise ParseError"
    guards = raising_guards("m.py", fn, lines, "ParseError", goal, {6})
    assert [c.new_lines for c in guards] == [("        if name in sections:\n",
                                              '            raise ParseError(path, lineno, f"duplicate {name!r}")\n',
                                              lines[6])]
    assert guards[0].score > raising_guards("m.py", fn, lines, "ParseError", "a second section", {6})[0].score


def test_a_window_read_inside_a_long_function_without_its_def_is_mutated():
    top = {1: "def helper(x):\n", 2: "    return x + 1\n"}
    inside = {700: '        elif type == "o":\n', 701: '            s = r"(0[oO])?[0-6]+"\n', 702: "        return s\n"}
    f = Failure(callees=["helper"], suspicious={("m.py", 2): 1.0, ("m.py", 701): 0.6}, short_ranges=["[0-6]"])
    ranked = rank_candidates(f, {"m.py": {**top, **inside}}, [], "octal digits", seed=0)
    assert any(c.line == 701 and "[0-7]" in c.new_lines[0] for c in ranked)
    assert "> -> !=" in _whats("    if len(chunk) > n:\n")   # an order test that should be an inequality


ARMS = '''\
def handle(self, type):
    if type == "d":
        s = r"\\d+"
        self.index += 1
    elif type == "o":
        s = r"[0-7]+"
    elif type == "x":
        s = r"[0-9a-f]+"
        self.index += 1
    else:
        s = type
        self.index += 1
    return s
'''


def test_a_statement_every_other_arm_of_an_if_chain_holds_is_inserted_in_the_arm_without_it():
    from repair_agent.choosers.search.context_edits import sibling_arm_statements
    lines = _lines(ARMS)
    fn = functions_in(1, list(lines.values()))[0]
    copies = sibling_arm_statements("m.py", fn, lines)
    assert [(c.line, c.new_lines) for c in copies] == [(6, (lines[6], "        self.index += 1\n"))]
    two_arms = _lines("def f(x):\n    if x:\n        a = 1\n        n += 1\n    else:\n        a = 2\n    return a\n")
    assert sibling_arm_statements("m.py", functions_in(1, list(two_arms.values()))[0], two_arms) == []


def test_a_duplicate_refused_is_worded_as_the_functions_other_duplicate_check():
    from repair_agent.choosers.search.context_edits import raising_guards
    src = ('def parse(path, tokens):\n    data = {}\n    for lineno, section, name in tokens:\n'
           '        if name is None:\n            data[section] = {}\n        else:\n'
           '            if name in data[section]:\n                raise ParseError(path, lineno, f"duplicate name {name!r}")\n'
           '            data[section][name] = 1\n    return data\n')
    lines = _lines(src)
    fn = functions_in(1, list(lines.values()))[0]
    guard = raising_guards("m.py", fn, lines, "ParseError", "a duplicate section must raise", {5})[0]
    assert guard.new_lines[:2] == ("            if section in data:\n",
                                   '                raise ParseError(path, lineno, f"duplicate section {section!r}")\n')


def test_a_class_escape_becomes_the_class_the_goal_names_and_unnamed_ranges_wait():
    from repair_agent.choosers.search.catalogue import Candidate
    from repair_agent.choosers.search.ranking import score
    line = "NUMBERS = re.compile(r'(?<=\\d),(?=\\D)')\n"
    digits = {"a", "comma", "between", "two", "digits", "should", "vanish"}

    def s(what, words=digits):
        return score(Candidate("m.py", 1, (line,), "regex", what), Failure(), words, set(), line)
    assert s("\\D -> \\d in the pattern") == s("\\d -> \\D in the pattern") + 2
    assert s("\\D -> \\d in the pattern", {"commas"}) == s("\\d -> \\D in the pattern", {"commas"})
    assert s("range [a-z] -> [a-y] in the pattern") == s("quantifier + -> * in the pattern") - 1


def test_what_a_failed_try_did_to_the_failure_reorders_the_edits_of_its_line():
    from repair_agent.choosers.search.chooser import effect_of
    before = {"tests.test_m::test_total": "failed: assert 7 == 3"}
    assert effect_of(before, dict(before)) == -2   # nothing moved: likely not this line
    assert effect_of(before, {**before, "tests.test_m::test_other": "failed: assert 1 == 2"}) == 0
    assert effect_of(before, {"tests.test_m::test_total": "failed: assert 5 == 3"}) == 0   # on the path, no more
    two = {**before, "tests.test_m::test_mean": "failed: assert 2 == 1"}
    assert effect_of(two, {"tests.test_m::test_mean": "failed: assert 2 == 1"}) == 2   # one target mended
    assert effect_of(two, {"tests.test_m::test_mean": "failed", "tests.test_m::a": "failed", "tests.test_m::b": "f"}) == 0
    assert effect_of(before, {}) is None   # a failed suite with no failing test listed: nothing to compare
    assert effect_of(before, {"tests.test_m::test_total": "failed: NameError: name 'acc2' is not defined"}) is None
    assert effect_of(before, {f"tests.test_m::t{i}": "failed" for i in range(20)}) is None
    assert effect_of({}, {}) is None

    f = Failure(message="assert 7 == 3", got=7, expected=3, have_values=True, callees=["total"],
                assert_lines=["assert total([1, 2], 0) == 3"], expected_literals={"3"},
                suspicious={("src/m.py", 16): 1.0, ("src/m.py", 14): 1.0}, suspicious_complete=True)
    plain = rank_candidates(f, {"src/m.py": LINES}, [], "total adds the values", seed=0)
    line = plain[0].line
    rank_on = lambda ranked, n: min(i for i, c in enumerate(ranked) if c.line == n and c.key != plain[0].key)
    same = rank_candidates(f, {"src/m.py": LINES}, [], "total adds the values", 0, {("src/m.py", line): -2.0})
    passes = rank_candidates(f, {"src/m.py": LINES}, [], "total adds the values", 0, {("src/m.py", line): 3.0})
    assert rank_on(same, line) >= rank_on(plain, line) >= rank_on(passes, line)
    scores = lambda ranked: {c.key: c.score for c in ranked if c.line == line}
    assert {k: v - 2 for k, v in scores(plain).items()} == scores(same)
    assert {k: v + 3 for k, v in scores(plain).items()} == scores(passes)
    other = next(c.line for c in plain if c.line != line)
    assert rank_on(same, other) <= rank_on(plain, other)


def _window(src: str) -> dict[int, str]:
    return dict(enumerate(src.splitlines(keepends=True), start=1))


def test_a_function_that_computes_a_value_and_falls_off_its_end_gets_a_return():
    lines = _window('def humanize(word):\n    """Readable."""\n    word = word.replace("_", " ")\n'
                    '    word = word.capitalize()\n\n\ndef other():\n    return 1\n')
    f = Failure(message="assert None == 'Employee salary'", got=None, expected="Employee salary", have_values=True,
                callees=["humanize"], assert_lines=["assert humanize('employee_salary') == 'Employee salary'"],
                suspicious={("m.py", 3): 1.0, ("m.py", 4): 1.0}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "humanize returns nothing", seed=0)
    best = ranked[0]
    assert best.line == 4 and best.new_lines == (lines[4], "    return word\n"), best.label()
    # not for a function that returns its value, nor when the test got a value
    returns = {**lines, 5: "    return word\n"}
    assert not any(c.kind == "return" for c in rank_candidates(f, {"m.py": returns}, [], "x", seed=0))
    valued = Failure(message="assert 'a' == 'b'", got="a", expected="b", have_values=True, callees=["humanize"])
    assert not any(c.kind == "return" for c in rank_candidates(valued, {"m.py": lines}, [], "x", seed=0))


def test_an_attribute_init_never_stores_is_stored_and_an_undefined_name_is_defined_as_elsewhere():
    lines = _window("class Section:\n    def __init__(self, config, name, path):\n        self.config = config\n"
                    "        self.name = name\n\n    def where(self):\n        return self.path\n")
    f = Failure(message="AttributeError: 'Section' object has no attribute 'path'", exception="AttributeError",
                exception_message="'Section' object has no attribute 'path'", frames=[("m.py", 7)], callees=["where"],
                suspicious={("m.py", 3): 1.0, ("m.py", 4): 1.0, ("m.py", 7): 1.0}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "where fails", seed=0)
    stored = [c for c in ranked if c.kind == "attribute"]
    assert [c.new_lines for c in stored] == [(lines[4], "        self.path = path\n")]
    assert ranked.index(stored[0]) < 3

    lines = _window("def pairs(iterable):\n    iterator = iter(iterable)\n    return zip(iterator, iterator)\n\n\n"
                    "def firsts(iterable):\n    return [x for x, _ in zip(iterator, iterator)]\n")
    f = Failure(message="NameError: name 'iterator' is not defined", exception="NameError",
                exception_message="name 'iterator' is not defined", frames=[("m.py", 7)], callees=["firsts"],
                suspicious={("m.py", 7): 1.0}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "firsts fails", seed=0)
    defined = [c for c in ranked if c.kind == "definition"]
    assert [c.new_lines for c in defined] == [("    iterator = iter(iterable)\n", lines[7])]
    assert ranked.index(defined[0]) < 3


def test_an_undefined_name_starts_as_what_its_uses_call_for():
    # a forgotten `ret = defaultdict(dict)`: nothing else in the file assigns `ret`
    lines = _window("from collections import defaultdict\n\n\ndef join(**maps):\n    \"\"\"Join.\"\"\"\n\n"
                    "    for field, mapping in maps.items():\n        for key, value in mapping.items():\n"
                    "            ret[key][field] = value\n    return dict(ret)\n")
    f = Failure(message="NameError: name 'ret' is not defined", exception="NameError",
                exception_message="name 'ret' is not defined", frames=[("m.py", 9)], callees=["join"],
                suspicious={("m.py", 7): 1.0, ("m.py", 8): 1.0, ("m.py", 9): 1.0}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "join fails", seed=0)
    assert ranked[0].new_lines == ("    ret = defaultdict(dict)\n", lines[7]), ranked[0].label()
    from repair_agent.choosers.search.missing import first_values
    assert first_values("out", "    out.append(x)\n") == ["[]"]
    assert first_values("seen", "    if x in seen:\n        seen.add(x)\n") == ["set()"]
    assert first_values("by", "    by[k].append(x)\n") == ["defaultdict(list)"]
    assert first_values("total", "    total += x\n")[0] == "0"
    assert first_values("text", "    text += 'a'\n")[0] == "''"
    assert first_values("x", "    print(x)\n") == []   # no use says what it holds: no guess
    bound = "    chars: list[str] = []\n    for index, char in enumerate(text):\n        if index < last:\n"
    assert first_values("last", bound) == ["len(text) - 1", "len(text)"]   # a forgotten `last = len(text) - 1`
    assert first_values("it", "    item = next(it)\n    return item, chain((item,), it)\n", ["seq"]) == ["iter(seq)"]


def test_a_called_parameter_that_was_none_gets_the_default_its_docstring_names():
    lines = _window('def partition(pred, iterable):\n    """Split by pred.\n\n    If *pred* is None, :func:`bool` is used.\n'
                    '    """\n    trues = [x for x in iterable if pred(x)]\n    return trues\n\n\n'
                    'def first_true(iterable, default=None, pred=None):\n    if pred is None:\n        pred = truthy\n'
                    '    return next(filter(pred, iterable), default)\n')
    f = Failure(message="TypeError: 'NoneType' object is not callable", exception="TypeError",
                exception_message="'NoneType' object is not callable", frames=[("m.py", 6)], callees=["partition"],
                suspicious={("m.py", 6): 1.0, ("m.py", 7): 1.0}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "partition(None, xs) fails", seed=0)
    defaults = [c.new_lines[0] for c in ranked if c.what.startswith("default pred")]
    assert defaults[:3] == ["    if pred is None:\n        pred = bool\n", "    if pred is None:\n        pred = truthy\n",
                            "    if pred is None:\n        pred = lambda x: x\n"], defaults
    assert ranked[0].new_lines[0] == defaults[0], ranked[0].label()
    # a parameter the function already gives a value is left alone, and so is any other failure
    other = Failure(message="TypeError: unsupported operand", exception="TypeError", exception_message="unsupported operand",
                    frames=[("m.py", 6)], callees=["partition"], suspicious={("m.py", 6): 1.0}, suspicious_complete=True)
    assert not any("default pred" in c.what for c in rank_candidates(other, {"m.py": lines}, [], "x", seed=0))
    f.frames, f.callees = [("m.py", 13)], ["first_true"]
    assert not any("default pred" in c.what and c.line > 10 for c in rank_candidates(f, {"m.py": lines}, [], "x", seed=0))


def test_a_bound_method_never_called_is_called_after_a_use_of_its_object():
    lines = _window("def rstrip(iterable, pred):\n    cache = []\n    cache_append = cache.append\n"
                    "    cache_clear = cache.clear\n    for x in iterable:\n        if pred(x):\n"
                    "            cache_append(x)\n        else:\n            yield from cache\n            yield x\n")
    f = Failure(message="AssertionError: [0, 5, 0, 0, 7] != [0, 5, 0, 7]", exception="AssertionError",
                callees=["rstrip"], suspicious={("m.py", n): 1.0 for n in (5, 6, 7, 9, 10)}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "rstrip repeats items", seed=0)
    assert ranked[0].new_lines == (lines[9], "            cache_clear()\n"), ranked[0].label()
    # a bound method that is called, or one whose call would need an argument, is no lost call
    called = {**lines, 10: "            cache_clear()\n"}
    assert not any(c.kind == "missing-call" and "never called" in c.what
                   for c in rank_candidates(f, {"m.py": called}, [], "x", seed=0))
    needs_argument = {**lines, 4: "    cache_add = cache.append\n"}
    assert not any("cache_add()" in "".join(c.new_lines) for c in rank_candidates(f, {"m.py": needs_argument}, [], "x", seed=0))


def test_a_value_stored_right_before_a_return_gets_the_use_the_function_makes_of_it_elsewhere():
    lines = _window("def split_after(iterable, pred, maxsplit=-1):\n    buf = []\n    it = iter(iterable)\n"
                    "    for item in it:\n        buf.append(item)\n        if pred(item) and buf:\n            yield buf\n"
                    "            if maxsplit == 1:\n                buf = list(it)\n                return\n"
                    "            buf = []\n            maxsplit -= 1\n    if buf:\n        yield buf\n")
    f = Failure(message="AssertionError: Lists differ: [['a', ',']] != [['a', ','], ['b', ',', 'c']]", exception="AssertionError",
                callees=["split_after"], suspicious={("m.py", n): 1.0 for n in (8, 9, 10)}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "split_after loses the rest", seed=0)
    fix = (lines[9], "                if buf:\n                    yield buf\n")
    assert fix in [c.new_lines for c in ranked[:3]], [c.label() for c in ranked[:3]]
    # a stored value the return itself uses is no dead store
    used = {**lines, 10: "                return buf\n"}
    assert not any(c.kind == "sibling-copy" and c.line == 9 for c in rank_candidates(f, {"m.py": used}, [], "x", seed=0))


def test_a_missing_middle_step_of_a_sequence_gets_its_elif_arm():
    lines = _window("def caret(target):\n    if target.major:\n        high = target.next_major()\n"
                    "    else:\n        high = target.next_patch()\n    return high\n")
    f = Failure(message="AssertionError: assert False", exception="AssertionError", callees=["caret"],
                suspicious={("m.py", n): 1.0 for n in (2, 4, 5, 6)}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "^0.1.2 should not match 0.2.0", seed=0)
    arm = (lines[3], "    elif target.minor:\n", "        high = target.next_minor()\n")
    assert arm in [c.new_lines for c in ranked], [c.label() for c in ranked[:5]]
    # the steps in order, none missing: nothing to add
    full = _window("def f(t):\n    if t.major:\n        h = t.next_major()\n    else:\n        h = t.next_minor()\n")
    assert not any("arm between" in c.what for c in rank_candidates(f, {"m.py": full}, [], "x", seed=0))


def test_a_separator_the_got_and_expected_texts_differ_by_is_swapped_in_its_literal():
    from repair_agent.choosers.search.values import separator_change
    # the top of a window that starts inside a function whose `def` is above it
    lines = {n: t for n, t in _window('def parse(data):\n    out = {}\n    for k, v in data:\n'
                                      '        out[k] = " ".join(v)\n    return out\n\n\ndef other():\n    return ", "\n').items()
             if n >= 3}
    f = Failure(message="assert 'pypi other' == 'pypi\\nother'", got="pypi other", expected="pypi\nother",
                have_values=True, callees=["parse"], hints={"separators"},
                suspicious={("m.py", 3): 1.0, ("m.py", 4): 1.0}, suspicious_complete=True)
    assert separator_change(f) == (" ", "\n")
    ranked = rank_candidates(f, {"m.py": lines}, [], "values lose their line breaks", seed=0)
    assert ranked[0].new_lines == ('        out[k] = "\\n".join(v)\n',), ranked[0].label()
    assert not any(c.line == 9 and c.kind == "separator" for c in ranked)   # `", "` is another literal
    # words, not separators: nothing to swap
    assert separator_change(Failure(got="pypi other", expected="pypi thing", have_values=True)) is None
    assert separator_change(Failure(got="a-b-c", expected="a_b+c", have_values=True)) is None
    # text inserted where the code wrote nothing ('> one two three' for '> one two\n> three') is no separator
    assert separator_change(Failure(got="> one two three", expected="> one two\n> three", have_values=True)) is None


def test_a_wrong_type_points_at_variables_and_endless_recursion_at_the_base_case():
    from repair_agent.choosers.search.failure import _hints
    typed = Failure(exception="TypeError", exception_message="expected string or bytes-like object, got 'bool'")
    assert "type" in _hints(typed, "camelize fails")
    assert "recursion" in _hints(Failure(exception="RecursionError", exception_message="maximum recursion depth exceeded"), "")
    lines = _window("def camelize(string, upper=True):\n    if not upper:\n        return string.title()\n"
                    "    return string[0].lower() + camelize(string)[1:]\n")
    f = Failure(message="RecursionError: maximum recursion depth exceeded", exception="RecursionError",
                exception_message="maximum recursion depth exceeded", frames=[("m.py", 4)], callees=["camelize"],
                hints={"recursion"}, suspicious={("m.py", 2): 1.0, ("m.py", 4): 1.0}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "camelize never returns", seed=0)
    assert ranked[0].line == 2, ranked[0].label()   # the condition that should end the recursion


def test_the_expressions_inside_an_f_string_are_mutated_like_any_other():
    line = '        return f"{self.path}:{self.lineno - 1}: {self.msg!r:>10} {{literal}}"\n'
    edits = {new for kind, what, new in line_mutations(line) if "f-string" in what}
    assert '        return f"{self.path}:{self.lineno + 1}: {self.msg!r:>10} {{literal}}"' in edits
    assert all("{{literal}}" in new and "!r:>10" in new for new in edits)   # braces and specs kept


def test_an_expectation_written_first_is_never_copied_either():
    from repair_agent.choosers.search.failure import _expected_literals
    # `assert 42 == answer(1)`: pytest prints `assert 42 == 41` and says which side the call computed
    f = Failure(message="assert 42 == 41", got=41, expected=42, have_values=True, callees=["answer"],
                hints={"boundary"}, assert_lines=["assert 42 == answer(1)"])
    f.expected_literals = _expected_literals(f)
    assert "42" in f.expected_literals
    ranked = rank_candidates(f, {"src/m.py": LINES}, [], "answer must be right", seed=0)
    assert ranked and not any("42" in "".join(c.new_lines) for c in ranked)


# -- rules from the second development corpus (hand-written bugs) -------------------------------

def _top(f: Failure, src: str, goal: str = "it is wrong", path: str = "m.py"):
    return rank_candidates(f, {path: _window(src)}, [], goal, seed=0)


def test_the_object_of_an_attribute_may_be_the_wrong_variable_and_a_line_that_computes_nothing_says_so():
    src = ("class Pointer:\n    def contains(self, ptr):\n        \"\"\"Whether ptr is a prefix.\"\"\"\n"
           "        return self.parts[:len(self.parts)] == ptr.parts\n")
    f = Failure(message="AssertionError: False is not true", got=False, expected=True, have_values=True,
                hints={"boolean"}, callees=["contains"], suspicious={("m.py", 4): 1.0}, suspicious_complete=True)
    ranked = _top(f, src)
    right = [i for i, c in enumerate(ranked) if c.new_lines == ("        return self.parts[:len(ptr.parts)] == ptr.parts\n",)]
    assert right and right[0] < 3, [c.label() for c in ranked[:5]]
    slices = [i for i, c in enumerate(ranked) if c.kind == "slice"]
    assert right[0] < min(slices)   # the redundancy, not the bound, is what the line gets wrong
    # `self` is never swapped with a name that lacks the attribute, and two plain names are left to the usual swaps
    assert "self -> ptr (self.parts)" in _whats("        return self.parts == ptr.parts\n", ("ptr",))
    assert not any("self ->" in w for w in _whats("        return self.parts == ptr\n", ("ptr",)))


def test_a_function_returning_nothing_in_the_wrong_form_gets_the_form_the_test_expects():
    from repair_agent.choosers.search import parse_failure
    output = ("--- pytest output (failures) ---\n"
              ">       self.assertIsNone(spec.select([]))\n"
              "E       AssertionError: [] is not None\n")
    f = parse_failure(target_observation(output), "select returns [] when nothing matches", ("pkg/**",))
    assert f.have_values and (f.got, f.expected) == ([], None)
    src = ("def select(self, versions):\n    options = list(versions)\n    if options:\n"
           "        return max(options)\n    return []\n")
    f.suspicious, f.suspicious_complete = {("m.py", 5): 1.0, ("m.py", 2): 0.8, ("m.py", 3): 0.8}, True
    assert _top(f, src)[0].new_lines == ("    return None\n",)
    # assertTrue / assertFalse name their values too
    t = parse_failure(target_observation("--- pytest output (failures) ---\nE       AssertionError: True is not false\n"),
                      "", ("pkg/**",))
    assert (t.got, t.expected, t.have_values) == (True, False, True)


def test_a_guard_returns_the_tuple_the_function_returns_and_may_sit_at_its_top():
    src = ("class Pointer:\n    def to_last(self, doc):\n        \"\"\"Resolves until the last step.\"\"\"\n\n"
           "        for part in self.parts[:-1]:\n            doc = self.walk(doc, part)\n\n"
           "        return doc, self.get_part(doc, self.parts[-1])\n")
    lines = _window(src)
    fn = functions_in(1, list(lines.values()))[0]
    f = Failure(exception="IndexError", exception_message="list index out of range", frames=[("m.py", 8)],
                hints={"empty", "boundary"})
    assert documented_returns(fn, lines, f) == ["doc, None"]
    guards = {(c.line, "".join(c.new_lines[:2])) for c in frame_guards("m.py", 8, lines, fn, f)}
    assert (5, "        if not self.parts:\n            return doc, None\n") in guards   # at the top of to_last
    assert (8, "        if not self.parts:\n            return doc, None\n") in guards   # before the failing line
    assert not any("Pointer" in g for _, g in guards)   # a class is never None nor empty


def test_a_parallel_assignment_pairs_its_values_as_its_targets():
    src = ("def minmax(it, key):\n    lo = hi = next(it)\n    lo_key = hi_key = key(lo)\n    for x, y in pairs(it):\n"
           "        x_key, y_key = key(x), key(y)\n        if hi_key < x_key:\n            hi, hi_key = y, x_key\n"
           "    return lo, hi\n")
    f = Failure(message="assert (1, 1) == (1, 4)", got=(1, 1), expected=(1, 4), have_values=True, callees=["minmax"],
                suspicious={("m.py", n): 1.0 for n in range(2, 9)}, suspicious_complete=True)
    variables = [c for c in _top(f, src) if c.kind == "variable"]
    # the two edits whose values pair up as the targets do (`x, x_key` and `y, y_key`) come before
    # every other; which of the two is right, nothing here says (a run's mutation analysis may)
    assert {c.new_lines for c in variables[:2]} == {("            hi, hi_key = x, x_key\n",),
                                                     ("            hi, hi_key = y, y_key\n",)}
    assert variables[2].score < variables[1].score


def test_a_return_of_nothing_may_be_the_parameter_the_function_never_reads():
    src = ("def get(\n    self,\n    section,\n    name,\n    default: Optional[T] = None,\n"
           "    convert: Callable[[str], T] = None,\n):\n"
           "    try:\n        value = self.sections[section][name]\n    except KeyError:\n        return None\n"
           "    else:\n        if convert is not None:\n            return convert(value)\n        else:\n"
           "            return value\n")
    lines = _window(src)
    assert functions_in(1, list(lines.values()))[0].params == ["section", "name", "default", "convert"]
    f = Failure(message="assert None == 'x'", got=None, expected="x", have_values=True, callees=["get"],
                hints={"default", "none"}, suspicious={("m.py", n): 1.0 for n in (8, 9, 10, 11)}, suspicious_complete=True)
    ranked = _top(f, src, "the default is ignored")
    assert ("        return default\n",) in [c.new_lines for c in ranked[:3]], [c.label() for c in ranked[:5]]
    # every branch returns: nothing is inserted at the end
    assert not any("at the end of get" in c.what for c in ranked)


def test_overload_stubs_on_one_line_are_not_functions():
    src = ("@overload\ndef get(key: str) -> str: ...\n@overload\ndef get(key: str, default: T) -> T: ...\n"
           "def get(key, default=None):\n    return lookup(key) or default\n")
    fns = functions_in(1, src.splitlines(keepends=True))
    assert [(fn.def_line, fn.params, fn.end_line) for fn in fns] == [(5, ["key", "default"], 6)]


def test_numbers_that_come_out_negated_hint_at_a_sign():
    from repair_agent.choosers.search.failure import _hints
    assert "sign" in _hints(Failure(got=[10, -10, -10], expected=[10, 10, 10], have_values=True), "")
    assert "sign" not in _hints(Failure(got=[10, 9], expected=[10, 10], have_values=True), "")


def test_a_call_may_be_to_a_sibling_function_of_a_similar_name():
    src = ("def concat(seqs):\n    return chain.from_iterable(seqs)\n\n\ndef concatv(*seqs):\n    return concat(seqs)\n\n\n"
           "def mapcat(func, seqs):\n    return concatv(map(func, seqs))\n")
    whats = {w for _, w, _ in line_mutations("    return concatv(map(func, seqs))\n", (), (), ("concat", "concatv", "map"))}
    # `map` has no sibling of a similar name here; `filter` for `map` is a slip of the swaps table
    assert "concatv() -> concat()" in whats and "map() -> filter()" in whats
    assert not any(w.startswith("map() -> ") for w in whats - {"map() -> filter()"})
    f = Failure(message="assert [['a', 'b']] == ['a', 'b']", got=[["a", "b"]], expected=["a", "b"], have_values=True,
                callees=["mapcat"], suspicious={("m.py", 10): 1.0, ("m.py", 6): 0.7}, suspicious_complete=True)
    ranked = _top(f, src)
    right = ("    return concat(map(func, seqs))\n",)
    assert right in [c.new_lines for c in ranked[:4]], [c.label() for c in ranked[:6]]


def test_a_value_off_by_a_power_of_ten_ranks_the_edit_that_scales_it_back_first():
    src = "def percentage(string, match):\n    return float(string[:-1]) / 10.0\n"
    whats = _whats("    return float(string[:-1]) / 10.0\n")
    assert "10.0 -> 100.0" in whats and "10.0 -> 1.0" not in whats   # never a division by one
    f = Failure(message="assert 2.5 == 0.25", got=2.5, expected=0.25, have_values=True, callees=["percentage"],
                suspicious={("m.py", 2): 1.0}, suspicious_complete=True)
    assert _top(f, src)[0].new_lines == ("    return float(string[:-1]) / 100.0\n",)
    # the other way round the same edit would scale the wrong way: it gets no bonus
    g = Failure(message="assert 0.025 == 0.25", got=0.025, expected=0.25, have_values=True, callees=["percentage"],
                suspicious={("m.py", 2): 1.0}, suspicious_complete=True)
    assert _top(g, src)[0].new_lines != ("    return float(string[:-1]) / 100.0\n",)


def test_a_method_of_another_object_is_never_swapped_for_a_function_of_this_file():
    whats = {w for _, w, _ in line_mutations("    return text.strip()\n", (), (), ("str", "stripped"))}
    assert not any(w.startswith("strip()") for w in whats)
    assert "_walk() -> walk()" in {w for _, w, _ in line_mutations("    return self._walk(doc)\n", (), (), ("walk",))}


def test_scope_edits_name_what_the_code_around_the_line_holds():
    sig = signatures_of({1: "def is_open(day, holidays=()):\n", 5: "    def run(self, x,\n", 6: "            y=2):\n"})
    assert sig == {"is_open": ("day", "holidays"), "run": ("x", "y")}

    def edits(line, names, calls=()):
        return {what: new for _, what, new in line_mutations(line, (), names, calls, sig)}
    # same function, more arguments: a parameter of the callee that a variable in scope would fill,
    # by position when it is the next one, by keyword after that; never one already passed
    assert edits("    if is_open(current):\n", ("current", "holidays"))["pass holidays to is_open()"] \
        == "    if is_open(current, holidays):"
    assert edits("    self.run(a)\n", ("a", "y"))["pass y to run()"] == "    self.run(a, y)"
    assert edits("    self.run()\n", ("y",))["pass y to run()"] == "    self.run(y=y)"
    assert not any(w.startswith("pass") for w in edits("    is_open(d, holidays)\n", ("d", "holidays")))
    assert not any(w.startswith("pass") for w in edits("    is_open(*days)\n", ("days", "holidays")))
    # a missing call: a value through a variable of the scope the file calls elsewhere, never a function itself
    made = edits("        inner[k] = default\n", ("func", "default", "k"), ("func",))
    assert made["default -> func(default)"] == "        inner[k] = func(default)"
    assert "func -> func(func)" not in made and not any("func(" in w for w in edits("    x = y\n", ("y",)))
    # `return None` where a variable was meant; only a neutral value is replaced
    assert edits("    return None\n", ("name", "default"))["return None -> return default"] == "    return default"
    assert not any(w.startswith("return 1 ->") for w in edits("    return 1\n", ("name",)))
    # a name's word for its opposite, when the file names the counterpart; attributes that come in pairs
    assert edits("    yield (left_default, item)\n", ("left_default", "right_default", "item"))[
        "left_default -> right_default"] == "    yield (right_default, item)"
    assert "left_x -> right_x" not in edits("    return left_x\n", ("left_x",))
    assert edits("    return m.start()\n", ("m",))[".start -> .end"] == "    return m.end()"
    assert ".get -> .set" not in edits("    return d.get(k)\n", ("d", "k"))


def test_an_attribute_read_may_become_another_attribute_of_the_object():
    from repair_agent.in_sandbox.operators import attribute_names, line_mutations

    lines = {1: "        self.path = path\n", 2: "        self.sections = {}\n",
             3: "        return self._start > self._step\n", 4: "        self._stop = self.run()\n"}
    attrs = attribute_names(lines)
    assert attrs == ("path", "sections", "_start", "_step", "_stop")   # `self.run()` is a method
    edits = {what: new for _, what, new in line_mutations("            value = self.path[section][name]\n",
                                                          attributes=attrs)}
    assert edits["self.path -> self.sections"] == "            value = self.sections[section][name]"
    edits = {what for _, what, _ in line_mutations(lines[3], attributes=attrs)}
    assert "self._step -> self._stop" in edits
    # never the target of an assignment; with many attributes, only the look-alikes
    assert not any(w.startswith("self.path ->") for _, w, _ in line_mutations(lines[1], attributes=attrs))
    many = attrs + tuple(f"other{k}" for k in range(10))
    edits = {what for _, what, _ in line_mutations(lines[3], attributes=many)}
    assert "self._step -> self._stop" in edits and "self._step -> self.other3" not in edits
    # the line's tokens, not its characters: a comment or a string that names an attribute is no read
    assert not any(w.startswith("self.path") for _, w, _ in line_mutations(
        "        log('self.path missing')  # self.path is set in __init__\n", attributes=attrs))


def test_unittest_assertion_methods_are_never_searched_for_as_the_repositorys_functions():
    from repair_agent.choosers.search.chooser import UNITTEST_METHOD
    assert all(UNITTEST_METHOD.match(n) for n in ("assertEqual", "assertRaises", "fail", "failUnless"))
    assert not any(UNITTEST_METHOD.match(n) for n in ("assert_valid", "failover", "asserted", "validate"))


def test_when_none_was_called_the_top_of_the_function_a_frame_is_in_is_read_once():
    from repair_agent.loop.actions import ReadFile
    from repair_agent.choosers.search.chooser import Plan
    from repair_agent.choosers.search.reads import read_enclosing_def
    # a nested function's window: `def gen` is in view, the `def partition` holding it is not
    window = {n: "        x = 1\n" for n in range(411, 456)}
    window[434] = "    def gen(queue):\n"
    window[441] = "                (append_true if pred(value) else append_false)(value)\n"
    f = Failure(exception="TypeError", exception_message="'NoneType' object is not callable", frames=[("m.py", 441)])
    plan = Plan(failure=f, reads=["m.py:411"])
    plan.known["m.py"] = window
    step = read_enclosing_def(plan)
    assert isinstance(step, ReadFile) and (step.start_line, step.end_line) == (371, 410)
    plan.reads.append("m.py:371")
    assert read_enclosing_def(plan) is None   # once
    # a method's `def` in view, a function at the margin, or another failure: nothing to read
    for top in ("    def get(self, key):\n", "def partition(pred, iterable):\n"):
        p = Plan(failure=f, reads=["m.py:411"])
        p.known["m.py"] = {**window, 420: top}
        assert read_enclosing_def(p) is None, top
    other = Plan(failure=Failure(exception="ValueError", exception_message="bad", frames=[("m.py", 441)]), reads=["x"])
    other.known["m.py"] = window
    assert read_enclosing_def(other) is None


def test_a_raise_the_test_expected_already_under_an_if_makes_its_condition_likelier_than_a_new_guard():
    # The test expected a ValueError that was not raised, and right there an `if` raises it: the
    # condition let the value through (`and` for `or`); a new guard raising it before that `if` passes
    # the tests too, but duplicates the check with another condition.
    from repair_agent.hints.mutation import MutantFix

    src = '''def extract(indices, iterator):
    for index in indices:
        advance = index - 1
        try:
            value = next(iterator)
        except ValueError:
            if advance != -1 and index < 0:
                raise ValueError(f'Invalid index: {index}') from None
        yield value
'''
    lines = _lines(src)
    guard = "            if advance <= 0:\n                raise ValueError('n must be at least 0')\n" + lines[7].rstrip("\n")
    fix = MutantFix(path="m.py", line=7, text=guard, what="guard `if advance <= 0: raise ValueError('n must be at least 0')`",
                    family="guard", fixed=1, of=1, broken=0, checked=3)
    f = Failure(not_raised="ValueError", suspicious={("m.py", n): 1.0 for n in (3, 5, 6, 7)},
                mutant_fixes={("m.py", 7): [fix]})
    ranked = [c.what for c in rank_candidates(f, {"m.py": lines}, [], "", 0)]
    assert ranked.index("and -> or") < ranked.index(fix.what), ranked[:8]
    # an exception where none was expected (the `if` crashed): a missing guard stays as likely as before
    crashed = Failure(exception="IndexError", suspicious=f.suspicious, mutant_fixes=f.mutant_fixes)
    assert [c.what for c in rank_candidates(crashed, {"m.py": lines}, [], "", 0)][0] == fix.what


def test_a_joiner_that_wrote_nothing_gets_the_text_the_expected_value_has_between_the_pieces():
    # 'helloworld' for 'hello world': every difference is one ` ` put in where the code wrote nothing;
    # an empty literal that joins pieces is where that text goes (an empty literal elsewhere is not)
    lines = _window('def main(args):\n    label = ""\n    text = "".join(args.words)\n    return label + text\n')
    f = Failure(message="assert 'helloworld' == 'hello world'", got="helloworld", expected="hello world",
                have_values=True, suspicious={("m.py", n): 1.0 for n in (2, 3, 4)}, suspicious_complete=True)
    ranked = rank_candidates(f, {"m.py": lines}, [], "the words run together", seed=0)
    assert ranked[0].new_lines == ('    text = " ".join(args.words)\n',), ranked[0].label()
    assert not any(c.line == 2 and c.kind == "separator" for c in ranked)
    # several different insertions are no joiner's
    mixed = Failure(got="ab", expected="a b-", have_values=True, suspicious=f.suspicious)
    assert not any(c.kind == "separator" for c in rank_candidates(mixed, {"m.py": lines}, [], "", seed=0))
