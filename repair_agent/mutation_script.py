"""The mutation analysis's program, run in the sandbox after the spectrum's (mutation.py says what
it does and holds its settings and result models). The standard library and pytest only."""
from __future__ import annotations

# Appended to the spectrum script (localization.SCRIPT), whose names it uses: args, root, roots,
# hits, outcomes, is_target, pytest. The spectrum's own result is printed (and flushed) before this
# runs, so a mutant that brings the process down loses only the mutation analysis.
SCRIPT = r'''
import contextlib, io, re as _re, signal, tokenize, ast
m = args["mutation"]
failing = sorted(t for t, o in outcomes.items() if o == "failed" and is_target(t))
passing = sorted(t for t, o in outcomes.items() if o == "passed" and not is_target(t))   # the spectrum's, <= 60
writable = [_re.compile(p) for p in m["writable"]]
ef, ep = {}, {}
for t, lines in hits.items():
    counts = ef if t in failing else ep if t in passing else None
    if counts is not None:
        for k in lines:
            counts[k] = counts.get(k, 0) + 1
# Ochiai, ordered as localization.ochiai orders it on the host (this program cannot import it)
scored = []
for (path, line), f in ef.items():
    if any(w.match(path) for w in writable):
        p = ep.get((path, line), 0)
        scored.append((-round(f / (max(1, len(failing)) * (f + p)) ** 0.5, 4), -f, p, path, line))
scored.sort()
best = -scored[0][0] if scored else 0.0
chosen = [(s[3], s[4]) for s in scored if -s[0] >= m["share"] * best][:m["max_lines"]]

class MutantTimeout(BaseException):
    pass

fired = [False]

def on_alarm(signum, frame):
    fired[0] = True   # pytest may catch it as the test's failure: the loop below looks at this too
    raise MutantTimeout()

signal.signal(signal.SIGALRM, on_alarm)

def run(nodeids):
    """A new pytest session on the repository's modules imported again (from the files as they are now)."""
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None) or ""
        if f and os.path.realpath(f).startswith(roots):
            del sys.modules[name]
    res = {}
    class Grab:
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(self, item, nextitem):
            return True if fired[0] else None   # the mutant looped: the tests after it are not run

        def pytest_runtest_logreport(self, report):
            if report.failed:
                crash = getattr(report.longrepr, "reprcrash", None)
                res[report.nodeid] = "failed: " + (crash.message if crash is not None else str(report.longrepr)[-300:])[:300]
            elif report.when == "call" and report.passed:
                res.setdefault(report.nodeid, "passed")
    fired[0] = False
    signal.setitimer(signal.ITIMER_REAL, limit[0])
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            pytest.main(["-q", "-p", "no:cacheprovider", f"--rootdir={root}", *nodeids], plugins=[Grab()])
    except MutantTimeout:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return {t: res.get(t, "failed: did not finish") for t in nodeids}

def live_functions(mod):
    """The functions a module defines, as its namespace holds them (methods, wrapped ones too)."""
    seen, out = set(), []
    def add(obj):
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
    for obj in list(vars(mod).values()):
        if isinstance(obj, type) and getattr(obj, "__module__", None) == mod.__name__:
            for v in list(vars(obj).values()):
                add(v)
        else:
            add(obj)
    return out

def code_in(code, name, first):
    for c in code.co_consts:
        if hasattr(c, "co_consts"):
            if c.co_name == name and c.co_firstlineno == first:
                return c
            found = code_in(c, name, first)
            if found is not None:
                return found
    return None

module_of = {}   # path -> (its live module, the module's functions, the caches they and it hold)

def live_module(path):
    """Looked up once per file (realpath over every module is slow), again only if it was reimported."""
    found = module_of.get(path)
    if found is None or sys.modules.get(found[0].__name__) is not found[0]:
        full = os.path.realpath(os.path.join(root, path))
        mod = next((x for x in list(sys.modules.values())
                    if os.path.realpath(getattr(x, "__file__", None) or "/nonexistent") == full), None)
        if mod is None:
            return None
        fns = live_functions(mod)
        caches = [h for x in fns for h in (x, getattr(x, "__self__", None)) if hasattr(h, "cache_clear")]
        caches += [v for v in list(vars(mod).values()) if callable(getattr(v, "cache_clear", None))]
        found = module_of[path] = (mod, fns, caches)
    return found

def swap(path, code, line):
    """Put the mutant (`code`: the mutated module, compiled) into the live function around `line`
    (its outermost def) instead of importing the repository again: `undo` puts the original back;
    None when that cannot be done."""
    found = live_module(path)
    outer = [d for d in defs.get(path, []) if d[1] <= line <= d[2]]
    if found is None or not outer:
        return None
    mod, functions, caches = found
    name, start, end, first = min(outer, key=lambda d: d[1])
    fns = [f for f in functions if f.__code__.co_name == name and f.__code__.co_firstlineno == first]
    new = code_in(code, name, first)
    if len(fns) != 1 or new is None or new.co_freevars != fns[0].__code__.co_freevars:
        return None
    fn, old = fns[0], fns[0].__code__
    def clear():
        for holder in caches:
            holder.cache_clear()
    fn.__code__ = new
    clear()
    def undo():
        fn.__code__ = old
        clear()
    return undo

SWAPS = {"<": ["<=", ">"], "<=": ["<", ">="], ">": [">=", "<"], ">=": [">", "<="], "==": ["!="], "!=": ["=="],
         "+": ["-"], "-": ["+"], "*": ["/"], "/": ["//", "*"], "//": ["/", "%"], "%": ["//"],
         "+=": ["-="], "-=": ["+="], "*=": ["/="], "/=": ["//=", "*="], "//=": ["/="],
         "and": ["or"], "or": ["and"], "True": ["False"], "False": ["True"], "min": ["max"], "max": ["min"],
         "is": ["is not"], "in": ["not in"]}
HEADERS = ("def ", "class ", "if ", "elif ", "else", "for ", "while ", "try", "except", "finally", "with ",
           "async ", "@", "return", "yield", "raise", "import ", "from ")
sources, token_rows, scopes, defs = {}, {}, {}, {}

def load(path):
    if path not in sources:
        with open(os.path.join(root, path), encoding="utf-8") as fh:
            text = fh.read()
        sources[path] = text
        rows = {}
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.start[0] == tok.end[0]:
                    rows.setdefault(tok.start[0], []).append(tok)
        except (tokenize.TokenError, SyntaxError):
            pass
        token_rows[path] = rows
        spans, outer = [], []
        try:
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
                    names += [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
                    spans.append((node.lineno, node.end_lineno, list(dict.fromkeys(names))))
                    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                    outer.append((node.name, node.lineno, node.end_lineno, first))
        except SyntaxError:
            pass
        scopes[path], defs[path] = spans, outer
    return sources[path]

def variables(path, line):
    inner = [s for s in scopes[path] if s[0] <= line <= s[1]]
    return min(inner, key=lambda s: s[1] - s[0])[2] if inner else []

def mutants(path, line):
    text = load(path).splitlines(keepends=True)[line - 1]
    toks = token_rows[path].get(line, [])
    out = []
    def put(start, end, new, what):
        s, e = toks[start].start[1], toks[end].end[1]
        out.append((text[:s] + new + text[e:], what))
    names = variables(path, line)
    for i, tok in enumerate(toks):
        s = tok.string
        nxt = toks[i + 1].string if i + 1 < len(toks) else ""
        prev = toks[i - 1].string if i else ""
        if s == "not" and nxt == "in":
            put(i, i + 1, "in", "not in -> in")
        elif s == "is" and nxt == "not":
            put(i, i + 1, "is", "is not -> is")
        elif s == "not" and prev != "is":
            put(i, i, "", "not removed")
        elif s in SWAPS and not (s == "in" and prev == "not") and tok.type in (tokenize.OP, tokenize.NAME):
            for new in SWAPS[s]:
                put(i, i, new, f"{s} -> {new}")
        if tok.type == tokenize.NUMBER and s.isdigit():
            for new in (int(s) + 1, int(s) - 1):
                put(i, i, str(new), f"{s} -> {new}")
        if tok.type == tokenize.NAME and s in names and nxt not in ("=", "(", ".") and prev != ".":
            if nxt in ("]", ":", ")"):
                for d in ("+ 1", "- 1"):
                    put(i, i, f"{s} {d}", f"{s} -> {s} {d}")
            for other in names:
                if other != s:
                    put(i, i, other, f"{s} -> {other}")
    stripped = text.strip()
    first = [t for t in toks if t.type not in (tokenize.INDENT, tokenize.DEDENT)][:1]
    if stripped and not stripped.startswith(HEADERS) and not stripped.endswith((":", "(", "[", "{", ",", "\\")) and first \
            and first[0].start[1] == len(text) - len(text.lstrip()):
        out.append((text[:len(text) - len(text.lstrip())] + "pass\n", "statement removed"))
    return out[:m["max_per_line"]]

started = time.monotonic()
stop_at = min(started + m["budget_s"], deadline - args["budget_s"] + m["until_s"])   # `deadline`: the spectrum's
result = {"lines": [], "fixes": [], "tried": 0, "cut": 0}
stats = {}        # (path, line) -> [tried, changed, fixing]
baseline = {}
limit = [m["per_mutant_s"]]

def judge(path, line, new_text, what, got, check):
    """Count one mutant's result on the failing targets; `check` runs the passing tests on it."""
    st = stats.setdefault((path, line), [0, 0, 0])
    st[0] += 1
    result["tried"] += 1
    passed = sum(v == "passed" for v in got.values())
    st[1] += any(got.get(t) != baseline.get(t) for t in failing)
    if passed:
        fix = {"path": path, "line": line, "text": new_text.rstrip("\n"), "what": what,
               "fixed": passed, "of": len(failing), "broken": None, "checked": 0}
        if passed == len(failing):
            st[2] += 1
            if passing and sum(f["checked"] > 0 for f in result["fixes"]) < m["max_checked"]:
                others = check(passing)
                fix["checked"] = len(others)
                fix["broken"] = sum(v != "passed" for v in others.values())
        result["fixes"].append(fix)

def each_mutant():
    for path, line in chosen:
        try:
            original = load(path)
            muts = mutants(path, line)
        except (OSError, UnicodeDecodeError, IndexError):
            continue
        stats.setdefault((path, line), [0, 0, 0])
        lines_of = original.splitlines(keepends=True)
        for new_text, what in muts:
            mutated = "".join(lines_of[:line - 1] + [new_text] + lines_of[line:])
            try:   # compiled once: a mutant that does not compile is skipped, one that does goes into swap()
                code = compile(mutated, os.path.join(root, path), "exec")
            except (SyntaxError, ValueError):
                continue
            yield path, line, original, mutated, code, new_text, what

def out_of_budget():
    if result["tried"] >= m["max_mutants"] or time.monotonic() > stop_at:
        result["cut"] += 1
        return True
    return False

deferred = []     # mutants no live function holds (a lambda, a line outside any def): imported again afterwards

class Loop:
    """Runs every mutant inside this one pytest session: collected once, each item run again."""
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        from _pytest.runner import runtestprotocol
        items = {i.nodeid: i for i in session.items}

        def run_items(nodeids, limit_s=None):
            # one time limit for the whole run: once a mutant loops, the targets after it are not run
            res = {}
            fired[0] = False
            signal.setitimer(signal.ITIMER_REAL, limit_s or limit[0])
            try:
                for t in nodeids:
                    item = items.get(t)
                    if item is None or fired[0]:
                        continue
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                        reports = runtestprotocol(item, log=False, nextitem=None)
                    bad = next((r for r in reports if r.failed), None)
                    if bad is not None:
                        crash = getattr(bad.longrepr, "reprcrash", None)
                        res[t] = "failed: " + (crash.message if crash is not None else str(bad.longrepr)[-300:])[:300]
                    else:
                        res[t] = "passed" if any(r.when == "call" and r.passed for r in reports) else "failed: skipped"
            except MutantTimeout:
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            return {t: res.get(t, "failed: did not finish") for t in nodeids if t in items}

        t0 = time.monotonic()
        baseline.update(run_items(failing, m["per_mutant_s"] * 5))
        # a mutant may take ten times as long as the original failing run, and never more than the limit
        limit[0] = min(m["per_mutant_s"], max(0.25, 10 * (time.monotonic() - t0)))
        for path, line, original, mutated, code, new_text, what in each_mutant():
            if out_of_budget():
                continue
            try:
                undo = swap(path, code, line)
            except Exception:
                undo = None
            if undo is None:
                deferred.append((path, line, original, mutated, new_text, what))
                continue
            try:
                judge(path, line, new_text, what, run_items(failing),
                      lambda ids: run_items(ids, m["per_mutant_s"] * 5))
            finally:
                undo()
        return True

if failing and chosen:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        pytest.main(["-q", "-p", "no:cacheprovider", f"--rootdir={root}", *failing, *passing],
                    plugins=[Loop()])
for path, line, original, mutated, new_text, what in deferred:
    if out_of_budget():
        continue
    with open(os.path.join(root, path), "w", encoding="utf-8") as fh:
        fh.write(mutated)
    try:
        judge(path, line, new_text, what, run(failing), run)
    finally:
        with open(os.path.join(root, path), "w", encoding="utf-8") as fh:
            fh.write(original)
result["lines"] = [{"path": p, "line": n, "tried": v[0], "changed": v[1], "fixing": v[2]} for (p, n), v in stats.items()]
result["duration_s"] = round(time.monotonic() - started, 3)
sys.stdout.write("\n@@ra-mutants@@" + json.dumps(result) + "\n")
sys.stdout.flush()
'''
