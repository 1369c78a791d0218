"""A mutant is compiled one def at a time (in_sandbox/mutants.py: def_source), not as its whole module:
the code a def compiles to on its own must be the very code the whole module has for it, or the swap
would run something else than the mutant. Checked on every def of real modules of all shapes
(methods using `super()` and private names, nested classes, decorators, `__future__` imports)."""
from __future__ import annotations

import inspect
import json
import textwrap
import typing
from pathlib import Path

import pytest

from repair_agent.in_sandbox import mutants, operators

import _pytest.python as pytest_python

MODULES = [inspect.getsourcefile(m) for m in (json.decoder, typing, textwrap, pytest_python, mutants)]

TRICKY = '''\
from __future__ import annotations
import functools


class Outer:
    __slots__ = ("__secret",)

    class Inner(dict):
        def get(self, key: Missing = None):
            return super().get(key) or self.__fallback

    @functools.lru_cache(maxsize=None)
    @staticmethod
    def cached(x: Later) -> Later:
        def helper(y: Nope):
            return y + x
        return helper(x)

    if True:
        def conditional(self):
            return self.__secret


if __debug__:
    def guarded(n):
        __local = n
        return __local + 1


def plain(a, b=2):
    return a * b
'''


def outermost(text: str) -> list[tuple[str, int, int, int]]:
    defs = mutants.functions_of(text)[1]
    return [d for d in defs if not any(o[1] < d[1] and d[2] <= o[2] for o in defs)]


def compiled_apart(text: str) -> dict[int, object]:
    """Each outermost def of `text` compiled apart, by its first line."""
    lines, (headers, flags, imports) = operators.source_lines(text), mutants.def_context(text)
    return {first: mutants.code_in(compile(mutants.def_source(lines, first, last, headers.get(first), imports), "m.py",
                                           "exec", flags=flags, dont_inherit=True), name, first)
            for name, _, last, first in outermost(text)}


@pytest.mark.parametrize("path", [*MODULES, "TRICKY"])
def test_every_def_compiles_apart_to_the_modules_own_code(path):
    text = TRICKY if path == "TRICKY" else Path(path).read_text(encoding="utf-8")
    whole = compile(text, "m.py", "exec", dont_inherit=True)   # not this file's __future__
    defs, apart = outermost(text), compiled_apart(text)
    assert len(defs) >= 5
    for name, _, last, first in defs:
        alone = apart[first]
        assert alone is not None and alone == mutants.code_in(whole, name, first), (path, name, first)
        assert alone.co_freevars == mutants.code_in(whole, name, first).co_freevars


def test_a_nested_def_compiles_under_its_own_class():
    headers = mutants.def_context(TRICKY).headers
    lines = {n: i for i, n in enumerate(TRICKY.splitlines(), 1)}
    line_of = {name: next(i for t, i in lines.items() if f"def {name}(" in t) for name in ("get", "conditional", "guarded")}
    assert headers[line_of["get"]] == "class Inner:"
    assert headers[line_of["conditional"]] == "class Outer:"
    assert headers[line_of["guarded"]] == "if 1:"
    assert line_of["get"] in headers and not any("def plain(" in TRICKY.splitlines()[i - 1] for i in headers)


def test_without_the_future_flag_an_annotation_would_differ():
    # the flag matters: the nested def's annotation is a string under it and a name lookup without it
    name, _, last, first = next(d for d in outermost(TRICKY) if d[0] == "cached")
    lines = operators.source_lines(TRICKY)
    context = mutants.def_context(TRICKY)
    source = mutants.def_source(lines, first, last, context.headers.get(first), context.imports)
    assert context.flags
    bare = mutants.code_in(compile(source, "m.py", "exec", dont_inherit=True), name, first)
    assert bare != mutants.code_in(compile(TRICKY, "m.py", "exec", dont_inherit=True), name, first)
