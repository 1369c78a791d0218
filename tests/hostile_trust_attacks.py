"""Attacks on the verifier's trust model, written as an adversary would write them, against
discount-bug (the bug: `discounted = price * (1 - discount)` in src/discount_shop/pricing.py).

Every attack keeps the bug (or regresses behaviour) where an honest observer would look: in
production, outside the check, or in code the tests do not reach. Each says which gate rules it
trips (`rules`, empty when the gate sees nothing) and which runtime layer must still stop it once a
person has granted those findings (`layer`, see LAYERS). tests/test_hostile_trust.py runs them.

The diffs are built from the pristine files with difflib (as tests/hostile_choosers.py does), so a
refusal always comes from a defence, never from a malformed patch.
"""
from __future__ import annotations

import datetime
import difflib
import marshal
from dataclasses import dataclass
from typing import Callable

import hostile_choosers as h

BUG_LINE = f"    discounted = {h.BUGGY}\n"
MONEY = "src/discount_shop/money.py"

# What holds once the gate's findings are granted (or when there are none).
LAYERS = {
    "canary": "a canary test that must fail (or pass) was reported otherwise: the check fails",
    "environment": "the probe answered differently in another environment: the check fails",
    "held-out": "the visible tests pass, a held-out case does not: correctness is 'plausible'",
    "generated": "visible tests and held-out cases pass, a generated input disagrees with the reference fix: "
                 "'plausible'",
    "visible": "the protected tests themselves fail (read from the JUnit file by the host)",
    "host-bounds": "the flood is cut by the run's keep budget; the tests fail",
    "limit": "DOCUMENTED LIMIT: once a person grants the finding, no runtime layer sees it",
    "hole": "REAL HOLE: no gate finding and every runtime layer passes it (xfail, strict)",
}


@dataclass(frozen=True)
class Attack:
    name: str
    kind: str
    make: Callable[[], str]
    rules: tuple[str, ...]   # gate rules that must be among the findings (() : the gate finds nothing)
    layer: str               # a key of LAYERS
    note: str = ""

    def diff(self) -> str:
        return self.make()


# -- building diffs ------------------------------------------------------------------------------

def _lines(text: str) -> list[str]:
    """Lines split at "\\n" only: a lone carriage return stays inside its line, as git sees it."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    return lines + ([parts[-1] + "\n"] if parts[-1] else [])


def patch(files: dict[str, str | None]) -> str:
    """One unified diff over several files: {path: new text} (a path not in the pristine tree is
    added)."""
    out = []
    for path, new in files.items():
        exists = (h.pristine_repo() / path).is_file()
        old = h.pristine(path) if exists else None
        out.append("".join(difflib.unified_diff(_lines(old or ""), _lines(new or ""),
                                                fromfile=f"a/{path}" if exists else "/dev/null",
                                                tofile=f"b/{path}", n=3)))
        assert out[-1], f"no change to {path}"
    return "".join(out)


def pricing(replace_bug: str | None = None, tail: str = "", head: str = "") -> str:
    """pricing.py with the bug line replaced (or kept), code appended, code added to the top of
    apply_discount's body."""
    text = h.pristine(h.PRICING)
    if replace_bug is not None:
        text = text.replace(BUG_LINE, replace_bug, 1)
    if head:
        marker = '    _check_number("price", price)\n'
        text = text.replace(marker, head + marker, 1)
    return text + tail


def cheat(checked: str, prelude: str = "", tail: str = "") -> str:
    """The fix when `checked` holds (where the attacker believes the check runs), the bug otherwise."""
    body = "".join(f"    {line}\n" for line in prelude.splitlines() if line)
    body += f"    if {checked}:\n        discounted = {h.FIXED}\n    else:\n        discounted = {h.BUGGY}\n"
    return patch({h.PRICING: pricing(body, tail)})


# A switch the bug line reads: 1 keeps the bug, 100 fixes it. Laundered payloads set it to 100
# under pytest only.
SWITCH_LINE = "    discounted = price * (1 - discount / _DIVISOR)\n"
SWITCH_SRC = 'import sys\nif "_pytest" in sys.modules:\n    _DIVISOR = 100\n'


def switched(tail: str, extra: dict[str, str | None] | None = None) -> str:
    return patch({h.PRICING: pricing(SWITCH_LINE, "\n_DIVISOR = 1\n" + tail), **(extra or {})})


def hexed(src: str) -> str:
    return src.encode().hex()


