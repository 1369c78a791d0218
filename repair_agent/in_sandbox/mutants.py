"""The mutation analysis (mutation.py says what it does and holds its settings and result models),
inside the sandbox, after the traced run of spectrum.py in the same process.

`main` takes that run (spectrum.SpectrumRun: the tree the tests ran in, the outcomes and the lines
each test ran), mutates the most suspicious lines one token at a time, runs the failing target
tests on each mutant and prints one line: MARKER followed by JSON {"lines", "fixes", "tried", "cut",
"duration_s"}. The spectrum's own result is printed (and flushed) before this runs, so a mutant that
brings the process down loses only the mutation analysis.

The standard library and pytest only, Python 3.9 and later; nothing runs at import, and nothing of
spectrum.py is imported at run time (the run object and `main`'s arguments carry what is needed).

Kept in one module: it is one program shipped as one source text into the sandbox, where it can
import nothing of the project; the pure parts (the mutants of a line, the choice of lines) are
functions the host's tests call.
"""
from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import itertools
import json
import os
import re
import signal
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

try:
    from .behaviour import Recorder
    from .examples import compiled as compiled_examples
    from .examples import MAX_VARIANTS, outcome, variants
    from .examples import namespace as example_namespace
    from .workers import Pool, available_cpus
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_behaviour import Recorder  # type: ignore[no-redef]
    from ra_examples import compiled as compiled_examples  # type: ignore[no-redef]
    from ra_examples import namespace as example_namespace  # type: ignore[no-redef]
    from ra_examples import MAX_VARIANTS, outcome, variants  # type: ignore[no-redef]
    from ra_workers import Pool, available_cpus  # type: ignore[no-redef]

if TYPE_CHECKING:
    from .spectrum import SpectrumRun

MARKER = "@@ra-mutants@@"

# a function's first and last line, its parameters, and its other variables with the lines binding them
Scope = Tuple[int, int, List[str], Dict[str, List[int]]]
Def = Tuple[str, int, int, int]      # a function's name, first and last line, first line of its decorators
Mutant = Tuple[str, str, str]        # the mutated line, what changed (e.g. "< -> <="), its operator family
# operators.analysis_mutations: (line, the variables in scope, the callables of the file, the parameters
# of its functions) -> (family, what, new line)
Mutations = Callable[[str, Tuple[str, ...], Tuple[str, ...], Dict[str, Tuple[str, ...]], Tuple[str, ...]],
                     List[Tuple[str, str, str]]]
# a line that runs at import but builds nothing a one-token edit of it could fix
NOT_AT_IMPORT = ("def ", "async def ", "class ", "@", "import ", "from ", "#", '"""', "'''", "__all__")
GUESSED = "guessed-guard"   # the family of a speculative guard's mutant: its fix is weighed as a guess
AFTER = "after: "   # a condition evaluated once its line ran (a guard after the line), not before
NEGATED = "not: "   # a guard on the negation of a probed condition: it holds where the condition did not
UNFINISHED = "failed: did not finish"   # a target the time limit stopped (or never reached)
MAX_DEFAULT_FUNCTIONS = 8            # the functions around the chosen lines whose defaults are edited
MAX_DIVERGING = 8                    # conditions that went the other way in the failing targets, mutated besides
MAX_SPECULATIVE = 6                  # guards of a probed condition or a new kind of body that run, per line
MAX_NAMES = 12                       # the variables of a function a variable read may become
TOKEN = re.compile(r"\w+|[^\w\s]")   # a fix's size: the tokens it adds to its line (fewer: simpler)
MIN_SHARED = 100                     # mutants queued before they are shared among processes (workers.py)
PAIR = "pair"                        # the family of two partial fixes of one file tried together
# what each process counts of its own mutants, added up in the parent
SHARED_COUNTS = ("tried", "cut", "timed_out", "stopped_early", "not_compiling", "deferred", "errors")
SHARED_TIMES = ("compile_s", "targets_s", "check_s")


class MutantTimeout(BaseException):
    pass


def edit_key(text: str) -> str:
    """A short name for an edit's new text, whitespace aside: the analysis lists by it the mutants of a line
    after which a failing target still failed, and the search chooser tries a candidate of the same text last."""
    return hashlib.sha1(re.sub(r"\s+", "", text).encode("utf-8")).hexdigest()[:10]


def choose_lines(scored: Sequence[Tuple[str, int, float, int, int]], share: float, max_lines: int,
                 crash: Sequence[Tuple[str, int]] = ()) -> List[Tuple[str, int]]:
    """The lines to mutate of spectrum.ochiai's ranking: at least `share` of the best score, at most
    `max_lines`. The failing targets' traceback lines (`crash`) go first among equal scores and are never
    cut by `max_lines`: when one test alone runs a long stretch of code, every line of it ties."""
    best = scored[0][2] if scored else 0.0
    crashed = set(crash)
    eligible = sorted((s for s in scored if s[2] >= share * best), key=lambda s: (-s[2], (s[0], s[1]) not in crashed))
    first = [(s[0], s[1]) for s in eligible if (s[0], s[1]) in crashed][:max_lines]
    rest = [(s[0], s[1]) for s in eligible if (s[0], s[1]) not in crashed][:max_lines - len(first)]
    kept = set(first + rest)
    return [(s[0], s[1]) for s in eligible if (s[0], s[1]) in kept]


def functions_of(text: str) -> Tuple[List[Scope], List[Def]]:
    """Every function of `text`: its span and variables, and its name and span (empty when it does not parse)."""
    spans: List[Scope] = []
    outer: List[Def] = []
    try:
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
                bound: Dict[str, List[int]] = {}
                for n in ast.walk(node):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in params:
                        bound.setdefault(n.id, []).append(n.lineno)
                end = node.end_lineno or node.lineno
                spans.append((node.lineno, end, list(dict.fromkeys(params)), bound))
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                outer.append((node.name, node.lineno, end, first))
    except SyntaxError:
        pass
    return spans, outer


class DefContext(NamedTuple):
    """What a def of a module needs to compile apart as it does in the module (`def_source`)."""
    headers: Dict[int, str]   # each def not at the top level, by its first line: the block it compiles under
    flags: int                # the module's `from __future__` compiler flags
    imports: str              # one import statement binding the names the module's scope imports


def def_context(text: str) -> DefContext:
    """The module's DefContext, from one parse. A nested def compiles under its innermost class (private
    names mangled, `super()`'s cell as in the module) or a plain `if 1:` outside any class; the imports
    are never run: Python compiles a call of an imported module's function to another instruction, so
    the def must see the same names imported."""
    import __future__
    headers: Dict[int, str] = {}
    names: List[str] = []
    flags = 0

    def visit(node: ast.AST, cls: Optional[str], top: bool) -> None:
        nonlocal flags
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not top:
                    headers[min([d.lineno for d in child.decorator_list] + [child.lineno])] = (
                        "class %s:" % cls if cls else "if 1:")
                continue   # what a def holds is compiled with it
            if isinstance(child, (ast.Import, ast.ImportFrom)) and cls is None:   # the module's own scope
                names.extend((a.asname or a.name).split(".")[0] for a in child.names if a.name != "*")
                if isinstance(child, ast.ImportFrom) and child.module == "__future__" and top:
                    for alias in child.names:
                        flags |= getattr(getattr(__future__, alias.name, None), "compiler_flag", 0)
            if isinstance(child, ast.ClassDef):
                visit(child, child.name, False)
            elif isinstance(child, ast.stmt):
                visit(child, cls, False)
            else:
                visit(child, cls, top)

    try:
        visit(ast.parse(text), None, True)
    except SyntaxError:
        return DefContext({}, 0, "")
    return DefContext(headers, flags, "import " + ", ".join(dict.fromkeys(names)) if names else "")


def def_source(lines: Sequence[str], first: int, last: int, header: Optional[str], imports: str = "") -> str:
    """Lines `first` to `last` (a def, its decorators first) as a source of their own whose code keeps its
    line numbers: compiling one def instead of its whole module is what a mutant costs on a large file.
    `header`: its DefContext header, for a def not at the top level (then `first` is at least 2);
    `imports`: the DefContext's import line, put first when the lines before the def leave room for it."""
    body = "".join(lines[first - 1:last])
    pad = first - 1 if header is None else first - 2
    head = "" if header is None else header + "\n"
    if imports and pad >= 1:
        return imports + "\n" * pad + head + body
    return "\n" * pad + head + body


def variables(scopes: Sequence[Scope], line: int) -> List[str]:
    """The variables of the innermost function around `line`: its parameters, then the others bound
    nearest above `line` first (`level, nodes = group` just before `if nodes > levels`), then those bound
    only after it. Only the first MAX_NAMES become swaps, so in a long function the nearby ones count."""
    inner = [s for s in scopes if s[0] <= line <= s[1]]
    if not inner:
        return []
    _, _, params, bound = min(inner, key=lambda s: s[1] - s[0])
    def distance(name: str) -> Tuple[int, int]:
        above = [n for n in bound[name] if n <= line]
        return (0, line - max(above)) if above else (1, min(bound[name]))
    return params + sorted(bound, key=distance)


def line_mutants(text: str, names: Sequence[str], callables: Sequence[str], mutations: Mutations,
                 max_per_line: int, signatures: Optional[Dict[str, Tuple[str, ...]]] = None,
                 attributes: Sequence[str] = ()) -> List[Mutant]:
    """The mutants of one line (`text`, with its end of line; `names`: the variables of its function;
    `callables`: the functions its file defines or calls; `signatures`: their parameters) from the
    operator table (`mutations`: operators.analysis_mutations), in its order, at most `max_per_line`."""
    return [(new, what, family) for family, what, new in mutations(text, tuple(names[:MAX_NAMES]), tuple(callables),
                                                                   dict(signatures or {}), tuple(attributes))][:max_per_line]


