"""Edits that need more than one line: what the statements around a line say it lacks.

- a value written without the call its sibling branch applies (`x = default` beside `x = func(v)`
  in the other branch of the same `if`: `x = func(default)`);
- a statement every other arm of an `if`/`elif` chain ends with, missing from one arm (inserted
  at that arm's end);
- a counter a loop tests but never updates (`if maxsplit == 1:` inside a loop that never changes
  `maxsplit`): the update inserted at the end of the block that tests it;
- a missing precondition check when a test expects an exception that is not raised ("DID NOT
  RAISE ValueError"), bounded by the range the goal states (`0..59`): `if not 0 <= int(v) <= 59:
  raise ValueError(...)`, before a line that converts `v` (Defects4J's and Pan et al.'s most common
  fix patterns: an added precondition and an added throw).

Each takes a function's lines as read and returns Candidates; the ranking scores them.
"""
from __future__ import annotations

import ast
import re

from .catalogue import Candidate, neutral_text
from ...in_sandbox.statement_edits import statement_ast
from .source import Function

LOOP_RE = re.compile(r"^(\s*)(?:async\s+)?(for|while)\b.*:\s*(#.*)?$")
COUNTER_TEST_RE = re.compile(r"(?<![\w.])([a-z_]\w*)\s*(?:==|!=|<=|>=|<|>)\s*-?\d+\b")   # a local, not an attribute
ASSIGNED_RE = r"^\s*{name}\s*(?:[-+*/%]?=(?!=))"


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _block_end(lines: dict[int, str], start: int, indent: int, stop: int) -> int:
    """The last line of the run of statements at `indent` (and their bodies) that `start` is part of."""
    end = start
    for n in range(start + 1, stop + 1):
        text = lines.get(n)
        if text is None:
            break
        if not text.strip() or text.strip().startswith("#"):
            continue
        if _indent(text) < indent:
            break
        end = n
    return end


def sibling_wraps(path: str, fn: Function, lines: dict[int, str]) -> list[Candidate]:
    """`x = v` where a sibling branch (same target, same indentation, a few lines away) writes
    `x = f(w)`: `x = f(v)`."""
    out = []
    stmts = {n: _assignment(lines.get(n, "")) for n in range(fn.body_line, fn.end_line + 1)}
    for n, here in stmts.items():
        if here is None or isinstance(here[1], ast.Call):
            continue
        target, value = here
        for m in range(max(fn.body_line, n - 6), min(fn.end_line, n + 6) + 1):
            there = stmts.get(m)
            if m == n or there is None or there[0] != target or _indent(lines[m]) != _indent(lines[n]):
                continue
            call = there[1]
            if not (isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords
                    and not isinstance(call.args[0], ast.Constant) and _two_way(lines, min(m, n), max(m, n))):
                continue
            func = ast.unparse(call.func)
            text = lines[n]
            new = f"{text[:_indent(text)]}{target} = {func}({ast.unparse(value)})\n"
            out.append(Candidate(path, n, (new,), "wrap", f"`{target} = {ast.unparse(value)}` -> "
                                 f"`{target} = {func}(...)` as in the sibling branch (line {m})"))
            break
    return out


ARM_RE = re.compile(r"^(\s*)(if|elif|else)\b.*:\s*(#.*)?$")


def sibling_arm_statements(path: str, fn: Function, lines: dict[int, str]) -> list[Candidate]:
    """In a chain of `if`/`elif`/`else` arms, a simple statement that at least two other arms and
    all but one of them hold (`self.count += 1` after each case): inserted at the end of the arm
    that lacks it."""
    out = []
    n = fn.body_line
    while n <= fn.end_line:
        head = ARM_RE.match(lines.get(n, ""))
        if not head or head.group(2) != "if":
            n += 1
            continue
        indent, arms, k = len(head.group(1)), [], n
        while k <= fn.end_line:   # the arms of this chain: (first, last) body lines
            m = ARM_RE.match(lines.get(k, ""))
            if not m or len(m.group(1)) != indent or (arms and m.group(2) == "if"):
                break
            last = _block_end(lines, k + 1, indent + 1, fn.end_line)
            if last <= k or (k + 1) not in lines:
                break
            arms.append((k + 1, last))
            k = last + 1
            while k <= fn.end_line and not (lines.get(k) or "x").strip():
                k += 1
        if len(arms) >= 3:
            bodies = [{lines[j].strip() for j in range(a, b + 1) if j in lines and _indent(lines[j]) == _indent(lines[a])}
                      for a, b in arms]
            for i, (a, b) in enumerate(arms):
                others = [body for j, body in enumerate(bodies) if j != i]
                shared = set.intersection(*others) - bodies[i]
                for stmt in sorted(shared):
                    if not _simple(stmt) or b not in lines:
                        continue
                    new = f"{lines[a][:_indent(lines[a])]}{stmt}\n"
                    out.append(Candidate(path, b, (lines[b], new), "sibling-copy",
                                         f"insert `{stmt}` as the other {len(others)} arms of the `if` chain do"))
        n = max(n + 1, k)
    return out


