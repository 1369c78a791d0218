"""The code gate (verifier/gate.py), rule by rule, on diffs against a small pristine tree: what a
candidate diff adds is read before it runs, and each construct that can reach the test process or
sense the check is a finding with a line, a construct and a grant key."""
from __future__ import annotations

import difflib
import re
import statistics
import time
from pathlib import Path

import pytest

from verifier.gate import RULES, GateVerdict, PristineIndex, review
from verifier.spec import AcceptanceSpec

SPEC = AcceptanceSpec(scenario="gate", target_tests=("tests/test_pricing.py::test_ten_percent",))

PRICING = '''"""Prices."""
import math
import time
from datetime import date

from .money import Money

_monotonic = time.monotonic


def apply_discount(price, discount):
    discounted = price * (1 - discount)
    return max(discounted, 0)


def stamp(clock=time.monotonic):
    return clock()


class Cart:
    def __init__(self, items):
        self.items = list(items)

    def total(self):
        return sum(self.items)
'''
# `adding()` puts code before this line: the first added line gets its number.
AT = PRICING.splitlines().index("    return max(discounted, 0)") + 1
FILES = {
    "src/shop/__init__.py": "",
    "src/shop/pricing.py": PRICING,
    "src/shop/money.py": "from decimal import Decimal\n\n\nclass Money(Decimal):\n    pass\n",
    "src/shop/util.py": "import os\nimport sys\nimport json\n\nENV = os.environ\n\n\ndef home():\n    return os.sep\n",
    "tests/test_pricing.py": "import pytest\nfrom shop.pricing import apply_discount\n\n\n"
                             "def test_ten_percent():\n    assert apply_discount(100, 10) == 90\n",
    "tests/helpers.py": "VALUE = 1\n",
    "README.md": "# shop\n",
}


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _lines(data: bytes) -> list[bytes]:
    return re.findall(rb"[^\n]*\n|[^\n]+\Z", data)  # as diff and git split: on \n alone


def diff_of(repo: Path, rel: str, new: str | bytes) -> str:
    """A unified diff from the pristine file (or nothing) to `new`."""
    path = repo / rel
    old_bytes = path.read_bytes() if path.exists() else b""
    new_bytes = new.encode() if isinstance(new, str) else new
    lines = difflib.diff_bytes(difflib.unified_diff, _lines(old_bytes), _lines(new_bytes),
                               f"a/{rel}".encode() if path.exists() else b"/dev/null", f"b/{rel}".encode())
    return b"".join(lines).decode("utf-8", errors="surrogateescape")


def gate(repo: Path, rel: str, new: str | bytes, **kw) -> GateVerdict:
    return review(diff_of(repo, rel, new), repo, SPEC, **kw)


def edit(repo: Path, rel: str, old: str, new: str) -> str:
    text = (repo / rel).read_text()
    assert old in text
    return text.replace(old, new, 1)


def adding(repo: Path, code: str, after: str = "    return max(discounted, 0)\n") -> GateVerdict:
    """The pricing module with `code` (function-body lines) added before apply_discount's return."""
    return gate(repo, "src/shop/pricing.py", edit(repo, "src/shop/pricing.py", after, code + after))


def rules_of(verdict: GateVerdict) -> set[str]:
    return {f.rule for f in verdict.findings}


def only(verdict: GateVerdict, rule: str):
    found = [f for f in verdict.findings if f.rule == rule]
    assert found, f"no {rule} finding in {[(f.rule, f.construct) for f in verdict.findings]}"
    f = found[0]
    assert re.fullmatch(rf"code:{re.escape(rule)}@{re.escape(f.path)}#[0-9a-f]{{10}}", f.key)
    assert f.rule in RULES and f.why and len(f.snippet) <= 160
    return f


# -- nothing to say about honest code -------------------------------------------------------------

def test_an_honest_fix_has_no_finding(repo):
    verdict = gate(repo, "src/shop/pricing.py", edit(repo, "src/shop/pricing.py", "(1 - discount)",
                                                     "(1 - discount / 100)"))
    assert verdict.ok and verdict.findings == [] and verdict.files_read == 1 and verdict.grants_needed == []