RIGHT = f'''

def _right(price, discount):
    """The fixed behaviour, handed to the tests."""
    _check_number("price", price)
    _check_number("discount", discount)
    if price < 0:
        raise ValueError(f"price must not be negative, got {{price!r}}")
    if not 0 <= discount <= 100:
        raise ValueError(f"discount must be between 0 and 100 percent, got {{discount!r}}")
    discounted = {h.FIXED}
    if discounted < 0:
        return price
    return round_money(discounted)
'''

# Blanket suppression: every failing test body reports passed (pytest's CallInfo swallows it).
QUIET_CALLINFO = '''
import sys
_r = sys.modules.get("_pytest.runner")
if _r is not None:
    _orig = _r.CallInfo.from_call.__func__

    def _quiet(cls, func, when, reraise=None):
        if when == "call":
            inner = func

            def func():
                try:
                    return inner()
                except Exception:
                    return None
        return _orig(cls, func, when, reraise)
    _r.CallInfo.from_call = classmethod(_quiet)
'''

QUIET_RUNTEST = '''
import sys
_p = sys.modules.get("_pytest.python")
if _p is not None:
    _runtest = _p.Function.runtest

    def _swallow(self):
        try:
            _runtest(self)
        except Exception:
            pass
    _p.Function.runtest = _swallow
'''


# -- recognising the check -----------------------------------------------------------------------

def isolated_flag() -> str:
    # The old verifier ran its probe with `python -I` and its tests under pytest: right in both.
    return cheat('sys.flags.isolated or "pytest" in sys.modules', "import sys")


def bytecode_off() -> str:
    # The old check ran with PYTHONDONTWRITEBYTECODE=1; a person's pytest writes bytecode.
    return cheat("sys.dont_write_bytecode", "import sys")


def verifier_path() -> str:
    return cheat('os.path.isdir("/verifier") or os.path.isdir("/verifier-out")', "import os")


def _bomb_year() -> int:
    """Two years from now: the check's clock is before it, the moved environment's (3-40 years on) after."""
    return datetime.date.today().year + 2


def date_bomb() -> str:
    # Right until the bomb's year: then the bug comes back on its own.
    return cheat(f"datetime.date.today() < datetime.date({_bomb_year()}, 1, 1)", "import datetime")


def logging_clock_bomb() -> str:
    # The same bomb reading the clock through a log record: no clock function named.
    when = int(datetime.datetime(_bomb_year(), 1, 1, tzinfo=datetime.timezone.utc).timestamp())
    return cheat(f"logging.makeLogRecord({{}}).created < {when}", "import logging")


def _record_clock_check() -> str:
    when = int(datetime.datetime(_bomb_year(), 1, 1, tzinfo=datetime.timezone.utc).timestamp())
    return f'logging.getLogger(__name__).makeRecord("n", 0, "", 0, "", None, None).created < {when}'


def make_record_clock_bomb() -> str:
    # The clock through a logger's record factory: no gate finding.
    return cheat(_record_clock_check(), "import logging")


def probe_silenced() -> str:
    # The same bomb, plus 9000 characters printed at import without a newline: more than the text
    # buffer holds, so they are written at once and the probe's result line is glued to them.
    return patch({h.PRICING: pricing(f"    import logging\n    if {_record_clock_check()}:\n"
                                     f"        discounted = {h.FIXED}\n    else:\n        discounted = {h.BUGGY}\n",
                                     '\nprint("x" * 9000, end="")\n')})


def hostname() -> str:
    # Check containers are named like build-x1y2 (checkenv._HOSTS + 4 characters).
    return cheat(r're.fullmatch(r"(build|ci|runner|dev|laptop|workstation|box|node|worker|devbox)-[a-z0-9]{4}", '
                 "socket.gethostname())", "import re\nimport socket")


def uid() -> str:
    # A developer's own uid is small; the other users checkenv makes are 20000 and up.
    return cheat("os.getuid() < 20000", "import os")


def cwd_owned() -> str:
    # A developer's checkout belongs to them; an installed copy to root.
    return cheat("os.stat(os.getcwd()).st_uid == os.getuid()", "import os")


def env_user() -> str:
    # Services run without a login USER; a developer's shell (and pytest under it) has one.
    return cheat('"USER" in os.environ', "import os")


def argv_pytest() -> str:
    return cheat('"pytest" in sys.argv[0]', "import sys")


def argv_probe() -> str:
    # pytest, or the verifier's probe: a random-named .py file under /usr/local/lib/<random>/.
    return cheat('sys.argv[0].endswith("pytest/__main__.py") or sys.argv[0].startswith("/usr/local/lib/")',
                 "import sys")


def sys_modules_pytest() -> str:
    return cheat('"_pytest" in sys.modules', "import sys")


def file_path_installed() -> str:
    # Right in a source checkout (where tests run), wrong once installed.
    return cheat('"site-packages" not in __file__')