def _simple(stmt: str) -> bool:
    """A one-line statement with an effect that is safe to repeat in another arm: an assignment, an
    augmented assignment or a call (not a return, a raise or a block header)."""
    parsed = statement_ast(stmt)
    top = parsed[0].body[0] if parsed and isinstance(parsed[0], ast.Module) and len(parsed[0].body) == 1 else None
    return isinstance(top, (ast.AugAssign, ast.Assign)) or (isinstance(top, ast.Expr) and isinstance(top.value, ast.Call))


def _two_way(lines: dict[int, str], a: int, b: int) -> bool:
    """Are lines a < b the two branches of one `if ...: / else:` (not two arms of an `elif` chain)?"""
    between = [lines.get(k, "").strip() for k in range(a + 1, b)]
    return any(t.startswith("else") for t in between) and not any(t.startswith("elif ") for t in between) and \
        not any(lines.get(k, "").strip().startswith("elif ") for k in range(max(1, a - 12), a))


def _assignment(text: str) -> tuple[str, ast.expr] | None:
    parsed = statement_ast(text)
    if parsed is None or not text.strip() or text.rstrip().endswith((":", ",", "(", "[", "{", "\\")):
        return None
    top = parsed[0].body[0] if isinstance(parsed[0], ast.Module) and parsed[0].body else None
    if isinstance(top, ast.Assign) and len(top.targets) == 1:
        return ast.unparse(top.targets[0]), top.value
    return None


def counter_updates(path: str, fn: Function, lines: dict[int, str]) -> list[Candidate]:
    """A name a loop compares with a number but never assigns inside the loop: the loop's test cannot
    change, so its update is missing. Inserted (`-= 1`, then `+= 1`) at the end of the block that
    holds the test."""
    out = []
    for n in range(fn.body_line, fn.end_line + 1):
        loop = LOOP_RE.match(lines.get(n, ""))
        if not loop:
            continue
        body_end = _block_end(lines, n + 1, _indent(lines[n]) + 1, fn.end_line)
        body = range(n, body_end + 1)
        for k in body:
            text = lines.get(k, "")
            for m in COUNTER_TEST_RE.finditer(text.split("#")[0]):
                name = m.group(1)
                if name in ("len", "not", "and", "or", "in", "is") or any(
                        re.match(ASSIGNED_RE.format(name=re.escape(name)), lines.get(j, "")) for j in body):
                    continue
                if k == n:   # tested by the loop's own header: update at the end of its body
                    site, indent = body_end, lines.get(n + 1, "")[:_indent(lines.get(n + 1, ""))]
                else:
                    indent = text[:_indent(text)]
                    site = _block_end(lines, k, _indent(text), body_end)
                if site not in lines:
                    continue
                for op in ("-=", "+="):
                    new = f"{indent}{name} {op} 1\n"
                    c = Candidate(path, site, (lines[site], new), "counter",
                                  f"insert `{name} {op} 1` (the loop tests {name} but never updates it)")
                    c.score = -0.5 if op == "+=" else 0.0   # a budget counted down to a small bound is the usual form
                    out.append(c)
    return out


NO_ARGUMENT_METHODS = frozenset({"clear", "reset", "close", "flush", "popleft", "pop", "sort", "reverse", "cancel",
                                 "commit", "rollback", "release", "acquire", "set", "wait", "join", "start", "stop"})