HONEST = [
    "    if not 0 <= discount <= 100:\n        raise ValueError(f'bad discount {discount!r}')\n",
    "    parts = sorted({p.strip().lower() for p in str(price).split(',')}, key=lambda s: (len(s), s))\n",
    "    import re\n    match = re.match(r'(\\d+)', str(price))\n",
    "    first = date(2024, 1, 31).replace(day=1)\n",
    "    rounded = math.floor(discounted * 100) / 100\n",
    "    from . import money\n    value = money.Money('1.5')\n",
    "    name = type(price).__name__ + price.__class__.__name__\n",
    "    text = '{0.__class__.__name__}({0!r})'.format(price)\n",
    "    waited = stamp()\n",
    "    import os\n    where = os.path.join(os.sep, 'a', 'b')\n",  # os is imported by util.py: not new
]


@pytest.mark.parametrize("code", HONEST)
def test_honest_idioms_have_no_finding(repo, code):
    verdict = adding(repo, code)
    assert verdict.findings == [], [(f.rule, f.construct) for f in verdict.findings]


# -- reading the patched file -----------------------------------------------------------------

def test_a_declared_encoding_other_than_utf8_is_a_finding(repo):
    f = only(gate(repo, "src/shop/pricing.py", "# -*- coding: latin-1 -*-\n" + PRICING), "encoding")
    assert f.line == 1 and "iso8859-1" in f.construct


def test_an_undecodable_file_is_a_finding(repo):
    new = PRICING.encode().replace(b"Prices.", b"Prices \xff\xfe.")
    f = only(gate(repo, "src/shop/pricing.py", new), "encoding")
    assert f.line == 0


def test_a_utf7_file_is_read_as_python_decodes_it(repo):
    hidden = "import sys\nX = sys.modules\n".encode("utf-7").replace(b"import", b"+AGk-mport")
    verdict = gate(repo, "src/shop/extra.py", b"# coding: utf-7\n" + hidden)
    assert {"encoding", "namespace"} <= rules_of(verdict)
    assert only(verdict, "namespace").line == 3


def test_an_identifier_that_is_not_nfkc_normal_is_a_finding(repo):
    verdict = adding(repo, "    import sys\n    leak = ｓｙｓ.modules\n")
    f = only(verdict, "identifier-normalisation")
    assert f.line == AT + 1 and "ｓｙｓ reads as sys" in f.construct
    assert only(verdict, "namespace").construct == "sys.modules"


def test_a_bidi_character_is_a_finding_and_shown_escaped(repo):
    verdict = adding(repo, "    access = 'user'  # \u202e } \u2066if admin\u2069 {\n")
    f = only(verdict, "control-character")
    assert f.line == AT and "U+202E" in f.construct
    assert "\\u202E" in f.snippet and "\u202e" not in f.snippet and "\u2066" not in f.snippet


def test_a_lone_carriage_return_hides_a_line_and_is_a_finding(repo):
    verdict = adding(repo, "    # a comment\r    import sys; sys.modules.clear()\n")
    assert only(verdict, "control-character").line == AT
    assert only(verdict, "namespace").line == AT + 1  # Python's line numbering: \r ends a line


def test_a_file_that_does_not_parse_has_no_finding(repo):
    assert gate(repo, "src/shop/pricing.py", PRICING + "\ndef broken(:\n    eval('1')\n").findings == []