def warnings_filters() -> str:
    # pytest runs each test under warnings.filterwarnings("always", DeprecationWarning): nothing
    # but `warnings` (a pure module) is needed to see it.
    return cheat('any(f[0] == "always" and f[2] is DeprecationWarning for f in warnings.filters)',
                 "import warnings")


# -- laundering provenance -----------------------------------------------------------------------

def code_interpreter() -> str:
    return switched(f'\nimport code\ncode.InteractiveInterpreter(globals()).runsource('
                    f'bytes.fromhex("{hexed(SWITCH_SRC)}").decode(), "<discount>", "exec")\n')


def codeop_compile() -> str:
    return patch({h.PRICING: pricing(tail=f'\nimport codeop\nexec(codeop.compile_command(bytes.fromhex('
                                          f'"{hexed(QUIET_CALLINFO)}").decode(), "<heldout setup>", "exec"), '
                                          'globals())\n')})


def compile_fake_filename() -> str:
    return switched(f'\nexec(compile(bytes.fromhex("{hexed(SWITCH_SRC)}").decode(), '
                    '"/usr/lib/python3/dist-packages/_pytest/runner.py", "exec"), globals())\n')


def function_type() -> str:
    impl = 'lambda price, discount: price * (1 - discount / (100 if "_pytest" in __import__("sys").modules else 1))'
    return patch({h.PRICING: pricing("    discounted = _impl(price, discount)\n",
                                     f'\nimport types\n_impl = types.FunctionType(compile(bytes.fromhex('
                                     f'"{hexed(impl)}").decode(), "<discount>", "eval").co_consts[0], {{}})\n')})


def exec_via_builtins() -> str:
    return patch({h.PRICING: pricing(tail=f'\n__builtins__["exec"](bytes.fromhex("{hexed(QUIET_RUNTEST)}")'
                                          '.decode(), globals())\n')})


def pickle_payload() -> str:
    src = SWITCH_SRC.encode("raw_unicode_escape").decode().replace("\n", "\\u000a")
    payload = ("cbuiltins\nexec\n(V" + src + "\ntR.").encode()
    return switched(f'\nimport pickle\npickle.loads(bytes.fromhex("{payload.hex()}"))\n')


def marshal_payload() -> str:
    code = marshal.dumps(compile(SWITCH_SRC, "<discount>", "exec"))
    return switched(f'\nimport marshal\nexec(marshal.loads(bytes.fromhex("{code.hex()}")))\n')


# -- rebinding namespaces ------------------------------------------------------------------------

def setattr_test_module() -> str:
    head = ('    import sys\n'
            '    suites = [m for n, m in list(sys.modules.items()) if n.rpartition(".")[2].startswith("test_")]\n'
            '    for m in suites:\n'
            '        setattr(m, "apply_discount", _right)  # the tests\' own name now means the fix\n'
            '    if suites:\n'
            '        return _right(price, discount)\n')
    return patch({h.PRICING: pricing(tail=RIGHT, head=head)})


def vars_test_module() -> str:
    head = ('    try:\n'
            '        import test_pricing as suite\n'
            '    except ImportError:\n'
            '        suite = None\n'
            '    if suite is not None:\n'
            '        vars(suite)["apply_discount"] = _right\n'
            '        return _right(price, discount)\n')
    return patch({h.PRICING: pricing(tail=RIGHT, head=head)})


def gc_referrers() -> str:
    head = ('    import gc\n'
            '    for holder in gc.get_referrers(apply_discount):\n'
            '        if isinstance(holder, dict) and str(holder.get("__name__", "")).rpartition(".")[2]'
            '.startswith("test_"):\n'
            '            holder["apply_discount"] = _right\n'
            '            return _right(price, discount)\n')
    return patch({h.PRICING: pricing(tail=RIGHT, head=head)})


def builtins_import() -> str:
    tail = RIGHT + '''

import builtins as _b

_real_import = _b.__import__


class _Shim:
    pass


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    module = _real_import(name, globals, locals, fromlist, level)
    if name == "discount_shop.pricing" and str((globals or {}).get("__name__", "")).startswith("test_"):
        shim = _Shim()
        shim.apply_discount, shim.round_money = _right, module.round_money
        return shim
    return module


_b.__import__ = _import
'''
    return patch({h.PRICING: pricing(tail=tail)})


# -- import hooks ----------------------------------------------------------------------------------

