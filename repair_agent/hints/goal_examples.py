"""The examples a bug report states, read off its text for the mutation analysis (agent side only).

A report often says what a call does and what it should do: "Not(Literal('x')).as_rule() gives "&'x'"
instead of "!'x'"", "humanize('author_id') == 'Author'", "... instead of raising ValueError". Such an
example is a test the repository does not have: the visible tests may pass on several edits that
disagree on it. The mutation analysis evaluates each example on the tree as given and on every mutant
that turns the failing targets green (in_sandbox/examples.py), and the search chooser tries the clean
fixes that agree with the most examples first.

Reading prose is a guess: an expression is the longest tail of the text before the verb that parses
as a call, a subscript or an attribute, and a value the longest head after "instead of" (or `==`) that
is a Python literal. A misread example costs nothing but its evaluation: one that no mutant evaluates
differently from another tells no fix apart and changes no order.
"""
from __future__ import annotations

import ast
import itertools
import re

from pydantic import BaseModel, ConfigDict

from ..in_sandbox.examples import MAX_EXAMPLES

MAX_EXPR = 300        # characters of one expression
MAX_LITERAL = 400     # characters of one expected value
MAX_MARKERS = 20      # "instead of"s and `==`s read, each: a long text costs a bounded time

# "<expr> gives <what it does> instead of <what it should>"
VERB = re.compile(r"\b(?:returns|gives|yields|produces|evaluates to|comes back as|is)\s+")
INSTEAD = re.compile(r"\binstead of\s+")
RAISING = re.compile(r"raising\s+(?:an?\s+)?([A-Z]\w*(?:Error|Exception|Warning))\b")
EQUALS = re.compile(r"\s==\s")
QUOTED = re.compile(r"'[^'\\\n]*'|\"[^\"\\\n]*\"")   # a quoted string without escapes
START = re.compile(r"(?<![\w.'\"\\])[A-Za-z_]")   # where an expression may start: a name not inside another


class GoalExample(BaseModel):
    """One stated example: an expression and either the value it should have (a literal's source) or
    the exception it should raise (its class name)."""

    model_config = ConfigDict(frozen=True)

    expr: str
    expect: str | None = None
    raises: str | None = None


def goal_examples(text: str) -> tuple[GoalExample, ...]:
    """The examples in a goal text, in its order, each once (MAX_EXAMPLES at most)."""
    found: list[GoalExample] = []
    for m in itertools.islice(INSTEAD.finditer(text), MAX_MARKERS):
        after = text[m.end():]
        raised = RAISING.match(after)
        expect = None if raised else _literal_head(after)
        if not (raised or expect):
            continue
        # the nearest verb before it with a call before that ("f('x') returns junk (the word is read
        # as hex) instead of raising ValueError": not "is"), within the sentence and after an earlier example
        full_stop, earlier = text.rfind(". ", 0, m.start()), text.rfind("instead of", 0, m.start())
        sentence = max(full_stop + 2 if full_stop >= 0 else 0, earlier + len("instead of") if earlier >= 0 else 0)
        for verb in reversed(list(VERB.finditer(text, sentence, m.start()))):
            expr = _expression_tail(text[sentence:verb.start()])
            if expr:
                example = (GoalExample(expr=expr, raises=raised.group(1)) if raised else
                           GoalExample(expr=expr, expect=expect))
                found += [example, *_variants(example, text)]
                break
    for m in itertools.islice(EQUALS.finditer(text), MAX_MARKERS):
        expr, expect = _expression_tail(text[:m.start()]), _literal_head(text[m.end():])
        if expr and expect:
            found.append(GoalExample(expr=expr, expect=expect))
    return tuple(dict.fromkeys(found))[:MAX_EXAMPLES]


def _variants(example: GoalExample, text: str) -> list[GoalExample]:
    """The example again with its one string argument replaced by each other quoted string of the text
    that is the same word in another case or with other whitespace around it ("the keyword 'transparent',
    matched case-insensitively after stripping whitespace ('Transparent', '  TRANSPARENT ')"): the report
    names them as the same input, so they should come out the same. Only for an expected exception or a
    value without text in it: text may keep the input's case ("pluralize('Cow') == 'Kine'")."""
    if example.expect is not None and ("'" in example.expect or '"' in example.expect):
        return []
    try:
        call = ast.parse(example.expr, mode="eval").body
    except SyntaxError:
        return []
    strings = [a for a in getattr(call, "args", []) if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not isinstance(call, ast.Call) or len(strings) != 1 or not strings[0].value.strip():
        return []
    word = strings[0].value
    quoted = {ast.literal_eval(q.group(0)) for q in QUOTED.finditer(text)}
    out = []
    for other in sorted(q for q in quoted if q != word and q.strip().lower() == word.strip().lower()):
        arg = strings[0]
        new = ast.unparse(ast.Call(func=call.func, args=[ast.Constant(other) if a is arg else a for a in call.args],
                                   keywords=call.keywords))
        out.append(example.model_copy(update={"expr": new}))
    return out


def _expression_tail(text: str) -> str | None:
    """The longest tail of `text` that is a call, a subscript or an attribute of one (not a sentence:
    no ". " in it)."""
    text = text.rstrip()
    for m in START.finditer(text, max(0, len(text) - MAX_EXPR)):
        tail = text[m.start():]
        if ". " in tail:
            continue
        try:
            node = ast.parse(tail, mode="eval").body
        except SyntaxError:
            continue
        if isinstance(node, (ast.Call, ast.Subscript, ast.Attribute)) and any(
                isinstance(n, (ast.Call, ast.Subscript)) for n in ast.walk(node)):
            return tail
    return None


def _literal_head(text: str) -> str | None:
    """The longest head of `text` that is a Python literal (a string, a number, a container of them,
    None, True, False)."""
    text = text[:MAX_LITERAL]
    for end in range(len(text), 0, -1):
        head = text[:end]
        if not (head[-1] in "'\")]}" or head[-1].isdigit() or head.endswith(("None", "True", "False"))):
            continue
        rest = text[end:end + 2]
        if not (rest[:1] in ("", " ", ",", ";", ")", "\n") or (rest[:1] in (".", ":") and rest[1:2].strip() == "")):
            continue   # inside a longer name, number or expression ("-5:30", "x.y"); a space or a full stop ends it
        try:
            ast.literal_eval(head)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return head
    return None