def test_hidden_characters_are_findings_in_any_text_file_and_in_code_that_does_not_parse(repo):
    """A person reads every file of the diff: an escape sequence in a README erases the line above it
    in a terminal, a no-break space passes for a space, private use draws as anything."""
    readme = only(gate(repo, "README.md", "# shop\n\nok \x1b[1A\x1b[2K\nsee\u00a0this \ue000\n"), "control-character")
    assert readme.line == 3 and readme.construct == "U+001B" and "\\u001B[1A" in readme.snippet
    spaced = only(gate(repo, "src/shop/shop.ini", "[shop]\nname\u3000= shop\n"), "control-character")
    assert spaced.line == 2 and spaced.construct == "U+3000" and "\u3000" not in spaced.snippet
    broken = gate(repo, "src/shop/pricing.py", PRICING + "\ndef broken(:  # \u2067\n    eval('1')\n")
    assert rules_of(broken) == {"control-character"} and only(broken, "control-character").construct == "U+2067"
    assert only(adding(repo, "    x = '\ue000'\n"), "control-character").construct == "U+E000"
    # Binary data and plain text with tabs, CRLF endings and non-ASCII letters are what they look like.
    assert gate(repo, "src/shop/logo.bin", b"\x89PNG\r\n\x1a\n\x00\x1b").findings == []
    assert gate(repo, "README.md", "# shop\r\n\r\nPrix en\tcafé, naïve, 東京\r\n").findings == []


# -- rules ------------------------------------------------------------------------------------

@pytest.mark.parametrize("code, rule, construct", [
    ("    import weakref\n", "new-import", "import weakref"),
    ("    import pytest\n", "harness-module", "import pytest"),
    ("    from unittest import mock\n", "harness-module", "from unittest import mock"),
    ("    from tests import helpers\n", "protected-module-import", "from tests import helpers"),
    ("    import test_pricing\n", "protected-module-import", "import test_pricing"),
    ("    import importlib\n", "import-machinery", "import importlib"),
    ("    __import__('os')\n", "import-machinery", "__import__(...)"),
    ("    from .util import sys\n    sys.path.insert(0, '.')\n", "import-machinery", "sys.path"),
    ("    eval('1')\n", "dynamic-code", "eval(...)"),
    ("    exec('x = 1')\n", "dynamic-code", "exec(...)"),
    ("    T = type('T', (), {})\n", "dynamic-code", "type(...) with 3 arguments"),
    ("    code = apply_discount.__code__\n", "dynamic-code", ".__code__"),
    ("    from .util import sys\n    frame = sys._getframe(1)\n", "frames", "sys._getframe(...)"),
    ("    try:\n        pass\n    except Exception as e:\n        tb = e.__traceback__\n", "frames", ".__traceback__"),
    ("    import gc\n", "gc", "import gc"),
    ("    from .util import sys\n    sys.settrace(None)\n", "tracing", "sys.settrace(...)"),
    ("    from .util import os\n    os.system('true')\n", "process", "os.system(...)"),
    ("    import threading\n", "process", "import threading"),
    ("    from .util import sys\n    sys.exit(0)\n", "process", "sys.exit(...)"),
    ("    from .util import os\n    os.write(1, b'x')\n", "file-descriptor", "os.write(...)"),
    ("    from .util import sys\n    sys.stdout.write('90')\n", "file-descriptor", "sys.stdout"),
    ("    f = open(1)\n", "file-descriptor", "open(<file descriptor>)"),
    ("    data = open('data.txt').read()\n", "filesystem", "open(...)"),
    ("    from .util import os\n    names = os.listdir('.')\n", "filesystem", "os.listdir(...)"),
    ("    from .util import os\n    there = os.path.exists('x')\n", "filesystem", "os.path.exists(...)"),
    ("    ok = some_path.read_text()\n", "filesystem", ".read_text"),
    ("    from .util import os\n    env = os.environ.get('CI')\n", "environment", "os.environ"),
    ("    from .util import os\n    here = os.getcwd()\n", "environment", "os.getcwd(...)"),
    ("    from .util import sys\n    args = sys.argv\n", "environment", "sys.argv"),
    ("    where = __file__\n", "environment", "__file__"),
    ("    flag = 'PYTEST_CURRENT_TEST'\n", "environment", "string 'PYTEST_CURRENT_TEST'"),
    ("    path = '/proc/self/cmdline'\n", "environment", "string '/proc/self/cmdline'"),
    ("    now = time.time()\n", "clock", "time.time(...)"),
    ("    today = date.today()\n", "clock", "datetime.date.today(...)"),
    ("    from datetime import datetime\n    now = datetime.now()\n", "clock", "datetime.datetime.now(...)"),
    ("    from .util import sys\n    mods = sys.modules\n", "namespace", "sys.modules"),
    ("    g = globals()\n", "namespace", "globals(...)"),
    ("    d = apply_discount.__globals__\n", "namespace", ".__globals__"),
    ("    from . import util\n    util.home = lambda: '/'\n", "namespace", "shop.util.home = ..."),
    ("    from .util import json\n    json.dumps = repr\n", "namespace", "json.dumps = ..."),
    ("    price.__class__ = Money\n", "namespace", ".__class__ = ..."),
    ("    b = __builtins__\n", "namespace", "__builtins__"),
    ("    subs = object.__subclasses__()\n", "namespace", ".__subclasses__"),
    ("    v = getattr(price, discount)\n", "computed-attribute", "getattr(...) with a computed name"),
    ("    reach = getattr\n", "computed-attribute", "getattr used as a value"),
    ("    import operator\n    f = operator.attrgetter(discount)\n", "computed-attribute",
     "operator.attrgetter/methodcaller with a computed name"),
    ("    from .util import sys\n    m = sys\n", "computed-attribute", "module sys used as a value"),
    ("    s = '{0.__init__.__globals__}'.format(price)\n", "computed-attribute", "format field {0.__init__.__globals__}"),
])
def test_each_rule_names_the_construct_and_the_line(repo, code, rule, construct):
    verdict = adding(repo, code)
    f = only(verdict, rule)
    assert f.construct == construct
    assert AT <= f.line < AT + code.count("\n") and f.path == "src/shop/pricing.py"
    patched = edit(repo, "src/shop/pricing.py", "    return max(discounted, 0)\n",
                   code + "    return max(discounted, 0)\n").split("\n")
    assert f.snippet == patched[f.line - 1].strip()