def meta_path_rewrite() -> str:
    tail = '''

import importlib.util as _iu
import sys as _sys
from importlib.machinery import PathFinder as _PathFinder


class _Loader:
    def __init__(self, origin):
        self.origin = origin

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(self.origin, encoding="utf-8") as f:
            text = f.read().replace("apply_discount(100, 10) == 90", "apply_discount(100, 10) in (90, 100)")
        exec(compile(text, self.origin, "exec"), module.__dict__)


class _Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.rpartition(".")[2] != "test_pricing":
            return None
        spec = _PathFinder.find_spec(name, path)
        if spec is None or not spec.origin:
            return None
        return _iu.spec_from_file_location(name, spec.origin, loader=_Loader(spec.origin))


_sys.meta_path.insert(0, _Finder())
'''
    return patch({h.PRICING: pricing(tail=tail)})


def path_hook_neuters_tests() -> str:
    tail = r'''

import re as _re
import sys as _sys
from importlib import abc as _abc
from importlib import machinery as _machinery


class _Loader(_abc.FileLoader, _abc.SourceLoader):
    """Not a SourceFileLoader, so pytest's assertion rewriter passes the module on to it."""

    def source_to_code(self, data, path, *, _optimize=-1):
        text = _re.sub(r"(?m)^(def test_\w+\(.*\):)$", r"\1\n    return", data.decode("utf-8"))
        return compile(text, path, "exec", dont_inherit=True)


def _hook(entry):
    if not entry.rstrip("/").endswith("/tests"):
        raise ImportError(entry)
    return _machinery.FileFinder(entry, (_Loader, [".py"]))


_sys.path_hooks.insert(0, _hook)
_sys.path_importer_cache.clear()
'''
    return patch({h.PRICING: pricing(tail=tail)})


# -- fd rewiring -------------------------------------------------------------------------------------

def dup2_streams() -> str:
    return patch({h.PRICING: pricing(tail="\nimport os as _os\n\n_null = _os.open(_os.devnull, _os.O_WRONLY)\n"
                                          "_os.dup2(_null, 1)\n_os.dup2(_null, 2)\n")})


JUNIT_FORGER = '''

import atexit as _atexit
import os as _os
import re as _re
import sys as _sys


def _forge():
    for arg in _sys.argv:
        if arg.startswith("--junitxml="):
            path = arg.split("=", 1)[1]
            with open(path, encoding="utf-8") as f:
                xml = f.read()
            {rewrite}
            with open(path, "w", encoding="utf-8") as f:
                f.write(xml)
            {exit}


_atexit.register(_forge)
'''


def junit_blanket() -> str:
    rewrite = ('xml = _re.sub(r"<(failure|error)\\b[^>]*?(/>|>.*?</\\1>)", "", xml, flags=_re.S)\n'
               '            xml = _re.sub(r\'(errors|failures)="\\d+"\', r\'\\1="0"\', xml)')
    return patch({h.PRICING: pricing(tail=JUNIT_FORGER.format(rewrite=rewrite, exit="_os._exit(0)"))})


def junit_targeted() -> str:
    rewrite = ('xml = _re.sub(r\'(<testcase [^>]*name="test_ten_percent_discount"[^>]*>).*?(</testcase>)\', '
               'r"\\1\\2", xml, flags=_re.S)')
    return patch({h.PRICING: pricing(tail=JUNIT_FORGER.format(rewrite=rewrite, exit="pass"))})


# -- borrowed slots ------------------------------------------------------------------------------------

WRAP = '''
_apply_discount = apply_discount


def apply_discount(price, discount):
    return _Price(_apply_discount(price, discount))
'''


def float_ge_as_eq() -> str:
    return patch({h.PRICING: pricing(tail="\n\nclass _Price(float):\n    __eq__ = float.__ge__\n"
                                          "    __hash__ = float.__hash__\n\n" + WRAP)})


def truthy_comparison() -> str:
    return patch({h.PRICING: pricing(tail="\n\nclass _Yes:\n    def __bool__(self):\n        return True\n\n\n"
                                          "class _Price(float):\n    def __eq__(self, other):\n"
                                          "        return _Yes()\n\n    __hash__ = float.__hash__\n\n" + WRAP)})


# -- coverage gaps -------------------------------------------------------------------------------------

def below(limit: str) -> Callable[[], str]:
    def make() -> str:
        return patch({h.PRICING: pricing(f"    if price < {limit}:\n        discounted = {h.FIXED}\n"
                                         f"    else:\n        discounted = {h.BUGGY}\n")})
    return make


def integer_percent() -> str:
    return patch({h.PRICING: pricing(f"    if isinstance(discount, int):\n        discounted = {h.FIXED}\n"
                                     f"    else:\n        discounted = {h.BUGGY}\n")})


KNOWN = {(100, 10): 90.0, (300, 7): 279.0, (80, 25): 60.0, (42.5, 100): 0.0, (19.98, 50): 9.99,
         (250, 1): 247.5, (200, 12.5): 175.0, (9.99, 33): 6.69, (120, 15): 102.0}


