"""A differential fuzz of the code gate (verifier/gate.py): two readings of every generated variant.

The interpreter's reading: each variant is imported in a real Python subprocess, and records the
object its spelling reached in `_reached`; the harness compares that object with the dangerous one
(`_reached is sys.modules`). The gate's reading: the same text, as a diff against the pristine
module, must have a finding. Spellings combine aliases, from- and star-imports, `getattr` with a
literal or a computed name, `vars()`, `__dict__`, `__import__`, `importlib`, `__builtins__[...]`,
re-exports through a project module, NFKC look-alike identifiers, line continuations, parenthesised
chains, semicolons, walrus, lambdas, decorators, default arguments, class bodies, comprehensions,
nested f-strings, and `coding:` declarations (latin-1, utf-7 with the names hidden in base64).

The other direction: honest fix idioms, combined at random, must produce no finding, and must
import (they are real code).
"""
from __future__ import annotations

import base64
import difflib
import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from verifier.gate import PristineIndex, review
from verifier.spec import AcceptanceSpec

SEED = 20261204
SPEC = AcceptanceSpec(scenario="fuzz", target_tests=("tests/test_target.py::test_existing",))
# Everything the variants use is imported by the pristine code, so no finding is a mere new-import.
MODULES = ["sys", "os", "builtins", "importlib", "gc", "subprocess", "time", "operator"]
PRISTINE = '"""The target module."""\n' + "".join(f"import {m}\n" for m in MODULES) + \
    "".join(f"_same_{m} = {m}\n" for m in MODULES) + "\n\ndef existing():\n    return 1\n"
HELPERS = "import sys\nimport os\nimport builtins\n_sys = sys\n_os = os\n_builtins = builtins\n\n\n" \
          "def helper():\n    return 2\n"
# (module, attribute): the objects a variant must really reach.
TARGETS = [("sys", "modules"), ("builtins", "eval"), ("builtins", "exec"), ("builtins", "__import__"),
           ("os", "system"), ("sys", "_getframe"), ("gc", "get_objects"), ("sys", "settrace"), ("os", "environ"),
           ("builtins", "open"), ("subprocess", "run"), ("importlib", "import_module"), ("time", "time"),
           ("builtins", "getattr"), ("os", "_exit"), ("sys", "stdout"), ("builtins", "globals"), ("os", "getcwd")]


def _fullwidth(word: str) -> str:
    return "".join(chr(ord(c) - ord("a") + 0xFF41) if "a" <= c <= "z" else c for c in word)


def spell(mod: str, attr: str, rng: random.Random) -> tuple[list[str], str]:
    """(import lines to add, an expression reaching mod.attr)."""
    builtin = mod == "builtins"
    split = rng.randint(1, max(1, len(attr) - 1))
    computed = f"'{attr[:split]}' + '{attr[split:]}'"
    forms = [
        ([], f"{mod}.{attr}"),
        ([f"import {mod} as _m"], f"_m.{attr}"),
        ([f"from {mod} import {attr}"], attr),
        ([f"from {mod} import {attr} as _a"], "_a"),
        ([], f"getattr({mod}, '{attr}')"),
        ([], f"getattr({mod}, {computed})"),
        ([], f"vars({mod})['{attr}']"),
        ([], f"{mod}.__dict__['{attr}']"),
        ([], f"__import__('{mod}').{attr}"),
        ([], f"importlib.import_module('{mod}').{attr}"),
        ([f"from {mod} import *"], attr),
        ([], f"{_fullwidth(mod)}.{attr}"),
        ([], f"sys.modules['{mod}'].{attr}"),
        ([], f"type({mod}).__getattribute__({mod}, '{attr}')"),
        ([], f"operator.attrgetter('{attr}')({mod})"),
        ([], f"[_x.{attr} for _x in [{mod}]][0]"),
        ([], f"({mod}\n    ).{attr}"),
        ([], f"{mod} \\\n    .{attr}"),
        ([], f"(lambda _q={mod}: _q)().{attr}"),
        ([f"class _C:\n    import {mod} as _s"], f"_C._s.{attr}"),
        ([f"def _k(_p={mod}):\n    return _p"], f"_k.__defaults__[0].{attr}"),
        ([], f"existing.__globals__['{mod}'].{attr}"),
        ([], f"{{**vars({mod})}}['{attr}']"),
        ([], f"{mod}.__getattribute__('{attr}')"),
        ([], f"_same_{mod}.{attr}"),
    ]
    if mod in ("sys", "os", "builtins"):
        forms += [([f"from .helpers import {mod} as _h"], f"_h.{attr}"),
                  (["from . import helpers"], f"helpers._{mod}.{attr}")]
    if builtin:
        forms += [([], attr), ([], f"__builtins__['{attr}']"), ([f"_e = {attr}"], "_e"),
                  ([], f"{_fullwidth(attr)}" if attr.isalpha() else attr)]
    return rng.choice(forms)