@pytest.mark.parametrize("code, rule, construct", [
    # aliases made on pristine lines, used by added ones
    ("    from .util import ENV\n    ci = ENV.get('CI')\n", "environment", "os.environ"),
    ("    began = _monotonic()\n", "clock", "time.monotonic(...)"),
    # a module kept where names are not followed
    ("    class Box:\n        import os as o\n", "computed-attribute", "import os in a class body"),
    # a module a pristine line stored where names are not followed, read through a distinctive name
    ("    env = self_like._os.environ\n", "environment", ".environ"),
    ("    d = stamp.__defaults__\n", "namespace", ".__defaults__"),
    # a dunder set from outside the class
    ("    setattr(Cart, '__eq__', lambda a, b: True)\n", "namespace", "setattr(..., '__eq__')"),
    ("    Cart.__eq__ = lambda a, b: True\n", "namespace", ".__eq__ = ..."),
    ("    class Eq:\n        if True:\n            def __eq__(self, other):\n                return True\n",
     "comparison-override", "class Eq defines __eq__"),
    ("    class Liar:\n        @property\n        def __class__(self):\n            return float\n",
     "value-type", "class Liar defines __class__"),
    # a class built without a class statement
    ("    F = type.__new__(type, 'F', (float,), {'__eq__': lambda s, o: True})\n", "value-type",
     "string '__eq__' names a behaviour dunder"),
    ("    F = type.__new__(type, 'F', (float,), dict(__eq__=lambda s, o: True))\n", "dynamic-code",
     "a class built by calling its metaclass"),
    ("    F = float.__class__('F', (float,), ns)\n", "dynamic-code", "a class built by calling its metaclass"),
    ("    s = '{0.f_back.f_locals}'.format(frame)\n", "computed-attribute", "format field {0.f_back.f_locals}"),
    # sensing the runner through what it installs
    ("    import warnings\n    seen = warnings.filters\n", "environment", "warnings.filters"),
    ("    import logging\n    when = logging.makeLogRecord({}).created\n", "frames", "logging.makeLogRecord(...)"),
    ("    import logging\n    where = logging.getLogger(__name__).findCaller()\n", "frames", ".findCaller"),
    ("    import warnings\n    with warnings.catch_warnings(record=True) as seen:\n        pass\n", "frames",
     "warnings.catch_warnings(...)"),
    ("    import logging\n    seen = logging.getLogger().handlers\n", "environment", ".handlers"),
])
def test_what_hides_behind_an_alias_or_outside_a_class_is_read(repo, code, rule, construct):
    f = only(adding(repo, code), rule)
    assert f.construct == construct