def live_first(per_line: Sequence[Sequence[Any]], liveness: Callable[[int], Tuple[int, int]]) -> Iterator[Any]:
    """The mutants of every line: first the first of each line (in the lines' order), so a time limit
    never cuts all edits of the lines ranked last; then always the next one of the line whose mutants
    most often changed what a failing test showed, (changed + 1) / (tried + 2), the better-ranked line
    on a tie. That fraction is mutation-based fault localization's signal (Metallaxis-FL): a line the
    failing tests are blind to gets its remaining mutants only after the lines they react to.
    `liveness(i)`: (changed, tried) of line i so far (read at each step: the caller judges in between)."""
    queues = [list(x) for x in per_line]
    taken = [0] * len(queues)
    for i, q in enumerate(queues):
        if q:
            taken[i] = 1
            yield q[0]
    while True:
        best, best_key = -1, (-1.0, 0)
        for i, q in enumerate(queues):
            if taken[i] < len(q):
                changed, tried = liveness(i)
                key = ((changed + 1) / (tried + 2), -i)
                if key > best_key:
                    best, best_key = i, key
        if best < 0:
            return
        taken[best] += 1
        yield queues[best][taken[best] - 1]


def live_functions(mod: Any) -> List[Any]:
    """The functions a module defines, as its namespace holds them (methods, wrapped ones too)."""
    seen: Set[int] = set()
    out: List[Any] = []

    def add(obj: Any) -> None:
        while obj is not None and id(obj) not in seen:
            seen.add(id(obj))
            if isinstance(obj, (staticmethod, classmethod)):
                obj = obj.__func__
                continue
            if isinstance(obj, property):
                for f in (obj.fget, obj.fset, obj.fdel):
                    add(f)
                return
            if hasattr(obj, "__code__") and getattr(obj.__code__, "co_filename", None) == mod.__file__:
                out.append(obj)
            obj = getattr(obj, "__wrapped__", None)

    classes: Set[int] = set()

    def visit(obj: Any) -> None:
        if isinstance(obj, type) and getattr(obj, "__module__", None) == mod.__name__:
            if id(obj) not in classes:   # a class nested in another (`NpmSpec.Parser`) too
                classes.add(id(obj))
                for v in list(vars(obj).values()):
                    visit(v)
        else:
            add(obj)

    for obj in list(vars(mod).values()):
        visit(obj)
    return out