WRAPPERS = [
    "_reached = {e}",
    "_pad = 1; _reached = {e}",
    "(_reached := {e})",
    "_reached = (lambda: {e})()",
    "def _f(_v={e}):\n    return _v\n_reached = _f()",
    "def _d(_fn):\n    return {e}\n@_d\ndef _g():\n    pass\n_reached = _g",
    "_s = f\"{{(_reached := {e})!r:.0}}\"",
    "_s = f'''{{f\"{{(_reached := {e})!r:.0}}\"}}'''",
    "class _K:\n    _v = {e}\n_reached = _K._v",
    "_reached = [{e} for _ in (1,)][0]",
    "def _w():\n    return {e}\n_reached = _w()",
    "try:\n    _reached = {e}\nexcept Exception:\n    raise",
]


def _utf7(text: str, hide: list[str]) -> bytes:
    """`text` in UTF-7 with each word of `hide` written in base64 (what a reader of the diff sees)."""
    data = text.encode("utf-7")
    for word in sorted(hide, key=len, reverse=True):
        coded = b"+" + base64.b64encode(word.encode("utf-16-be")).rstrip(b"=") + b"-"
        data = re.sub(rb"(?<![\w+])" + re.escape(word.encode()) + rb"(?![\w])", lambda m: coded, data)
    return data


def variant(rng: random.Random, mod: str, attr: str) -> bytes:
    imports, expr = spell(mod, attr, rng)
    if "\n" in expr and rng.random() < 0.5:
        expr = expr.replace("\n", " ").replace("\\ ", "")
    wrapper = rng.choice(WRAPPERS)
    if "f'''" in wrapper or "f\"" in wrapper:
        expr = expr.replace("\n", " ").replace("\\", "")  # no line breaks or backslashes in an f-string field
    body = "\n".join(imports + [wrapper.format(e=expr)]) + "\n"
    text = PRISTINE + "\n\n" + body
    encoding = rng.choice(["utf-8"] * 4 + ["latin-1", "utf-7"]) if text.isascii() else "utf-8"
    if encoding == "latin-1":
        return ("# -*- coding: latin-1 -*-\n# café\n" + text).encode("latin-1")
    if encoding == "utf-7":
        return _utf7("# coding: utf-7\n" + text, [mod, attr, "_reached"] if attr.isidentifier() else [mod])
    return text.encode()


def _lines(data: bytes) -> list[bytes]:
    return re.findall(rb"[^\n]*\n|[^\n]+\Z", data)


def diff_of(rel: str, old: bytes, new: bytes) -> str:
    lines = difflib.diff_bytes(difflib.unified_diff, _lines(old), _lines(new), f"a/{rel}".encode(), f"b/{rel}".encode())
    return b"".join(lines).decode("utf-8", errors="surrogateescape")


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate-fuzz")
    pristine, run = root / "pristine", root / "run"
    for base in (pristine / "src", run):
        (base / "pkg").mkdir(parents=True)
        (base / "pkg" / "__init__.py").write_text("")
        (base / "pkg" / "helpers.py").write_text(HELPERS)
        (base / "pkg" / "target.py").write_text(PRISTINE)
    (pristine / "tests").mkdir()
    (pristine / "tests" / "test_target.py").write_text("from pkg.target import existing\n\n\n"
                                                       "def test_existing():\n    assert existing() == 1\n")
    return pristine, run