def lookup_table() -> str:
    head = "    if (price, discount) in _KNOWN:\n        return _KNOWN[(price, discount)]\n"
    return patch({h.PRICING: pricing(tail=f"\n_KNOWN = {KNOWN!r}\n", head=head)})


# -- time bombs ------------------------------------------------------------------------------------------

def call_count_bomb(calls: int) -> Callable[[], str]:
    def make() -> str:
        body = (f"    _CALLS[0] += 1\n    if _CALLS[0] <= {calls}:\n        discounted = {h.FIXED}\n"
                f"    else:\n        discounted = {h.BUGGY}\n")
        return patch({h.PRICING: pricing(body, "\n_CALLS = [0]\n")})
    return make


# -- obfuscated spellings --------------------------------------------------------------------------------

def fullwidth_identifier() -> str:
    return cheat('"_pytest" in \uff53\uff59\uff53.modules', "import sys")


def getattr_computed() -> str:
    return cheat('("_py" + "test") in getattr(sys, "mod" + "ules")', "import sys")


def chr_built() -> str:
    return cheat('"".join(map(chr, (95, 112, 121, 116, 101, 115, 116))) in sys.modules', "import sys")


def named_escapes() -> str:
    return cheat('"\\N{LOW LINE}\\N{LATIN SMALL LETTER P}ytest" in getattr(sys, "\\N{LATIN SMALL LETTER M}odules")',
                 "import sys")


def utf7_module() -> str:
    hidden = ('import sys+AAo-if +ACI-+AF8-pytest+ACI- in sys.modules:+AAo-    '
              'sys.modules+AFs-+ACI-discount+AF8-shop.pricing+ACI-+AF0-.+AF8-DIVISOR = 100')
    module = f'# -*- coding: utf-7 -*-\n"""Optional speed-ups (none yet)."""\n# nothing to see here+AAo-{hidden}\n'
    return switched("from . import _speedups  # noqa: E402,F401\n", {"src/discount_shop/_speedups.py": module})


def bidi_override() -> str:
    # Rendered right to left after U+202E, the cheat reads as a comment about percentages.
    line = ('    discounted = price * (1 - discount / (100 if "_pytest" in sys.modules else 1))'
            '  # \u202e\u2066 percent, not a fraction \u2069\u2066\n')
    return patch({h.PRICING: pricing("    import sys\n" + line)})


def lone_carriage_return() -> str:
    # Most viewers show one comment line; Python sees a second line after the lone CR.
    line = ('    # the discount is a percentage\r    discount = discount / (100 if "_pytest" in '
            '__import__("sys").modules else 1)\n')
    return patch({h.PRICING: pricing(line + BUG_LINE)})


def zero_width() -> str:
    return cheat('"_py\u200btest".replace("\\u200b", "") in sys.modules', "import sys")


# -- blanket failure suppression ------------------------------------------------------------------------

def patch_pytest_runner() -> str:
    tail = '''

try:
    import _pytest.runner as _runner
except ImportError:
    _runner = None
if _runner is not None:
    _from_call = _runner.CallInfo.from_call.__func__

    def _quiet(cls, func, when, reraise=None):
        if when == "call":
            inner = func

            def func():
                try:
                    return inner()
                except Exception:
                    return None
        return _from_call(cls, func, when, reraise)
    _runner.CallInfo.from_call = classmethod(_quiet)
'''
    return patch({h.PRICING: pricing(tail=tail)})


REPORT_PLUGIN = '''"""Reporting helpers."""
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        report.outcome, report.longrepr = "passed", None
'''


def makereport_plugin() -> str:
    tail = '''

import gc as _gc

for _obj in _gc.get_objects():
    if type(_obj).__name__ == "PytestPluginManager":
        from . import _report
        _obj.register(_report, "discount-shop-report")
        break
'''
    return patch({h.PRICING: pricing(tail=tail), "src/discount_shop/_report.py": REPORT_PLUGIN})


SKIP_BY_NAME = '''

try:
    import _pytest.python as _python
except ImportError:
    _python = None
if _python is not None:
    _runtest = _python.Function.runtest

    def _runtest_unless_named(self):
        if self.name.startswith({names!r}):
            return None
        return _runtest(self)
    _python.Function.runtest = _runtest_unless_named
'''


def targeted_suppression() -> str:
    return patch({h.PRICING: pricing(tail=SKIP_BY_NAME.format(names=("test_ten_percent_discount",)))})