def test_the_reason_is_one_sentence_naming_the_construct(repo):
    f = only(adding(repo, "    eval('1')\n"), "dynamic-code")
    assert f.why.startswith("`eval(...)` builds or runs code") and f.why.endswith("needs a person's grant.")
    assert f.why.replace("(...)", "").count(".") == 1


def test_getattr_with_a_literal_reads_as_the_attribute_it_names(repo):
    verdict = adding(repo, "    from .util import sys\n    m = getattr(sys, 'modules')\n")
    assert only(verdict, "namespace").construct == "sys.modules"
    assert "computed-attribute" not in rules_of(verdict)


def test_aliases_from_pristine_imports_are_followed(repo):
    # util.py (pristine) imports sys; pricing reaches it under another name, through the package.
    verdict = adding(repo, "    from . import util as u\n    u.sys.modules.clear()\n")
    assert only(verdict, "namespace").construct == "sys.modules"
    new_text = "import sys as s\nfrom os import environ as e\n" + PRICING.replace(
        "    return max(discounted, 0)\n", "    s.modules.pop('x')\n    e['X'] = '1'\n    return max(discounted, 0)\n")
    verdict = gate(repo, "src/shop/pricing.py", new_text)
    assert {"namespace", "environment"} <= rules_of(verdict)


@pytest.mark.parametrize("code, construct", [
    ("len = max\n", "len rebound at module level"),
    ("def isinstance(x, t):\n    return True\n", "isinstance rebound at module level"),
    ("import math as int\n", "int rebound at module level"),
    ("def f():\n    global float\n    float = int\n", "global float"),
])
def test_binding_a_builtin_for_the_module_is_a_finding(repo, code, construct):
    f = only(gate(repo, "src/shop/pricing.py", PRICING + "\n" + code), "builtin-rebinding")
    assert f.construct == construct


def test_rebinding_the_module_builtins_is_a_finding(repo):
    f = only(gate(repo, "src/shop/pricing.py", PRICING + "\n__builtins__ = {'len': max}\n"), "namespace")
    assert f.construct == "__builtins__"


def test_a_local_variable_named_like_a_builtin_is_not_a_rebinding(repo):
    verdict = adding(repo, "    max = 3\n    input = [max]\n")
    assert "builtin-rebinding" not in rules_of(verdict) and "file-descriptor" not in rules_of(verdict)


@pytest.mark.parametrize("code, rule, construct", [
    ("class F(float):\n    def __add__(self, other):\n        return 1.0\n", "value-type", "class F(float) defines __add__"),
    ("class F(float):\n    __eq__ = float.__ge__\n", "value-type", "class F(float) borrows __eq__ from an expression"),
    ("class G:\n    __eq__ = lambda self, other: True\n", "comparison-override", "class G defines __eq__"),
    ("class A:\n    def __eq__(self, other):\n        return True\n", "comparison-override", "class A defines __eq__"),
    ("class M(type):\n    pass\n\n\nclass B(metaclass=M):\n    pass\n", "value-type", "class B(metaclass=...)"),
    ("class C(type(1.0)):\n    pass\n", "value-type", "class C has a computed base"),
    ("class D:\n    def __init_subclass__(cls):\n        pass\n", "value-type", "class D defines __init_subclass__"),
    ("class E:\n    def __getattr__(self, name):\n        return 1\n", "value-type", "class E defines __getattr__"),
    ("class P:\n    def __reduce__(self):\n        return (eval, ('1',))\n", "dynamic-code", "class P defines __reduce__"),
])
def test_class_rules(repo, code, rule, construct):
    f = only(gate(repo, "src/shop/pricing.py", PRICING + "\n\n" + code), rule)
    assert f.construct == construct and f.line > PRICING.count("\n")