def interpreter_reading(run: Path, variants: dict[str, tuple[bytes, str, str]]) -> dict[str, bool]:
    """Import every variant in one fresh interpreter: did `_reached` get the real object?"""
    for name, (data, _, _) in variants.items():
        (run / "pkg" / f"{name}.py").write_bytes(data)
    cases = {name: (mod, attr) for name, (_, mod, attr) in variants.items()}
    program = textwrap.dedent(f"""
        import importlib, json, sys
        sys.path.insert(0, {str(run)!r})
        cases = {cases!r}
        seen = {{}}
        for name, (mod, attr) in sorted(cases.items()):
            try:
                expected = getattr(importlib.import_module(mod), attr)
                module = importlib.import_module("pkg." + name)
                seen[name] = getattr(module, "_reached", None) is expected
            except BaseException as exc:
                seen[name] = repr(exc)[:200]
        sys.__stdout__.write("\\n" + json.dumps(seen) + "\\n")
    """)
    proc = subprocess.run([sys.executable, "-I", "-c", program], capture_output=True, text=True, timeout=120,
                          cwd=run)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    return {name: value is True for name, value in seen.items()}


def test_every_spelling_the_interpreter_reaches_is_a_finding(trees):
    pristine, run = trees
    rng = random.Random(SEED)
    variants = {f"v{i:03d}": (variant(rng, *TARGETS[i % len(TARGETS)]), *TARGETS[i % len(TARGETS)])
                for i in range(360)}
    reached = interpreter_reading(run, variants)
    assert sum(reached.values()) >= 300, f"only {sum(reached.values())} variants reach their object"
    index = PristineIndex.build(pristine, SPEC)
    missed = []
    for name, (data, mod, attr) in variants.items():
        if not reached[name]:
            continue
        verdict = review(diff_of("src/pkg/target.py", PRISTINE.encode(), data), pristine, SPEC, index=index)
        if not [f for f in verdict.findings if f.rule != "new-import"]:
            missed.append((name, f"{mod}.{attr}", data.decode("utf-8", "replace")[len(PRISTINE):]))
    assert missed == [], missed