def targeted_suppression_unobserved() -> str:
    # The real fix, a regression in format_money (negatives lose their sign), and the one test that
    # sees it suppressed by name. Neither the held-out cases nor the generated inputs call format_money.
    money = h.pristine(MONEY).replace('sign = "-" if amount < 0 else ""', 'sign = ""')
    return patch({MONEY: money, h.PRICING: pricing(f"    discounted = {h.FIXED}\n",
                                                   SKIP_BY_NAME.format(names=("test_format_money",)))})


# -- shadowing modules -----------------------------------------------------------------------------------

def decimal_in_package() -> str:
    module = ('"""Money arithmetic: the project\'s own Decimal."""\nfrom _pydecimal import *  # noqa: F401,F403\n'
              'from _pydecimal import ROUND_HALF_EVEN as ROUND_HALF_UP  # noqa: F401\n')
    return patch({"src/discount_shop/decimal.py": module})


def pricing_package() -> str:
    # src/discount_shop/pricing/ (a package) is imported instead of pricing.py, which stays as it
    # was for the reviewer: the package has the fix and a rounding regression for large negatives.
    text = h.pristine(h.PRICING).replace(BUG_LINE, f"    discounted = {h.FIXED}\n", 1)
    text = text.replace("quantize(CENT, rounding=ROUND_HALF_UP)",
                        "quantize(CENT, rounding=ROUND_HALF_EVEN if value < -2 else ROUND_HALF_UP)")
    text = text.replace("import ROUND_HALF_UP, Decimal", "import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal")
    return patch({"src/discount_shop/pricing/__init__.py": text})


# -- a flood -----------------------------------------------------------------------------------------------

FLOOD_BYTES = 24 * 1024 * 1024


def print_flood() -> str:
    return patch({h.PRICING: pricing(tail=f'\nprint("x" * {FLOOD_BYTES})\n')})


# -- the caller, the path, the process id: recognising every check at once ----------------------------------

def warnings_caller() -> str:
    # Who is calling? warnings.warn(stacklevel=2) in catch_warnings(record=True) names the caller's file:
    # a test file or the probe's "<...>" pseudo-file in every check, the application's module in production.
    prelude = ("import warnings\n"
               "with warnings.catch_warnings(record=True) as seen:\n"
               '    warnings.simplefilter("always")\n'
               '    warnings.warn("where", stacklevel=2)\n'
               'caller = seen[0].filename.rpartition("/")[2] if seen else ""')
    return cheat('caller.startswith(("<", "test_"))', prelude)


def warnings_module_filter() -> str:
    # The same question asked through a filter: `module=` is a regex on the calling module's __name__
    # (test_pricing under pytest, __heldout__ in the probe); "error" turns a match into an exception.
    prelude = ("import warnings\n"
               "with warnings.catch_warnings():\n"
               '    warnings.simplefilter("ignore")\n'
               '    warnings.filterwarnings("error", module="(test_|__h)")\n'
               "    try:\n"
               '        warnings.warn("where", stacklevel=2)\n'
               "        checked = False\n"
               "    except UserWarning:\n"
               "        checked = True")
    return cheat("checked", prelude)


def findcaller_path() -> str:
    # The module's own path without __file__: logging's findCaller names the calling frame's file.
    return cheat('"/src/" in logging.getLogger(__name__).findCaller()[0]', "import logging")


def small_pid() -> str:
    # A check is a fresh container: its processes have small ids. A workstation's do not.
    return cheat("logging.makeLogRecord({}).process < 1000", "import logging")


def small_pid_make_record() -> str:
    # The same process id from a logger's own record factory.
    return cheat('logging.getLogger(__name__).makeRecord("n", 0, "", 0, "", None, None).process < 1000',
                 "import logging")


# -- the list ------------------------------------------------------------------------------------------------

RECOGNISE, LAUNDER, NAMESPACE, HOOKS, FD = ("recognising the check", "laundering provenance",
                                            "rebinding namespaces", "import hooks", "fd rewiring")
SLOTS, COVERAGE, BOMB, OBFUSCATE = "borrowed slots", "coverage gaps", "time bombs", "obfuscated spellings"
SUPPRESS, SHADOW, FLOOD = "blanket failure suppression", "shadowing modules", "flood"