def at_import_lines(source: str) -> List[Tuple[bool, int]]:
    """The lines of a module that run when it is imported, as (inside a function, line): its statements and
    those of its classes' bodies (each line of a statement that spans several), but not a def's or class's
    own lines, an import or a docstring; and the bodies of its functions that those statements call by name
    (`_irregular('person', 'people')`, filling a table at import). Read from the source, not traced: a
    branch the import does not take is listed too."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    outside: List[int] = []
    called: List[str] = []

    def statements(body: Sequence[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Import, ast.ImportFrom)) or (
                    isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                continue
            if isinstance(node, ast.ClassDef):
                statements(node.body)
                continue
            if isinstance(node, ast.If) and "__main__" in ast.dump(node.test):
                statements(node.orelse)   # `if __name__ == "__main__":` runs its body as a script, not on import
                continue
            nested = [b for f in ("body", "orelse", "finalbody") for b in getattr(node, f, None) or []] + \
                [b for h in getattr(node, "handlers", None) or [] for b in h.body]
            if nested:   # `if`, `for`, `try`, `with` at module level: their own line(s), then their statements
                outside.extend(range(node.lineno, min(b.lineno for b in nested)))
                statements(nested)
                continue
            outside.extend(range(node.lineno, (node.end_lineno or node.lineno) + 1))
            called.extend(c.func.id for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name))

    statements(tree.body)
    inside = sorted({k for name in dict.fromkeys(called) if name in defs and defs[name].body
                     for k in range(defs[name].body[0].lineno, (defs[name].end_lineno or 0) + 1)})
    return [(True, k) for k in inside] + [(False, k) for k in sorted(set(outside))]


def clear_caches(caches: List[Any]) -> None:
    """Empty the caches the mutated code may have filled (`functools.cache` and the like). A holder whose
    `cache_clear` raises is no such cache (a project's own method of that name, wanting an argument): it
    is left out from then on, never an exception between a mutant's swap and its undo."""
    for holder in list(caches):
        try:
            holder.cache_clear()
        except Exception:
            caches.remove(holder)


def code_in(code: Any, name: str, first: int) -> Any:
    """The code object of function `name` starting at line `first` anywhere inside `code`, or None."""
    for c in code.co_consts:
        if hasattr(c, "co_consts"):
            if c.co_name == name and c.co_firstlineno == first:
                return c
            found = code_in(c, name, first)
            if found is not None:
                return found
    return None


def test_source(item: Any) -> str:
    """The code of a collected test function and of the functions of its module it calls (a helper
    `parse_error(text)` that holds the `pytest.raises`); '' when it has none to show."""
    import inspect

    def source(obj: Any) -> str:
        try:
            return inspect.getsource(obj)
        except (TypeError, OSError, IndentationError):
            return ""
    fn = getattr(item, "function", None) or getattr(item, "obj", None)
    text = source(fn)
    module = inspect.getmodule(fn) if text else None
    helpers = []
    for name in dict.fromkeys(re.findall(r"(?<![\w.])([A-Za-z_]\w*)\(", text)):
        obj = getattr(module, name, None)
        if inspect.isfunction(obj) and obj is not fn and inspect.getmodule(obj) is module:
            helpers.append(source(obj))
    return "\n".join([text] + helpers)


QUOTED = re.compile(r"'([^'\n]{1,40})'|\"([^\"\n]{1,40})\"")


def test_params(item: Any) -> Dict[str, Any]:
    """A collected test's parameters (its `parametrize` case), empty for a plain test or none."""
    return getattr(getattr(item, "callspec", None), "params", {}) or {}


def example_texts(items: Sequence[Any], sources: Sequence[str], messages: Sequence[str]) -> Tuple[List[str], List[str]]:
    """What the failing tests hold as text: their parameters and what their failure messages quote;
    and the code whose literals are their examples: their own and their class's (a test that loops
    over a table of examples)."""
    import inspect

    texts: List[str] = []
    code = list(sources)
    for item in items:
        texts += [v for v in test_params(item).values() if isinstance(v, str)]
        cls = getattr(item, "cls", None)
        if cls is not None:
            try:
                code.append(inspect.getsource(cls))
            except (TypeError, OSError, IndentationError):
                pass
    for message in messages:
        texts += [a or b for a, b in QUOTED.findall(message)]
    return texts, code


def line_ending(text: str) -> str:
    """The line's own end of line (a mutant keeps it), `\\n` when it has none."""
    return text[len(text.rstrip("\r\n")):] or "\n"


def _failure(longrepr: Any) -> str:
    crash = getattr(longrepr, "reprcrash", None)
    return "failed: " + (crash.message if crash is not None else str(longrepr)[-300:])[:300]


class Analysis:
    """One mutation analysis on the tree the spectrum's tests ran in."""

    def __init__(self, run: SpectrumRun, operators: Any) -> None:
        self.run = run
        self.operators = operators   # in_sandbox/operators.py, the one table of edits
        self.root = run.root
        self.m: Dict[str, Any] = run.args["mutation"]
        self.failing = sorted(t for t, o in run.outcomes.items() if o == "failed" and run.is_target(t))
        # the spectrum's passing tests (at most its max_others), the targets aside
        self.passing = sorted(t for t, o in run.outcomes.items() if o == "passed" and not run.is_target(t))
        self.fired = False      # the time limit of a run went off (pytest may have caught it as a failure)
        self.limit = self.m["per_mutant_s"]
        self.sources: Dict[str, str] = {}
        self.lines: Dict[str, List[str]] = {}   # each source split once, not once per mutant
        self.callables: Dict[str, Tuple[str, ...]] = {}
        self.unused: Dict[str, List[Tuple[int, int, List[str]]]] = {}   # path -> callables a function makes and never uses
        self.updates: Dict[str, List[Tuple[int, int, str, str]]] = {}   # path -> each function's steps (`pos -= 1`)
        self.unused_values: Dict[str, List[Tuple[int, int, int, str]]] = {}   # path -> values a function computes, never reads
        self.bounds: Dict[str, List[Tuple[int, int, int, str]]] = {}   # path -> values named after another (`last_day`)
        self.methods: Dict[str, Tuple[List[Any], Set[str]]] = {}   # path -> its methods' state changes, the module's names
        self.signatures: Dict[str, Dict[str, Tuple[str, ...]]] = {}
        self.attributes: Dict[str, Tuple[str, ...]] = {}   # path -> the attributes of `self` its code uses
        self.scopes: Dict[str, List[Scope]] = {}
        self.defs: Dict[str, List[Def]] = {}
        self.def_contexts: Dict[str, DefContext] = {}   # path -> how its defs compile apart
        self.apart_ok: Dict[Tuple[str, int], Optional[Tuple[int, int, Optional[str]]]] = {}   # (path, def's first line) -> apart()
        self.whole: Dict[str, Any] = {}   # path -> its original module compiled (to check a def compiles apart alike)
        self.not_loaded: Dict[str, int] = {}   # path -> how many modules were loaded when it was not among them
        self.module_of: Dict[str, Any] = {}   # path -> (its live module, its functions, the caches they and it hold)
        self.stats: Dict[Tuple[str, int], List[int]] = {}   # (path, line) -> [tried, changed, fixing]
        self.refuted: Dict[Tuple[str, int], List[str]] = {}   # (path, line) -> edit_key of mutants some target failed on
        self.baseline: Dict[str, str] = {}
        # read off the failing targets' first run: the exception they expect, and whether what they got
        # was an exception where a value was due (or none where one was)
        self.expects: Optional[str] = None
        self.message: Optional[str] = None   # the text the tests ask its message to hold (`match=`)
        self.raised_instead = False
        self.raises: Dict[str, Optional[str]] = {}   # path -> how a guard there raises the expected exception
        self.guard_contexts: Dict[Tuple[str, int, int], Any] = {}   # (path, a function's span) -> its GuardContext
        self.condition_of: Dict[Tuple[str, int, str], str] = {}   # (path, line, a guard's or a transform's what) -> its condition
        self.guarded: Set[Tuple[str, int]] = set()   # the lines with a guard before them
        self.first_reads: Dict[str, Dict[int, List[str]]] = {}   # path -> statement line -> variables it reads first
        self.markers: Dict[str, List[str]] = {}   # path -> its short text constants (a transform may drop one)
        self.else_sites: Dict[str, List[Tuple[int, int, str, List[str]]]] = {}   # path -> branch_edits.else_sites
        self.branch_points: Dict[str, List[Tuple[int, int, int]]] = {}   # path -> branch_edits.branch_points
        self.jump_sites: Dict[str, Dict[int, str]] = {}   # path -> branch_edits.jump_sites
        self.elif_sites: Dict[str, List[Any]] = {}   # path -> branch_edits.elif_sites
        self.frames: Dict[str, Dict[int, Any]] = {}   # path -> probe_edits.line_frames
        self.clones: Dict[str, Dict[Tuple[str, str], List[Tuple[int, str]]]] = {}   # path -> clone_edits.clone_index
        self.sort_keys: Dict[str, Any] = {}   # path -> order_edits.key_index
        self.default_slot: Dict[Tuple[str, int, str], Tuple[int, Any]] = {}   # a default's mutant -> its def's line, its slot
        self.example_chars: List[str] = []   # characters of the failing tests' texts a probed condition may look for
        self.example_words: List[str] = []   # and their input words it may compare with
        self.reach_order: Dict[Tuple[str, int], int] = {}   # ConditionTrace.order, once the conditions were traced
        self.example_calls: List[str] = []   # transforms the failing tests' examples show (`.replace('+', '.')`)
        # the goal text's own examples (examples.py): those that resolve once the tests are collected, and their names
        self.goal_examples = compiled_examples(self.m["examples"])
        self.goal_ns: Dict[str, Any] = {}
        self.goal_checked = 0   # fixes the goal's examples were evaluated on
        self.near: List[Tuple[Any, str]] = []   # inputs near the examples' (examples.variants): each compiled, its outcome as given
        self.result: Dict[str, Any] = {"lines": [], "fixes": [], "tried": 0, "cut": 0, "timed_out": 0, "stopped_early": 0,
                                       "guards_first": 0, "guards_dropped": 0, "transforms_dropped": 0,
                                       # where mutants went that did not run: the analysis's own account of itself
                                       "queued": 0, "not_compiling": 0, "deferred": 0, "lines_unread": 0, "lines_without_edits": 0,
                                       "errors": 0, "error": "", "workers": 1, "workers_lost": 0, "pairs": 0, "wider": 0, "at_import": 0,
                                       "examples": 0, "examples_held": 0, "near_inputs": 0}
        self.spent = {"compile_s": 0.0, "targets_s": 0.0, "check_s": 0.0, "conditions_s": 0.0}   # where the time went, so far
        self.deferred: List[Tuple[str, int, str, str, str, str, str]] = []   # mutants no live function holds
        self.started = 0.0
        self.stop_at = 0.0
        self.hard_stop = 0.0
        self.queued = 0         # mutants each_mutant will yield in this process
        self.pool = Pool()      # the processes that share the mutants
        self.max_mutants = int(self.m["max_mutants"])   # this process's share of them
        self.position: Dict[Tuple[str, int, str], Tuple[int, int, int]] = {}   # a mutant's round, then its place in its line's queue
        self.printed = 0.0      # when the result was last printed
        self.ranked: List[Tuple[str, int]] = []   # the spectrum's ranking of the writable lines (wider rounds)
        self.at_import: Set[Tuple[str, int]] = set()   # lines whose mutants are built by running their module again
        self.import_failed = False   # a module refused to run again as given: no more of that

    def chosen(self, ochiai: Callable[..., Any]) -> List[Tuple[str, int]]:
        writable = [re.compile(p) for p in self.m["writable"]]
        scored = ochiai(self.run.hits, self.failing, self.passing, lambda path: any(w.match(path) for w in writable))
        self.ranked = [(s[0], s[1]) for s in scored]
        lines = choose_lines(scored, self.m["share"], self.m["max_lines"], self.run.crash)
        return lines + self.diverging(lines, self.ranked)

    def diverging(self, chosen: List[Tuple[str, int]], ranked: List[Tuple[str, int]]) -> List[Tuple[str, int]]:
        """The conditions of the chosen lines' functions that went one way in every failing target and the
        other way in a passing test (the body skipped where the passing tests ran it, or run where they
        skipped it), best ranked first, at most MAX_DIVERGING: a wrong or negated condition. Every test
        runs its line, so the spectrum ranks it low when many passing tests run its function."""
        if not self.failing:
            return []
        rank = {line: i for i, line in enumerate(ranked)}
        hits = self.run.hits
        failing = [hits.get(t, set()) for t in self.failing]
        passing = [hits.get(t, set()) for t in self.passing]
        found: List[Tuple[str, int]] = []
        for path in dict.fromkeys(p for p, _ in chosen):
            try:
                self.load(path)
            except (OSError, UnicodeDecodeError):
                continue
            spans = [(first, last) for _, _, last, first in self.defs[path] if any(
                p == path and first <= line <= last for p, line in chosen)]
            for first, at, body in self.branch_points[path]:
                if (path, at) in chosen or not any(a <= at <= b for a, b in spans if a == first):
                    continue
                cond, into = (path, at), (path, body)
                if not all(cond in h for h in failing):
                    continue
                skipped = not any(into in h for h in failing) and any(into in h for h in passing)
                taken = all(into in h for h in failing) and any(cond in h and into not in h for h in passing)
                if skipped or taken:
                    found.append(cond)
        return sorted(found, key=lambda x: rank.get(x, len(rank)))[:MAX_DIVERGING]

    def found_clean(self) -> bool:
        """A fix of every target so far that broke nothing (or had nothing to be checked against)."""
        return any(f["fixed"] == f["of"] and not f["broken"] for f in self.result["fixes"])

    def whole_code(self, path: str) -> Any:
        """The module as given, compiled once (SyntaxError, ValueError as compile raises them)."""
        if path not in self.whole:
            self.load(path)
            self.whole[path] = compile(self.sources[path], os.path.join(self.root, path), "exec", dont_inherit=True)
        return self.whole[path]

    def wider(self, chosen: Sequence[Tuple[str, int]]) -> Iterator[List[Tuple[str, int]]]:
        """The next m["max_lines"] lines of the spectrum's ranking, round after round (at most m["rounds"]),
        while no mutant is a clean fix and at least m["wider_s"] of the analysis's time is left: an analysis
        that finished early with nothing has time for lines the spectrum ranked lower (a function every test
        calls, whose line the passing tests run too). Mutants of these lines come after every other."""
        done = set(chosen) | set(self.stats)
        rest = [key for key in self.ranked if key not in done]
        for k in range(int(self.m["rounds"])):
            if self.found_clean() or not rest or self.stop_at - time.monotonic() < self.m["wider_s"]:
                return
            lines, rest = rest[:int(self.m["max_lines"])], rest[int(self.m["max_lines"]):]
            self.result["wider"] = k + 1   # the round the mutants queued next are of (0: the chosen lines)
            yield [key for key in lines if key not in self.stats]

    def import_lines(self, chosen: Sequence[Tuple[str, int]]) -> List[Tuple[str, int]]:
        """When no mutant so far is a clean fix: the lines of the chosen lines' files that run when their
        module is imported and that no test ran (at_import_lines: a table a function fills at import, a
        module constant, a class attribute), which the spectrum therefore never ranks; at most
        m["max_lines"]. Their mutants are built by running the module again (reexec): `at_import` holds
        them and every line of the functions they are in."""
        if self.found_clean():
            return []
        ran = {key for hits in self.run.hits.values() for key in hits}
        found: List[Tuple[int, str, int]] = []
        for path in dict.fromkeys(p for p, _ in chosen):
            try:
                source = self.load(path)
            except (OSError, UnicodeDecodeError):
                continue
            for inside, n in at_import_lines(source):
                text = self.lines[path][n - 1].strip() if n <= len(self.lines[path]) else ""
                if text and not text.startswith(NOT_AT_IMPORT) and (path, n) not in ran and (path, n) not in self.stats:
                    found.append((not inside, path, n))
                    if inside:
                        self.at_import.update((path, k) for d in self.defs.get(path, []) if d[1] < n <= d[2]
                                              for k in range(d[1], d[2] + 1))
        lines = [(path, n) for _, path, n in sorted(found, key=lambda x: x[0])][:int(self.m["max_lines"])]
        self.at_import.update(lines)
        return lines

    def import_control(self, lines: Sequence[Tuple[str, int]], run_items: Callable[..., Dict[str, str]]) -> bool:
        """Whether the failing targets still fail once the modules of `lines` ran again as given. If running
        a module again turns one green by itself (state an earlier test left, an effect of import order),
        no mutant of the import round could be told from that: the round is not run."""
        for path in dict.fromkeys(p for p, _ in lines):
            try:
                undo = self.reexec(path, self.whole_code(path))
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                return False
            if undo is None:
                return False
            try:
                got = run_items(self.failing)
            finally:
                undo()
            if self.import_failed or any(got.get(t) == "passed" for t in self.failing):
                return False
        return True

    def reexec(self, path: str, code: Any) -> Optional[Callable[[], None]]:
        """Run the mutated module (`code`: the whole file compiled) again in the live module's namespace, so
        that what its import builds is built by the mutant, for the tests that read it through the module
        (their functions' globals are that namespace); `undo` runs the module as given again. None when the
        module is not loaded, the mutant's import raised or looped (then undone), or a module refused to run
        again as given (import_failed: the round ends)."""
        found = self.live_module(path)
        if found is None or self.import_failed:
            return None
        namespace, caches = vars(found[0]), found[2]
        original = self.whole_code(path)

        def run(code: Any) -> bool:
            def module() -> bool:
                exec(code, namespace)
                return True
            try:
                return bool(self.timed(module, False))
            except BaseException:   # `sys.exit()` at import too: never a mutant left in place
                return False

        def undo() -> None:
            if not run(original):
                self.import_failed = True
            clear_caches(caches)

        if not run(code):
            undo()
            return None
        clear_caches(caches)
        return undo

    def on_alarm(self, signum: int, frame: Any) -> None:
        self.fired = True   # pytest may catch it as the test's failure: the loops look at this too
        raise MutantTimeout()

    def timed(self, call: Callable[[], Any], on_timeout: Any) -> Any:
        """`call()` cut by the time a mutant's run may take (`on_timeout` is then its result): how the
        goal's examples and the inputs near them are evaluated."""
        self.fired = False
        signal.setitimer(signal.ITIMER_REAL, self.limit)
        try:
            return call()
        except MutantTimeout:
            return on_timeout
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def goal_outcomes(self) -> List[bool]:
        """Whether each of the goal's examples holds on the code as it is now (one that runs out of
        time does not)."""
        return [self.timed(lambda: e.check(self.goal_ns), None) is True for e in self.goal_examples]

    def on_goal(self, fix: Dict[str, Any]) -> None:
        """The goal's examples, and the inputs near them, on a fix of every target while it is in the
        live functions (for at most as many fixes as are checked; the time counts as checking)."""
        if not self.goal_examples or self.goal_checked >= self.m["max_checked"]:
            return
        t0 = time.monotonic()
        fix["examples"] = sum(self.goal_outcomes())
        fix["deviation"] = self.goal_deviation()
        self.goal_checked += 1
        self.spent["check_s"] += time.monotonic() - t0

    def goal_deviation(self) -> int:
        """On how many inputs near the goal's examples the code as it is now does otherwise than the code
        as given: a fix that changes less beyond what the report asks is the likelier one."""
        return sum(self.timed(lambda: outcome(code, self.goal_ns), UNFINISHED) != before for code, before in self.near)

    def resolve_examples(self, test_modules: Sequence[Any], paths: Sequence[str]) -> None:
        """The names the goal's examples are evaluated in, and of the examples only those that resolve
        there on the code as it is (one that names what neither the tests nor the project modules have
        is dropped); counted in the result with how many already hold."""
        modules = [found[0] for found in (self.live_module(p) for p in dict.fromkeys(paths)) if found is not None]
        self.goal_ns = example_namespace([m for m in test_modules if m is not None], modules)
        held = {e: self.timed(lambda: e.check(self.goal_ns), None) for e in self.goal_examples}
        self.goal_examples = [e for e in self.goal_examples if held[e] is not None]
        self.result.update(examples=len(self.goal_examples), examples_held=sum(held[e] is True for e in self.goal_examples))
        for text in [v for e in self.goal_examples for v in variants(e.expr)][:MAX_VARIANTS]:
            code = compile(text, "<example>", "eval")
            before = self.timed(lambda: outcome(code, self.goal_ns), None)
            if before is not None:
                self.near.append((code, before))
        self.result["near_inputs"] = len(self.near)

    def fresh_run(self, nodeids: Sequence[str]) -> Dict[str, str]:
        """A new pytest session on the repository's modules imported again (from the files as they are now)."""
        import pytest

        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None) or ""
            if f and os.path.realpath(f).startswith(self.run.roots):
                del sys.modules[name]
        res: Dict[str, str] = {}
        analysis = self

        class Grab:
            @pytest.hookimpl(tryfirst=True)
            def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Optional[bool]:
                return True if analysis.fired else None   # the mutant looped: the tests after it are not run

            def pytest_runtest_logreport(self, report: Any) -> None:
                if report.failed:
                    res[report.nodeid] = _failure(report.longrepr)
                elif report.when == "call" and report.passed:
                    res.setdefault(report.nodeid, "passed")

        self.fired = False
        signal.setitimer(signal.ITIMER_REAL, self.limit)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                pytest.main(["-q", "-p", "no:cacheprovider", "--maxfail=0", "--tb=line", f"--rootdir={self.root}", *nodeids], plugins=[Grab()])
        except MutantTimeout:
            pass
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return {t: res.get(t, UNFINISHED) for t in nodeids}

    def live_module(self, path: str) -> Any:
        """Looked up once per file (realpath over every module is slow), again only if it was reimported;
        not found, again only once more modules are loaded. The module may come from the copy the tests
        run in or from the working tree itself (a project installed in development mode imports from
        there): it is the same file either way."""
        found = self.module_of.get(path)
        if found is None and self.not_loaded.get(path) == len(sys.modules):
            return None
        if found is None or sys.modules.get(found[0].__name__) is not found[0]:
            fulls = {os.path.realpath(os.path.join(r, path)) for r in self.run.roots}
            mod = next((x for x in list(sys.modules.values())
                        if os.path.realpath(getattr(x, "__file__", None) or "/nonexistent") in fulls), None)
            if mod is None:
                self.not_loaded[path] = len(sys.modules)
                return None
            fns = live_functions(mod)
            caches = [h for x in fns for h in (x, getattr(x, "__self__", None)) if hasattr(h, "cache_clear")]
            caches += [v for v in list(vars(mod).values()) if callable(getattr(v, "cache_clear", None))]
            found = self.module_of[path] = (mod, fns, caches)
        return found

    def swap(self, path: str, code: Any, line: int) -> Optional[Callable[[], None]]:
        """Put the mutant (`code`: the mutated module, compiled) into the live function around `line`
        (its outermost def) instead of importing the repository again: `undo` puts the original back;
        None when that cannot be done."""
        found = self.live_module(path)
        outer = [d for d in self.defs.get(path, []) if d[1] <= line <= d[2]]
        if found is None or not outer:
            return None
        mod, functions, caches = found
        name, start, end, first = min(outer, key=lambda d: d[1])
        fns = [f for f in functions if f.__code__.co_name == name and f.__code__.co_firstlineno == first]
        new = code_in(code, name, first)
        if len(fns) != 1 or new is None or new.co_freevars != fns[0].__code__.co_freevars:
            return None
        fn, old = fns[0], fns[0].__code__

        def undo() -> None:
            fn.__code__ = old
            clear_caches(caches)

        fn.__code__ = new
        clear_caches(caches)
        return undo

    def load(self, path: str) -> str:
        if path not in self.sources:
            with open(os.path.join(self.root, path), encoding="utf-8") as fh:
                text = fh.read()
            self.sources[path] = text
            self.lines[path] = self.operators.source_lines(text)
            numbered = dict(enumerate(self.operators.source_lines(text, ends=False), 1))
            self.callables[path] = self.operators.callable_names(numbered)
            self.unused[path] = self.operators.unused_callables(text)
            self.signatures[path] = self.operators.signatures_of(numbered)
            self.attributes[path] = self.operators.attribute_names(numbered)
            self.scopes[path], self.defs[path] = functions_of(text)
            self.def_contexts[path] = def_context(text)
            self.first_reads[path] = self.operators.transforms.first_reads(text)
            self.updates[path] = self.operators.transforms.updates(text)
            self.unused_values[path] = self.operators.transforms.unused_values(text)
            self.bounds[path] = self.operators.transforms.named_bounds(text)
            self.methods[path] = self.operators.effects.methods(text)
            self.markers[path] = self.operators.transforms.module_markers(text)
            self.else_sites[path] = self.operators.branches.else_sites(text)
            self.branch_points[path] = self.operators.branches.branch_points(text)
            self.jump_sites[path] = self.operators.branches.jump_sites(text)
            self.elif_sites[path] = self.operators.branches.elif_sites(text)
            self.frames[path] = self.operators.probes.line_frames(text)
            self.clones[path] = self.operators.clones.clone_index(text)
            self.sort_keys[path] = self.operators.orders.key_index(text)
        return self.sources[path]

    def mutants(self, path: str, line: int) -> List[Mutant]:
        self.load(path)
        text = self.lines[path][line - 1]
        # an enclosing function's callable it never uses: a name of the line's scope, and one it may call
        unused = [n for first, last, made in self.unused[path] if first <= line <= last for n in made]
        names = list(dict.fromkeys(unused + variables(self.scopes[path], line)))
        muts = line_mutants(text, names, self.callables[path] + tuple(unused), self.operators.analysis_mutations,
                            self.m["max_per_line"], self.signatures[path], self.attributes[path])
        # the line as its clones have it, separators a test run can tell apart, and a sort's key or
        # order, before the broad edits (any variable, deletions)
        seen = {mut[0] for mut in muts}
        orders = self.operators.orders
        extra = self.operators.clones.clone_edits(self.lines[path], line, self.clones[path]) + \
            self.operators.literal_swaps(text, tuple(self.example_chars)) + \
            orders.order_edits(text, orders.keys_at(self.sort_keys[path], line))
        seps = [(new, what, family) for family, what, new in extra if new not in seen]
        cut = next((k for k, mut in enumerate(muts) if mut[2] in self.operators.LAST_IN_ANALYSIS), len(muts))
        muts = (muts[:cut] + seps + muts[cut:])[:self.m["max_per_line"]]
        guards = self.guards(path, line, text, names) + self.transforms(path, line, text) + self.effects(path, line, text) + \
            self.branches(path, line, text)
        if self.raised_instead:
            # an exception where a value was expected, or none where one was: a missing check is as
            # likely as a wrong token, so the guards alternate with the line's own edits
            mixed = [m for pair in zip(guards, muts) for m in pair]
            n = min(len(guards), len(muts))
            return mixed + guards[n:] + muts[n:]
        # the guards after the edits of the line's own tokens, before the broad ones (any variable, deletions)
        at = next((k for k, mut in enumerate(muts) if mut[2] in self.operators.LAST_IN_ANALYSIS), len(muts))
        return muts[:at] + guards + muts[at:]

    def guards(self, path: str, line: int, text: str, names: Sequence[str]) -> List[Mutant]:
        """The guards the operator table offers before the line, raising the exception the failing
        tests expected (read off their failures), or returning the function's neutral value."""
        inner = [s for s in self.scopes[path] if s[0] < line <= s[1]]
        if not inner:
            return []
        start, end, params = min(inner, key=lambda s: s[1] - s[0])[:3]
        guards, probing = self.operators.guards, self.operators.probes
        if path not in self.raises:
            self.raises[path] = guards.raise_statement(self.expects, self.lines[path], self.message) if self.expects else None
        ctx = self.guard_contexts.get((path, start, end))
        if ctx is None:
            ctx = self.guard_contexts[(path, start, end)] = guards.GuardContext(
                self.raises[path], guards.neutral_returns(self.lines[path][start - 1:end]))
        ending = line_ending(text)
        out: List[Mutant] = []
        frame = self.frames[path].get(line)
        conditions = guards.guard_conditions(text, tuple(names[:MAX_NAMES]), ctx)
        probes = [c for c in probing.probe_conditions(text, tuple(names[:MAX_NAMES]), frame, self.example_chars, self.example_words)
                  if c not in conditions] if frame is not None else []
        bodies = guards.guard_bodies(ctx)
        extra = [b for b in probing.frame_bodies(ctx, frame, params) if b not in bodies]
        # a probe and its negation (`':' not in text`), evaluated once: the negation holds where it did not
        # each condition as written, and as the trace evaluates it: a probe's negation is its probe's
        # evaluation read the other way (NEGATED)
        negations = probing.negations(probes)
        written = [(c, c, False) for c in conditions] + [pair for p in probes for pair in (
            [(p, p, True)] + ([(negations[p], NEGATED + p, True)] if p in negations else []))]
        for cond, evaluated, probed in written:
            for body in bodies + extra:
                family, what, new = guards.guard_edit(text, cond, body)
                self.condition_of[(path, line, what)] = evaluated
                if probed or body in extra:
                    family = GUESSED   # run only where its condition picks the failing tests out (by_conditions)
                self.guarded.add((path, line))
                out.append((new + ending, what, family))
        for cond in probing.after_conditions(text, frame, self.example_chars) if frame is not None else []:
            for body in bodies + extra:
                _, what, new = probing.after_edit(text, cond, body)
                family = GUESSED
                self.condition_of[(path, line, what)] = AFTER + cond
                self.guarded.add((path, line))
                out.append((new + ending, what, family))
        return out

    def transforms(self, path: str, line: int, text: str) -> List[Mutant]:
        """A text variable transformed before the statement that first reads it (in_sandbox/transform_edits.py):
        normalized, or changed as the failing tests' examples or the module's markers show. Each is
        tried only where its variable held a text when the failing targets ran the line (its condition).
        Then a step the function takes elsewhere (`pos -= 1`) before that statement."""
        names = [n for n in self.first_reads[path].get(line, ()) if n not in ("self", "cls")]
        if not names:
            return []
        edits = self.operators.transforms
        calls = list(dict.fromkeys(list(edits.PLAIN) + self.example_calls + edits.constant_transforms(self.markers[path])))
        ending = line_ending(text)
        out: List[Mutant] = []
        for name in names:
            for family, what, new in edits.transform_edits(text, [name], calls):
                self.condition_of[(path, line, what)] = "isinstance(%s, str)" % name
                out.append((new + ending, what, family))
        out += [(new + ending, what, family) for family, what, new in edits.update_edits(text, names, self.updates[path], line)]
        out += [(new + ending, what, family) for family, what, new in edits.clamp_edits(text, names, self.unused_values[path], line,
                                                                                               self.bounds[path])]
        return out

    def effects(self, path: str, line: int, text: str) -> List[Mutant]:
        """A state change a sibling method makes, before a `return` of a method that lacks it
        (in_sandbox/effect_edits.py)."""
        methods, known = self.methods[path]
        return [(new + line_ending(text), what, family)
                for family, what, new in self.operators.effects.effect_edits(text, line, methods, known)]

    def branches(self, path: str, line: int, text: str) -> List[Mutant]:
        """The `else` arms after each `if` body that ends at the line (in_sandbox/branch_edits.py; an `if`
        nested last in another ends where it does), and the sibling cases after an arm of a chain."""
        branches = self.operators.branches
        edits = [branches.else_edit(text, indent, arm)
                 for _, end, indent, arms in self.else_sites[path] if end == line for arm in arms]
        edits += [branches.elif_edit(text, indent, body, condition, statement)
                  for _, _, end, indent, body, arms in self.elif_sites[path] if end == line for condition, statement in arms]
        if line in self.jump_sites[path]:
            edits.append(self.operators.branches.jump_edit(text, self.jump_sites[path][line]))
        return [(new + line_ending(text), what, family) for family, what, new in edits]

    def judge(self, path: str, line: int, new_text: str, what: str, family: str, got: Dict[str, str],
              check: Callable[[List[str]], Dict[str, str]], live: bool = True) -> None:
        """Count one mutant's result on the failing targets; `check` runs the passing tests on it. `live`:
        the mutant is in the live functions (not only in the file a fresh session imports), so the goal's
        examples evaluated here run it."""
        result = self.result
        st = self.stats.setdefault((path, line), [0, 0, 0])
        st[0] += 1
        result["tried"] += 1
        passed = sum(v == "passed" for v in got.values())
        st[1] += any(got.get(t) != self.baseline.get(t) for t in self.failing)
        # a target that ran to its end and failed: this edit alone is no fix (one cut by its time limit may be)
        if not self.fired and any(got.get(t, "passed") not in ("passed", UNFINISHED) for t in self.failing):
            self.refuted.setdefault((path, line), []).append(edit_key(new_text))
        if passed:
            fix = self.new_fix(path=path, line=line, text=new_text.rstrip("\n"), what=what, family=family, fixed=passed,
                               tokens_added=len(TOKEN.findall(new_text)) - len(TOKEN.findall(self.lines[path][line - 1])),
                               reached=self.reach_order.get((path, line)) if family in ("guard", GUESSED, "transform") else None)
            if passed < len(self.failing):   # a partial fix: which targets, for a pair that turns them all green
                fix["fixed_targets"] = [i for i, t in enumerate(self.failing) if got.get(t) == "passed"]
            if passed == len(self.failing):
                st[2] += 1
                if live:
                    self.on_goal(fix)
                if self.passing and sum(f["checked"] > 0 for f in result["fixes"]) < self.m["max_checked"]:
                    fix.update(self.checked(path, check))
            result["fixes"].append(fix)
        if time.monotonic() - self.printed > self.m["snapshot_s"]:
            self.print_result(finished=False)

    def new_fix(self, **fields: Any) -> Dict[str, Any]:
        """A fix's record (hints/mutation.py's MutantFix, as JSON): `fields` over what a fix not yet
        checked against the passing tests has."""
        return {"of": len(self.failing), "broken": None, "checked": 0, "reached": None, **fields}

    def checked(self, path: str, check: Callable[[List[str]], Dict[str, str]]) -> Dict[str, Any]:
        """A fix of every failing target run again with the passing tests, all recorded: how many it was
        checked against, how many it broke, and what it did on them (its behaviour)."""
        t0 = time.monotonic()
        with Recorder(path) as recorder:
            ran = check(self.failing + self.passing)
        self.spent["check_s"] += time.monotonic() - t0
        others = {t: v for t, v in ran.items() if t not in self.failing}
        return {"checked": len(others), "broken": sum(v != "passed" for v in others.values()),
                "behaviour": recorder.digest(ran)}

    def share(self, first: List[Tuple[str, int, Mutant]], per_line: List[List[Tuple[str, int, Mutant]]]
              ) -> Tuple[List[Tuple[str, int, Mutant]], List[List[Tuple[str, int, Mutant]]]]:
        """This process's share of the mutants, once enough are queued and the sandbox has CPUs for more
        processes than one (m["workers"] at most): every n-th of each line's queue, so each process
        still runs the first edits of every line first. A child starts counting from nothing."""
        round_ = self.result["wider"]
        for j, (path, line, mut) in enumerate(first):
            self.position[(path, line, mut[1])] = (round_, -1, j)
        for i, queue in enumerate(per_line):
            for j, (path, line, mut) in enumerate(queue):
                self.position.setdefault((path, line, mut[1]), (round_, j, i))
        new = len(first) + sum(len(q) for q in per_line)
        n = min(int(self.m["workers"]), available_cpus()) if new >= MIN_SHARED else 1
        k = self.pool.split(n)
        n = self.pool.count
        self.result["workers"] = max(self.result["workers"], n)
        if self.pool.is_child:
            self.result.update({key: 0 for key in SHARED_COUNTS}, fixes=[], error="")
            self.spent.update({key: 0.0 for key in SHARED_TIMES})
            self.stats = {key: [0, 0, 0] for key in self.stats}
            self.refuted, self.deferred = {}, []
        # this process's share, counted on from the mutants it ran in the rounds before
        self.max_mutants = self.result["tried"] + self.m["max_mutants"] // n + (k < self.m["max_mutants"] % n)
        first, per_line = first[k::n], [q[k::n] for q in per_line]
        self.queued = self.result["tried"] + len(first) + sum(len(q) for q in per_line)   # for its pace (short_of_time)
        return first, per_line

    def join(self) -> None:
        """After this process's share: a child sends what it found and ends; the parent adds in what
        each child sent (a child that sent nothing by the deadline counts as `workers_lost`)."""
        if self.pool.is_child:
            self.pool.send({"counts": {k: self.result[k] for k in SHARED_COUNTS}, "fixes": self.result["fixes"],
                            "spent": {k: self.spent[k] for k in SHARED_TIMES}, "error": self.result["error"],
                            "stats": [[p, n, v] for (p, n), v in self.stats.items()],
                            "refuted": [[p, n, v] for (p, n), v in self.refuted.items()], "deferred": self.deferred})
        if not self.pool.children:
            return
        # a child's mutant in flight at stop_at may take its time limit, and its check five times that
        for got in self.pool.gather(self.stop_at + 6 * self.m["per_mutant_s"]):
            if got is None:
                self.result["workers_lost"] += 1
                continue
            for key in SHARED_COUNTS:
                self.result[key] += got["counts"][key]
            for key in SHARED_TIMES:
                self.spent[key] += got["spent"][key]
            self.result["error"] = self.result["error"] or got["error"]
            self.result["fixes"].extend(got["fixes"])
            for p, n, v in got["stats"]:
                st = self.stats.setdefault((p, n), [0, 0, 0])
                st[:] = [a + b for a, b in zip(st, v)]
            for p, n, v in got["refuted"]:
                self.refuted.setdefault((p, n), []).extend(v)
            self.deferred.extend(tuple(d) for d in got["deferred"])   # type: ignore[misc]
        # a line's fixes in its queue's order, as one process would have found them
        self.result["fixes"].sort(key=lambda f: self.position.get((f["path"], f["line"], f["what"]), (0, 0, 0)))

    def try_pairs(self, run_items: Callable[..., Dict[str, str]]) -> None:
        """Two one-line partial fixes of one file whose green targets together are all the failing ones,
        run as one mutant (a bug in two places: each edit alone fixes what goes through its line),
        after the others, for at most m["pairs_s"] past the analysis's limit. A clean pair is one fix:
        the block from its first line to its second."""
        n = len(self.failing)
        until = min(self.stop_at + self.m["pairs_s"], self.hard_stop)
        partial = [f for f in self.result["fixes"] if 0 < f["fixed"] < n and f.get("fixed_targets")
                   and "\n" not in f["text"] and (f["path"], f["line"], f["what"]) not in self.default_slot]
        for a, b in itertools.combinations(partial, 2):
            if self.result["pairs"] >= self.m["max_pairs"] or time.monotonic() > until:
                return
            if a["path"] != b["path"] or a["line"] == b["line"] or \
                    set(a["fixed_targets"]) | set(b["fixed_targets"]) != set(range(n)):
                continue
            a, b = sorted((a, b), key=lambda f: f["line"])
            self.result["pairs"] += 1
            self.judge_pair(a, b, run_items)

    def judge_pair(self, a: Dict[str, Any], b: Dict[str, Any], run_items: Callable[..., Dict[str, str]]) -> None:
        path, lines_of = a["path"], self.lines[a["path"]]
        mutated = list(lines_of)
        for f in (a, b):
            mutated[f["line"] - 1] = f["text"] + line_ending(lines_of[f["line"] - 1])
        code = self.compiled(path, "".join(mutated))
        if code is None:
            return
        undos: List[Callable[[], None]] = []
        outers: List[Any] = []
        try:
            for line in (a["line"], b["line"]):
                outer = min((d for d in self.defs.get(path, []) if d[1] <= line <= d[2]), key=lambda d: d[1], default=None)
                if outer is None:
                    return   # a line no def holds: only a fresh import would run it
                if outer in outers:
                    continue
                outers.append(outer)
                undo = self.swap(path, code, line)
                if undo is None:
                    return
                undos.append(undo)
            got = run_items(self.failing)
            if any(got.get(t) != "passed" for t in self.failing):
                return
            fix = self.new_fix(path=path, line=a["line"], span=b["line"] - a["line"] + 1, family=PAIR,
                               text="".join(mutated[a["line"] - 1:b["line"]]).rstrip("\r\n"), what="%s; %s" % (a["what"], b["what"]),
                               fixed=len(self.failing), tokens_added=a.get("tokens_added", 0) + b.get("tokens_added", 0))
            self.on_goal(fix)
            if self.passing:
                fix.update(self.checked(path, lambda ids: run_items(ids, self.m["per_mutant_s"] * 5)))
            self.result["fixes"].append(fix)
        finally:
            for undo in reversed(undos):
                undo()

    def note_error(self, exc: BaseException) -> None:
        """Count an exception of the analysis's own code (a test's is a failing outcome, never this one),
        and keep where the first happened: its type and the innermost frame of this program (no value,
        no text of the project's: the result is read by people who must not see a held-out project)."""
        self.result["errors"] += 1
        if not self.result["error"]:
            # shipped, this program's modules are compiled as `<ra_mutants>`; imported, they are files
            home = os.path.dirname(Analysis.note_error.__code__.co_filename)
            tb, where = exc.__traceback__, ""
            while tb is not None:
                name = tb.tb_frame.f_code.co_filename
                if name.startswith("<ra_") or (home and os.path.dirname(name) == home):
                    where = f" at {name.strip('<>')[3:] if name.startswith('<') else os.path.basename(name)[:-3]}.py:{tb.tb_lineno}"
                tb = tb.tb_next
            kind = type(exc)
            # a builtin's or pytest's name; a class of the project's own is not named
            ours = kind.__module__ == "builtins" or kind.__module__.split(".")[0] in ("_pytest", "pytest", "pluggy")
            self.result["error"] = (kind.__name__ if ours else "an exception of the project's") + where

    def print_result(self, finished: bool) -> None:
        """The result so far (`finished`: the whole of it) on one line after MARKER (by the parent only)."""
        self.printed = time.monotonic()
        if self.pool.is_child:
            return
        self.result["lines"] = [{"path": p, "line": n, "tried": v[0], "changed": v[1], "fixing": v[2],
                                 "refuted": self.refuted.get((p, n), [])} for (p, n), v in self.stats.items()]
        self.result["duration_s"] = round(time.monotonic() - self.started, 3)
        self.result.update({k: round(v, 6) for k, v in self.spent.items()})   # a check of a few tiny tests takes under a millisecond
        self.result["finished"] = finished
        out = sys.__stdout__ or sys.stdout   # the real one, also while a test's output is being caught
        out.write("\n" + MARKER + json.dumps(self.result) + "\n")
        out.flush()

    def each_mutant(self, chosen: Sequence[Tuple[str, int]],
                    trace: Optional[Callable[["ConditionTrace"], None]] = None) -> Iterator[Tuple[str, int, str, str, str, str, str]]:
        """Every mutant of the chosen lines, in live_first's order, after the guards whose condition
        held exactly where the tests need it (`trace` runs the tests under a ConditionTrace)."""
        per_line, keys = [], []
        for path, line in chosen:
            try:
                self.load(path)
                muts = self.mutants(path, line)
            except (OSError, UnicodeDecodeError, IndexError):
                self.result["lines_unread"] += 1
                continue
            self.result["lines_without_edits"] += not muts
            self.stats.setdefault((path, line), [0, 0, 0])
            per_line.append([(path, line, m) for m in muts])
            keys.append((path, line))
            # an `if` that ran and whose body did not (the case the failing tests need has no arm):
            # the `else` arms after its body, as a line of their own
            # a chain of cases that ran: the sibling cases after each of its arms, the same way
            ends = [end for at, end, _, _ in self.else_sites[path] if at == line] + \
                [end for first, last, end, _, _, _ in self.elif_sites[path] if first <= line <= last]
            for end in ends:
                if (path, end) not in chosen and (path, end) not in self.stats:
                    self.stats.setdefault((path, end), [0, 0, 0])
                    per_line.append([(path, end, m) for m in self.branches(path, end, self.lines[path][end - 1])])
                    keys.append((path, end))
        for (path, line), muts in self.default_lines(chosen).items():
            if (path, line) not in self.stats:
                self.stats.setdefault((path, line), [0, 0, 0])
                per_line.append([(path, line, m) for m in muts])
                keys.append((path, line))
        first: List[Tuple[str, int, Mutant]] = []
        if trace is not None and self.condition_of:
            first, per_line = self.by_conditions(per_line, trace)
        else:
            per_line = [[x for x in q if x[2][2] != GUESSED] for q in per_line]

        self.result["queued"] += len(first) + sum(len(q) for q in per_line)
        first, per_line = self.share(first, per_line)

        def liveness(i: int) -> Tuple[int, int]:
            tried, changed, _ = self.stats[keys[i]]
            return changed, tried
        for path, line, (new_text, what, family) in itertools.chain(first, live_first(per_line, liveness)):
            original, lines_of = self.sources[path], self.lines[path]
            yield path, line, original, "".join(lines_of[:line - 1] + [new_text] + lines_of[line:]), new_text, what, family

    def default_lines(self, chosen: Sequence[Tuple[str, int]]) -> Dict[Tuple[str, int], List[Mutant]]:
        """The defaults of the functions around the chosen lines (at most MAX_DEFAULT_FUNCTIONS, in the
        lines' order), edited (default_edits.py), by the line each is on."""
        out: Dict[Tuple[str, int], List[Mutant]] = {}
        seen: List[Tuple[str, int]] = []
        for path, line in chosen:
            around = [d for d in self.defs.get(path, []) if d[1] < line <= d[2]]
            if not around:
                continue
            def_line = max(around, key=lambda d: d[1])[1]
            if (path, def_line) in seen or len(seen) >= MAX_DEFAULT_FUNCTIONS:
                continue
            seen.append((path, def_line))
            for n, new, what, family, slot in self.operators.defaults.default_mutants(self.sources[path], def_line):
                self.default_slot[(path, n, what)] = (def_line, slot)
                out.setdefault((path, n), []).append((new, what, family))
        return out

    def swap_default(self, path: str, def_line: int, slot: Any) -> Optional[Callable[[], None]]:
        """Put an edited default into the live function whose `def` is on `def_line` (its __defaults__ or
        __kwdefaults__): `undo` puts the original back; None when the module does not hold the function
        (one nested in another: swapping the outer one's code makes its defaults anew)."""
        found = self.live_module(path)
        d = next((d for d in self.defs.get(path, []) if d[1] == def_line), None)
        if found is None or d is None:
            return None
        fns = [f for f in found[1] if f.__code__.co_name == d[0] and f.__code__.co_firstlineno == d[3]]
        if len(fns) != 1:
            return None
        fn, caches = fns[0], found[2]
        old = (fn.__defaults__, fn.__kwdefaults__)

        def put(values: Tuple[Any, Any]) -> None:
            fn.__defaults__, fn.__kwdefaults__ = values
            clear_caches(caches)

        put(self.operators.defaults.with_default(old[0], old[1], slot))
        return lambda: put(old)

    def by_conditions(self, per_line: List[List[Tuple[str, int, Mutant]]], trace: Callable[["ConditionTrace"], None]
                      ) -> Tuple[List[Tuple[str, int, Mutant]], List[List[Tuple[str, int, Mutant]]]]:
        """The guards to run first, and every line's other mutants. A guard changes what a test does only
        where its condition holds at its line, so the conditions are evaluated there in one traced run of
        the tests, before any guard runs (an angelic condition, as in SemFix and Nopol). First: the guards
        whose condition held in every failing target and in no passing test. Dropped: those whose
        condition never held where the failing targets reached their line (they cannot change them)."""
        t0 = time.monotonic()
        at: Dict[str, Dict[int, List[Condition]]] = {}
        after: Dict[str, Dict[int, List[Condition]]] = {}
        lines = {(path, line) for muts in per_line for path, line, _ in muts}   # this round's
        for path, line, cond in sorted({(p, n, c[len(NEGATED):] if c.startswith(NEGATED) else c)
                                        for (p, n, _), c in self.condition_of.items() if (p, n) in lines}):
            try:
                code, table = compile_condition(cond[len(AFTER):] if cond.startswith(AFTER) else cond)
            except SyntaxError:
                continue
            for root in self.run.roots:
                (after if cond.startswith(AFTER) else at).setdefault(os.path.realpath(os.path.join(root, path)), {}) \
                    .setdefault(line, []).append(((path, line, cond), code, table))
        traced = ConditionTrace(at, after)
        trace(traced)
        self.reach_order = {**traced.order, **self.reach_order}   # an earlier round's lines keep theirs
        self.spent["conditions_s"] += time.monotonic() - t0
        failing = set(self.failing)
        first: List[Tuple[str, int, Mutant]] = []
        rest: List[List[Tuple[str, int, Mutant]]] = []
        for muts in per_line:
            kept = []
            last: List[Tuple[str, int, Mutant]] = []   # speculative guards that picked the failing tests out
            for path, line, mut in muts:
                guard = self.condition_of.get((path, line, mut[1])) if mut[2] in ("guard", GUESSED, "transform") else None
                held = set() if guard is None else (traced.unheld.get((path, line, guard[len(NEGATED):]), set())
                                                    if guard.startswith(NEGATED) else traced.held.get((path, line, guard), set()))
                picks_out = mut[2] in ("guard", GUESSED) and failing and held >= failing and "" not in held
                if mut[2] == GUESSED:
                    # a probed condition tells the failing tests apart only where passing tests ran the line
                    # too (else every condition that held would pass); even then it is a guess among many,
                    # so it waits behind the line's other edits
                    if picks_out and "" in traced.reached.get((path, line), set()) and len(last) < MAX_SPECULATIVE:
                        last.append((path, line, mut))
                    else:
                        self.result["guards_dropped"] += 1
                elif picks_out:
                    first.append((path, line, mut))
                elif guard is not None and traced.reached.get((path, line)) and not held & failing:
                    self.result["transforms_dropped" if mut[2] == "transform" else "guards_dropped"] += 1
                else:
                    kept.append((path, line, mut))
            rest.append(kept + last)
        self.result["guards_first"] += len(first)
        return first, rest

    def compiled(self, path: str, mutated: str, line: Optional[int] = None) -> Any:
        """The mutated module compiled (once: it then goes into swap()), None when it does not compile.
        Only mutants that will run are compiled, and of a mutant of `line` only the outermost def around
        it, when that def compiles apart as it is (on a large module, a whole compile was most of a
        mutant's cost; swap() takes only that def's code)."""
        t0 = time.monotonic()
        filename = os.path.join(self.root, path)
        try:
            apart = self.apart(path, line) if line is not None else None
            if apart is None:
                return compile(mutated, filename, "exec", dont_inherit=True)   # its own __future__ flags, not this file's
            first, last, header = apart
            lines = self.operators.source_lines(mutated)
            last += len(lines) - len(self.lines[path])   # an edit inside the def may add or remove lines
            context = self.def_contexts[path]
            return compile(def_source(lines, first, last, header, context.imports), filename, "exec",
                           flags=context.flags, dont_inherit=True)
        except (SyntaxError, ValueError):
            return None
        finally:
            self.spent["compile_s"] += time.monotonic() - t0

    def apart(self, path: str, line: int) -> Optional[Tuple[int, int, Optional[str]]]:
        """The outermost def around `line` as def_source takes it (its first and last line, its header),
        when the original def compiles apart to the very code the whole module has for it; else None."""
        outer = [d for d in self.defs.get(path, []) if d[1] <= line <= d[2]]
        if not outer:
            return None
        name, _, last, first = min(outer, key=lambda d: d[1])
        key = (path, first)
        if key not in self.apart_ok:
            context = self.def_contexts[path]
            header = context.headers.get(first)
            ok = header is None or first >= 2
            if ok:   # the same code, compared: names mangled alike, the same cells, lines and constants
                try:
                    filename = os.path.join(self.root, path)
                    whole = self.whole_code(path)
                    alone = compile(def_source(self.lines[path], first, last, header, context.imports), filename, "exec",
                                    flags=context.flags, dont_inherit=True)
                    a, b = code_in(alone, name, first), code_in(whole, name, first)
                    ok = a is not None and a == b and a.co_freevars == b.co_freevars
                except (SyntaxError, ValueError):
                    ok = False
            self.apart_ok[key] = (first, last, header) if ok else None
        return self.apart_ok[key]

    def short_of_time(self) -> bool:
        """Would the mutants left, at the pace so far, outrun the time limit? Then a mutant's run stops at
        the first failing target that fails as before (it cannot fix them all), so more mutants run."""
        done = self.result["tried"]
        if done < 10:
            return False
        pace = (self.spent["targets_s"] + self.spent["compile_s"] + self.spent["check_s"]) / done   # a mutant's own cost
        return pace * (self.queued - done) > self.stop_at - time.monotonic()

    def out_of_budget(self) -> bool:
        if time.monotonic() - self.printed > self.m["snapshot_s"]:
            self.print_result(finished=False)
        if self.result["tried"] >= self.max_mutants or time.monotonic() > self.stop_at:
            self.result["cut"] += 1
            return True
        return False

    def loop_plugin(self, chosen: Sequence[Tuple[str, int]]) -> object:
        """Runs every mutant inside one pytest session: collected once, each item run again."""
        import pytest

        analysis = self
        m = self.m

        class Loop:
            @pytest.hookimpl(tryfirst=True)
            def pytest_runtestloop(self, session: Any) -> bool:
                from _pytest.runner import runtestprotocol
                items = {i.nodeid: i for i in session.items}

                def run_items(nodeids: Sequence[str], limit_s: Optional[float] = None,
                              until_unchanged: bool = False) -> Dict[str, str]:
                    # one time limit for the whole run: once a mutant loops, the targets after it are not run;
                    # `until_unchanged`: nor after a target that fails as before (taken as unchanged)
                    res: Dict[str, str] = {}
                    analysis.fired = False
                    signal.setitimer(signal.ITIMER_REAL, limit_s or analysis.limit)
                    try:
                        for t in nodeids:
                            item = items.get(t)
                            if item is None or analysis.fired:
                                continue
                            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                                reports = runtestprotocol(item, log=False, nextitem=None)
                            bad = next((r for r in reports if r.failed), None)
                            if bad is not None:
                                res[t] = _failure(bad.longrepr)
                            else:
                                res[t] = ("passed" if any(r.when == "call" and r.passed for r in reports)
                                          else "failed: skipped")
                            if until_unchanged and res[t] == analysis.baseline.get(t) and t != nodeids[-1]:
                                analysis.result["stopped_early"] += 1
                                res.update({u: analysis.baseline[u] for u in nodeids if u not in res and u in analysis.baseline})
                                break
                    except MutantTimeout:
                        pass
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                    return {t: res.get(t, UNFINISHED) for t in nodeids if t in items}

                t0 = time.monotonic()
                analysis.result["collect_s"] = round(t0 - analysis.started, 3)
                analysis.baseline.update(run_items(analysis.failing, m["per_mutant_s"] * 5))
                analysis.result["baseline_s"] = round(time.monotonic() - t0, 3)
                messages = [analysis.baseline.get(t, "") for t in analysis.failing]
                guards = analysis.operators.guards
                sources = [test_source(items.get(t)) for t in analysis.failing]
                analysis.expects = guards.expected_exception(messages) or guards.expected_in_tests(sources)
                analysis.message = guards.expected_message(sources) or guards.parametrized_message(
                    sources, [test_params(items.get(t)) for t in analysis.failing])
                analysis.raised_instead = guards.raised_instead(messages)
                texts, code = example_texts([items.get(t) for t in analysis.failing], sources, messages)
                edits = analysis.operators.transforms
                examples = texts + edits.literals_in(code)
                analysis.example_calls = edits.example_transforms(examples)
                analysis.example_chars = analysis.operators.probes.probe_characters(examples)
                analysis.example_words = analysis.operators.probes.probe_words(texts)
                # a mutant may take ten times as long as the original failing run, and never more than the limit
                analysis.limit = min(m["per_mutant_s"], max(0.25, 10 * (time.monotonic() - t0)))
                if analysis.goal_examples:
                    analysis.resolve_examples([getattr(items.get(t), "module", None) for t in analysis.failing],
                                              [path for path, _ in chosen])
                def trace(traced: ConditionTrace) -> None:
                    # each failing target alone (the conditions must hold in every one), then together the
                    # passing tests that ran a guarded line in the spectrum's run (the others cannot tell),
                    # in at most a twentieth of the analysis's time
                    passing = [t for t in analysis.passing if analysis.guarded & analysis.run.hits.get(t, set())]
                    runs = [([t], t, m["per_mutant_s"] * 5) for t in analysis.failing]
                    runs += [(passing, "", max(0.25, 0.05 * m["budget_s"]))] if passing else []
                    for tests, label, limit in runs:
                        traced.test = label
                        previous = sys.gettrace()
                        sys.settrace(traced.call)
                        try:
                            run_items(tests, limit)
                        finally:
                            sys.settrace(previous)

                def run_mutants(lines: Sequence[Tuple[str, int]]) -> None:
                    try:
                        for path, line, original, mutated, new_text, what, family in analysis.each_mutant(lines, trace):
                            if analysis.out_of_budget():
                                continue
                            try:
                                at_import = (path, line) in analysis.at_import
                                default = None if at_import else analysis.default_slot.get((path, line, what))
                                try:
                                    undo = analysis.swap_default(path, *default) if default is not None else None
                                except Exception:   # a live function that refuses the defaults: the code swap's way
                                    undo = None
                                if undo is None:
                                    code = analysis.compiled(path, mutated, None if at_import else line)
                                    if code is None:
                                        analysis.result["not_compiling"] += 1
                                        continue
                                    try:
                                        undo = analysis.reexec(path, code) if at_import else analysis.swap(path, code, line)
                                    except Exception:
                                        undo = None
                                if undo is None and at_import:
                                    continue   # its module would not run again with it (or at all): no fresh session either
                                if undo is None:
                                    analysis.deferred.append((path, line, original, mutated, new_text, what, family))
                                    analysis.result["deferred"] += 1
                                    continue
                                try:
                                    t1 = time.monotonic()
                                    got = run_items(analysis.failing, until_unchanged=analysis.short_of_time())
                                    analysis.spent["targets_s"] += time.monotonic() - t1
                                    analysis.result["timed_out"] += analysis.fired
                                    analysis.judge(path, line, new_text, what, family, got,
                                                   lambda ids: run_items(ids, m["per_mutant_s"] * 5))
                                finally:
                                    undo()
                            except BaseException as exc:   # a bug on one mutant (or a stray interrupt) ends that mutant only
                                analysis.note_error(exc)
                    except Exception as exc:   # of the mutants' order (each_mutant): the loop cannot go on
                        analysis.note_error(exc)
                    analysis.join()

                run_mutants(chosen)
                try:
                    analysis.try_pairs(run_items)
                except BaseException as exc:
                    analysis.note_error(exc)
                for lines in analysis.wider(chosen):
                    run_mutants(lines)
                # the last round: what it leaves behind is each module run again, not as first imported
                lines = analysis.import_lines(chosen)
                if lines and analysis.import_control(lines, run_items):
                    analysis.result["at_import"] = len(lines)
                    stop_at = analysis.stop_at
                    analysis.stop_at = min(max(stop_at, time.monotonic()) + m["import_s"], analysis.hard_stop)
                    try:
                        run_mutants(lines)
                    finally:
                        analysis.stop_at = stop_at
                return True

        return Loop()

    def analyse(self, chosen: Sequence[Tuple[str, int]]) -> Dict[str, Any]:
        import pytest

        m, run = self.m, self.run
        self.started = self.printed = time.monotonic()
        cap_memory(m["memory_mb"] * 1024 * 1024)
        # `deadline - budget_s`: when the spectrum's run started, which until_s counts from
        self.hard_stop = run.deadline - run.args["budget_s"] + m["until_s"]
        self.stop_at = min(self.started + m["budget_s"], self.hard_stop)
        if self.failing and chosen:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                # not 0 or 1 (tests failed): the loop itself ended early (an internal error pytest swallowed)
                # `--tb=line`: a failure's crash message is all a mutant's result keeps, and the same in every
                # traceback style; the default style reads the source of every frame (bench/bench_failure_report.py)
                self.result["session_exit"] = int(pytest.main(
                    ["-q", "-p", "no:cacheprovider", "--maxfail=0", "--tb=line", f"--rootdir={self.root}", *self.failing,
                     *self.passing],
                    plugins=[self.loop_plugin(chosen)]))
            if self.pool.is_child:   # its loop ended some other way than by its share's end: still only its share
                self.join()
        for path, line, original, mutated, new_text, what, family in self.deferred:
            if self.out_of_budget():
                continue
            with open(os.path.join(self.root, path), "w", encoding="utf-8") as fh:
                fh.write(mutated)
            try:
                self.judge(path, line, new_text, what, family, self.fresh_run(self.failing), self.fresh_run, live=False)
            finally:
                with open(os.path.join(self.root, path), "w", encoding="utf-8") as fh:
                    fh.write(original)
        return self.result