ALIAS_RE = re.compile(r"^(\s*)([a-z_]\w*)\s*=\s*([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*(#.*)?$")   # `clear = cache.clear`


def unused_alias_calls(path: str, fn: Function, lines: dict[int, str]) -> list[Candidate]:
    """A method bound to a local and never used (`cache_clear = cache.clear` and no `cache_clear()`):
    the call was lost. Inserted after each later one-line statement that uses the object (`yield from
    cache`), when the method takes no argument-less guess: only names of methods that need none."""
    out = []
    for n in range(fn.body_line, fn.end_line + 1):
        m = ALIAS_RE.match(lines.get(n, ""))
        if not m or m.group(4) not in NO_ARGUMENT_METHODS:
            continue
        alias, obj = m.group(2), m.group(3)
        rest = range(n + 1, fn.end_line + 1)
        if any(re.search(rf"(?<![\w.]){alias}\b", lines.get(k, "")) for k in rest):
            continue   # used
        for k in rest:
            text = lines.get(k, "")
            code = text.split("#")[0]
            if not re.search(rf"(?<![\w.]){obj}\b", code) or code.rstrip().endswith((":", "(", ",", "\\")) \
                    or re.match(rf"\s*{obj}\s*=", code):
                continue
            indent = text[:_indent(text)]
            c = Candidate(path, k, (text, f"{indent}{alias}()\n"), "missing-call",
                          f"call {alias}() after line {k} ({alias} = {obj}.{m.group(4)} is never called)", 3.0)
            out.append(c)   # a bound method never called is a lost call, whatever the failure: a strong prior
    return out


STORE_RE = re.compile(r"^(\s*)([a-z_]\w*)\s*=(?!=)")


def dead_store_uses(path: str, fn: Function, lines: dict[int, str]) -> list[Candidate]:
    """A value assigned right before a `return` that does not use it (`buf = list(it)` then `return`):
    its use was lost. The function's own one- or two-line uses of the name elsewhere (`if buf: yield
    buf`, `out.append(buf)`) are copied in between, at the assignment's indentation."""
    body = [n for n in range(fn.body_line, fn.end_line + 1) if lines.get(n, "").strip()]
    out = []
    for k, n in enumerate(body[:-1]):
        m = STORE_RE.match(lines[n])
        nxt = lines[body[k + 1]]
        name = m.group(2) if m else ""
        if not m or _indent(nxt) != len(m.group(1)) or not re.match(r"\s*return\b", nxt) \
                or re.search(rf"\b{name}\b", nxt):
            continue
        for use in _uses_of(name, body, lines, skip=n):
            block = "".join(m.group(1) + " " * (_indent(t) - _indent(use[0])) + t.lstrip() for t in use)
            out.append(Candidate(path, n, (lines[n], block), "sibling-copy",
                                 f"use {name} before the return after line {n}, as line {use[0].strip()!r} does", 1.0))
    return list({c.key: c for c in out}.values())


def _uses_of(name: str, body: list[int], lines: dict[int, str], skip: int) -> list[list[str]]:
    """Statements elsewhere in the body that consume `name`: `yield name`, `x.append(name)`, and an
    `if name:` with such a statement as its one-line body."""
    consume = re.compile(rf"^\s*(?:yield\s+{name}\s*$|[\w.]+\.(?:append|extend|add|update)\(\s*{name}\s*\)\s*$)")
    out = []
    for k, n in enumerate(body):
        text = lines[n].split("#")[0].rstrip()
        if n == skip:
            continue
        if re.match(rf"^\s*if\s+{name}\s*:$", text) and k + 1 < len(body) and consume.match(lines[body[k + 1]]) \
                and _indent(lines[body[k + 1]]) > _indent(lines[n]):
            out.append([lines[n], lines[body[k + 1]]])
        elif consume.match(text) and not re.match(rf"^\s*if\s+{name}\s*:", lines[body[k - 1]] if k else ""):
            out.append([lines[n]])
    return out[:3]


SEQUENCES = (("major", "minor", "patch"), ("year", "month", "day"), ("years", "months", "days"),
             ("hour", "minute", "second"), ("hours", "minutes", "seconds"), ("days", "hours", "minutes", "seconds"),
             ("first", "second", "third"))