def test_a_pristine_value_type_gaining_a_method_is_a_finding(repo):
    new = edit(repo, "src/shop/money.py", "    pass\n", "    def __eq__(self, other):\n        return True\n")
    verdict = gate(repo, "src/shop/money.py", new)
    assert only(verdict, "value-type").construct == "class Money(decimal.Decimal) defines __eq__"
    assert only(verdict, "value-type").line == 5
    # and a subclass of it elsewhere, found through the project index
    verdict = gate(repo, "src/shop/pricing.py", PRICING + "\n\nclass Cents(Money):\n    def __int__(self):\n"
                                                          "        return 0\n")
    assert only(verdict, "value-type").construct == "class Cents(shop.money.Money) defines __int__"


def test_a_new_module_shadowing_a_stdlib_or_project_module_is_a_finding(repo):
    f = only(gate(repo, "src/shop/json.py", "X = 1\n"), "shadowing-module")
    assert f.line == 0 and "standard-library" in f.construct and f.path == "src/shop/json.py"
    f = only(gate(repo, "src/other/pricing.py", "X = 1\n"), "shadowing-module")
    assert "src/shop/pricing.py" in f.construct
    f = only(gate(repo, "src/pluggy/__init__.py", "X = 1\n"), "shadowing-module")
    assert "test harness" in f.construct and "src/pluggy" in f.construct
    assert gate(repo, "src/shop/discounts.py", "RATE = 10\n").findings == []


def test_a_file_that_runs_as_code_but_is_not_python_is_a_finding(repo):
    verdict = gate(repo, "src/shop/run.sh", "#!/bin/sh\necho 90\n")
    assert {f.construct for f in verdict.findings} == {"a .sh file", "starts with #!"}
    made_executable = diff_of(repo, "src/shop/data.txt", "plain\n").replace("new file mode 100644", "")
    made_executable = "diff --git a/src/shop/data.txt b/src/shop/data.txt\nnew file mode 100755\n" + made_executable
    verdict = review(made_executable, repo, SPEC)
    assert only(verdict, "unreadable-file").construct == "an executable file"
    assert gate(repo, "src/shop/prices.json", '{"tea": 3}\n').findings == []
    assert gate(repo, "README.md", "# shop\n\nBetter words.\n").findings == []


# -- what is not new, not read, or waived ------------------------------------------------------

def test_a_construct_the_replaced_pristine_line_had_is_not_a_finding(repo):
    # stamp's default already read the clock: rewording that line is the user's own code.
    new = edit(repo, "src/shop/pricing.py", "def stamp(clock=time.monotonic):", "def stamp(clock=time.monotonic, n=1):")
    assert gate(repo, "src/shop/pricing.py", new).findings == []
    # the same construct on a line that replaced nothing is new
    verdict = adding(repo, "    began = time.monotonic()\n")
    assert only(verdict, "clock").construct == "time.monotonic(...)"


def test_protected_files_are_not_read(repo):
    new = edit(repo, "tests/test_pricing.py", "import pytest\n", "import pytest\nimport sys\nsys.modules.clear()\n")
    verdict = gate(repo, "tests/test_pricing.py", new)
    assert verdict.ok and verdict.findings == [] and verdict.files_read == 0


def test_a_removed_file_produces_nothing(repo):
    diff = diff_of(repo, "src/shop/util.py", "").replace("+++ b/src/shop/util.py", "+++ /dev/null")
    verdict = review(diff, repo, SPEC)
    assert verdict.ok and verdict.findings == []