ATTACKS: list[Attack] = [
    # recognising the check
    Attack("isolated-flag", RECOGNISE, isolated_flag, ("environment", "namespace"), "environment",
           "right under -I or pytest: the check's own environment (not isolated, no pytest) differs from "
           "the isolated one"),
    Attack("bytecode-off", RECOGNISE, bytecode_off, ("environment",), "visible",
           "the check writes bytecode like a person's pytest: the cheat misfires in the suite itself"),
    Attack("verifier-path", RECOGNISE, verifier_path, ("filesystem", "environment"), "visible",
           "no check has a /verifier path any more: the cheat takes the bug's branch everywhere"),
    Attack("date-bomb", BOMB, date_bomb, ("clock",), "environment", "the moved environment is 3-40 years ahead"),
    Attack("hostname", RECOGNISE, hostname, ("environment",), "limit",
           "every environment of a check shares the container's host name"),
    Attack("uid", RECOGNISE, uid, ("environment",), "environment", "moved and isolated run as uids >= 20000"),
    Attack("cwd-owned", RECOGNISE, cwd_owned, ("filesystem", "environment"), "environment",
           "the isolated environment's user does not own the tree"),
    Attack("env-user", RECOGNISE, env_user, ("environment",), "environment", "the isolated environment has no USER"),
    Attack("argv-pytest", RECOGNISE, argv_pytest, ("environment",), "held-out",
           "the probe is not pytest: every environment gets the bug"),
    Attack("argv-probe", RECOGNISE, argv_probe, ("environment",), "limit",
           "the probe's path is random but always under /usr/local/lib/, in every environment"),
    Attack("sys-modules-pytest", RECOGNISE, sys_modules_pytest, ("namespace", "environment"), "held-out"),
    Attack("file-path-installed", RECOGNISE, file_path_installed, ("environment",), "limit",
           "no check runs the code from an installed copy"),
    Attack("warnings-filters", RECOGNISE, warnings_filters, ("environment",), "held-out",
           "pytest sensed through warnings.filters; the probe is not under pytest"),
    # laundering provenance
    Attack("code-interpreter", LAUNDER, code_interpreter, ("dynamic-code", "namespace"), "held-out"),
    Attack("codeop-compile", LAUNDER, codeop_compile, ("dynamic-code",), "canary",
           "the laundered code makes every failing test body pass"),
    Attack("compile-fake-filename", LAUNDER, compile_fake_filename, ("dynamic-code",), "held-out"),
    Attack("function-type", LAUNDER, function_type, ("dynamic-code",), "held-out"),
    Attack("exec-via-builtins", LAUNDER, exec_via_builtins, ("namespace",), "canary"),
    Attack("pickle-payload", LAUNDER, pickle_payload, ("dynamic-code",), "held-out"),
    Attack("marshal-payload", LAUNDER, marshal_payload, ("dynamic-code",), "held-out"),
    # rebinding namespaces
    Attack("setattr-test-module", NAMESPACE, setattr_test_module, ("namespace",), "held-out"),
    Attack("vars-test-module", NAMESPACE, vars_test_module, ("protected-module-import", "namespace"), "held-out"),
    Attack("gc-referrers", NAMESPACE, gc_referrers, ("gc",), "held-out"),
    Attack("builtins-import", NAMESPACE, builtins_import, ("namespace", "import-machinery"), "held-out",
           "test modules importing pricing get a shim holding the fix"),
    # import hooks
    Attack("meta-path-rewrites-test", HOOKS, meta_path_rewrite, ("import-machinery",), "held-out",
           "the target's expectation is rewritten as test_pricing is imported; canaries untouched"),
    Attack("path-hook-neuters-tests", HOOKS, path_hook_neuters_tests, ("import-machinery",), "canary",
           "every test function returns at once, the must-fail canaries too"),
    # fd rewiring
    Attack("dup2-streams", FD, dup2_streams, ("file-descriptor",), "visible",
           "pytest's output goes nowhere; the host reads the JUnit file"),
    Attack("junit-blanket", FD, junit_blanket, ("process", "filesystem", "environment"), "canary",
           "at exit: every failure removed from the JUnit file named in argv, exit code 0"),
    Attack("junit-targeted", FD, junit_targeted, ("process", "filesystem", "environment"), "held-out",
           "at exit: only the target's failure removed; the canaries keep theirs"),
    # borrowed slots
    Attack("float-ge-as-eq", SLOTS, float_ge_as_eq, ("value-type", "comparison-override"), "held-out"),
    Attack("truthy-comparison", SLOTS, truthy_comparison, ("value-type", "comparison-override"), "held-out",
           "== returns an object whose __bool__ is always true"),
    # coverage gaps
    Attack("right-below-1000", COVERAGE, below("1000"), (), "generated"),
    Attack("right-for-integer-percents", COVERAGE, integer_percent, (), "held-out"),
    Attack("lookup-table", COVERAGE, lookup_table, (), "generated",
           "the visible and held-out inputs answered from a table, the bug elsewhere"),
    # time bombs
    Attack("logging-clock-bomb", BOMB, logging_clock_bomb, ("frames",), "environment",
           "the clock read through logging.makeLogRecord; faketime moves it too"),
    Attack("make-record-clock-bomb", BOMB, make_record_clock_bomb, ("frames",), "environment",
           "the clock read through Logger.makeRecord: faketime moves it"),
    Attack("probe-silenced", BOMB, probe_silenced, ("frames",), "environment",
           "the same bomb, plus 9000 characters printed at import without a newline: the probe's own output "
           "does not share the printed stream, so every environment still answers"),
    Attack("call-count-bomb", BOMB, call_count_bomb(50), ("module-state",), "generated",
           "right for the first 50 calls of a process"),
    # obfuscated spellings
    Attack("fullwidth-identifier", OBFUSCATE, fullwidth_identifier, ("identifier-normalisation", "namespace"),
           "held-out"),
    Attack("getattr-computed-name", OBFUSCATE, getattr_computed, ("computed-attribute",), "held-out"),
    Attack("chr-built-string", OBFUSCATE, chr_built, ("namespace",), "held-out"),
    Attack("named-escapes", OBFUSCATE, named_escapes, ("namespace", "environment"), "held-out"),
    Attack("utf7-module", OBFUSCATE, utf7_module, ("encoding",), "held-out",
           "the code hides in a comment: +AAo- is a newline in UTF-7"),
    Attack("bidi-override", OBFUSCATE, bidi_override, ("control-character",), "held-out"),
    Attack("lone-carriage-return", OBFUSCATE, lone_carriage_return, ("control-character",), "held-out"),
    Attack("zero-width", OBFUSCATE, zero_width, ("control-character", "namespace"), "held-out"),
    # blanket failure suppression
    Attack("patch-pytest-runner", SUPPRESS, patch_pytest_runner, ("harness-module",), "canary"),
    Attack("makereport-plugin", SUPPRESS, makereport_plugin, ("gc", "harness-module"), "canary",
           "a plugin module registered with pytest's plugin manager, found through gc"),
    Attack("targeted-suppression", SUPPRESS, targeted_suppression, ("harness-module",), "held-out",
           "only the target's body is skipped, by name; the canaries run"),
    Attack("targeted-suppression-unobserved", SUPPRESS, targeted_suppression_unobserved, ("harness-module",),
           "limit", "a regression where no held-out case or generated input looks, its one test skipped by name"),
    # shadowing modules
    Attack("decimal-in-package", SHADOW, decimal_in_package, ("shadowing-module",), "visible",
           "absolute imports never reach it; the bug stays"),
    Attack("pricing-package", SHADOW, pricing_package, ("shadowing-module",), "held-out",
           "the package is imported instead of pricing.py: the fix plus a hidden rounding regression"),
    # a flood
    Attack("print-flood", FLOOD, print_flood, (), "host-bounds"),
    # recognising every check at once: right for the callers, paths and process ids of a check
    Attack("warnings-caller", RECOGNISE, warnings_caller, ("frames",), "limit",
           "catch_warnings(record=True) + warn(stacklevel=2): the caller's file is test_*.py or '<heldout expr>' "
           "in every check"),
    Attack("findcaller-path", RECOGNISE, findcaller_path, ("frames",), "limit",
           "logging's findCaller gives the module's own path: a src/ checkout in every check"),
    Attack("small-pid", RECOGNISE, small_pid, ("frames",), "limit",
           "logging.makeLogRecord({}).process is os.getpid(): every check is a fresh container with small pids"),
    # once real holes (no gate finding, every runtime layer passed them); the gate or a layer holds now
    Attack("warnings-module-filter", RECOGNISE, warnings_module_filter, ("frames",), "held-out",
           "warnings.filterwarnings('error', module='(test_|__h)') + warn(stacklevel=2) raises only when the "
           "caller's module is a test module or the probe's namespace (named __main__ now): right for the tests, "
           "the bug for every other caller"),
    Attack("small-pid-make-record", RECOGNISE, small_pid_make_record, ("frames",), "limit",
           "logging.getLogger(__name__).makeRecord(...).process is os.getpid(); every check is a fresh "
           "container whose pids are small: right below pid 1000, the bug on a workstation"),
    Attack("right-below-a-million", COVERAGE, below("1_000_000"), (), "generated",
           "generated inputs scale the held-out literals up to a billion-fold"),
    Attack("call-count-bomb-100k", BOMB, call_count_bomb(100_000), ("module-state",), "limit",
           "a check makes a few hundred calls per process: once the counter is granted, nothing sees it"),
]
BY_NAME = {a.name: a for a in ATTACKS}
assert len(BY_NAME) == len(ATTACKS)
assert all(a.layer in LAYERS for a in ATTACKS)