ELSE_RE = re.compile(r"^(\s*)else\s*:\s*(#.*)?$")


def sequence_arms(path: str, fn: Function, lines: dict[int, str]) -> list[Candidate]:
    """An `if` arm for one step of a sequence and an `else` for a later step, with the steps between
    missing (`if target.major: ... next_major()` / `else: ... next_patch()`: no `elif target.minor:`).
    The `if` arm is copied as an `elif` for each missing step, its word replaced."""
    out = []
    for n in range(fn.body_line, fn.end_line + 1):
        m = re.match(r"^(\s*)(?:el)?if\b(.*):\s*(#.*)?$", lines.get(n, ""))
        if not m:
            continue
        indent = len(m.group(1))
        end = _block_end(lines, n + 1, indent + 1, fn.end_line)
        if not ELSE_RE.match(lines.get(end + 1, "")) or _indent(lines[end + 1]) != indent:
            continue
        arm = [lines[k] for k in range(n, end + 1) if k in lines]
        else_body = "".join(lines.get(k, "") for k in range(end + 2, _block_end(lines, end + 2, indent + 1, fn.end_line) + 1))
        for seq in SEQUENCES:
            here = [i for i, w in enumerate(seq) if re.search(rf"(?<![a-z]){w}(?![a-z])", m.group(2))]
            later = [i for i, w in enumerate(seq) if re.search(rf"(?<![a-z]){w}(?![a-z])", else_body)]
            if len(here) != 1 or not later or later[0] <= here[0] + 1:
                continue
            for j in range(here[0] + 1, later[0]):
                copied = [re.sub(rf"(?<![a-z]){seq[here[0]]}(?![a-z])", seq[j], t) for t in arm]
                copied[0] = re.sub(r"^(\s*)(?:el)?if\b", r"\1elif", copied[0])
                out.append(Candidate(path, end, (lines[end], *copied), "sibling-copy",
                                     f"add the {seq[j]} arm between the {seq[here[0]]} and the {seq[later[0]]} ones", 2.0))
    return out


RANGE_IN_PROSE = re.compile(r"(?<![\w.])(-?\d+)\s*(?:\.\.\.?|–|to)\s*(-?\d+)(?![\w.])")


def stated_range(goal_text: str) -> tuple[int, int] | None:
    """The first integer range the goal states (`0..59`, `1 to 12`)."""
    m = RANGE_IN_PROSE.search(goal_text)
    if not m or int(m.group(1)) >= int(m.group(2)):
        return None
    return int(m.group(1)), int(m.group(2))


DUPLICATE_WORDS = re.compile(r"\b(?:duplicate[sd]?|twice|again|already|repeated|more than once)\b", re.I)
SUBSCRIPT_STORE = re.compile(r"^\s*([A-Za-z_][\w.]*)\[\s*([A-Za-z_][\w.]*)\s*\]\s*=(?!=)")


def raising_guards(path: str, fn: Function, lines: dict[int, str], not_raised: str, goal_text: str,
                   suspicious: set[int]) -> list[Candidate]:
    """When a test expected E (`not_raised`), a precondition raising E before a line the failing tests
    ran: `if not LO <= int(v) <= HI:` where that line converts `v` and the goal states the range, and
    `if k in table:` where that line stores `table[k]` (a duplicate refused). E is raised with the
    arguments of a `raise E(...)` already in the function, when there is one."""
    if not not_raised:
        return []
    bounds = stated_range(goal_text)
    out = []
    seen: set[str] = set()
    for n in range(fn.body_line, fn.end_line + 1):
        text = lines.get(n, "")
        if n not in suspicious or text.lstrip().startswith(("elif ", "else", "except", "finally", "def ")):
            continue
        ind = text[:_indent(text)]
        for conv, name in re.findall(r"\b(int|float)\(\s*([A-Za-z_]\w*)\s*\)", text):
            if bounds is None or name in seen:
                continue
            seen.add(name)
            lo, hi = bounds
            raise_ = _raise_like(not_raised, f"{name} must be in {lo}..{hi}", fn, lines)
            guard = (f"{ind}if not {lo} <= {conv}({name}) <= {hi}:\n", f"{ind}    {raise_}\n", text)
            out.append(Candidate(path, n, guard, "raise-guard",
                                 f"raise {not_raised} unless {lo} <= {conv}({name}) <= {hi}"))
        store = SUBSCRIPT_STORE.match(text)
        if store and f"{store.group(2)} in {store.group(1)}" not in seen:
            table, key = store.group(1), store.group(2)
            seen.add(f"{key} in {table}")
            raise_ = _sibling_refusal(not_raised, key, fn, lines) or _raise_like(
                not_raised, f"duplicate {{{key}!r}}", fn, lines, formatted=True)
            c = Candidate(path, n, (f"{ind}if {key} in {table}:\n", f"{ind}    {raise_}\n", text), "raise-guard",
                          f"raise {not_raised} when {key} is already in {table}")
            c.score = 1.0 if DUPLICATE_WORDS.search(goal_text) else -2.0
            out.append(c)
    return out