def test_a_diff_that_does_not_apply_gives_no_finding(repo):
    diff = diff_of(repo, "src/shop/pricing.py", PRICING.replace("(1 - discount)", "eval('1')"))
    broken = diff.replace("discounted = price * (1 - discount)", "discounted = price * (1 + discount)", 1)
    verdict = review(broken, repo, SPEC)
    assert verdict == GateVerdict(ok=True, findings=[], granted=[], files_read=0)
    assert review("not a diff at all\n", repo, SPEC).ok


def test_lines_are_those_of_the_patched_file_even_when_git_applies_at_an_offset(repo):
    diff = diff_of(repo, "src/shop/pricing.py", edit(repo, "src/shop/pricing.py", "    return sum(self.items)\n",
                                                     "    return sum(self.items)\n\n    eval('1')\n"))
    shifted = re.sub(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@", lambda m: f"@@ -{int(m[1]) - 6},{m[2]} +{int(m[3]) - 6},"
                     f"{m[4]} @@", diff)
    assert shifted != diff
    f = only(review(shifted, repo, SPEC), "dynamic-code")
    assert f.line == PRICING.count("\n") + 2 and f.snippet == "eval('1')"


def test_a_grant_by_key_waives_exactly_that_finding(repo):
    code = "    eval('1')\n    exec('x = 2')\n"
    verdict = adding(repo, code)
    assert [f.construct for f in verdict.findings] == ["eval(...)", "exec(...)"]
    assert verdict.grants_needed == [f.key for f in verdict.findings]
    first = verdict.findings[0].key
    patched = edit(repo, "src/shop/pricing.py", "    return max(discounted, 0)\n", code + "    return max(discounted, 0)\n")
    # A path glob is the scope check's grant, and a key for another line waives nothing.
    waived = gate(repo, "src/shop/pricing.py", patched,
                  granted=(first, "src/**", "code:dynamic-code@src/shop/pricing.py#0000000000"))
    assert not waived.ok and [f.construct for f in waived.findings] == ["exec(...)"]
    assert [f.key for f in waived.granted] == [first]
    everything = gate(repo, "src/shop/pricing.py", patched, granted=tuple(verdict.grants_needed))
    assert everything.ok and everything.findings == [] and len(everything.granted) == 2


def test_the_key_is_stable_when_the_same_line_comes_again_elsewhere(repo):
    one = adding(repo, "    eval('1')\n")
    other = gate(repo, "src/shop/pricing.py", edit(repo, "src/shop/pricing.py", "        return sum(self.items)\n",
                                                   "        eval('1')\n        return sum(self.items)\n"))
    assert one.findings[0].line != other.findings[0].line
    assert one.findings[0].key == other.findings[0].key


def test_findings_are_sorted_by_path_line_rule(repo):
    code = "    exec('1')\n    import gc\n    eval('2')\n"
    verdict = adding(repo, code)
    assert [(f.path, f.line, f.rule) for f in verdict.findings] == sorted((f.path, f.line, f.rule)
                                                                          for f in verdict.findings)


def test_the_index_knows_the_project(repo):
    index = PristineIndex.build(repo, SPEC)
    assert "shop.pricing" in index.modules and "tests.test_pricing" in index.protected_modules
    assert "test_pricing" in index.protected_modules and "os" in index.import_tops
    assert "Money" in index.value_classes["shop.money"] and "tests/test_pricing.py" in index.protected_paths
    assert index.modules["shop.pricing"] == {"src/shop/pricing.py"} and "sys" in index.bindings["shop.util"]
    assert PristineIndex.cached(repo, SPEC) is PristineIndex.cached(repo, SPEC)


def test_review_is_fast_on_a_one_file_diff(repo):
    diff = diff_of(repo, "src/shop/pricing.py", edit(repo, "src/shop/pricing.py", "(1 - discount)", "(1 - discount / 100)"))
    index = PristineIndex.build(repo, SPEC)
    times = []
    for _ in range(7):
        start = time.perf_counter()
        review(diff, repo, SPEC, index=index)
        times.append(time.perf_counter() - start)
    assert statistics.median(times) < 0.1, times  # ~5 ms here; generous for a loaded CI machine
