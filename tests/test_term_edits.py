"""Arithmetic the operator table edits beyond one token: a term too many (`a - len(sep)` -> `a`) and a
whole argument one off (`min(max(a, b), n)` -> `min(max(a, b) + 1, n)`), each also a slip the
generator may make the other way round."""
from __future__ import annotations

from repair_agent.in_sandbox.operators import analysis_mutations, line_mutations


def edits(line: str) -> dict[str, tuple[str, str]]:
    return {new.rstrip("\n"): (family, what) for family, what, new in line_mutations(line + "\n")}


def test_a_term_of_a_sum_or_difference_may_be_one_too_many():
    out = edits("        parts.append(delimiter + word[:remaining - len(separator)].rstrip(joiners))")
    assert out["        parts.append(delimiter + word[:remaining].rstrip(joiners))"] == ("term", "drop `- len(separator)`")
    assert "        parts.append(word[:remaining - len(separator)].rstrip(joiners))" in out   # the first of a sum
    # never a constant term (the constant edits own those) nor the text of a format
    assert not any("drop `- 1`" == w for _, w in edits("    n = size - 1").values())
    assert not any(w.startswith("drop") for _, w in edits("    s = '%s-%s' % (a, b)").values())


def test_a_computed_argument_of_a_numeric_call_may_be_one_off():
    out = edits("            n = min(max(start, stop), maxsize)")
    assert out["            n = min(max(start, stop) + 1, maxsize)"] == ("argument", "argument max(start, stop) + 1")
    assert "            n = min(max(start, stop) - 1, maxsize)" in out
    assert "    x = round(a - b + 1)" in edits("    x = round(a - b)")
    # a call that is not a number's is left alone: `print(f(x) + 1)` is no off-by-one anyone writes
    assert "    print(f(x) + 1)" not in edits("    print(f(x))")


def test_the_analysis_gets_them_too():
    news = [new for _, _, new in analysis_mutations("    return a - len(sep)\n", ("a", "sep"))]
    assert "    return a\n" in news


def test_a_short_literal_may_be_another_separator_in_the_analysis():
    from repair_agent.in_sandbox.operators import literal_swaps

    out = literal_swaps('    return "".join(words)\n', ("#",))
    assert ("separator", "'' -> ' '", '    return " ".join(words)\n') in out
    assert ("separator", "'' -> '#'", '    return "#".join(words)\n') in out
    assert all(new.endswith("\n") and new != '    return "".join(words)\n' for _, _, new in out)
    assert literal_swaps("    x = f'{a}-{b}'\n", ()) == []                  # an f-string is no literal to swap
    assert literal_swaps('    msg = "a long message"\n', ()) == []         # nor a word
    assert len(literal_swaps("    s = a.replace('-', '_')\n", ())) <= 2 * 8


def test_a_joiner_that_wrote_nothing_is_found_by_the_analysis(tmp_path):
    from repair_agent.hints.localization import localize

    from helpers import calc_sandbox
    src = 'def words(items):\n    return "".join(items)\n'
    tests = ('from calc import words\n\n\ndef test_words():\n    assert words(["a", "b"]) == "a b"\n\n\n'
             'def test_one():\n    assert words(["a"]) == "a"\n')
    m = localize(calc_sandbox(tmp_path, src, tests), ("tests/test_calc.py::test_words",), ("src/**",), mutate=True).mutation
    assert m is not None
    assert [f.text for f in m.fixes if f.clean] == ['    return " ".join(items)']


def test_a_line_with_text_beyond_ascii_is_edited_where_its_nodes_are():
    # the parser's columns count UTF-8 bytes; a line's text counts characters: with `"é"` before them,
    # every edit placed by the parser's columns was garbled (`min(a, + 1 b)`), and did not compile
    import ast

    line = '    x = "é" + min(a, b) + f(c) - len(sépar)\n'
    news = [new for _, _, new in analysis_mutations(line, ("a", "b", "c", "x", "sépar"))]
    assert '    x = "é" + min(a, b + 1) + f(c) - len(sépar)\n' in news
    assert '    x = "é" + min(b, a) + f(c) - len(sépar)\n' in news
    for new in news:
        ast.parse(new.strip())   # every edit is Python