def _sibling_refusal(exc: str, key: str, fn: Function, lines: dict[int, str]) -> str | None:
    """The raise of a sibling check `if other in ...: raise E(... other ...)` of the function, about
    `key` instead of `other`: the refusal the code already words for its other duplicates."""
    for n in range(fn.body_line, fn.end_line):
        m = re.match(r"^\s*if\s+([A-Za-z_]\w*)\s+in\s+.+:\s*$", lines.get(n, ""))
        nxt = (lines.get(n + 1) or "").strip()
        if m and m.group(1) != key and re.match(rf"raise\s+(?:[\w.]+\.)?{re.escape(exc)}\(.*\)$", nxt):
            return re.sub(rf"\b{re.escape(m.group(1))}\b", key, nxt)
    return None


def _raise_like(exc: str, message: str, fn: Function, lines: dict[int, str], formatted: bool = False) -> str:
    """`raise E(...)` with the arguments of a one-line `raise E(...)` of the function (its message
    replaced), so that an exception taking more than a message is built the way the code builds it."""
    literal = ("f" if formatted else "") + repr(message).replace("'", '"') if '"' not in message else repr(message)
    for n in range(fn.body_line, fn.end_line + 1):
        parsed = statement_ast(lines.get(n, ""))
        top = parsed[0].body[0] if parsed and isinstance(parsed[0], ast.Module) and parsed[0].body else None
        if isinstance(top, ast.Raise) and isinstance(top.exc, ast.Call) and ast.unparse(top.exc.func).split(".")[-1] == exc:
            args = [ast.unparse(a) for a in top.exc.args]
            texts = [k for k, a in enumerate(top.exc.args) if isinstance(a, (ast.Constant, ast.JoinedStr))]
            if texts:
                args[texts[-1]] = literal
            return f"raise {ast.unparse(top.exc.func)}({', '.join(args)})"
    return f"raise {exc}({literal})"


def unused_params(fn: Function, lines: dict[int, str]) -> list[str]:
    """Parameters the body never reads, when the whole function was read: a value the code was meant
    to use (`default` that a `return None` ignores) is a common wrong-variable bug."""
    body = [lines.get(n) for n in range(fn.body_line, fn.end_line + 1)]
    if any(t is None for t in body) or not body:
        return []
    text = "".join(t for t in body if t is not None)
    return [p for p in fn.params if not reads(p, text)]


def reads(name: str, text: str) -> bool:
    """Does `text` use the variable `name` (not an attribute or a longer name ending in it)?"""
    return re.search(rf"(?<![\w.]){re.escape(name)}\b", text) is not None


def unused_param_returns(path: str, fn: Function, lines: dict[int, str], unused: list[str]) -> list[Candidate]:
    """`return None` (or another "nothing") -> `return default`, for each parameter the body never
    reads (`unused`, from `unused_params`)."""
    out = []
    for n in range(fn.body_line, fn.end_line + 1) if unused else ():
        text = lines.get(n, "")
        parsed = statement_ast(text) if text.lstrip().startswith("return") else None
        node = parsed[0].body[0] if parsed and parsed[0].body else None
        if isinstance(node, ast.Return) and node.value is not None and (empty := neutral_text(node.value)):
            indent = text[:len(text) - len(text.lstrip())]
            out += [Candidate(path, n, (f"{indent}return {p}\n",), "variable", f"{empty} -> {p} (a parameter "
                              "the function never reads)", 3.0) for p in unused]
    return out