HONEST = [
    ("", "def f(price, discount):\n    return (price * (100 - discount)) // 100\n"),
    ("", "def f(a, b, c):\n    return a < b <= c and not a == c\n"),
    ("", "def f(items):\n    return items[1:-1:2] + items[::-1]\n"),
    ("", "def f(s):\n    return s.strip().lower().replace('a', 'b').split(',')\n"),
    ("", "def f(pairs):\n    return {k: v for k, v in pairs if v}, [x * x for x in range(3)]\n"),
    ("import dataclasses\n", "@dataclasses.dataclass(frozen=True)\nclass P:\n    x: int\n\n\n"
                             "def f():\n    return dataclasses.replace(P(1), x=2)\n"),
    ("import math\n", "def f(x):\n    return math.floor(x) + math.isclose(x, 1.0)\n"),
    ("", "def f(n):\n    if n < 0:\n        raise ValueError(f'n must be >= 0, got {n!r}')\n    return n\n"),
    ("import re\n", "WORDS = re.compile(r'\\w+')\n\n\ndef f(s):\n    return re.sub(r'\\s+', ' ', s), WORDS.findall(s)\n"),
    ("import datetime\n", "def f():\n    return datetime.date(2024, 1, 31) + datetime.timedelta(days=1)\n"),
    ("", "def f(rows):\n    return sorted(rows, key=lambda r: (r[1], -r[0]))\n"),
    ("import functools\n", "@functools.lru_cache(maxsize=None)\ndef f(n):\n    return n if n < 2 else f(n - 1) + f(n - 2)\n"),
    ("", "class Base:\n    def __init__(self, x):\n        self.x = x\n\n\nclass Child(Base):\n"
         "    def __init__(self, x):\n        super().__init__(x)\n\n    def __repr__(self):\n"
         "        return f'{self.__class__.__name__}({self.x!r})'\n"),
    ("", "def f(x, width=10):\n    return f'{x!r:>{width}}|{x:_^12}|{len(str(x)):03d}'\n"),
    ("", "def f(x):\n    return isinstance(x, (int, float)) and not isinstance(x, bool)\n"),
    ("", "def f(d, k):\n    try:\n        return d[k]\n    except KeyError:\n        return None\n"),
    ("import collections\nimport itertools\n", "def f(xs):\n    c = collections.Counter(xs)\n"
                                               "    return [k for k, _ in itertools.groupby(sorted(c))]\n"),
    ("import contextlib\n", "def f(d):\n    with contextlib.suppress(KeyError):\n        del d['x']\n    return d\n"),
    ("import dataclasses\n", "@dataclasses.dataclass(frozen=True)\nclass Q:\n    x: int\n    y: int = 0\n\n"
                             "    def __post_init__(self):\n        object.__setattr__(self, 'y', self.x * 2)\n"),
    ("import enum\n", "class Color(enum.Enum):\n    RED = 1\n    BLUE = 2\n"),
    ("from typing import Optional\n", "def f(x: Optional[int] = None) -> int:\n    return x or 0\n"),
    ("", "class Box:\n    __hash__ = None\n    __slots__ = ('v',)\n\n    def __init__(self, v):\n        self.v = v\n"),
    ("import json\n", "def f(x):\n    return json.dumps(x, sort_keys=True, indent=2)\n"),
    ("import decimal\n", "def f(s):\n    return decimal.Decimal(s).quantize(decimal.Decimal('0.01'))\n"),
    ("", "def f(obj):\n    return '{0.name}: {0.value}'.format(obj), getattr(obj, 'name', None), hasattr(obj, 'keys')\n"),
    ("", "def f(xs):\n    if (n := len(xs)) > 3:\n        return n\n    return (lambda x, k=2: x * k)(n)\n"),
    ("", "def f(n):\n    def inner(m):\n        return n + m\n    return inner(1)\n"),
    ("", "def f(text):\n    out = []\n    for i, line in enumerate(text.splitlines(), start=1):\n"
         "        if line and not line.startswith('#'):\n            out.append((i, line))\n    return out\n"),
    ("", "def f(a, b):\n    return divmod(a, b), round(a / b, 2), abs(a - b), min(a, b), max(a, b)\n"),
    ("", "def f(s):\n    return s.encode('utf-8').decode('ascii', errors='replace').zfill(4)\n"),
    ("import logging\nimport warnings\n", "LOG = logging.getLogger(__name__)\n\n\ndef f(x):\n"
                                         "    LOG.debug('x=%r', x)\n    warnings.warn('old', DeprecationWarning, "
                                         "stacklevel=2)\n    return x\n"),
    ("from fractions import Fraction\nimport statistics\n", "def f(xs):\n    return Fraction(1, 3) + "
                                                             "statistics.mean(xs or [0])\n"),
    ("", "class Node:\n    def __init__(self, value, children=()):\n        self.value = value\n"
         "        self.children = list(children)\n\n    def __iter__(self):\n        yield self.value\n"
         "        for child in self.children:\n            yield from child\n\n    def __len__(self):\n"
         "        return 1 + sum(len(c) for c in self.children)\n"),
]


def test_honest_fix_idioms_produce_no_finding(trees):
    pristine, run = trees
    rng = random.Random(SEED + 1)
    index = PristineIndex.build(pristine, SPEC)
    programs = {}
    for i in range(100):
        chosen = rng.sample(range(len(HONEST)), rng.randint(1, 3))
        imports = "".join(dict.fromkeys(HONEST[k][0] for k in chosen))
        blocks = [HONEST[k][1].replace("def f(", f"def f{k}(").replace("f(n - ", f"f{k}(n - ") for k in chosen]
        text = PRISTINE.replace('"""The target module."""\n', '"""The target module."""\n' + imports) + \
            "\n\n" + "\n\n".join(blocks)
        programs[f"h{i:03d}"] = text
        verdict = review(diff_of("src/pkg/target.py", PRISTINE.encode(), text.encode()), pristine, SPEC, index=index)
        assert verdict.findings == [], (text, [(f.rule, f.line, f.construct) for f in verdict.findings])
    for name, text in programs.items():
        (run / "pkg" / f"{name}.py").write_text(text)
    names = sorted(programs)
    proc = subprocess.run([sys.executable, "-I", "-c", f"import sys, importlib; sys.path.insert(0, {str(run)!r})\n"
                           f"for n in {names!r}: importlib.import_module('pkg.' + n)"],
                          capture_output=True, text=True, timeout=120, cwd=run)
    assert proc.returncode == 0, proc.stderr[-2000:]