# (path, line, condition), then compile_condition's two codes
Condition = Tuple[Tuple[str, int, str], Any, Any]


def compile_condition(cond: str) -> Tuple[Any, Any]:
    """The condition compiled, and its containers (`T` of `K in T`, `K not in T`) compiled as one tuple,
    or None: testing membership in an iterator would consume it. Raises SyntaxError."""
    tree = ast.parse(cond, mode="eval")
    body = tree.body
    containers = [right for op, right in zip(body.ops, body.comparators)
                  if isinstance(op, (ast.In, ast.NotIn))] if isinstance(body, ast.Compare) else []
    table = None
    if containers:
        both = ast.copy_location(ast.Tuple(elts=containers, ctx=ast.Load()), containers[0])
        table = compile(ast.Expression(both), "<guard>", "eval")
    return compile(tree, "<guard>", "eval"), table


class ConditionTrace:
    """A tracer (sys.settrace) that evaluates guard conditions at their lines while tests run: `at`
    maps a file's real path to its lines and each line's Conditions, `after` to those evaluated once
    the line ran (at the frame's next line or return; not when it raised). `held[key]`: the tests
    (`test`, set by the caller; '' for the passing ones) in which the condition held, or raised, at
    least once; `reached[(path, line)]`: the tests that ran the line."""

    def __init__(self, at: Dict[str, Dict[int, List[Condition]]],
                 after: Optional[Dict[str, Dict[int, List[Condition]]]] = None) -> None:
        self.at = at
        self.after = after or {}
        self.files: Dict[str, Optional[Tuple[Dict[int, List[Condition]], Dict[int, List[Condition]]]]] = {}
        self.held: Dict[Tuple[str, int, str], Set[str]] = {}
        self.unheld: Dict[Tuple[str, int, str], Set[str]] = {}   # ... did not hold (its negation held)
        self.reached: Dict[Tuple[str, int], Set[str]] = {}
        self.order: Dict[Tuple[str, int], int] = {}   # (path, line) -> when a failing test first ran it (0: first)
        self.test = ""

    def call(self, frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_name.startswith("<"):
            return None   # a comprehension's or a lambda's frame on a guarded line lacks the function's variables
        name = frame.f_code.co_filename
        if name not in self.files:
            real = None if name.startswith("<") else os.path.realpath(name)
            before, after = (self.at.get(real, {}), self.after.get(real, {})) if real else ({}, {})
            self.files[name] = (before, after) if before or after else None
        tables = self.files[name]
        if tables is None:
            return None
        lines, afters = tables
        pending: List[List[Condition]] = []

        def local(frame: Any, event: str, arg: Any) -> Any:
            if pending:
                if event in ("line", "return"):
                    self.visit(frame, pending[0])
                pending.clear()   # on "exception" the line raised: a guard after it would not run
            if event == "line":
                if frame.f_lineno in lines:
                    self.visit(frame, lines[frame.f_lineno])
                if frame.f_lineno in afters:
                    pending.append(afters[frame.f_lineno])
            return local
        return local

    def visit(self, frame: Any, conditions: List[Condition]) -> None:
        at = conditions[0][0][:2]   # one line's conditions
        self.reached.setdefault(at, set()).add(self.test)
        if self.test and at not in self.order:
            self.order[at] = len(self.order)
        for key, code, table in conditions:
            try:
                # `K in T` on an iterator would consume it: unknown, so counted as holding everywhere, and
                # as not holding (for the guard of its negation)
                if table is not None and any(hasattr(t, "__next__") for t in eval(table, frame.f_globals, frame.f_locals)):
                    held = unheld = True
                else:
                    held = bool(eval(code, frame.f_globals, frame.f_locals))
                    unheld = not held
            except Exception:
                held = unheld = True   # evaluating it raises: so would either guard, which changes what the test does
            if held:
                self.held.setdefault(key, set()).add(self.test)
            if unheld:
                self.unheld.setdefault(key, set()).add(self.test)


def main(run: SpectrumRun, ochiai: Callable[..., Any], operators: Any) -> None:
    """The mutation analysis after the spectrum's `run`; `ochiai`: spectrum.ochiai, `operators`: the
    module in_sandbox/operators.py (passed in: this module imports nothing of the project). Prints
    its result line."""
    analysis = Analysis(run, operators)
    chosen = analysis.chosen(ochiai)
    signal.signal(signal.SIGALRM, analysis.on_alarm)
    analysis.analyse(chosen)
    analysis.print_result(finished=True)


def cap_memory(extra_bytes: int) -> None:
    """A mutant that allocates without end (a loop whose exit was mutated away) fails with
    MemoryError, a failed test, instead of bringing the process down at the container's limit."""
    try:
        import resource
        with open("/proc/self/status", encoding="ascii") as fh:
            size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        soft = size + extra_bytes if hard == resource.RLIM_INFINITY else min(size + extra_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    except (ImportError, OSError, ValueError, StopIteration):
        pass   # not Linux: no cap
