"""The mutation catalogue: the one-line edits tried as candidate patches, and guards."""
from __future__ import annotations

import ast
import functools
import json
import re
import tokenize
from dataclasses import dataclass

from .failure import Failure
from .source import _MISSING, Function, _call_args, _expected_from_assert, _replace_span, _stmt_ast, _tokens

COMPARE_SWAPS = {"<": ("<=", ">"), "<=": ("<", ">="), ">": (">=", "<"), ">=": (">", "<="),
                 "==": ("!=",), "!=": ("==",)}
BOUNDARY_SWAPS = {("<", "<="), ("<=", "<"), (">", ">="), (">=", ">")}
ARITH_SWAPS = {"+": ("-",), "-": ("+",), "*": ("/",), "/": ("//", "*"), "//": ("/", "%"), "%": ("//",),
               # augmented assignments: the operator, or a plain assignment instead of an accumulation
               "+=": ("-=", "*=", "="), "-=": ("+=", "="), "*=": ("/=", "+=", "="), "/=": ("*=", "//="),
               "//=": ("/=",), "%=": ("//=",)}
NAME_SWAPS = {"and": ("or",), "or": ("and",), "True": ("False",), "False": ("True",), "min": ("max",),
              "max": ("min",), "any": ("all",), "all": ("any",), "lower": ("upper",), "upper": ("lower",),
              "lstrip": ("strip",), "rstrip": ("strip",), "strip": ("rstrip", "lstrip"),
              "startswith": ("endswith",), "endswith": ("startswith",), "floor": ("ceil",), "ceil": ("floor",),
              "append": ("extend",), "extend": ("append",),
              # attributes only (`heapq.nlargest`, `pattern.match`): the same names as variables are not these
              "nlargest": ("nsmallest",), "nsmallest": ("nlargest",), "search": ("match",), "match": ("search",)}
ATTRIBUTE_ONLY = frozenset({"nlargest", "nsmallest", "search", "match"})
# Calls whose arguments are iterables or arbitrary objects, never counts: no argument offsets there.
ITERABLE_CALLS = frozenset({"zip", "map", "filter", "sorted", "reversed", "list", "tuple", "set", "frozenset", "iter",
                            "enumerate", "dict", "any", "all", "sum", "chain", "concat", "repeat", "cycle", "join",
                            "str", "repr", "print", "isinstance", "getattr", "hasattr", "append", "extend"})
NUMERIC_CALLS = {"round", "int", "float", "abs", "Decimal", "min", "max", "sum", "Fraction"}


@dataclass
class Candidate:
    path: str
    line: int                 # 1-based line of the original file that is replaced
    new_lines: tuple[str, ...]
    kind: str
    what: str
    score: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{json.dumps(self.new_lines)}"

    def label(self) -> str:
        return f"{self.path}:{self.line} {self.kind}: {self.what}"



def line_mutations(line: str, goal_numbers: tuple[int, ...] = (), names: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    """(kind, what, new line) for one source line: token-level and AST-level mutations.
    `goal_numbers`: integers the goal names; a constant may be replaced by one of them.
    `names`: the variables in scope (parameters and locals); a variable read may become another."""
    out: list[tuple[str, str, str]] = []
    code = line.rstrip("\n")
    if not code.strip() or code.strip().startswith(("#", '"""', "'''")):
        return out
    is_def = code.lstrip().startswith(("def ", "async def ", "class "))
    toks = [t for t in _tokens(code + "\n") if t.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL,
                                                                tokenize.NEWLINE, tokenize.COMMENT)]
    depth = 0   # inside [...]: a constant there is an index or a slice bound
    for k, t in enumerate(toks):
        if t.type == tokenize.OP and t.string in "[]":
            depth += 1 if t.string == "[" else -1
        if t.start[0] != 1 or t.end[0] != 1:
            continue
        (_, c0), (_, c1) = t.start, t.end
        if t.type == tokenize.OP and t.string in COMPARE_SWAPS and not is_def:
            for new in COMPARE_SWAPS[t.string]:
                kind = "boundary" if (t.string, new) in BOUNDARY_SWAPS else "comparison"
                out.append((kind, f"{t.string} -> {new}", _replace_span(code, c0, c1, new)))
        elif t.type == tokenize.OP and t.string in ARITH_SWAPS and not is_def and not (
                (k and toks[k - 1].type == tokenize.STRING and t.string in ("%", "+", "+="))
                or (k + 1 < len(toks) and toks[k + 1].type == tokenize.STRING)):   # `"%s" % x`, `x + ".0"`: text
            for new in ARITH_SWAPS[t.string]:
                out.append(("arithmetic", f"{t.string} -> {new}", _replace_span(code, c0, c1, new)))
        elif t.type == tokenize.NUMBER and re.fullmatch(r"\d+", t.string):
            n = int(t.string)
            prev = toks[k - 1] if k else None
            binary = (prev is not None and prev.type == tokenize.OP and prev.string in "+-" and k >= 2
                      and (toks[k - 2].type in (tokenize.NAME, tokenize.NUMBER) or toks[k - 2].string in ")]"))
            for g in goal_numbers:
                if g != n and g not in (n + 1, n - 1):
                    out.append(("default" if is_def else "goal-constant", f"{n} -> {g} (named in the goal)",
                                _replace_span(code, c0, c1, str(g))))
            for new in (n + 1, n - 1):
                if is_def:
                    out.append(("default", f"{n} -> {new}", _replace_span(code, c0, c1, str(new))))
                    continue
                kind = "slice" if depth > 0 else "constant"
                if new == 0 and binary:   # `x - 1` -> `x`, not `x - 0`
                    cut = toks[k - 2].end[1]
                    out.append((kind, f"drop {prev.string} 1", code[:cut] + code[c1:]))
                elif new >= 0:
                    out.append((kind, f"{n} -> {new}", _replace_span(code, c0, c1, str(new))))
        elif t.type == tokenize.NAME and t.string in NAME_SWAPS and (
                t.string not in ATTRIBUTE_ONLY or (k and toks[k - 1].string == ".")):
            for new in NAME_SWAPS[t.string]:
                kind = ("default" if is_def else "boolean") if t.string in ("True", "False") else (
                    "boolean" if t.string in ("and", "or", "any", "all") else
                    "extreme" if t.string in ("min", "max", "nlargest", "nsmallest") else "name")
                out.append((kind, f"{t.string} -> {new}", _replace_span(code, c0, c1, new)))
        elif t.type == tokenize.NAME and t.string == "not" and not is_def:
            # `not x` -> `x`, `x not in y` -> `x in y`
            out.append(("boolean", "drop `not`", _replace_span(code, c0, c1 + 1 if code[c1:c1 + 1] == " " else c1, "")))
        elif t.type == tokenize.NAME and t.string in ("if", "elif", "while") and k == 0:
            head = re.match(r"^(\s*(?:if|elif|while)\s+)(.+?):\s*$", code)
            if head:
                out.append(("boolean", "negate the condition", f"{head.group(1)}not ({head.group(2)}):"))
        elif t.type == tokenize.NAME and t.string in ("in", "is") and not code.lstrip().startswith("for ") \
                and not (k + 1 < len(toks) and toks[k + 1].string == "not"):
            negated = "not in" if t.string == "in" else "is not"
            out.append(("comparison", f"{t.string} -> {negated}", _replace_span(code, c0, c1, negated)))
        elif t.type == tokenize.NAME and t.string == "None" and is_def:
            for new in ("0", "1", "''"):
                out.append(("default", f"None -> {new}", _replace_span(code, c0, c1, new)))
    if not is_def:
        out += _ast_mutations(code)
        out += _variable_swaps(code, toks, names)
    return out


def _variable_swaps(code: str, toks: list[tokenize.TokenInfo], names: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """A variable read replaced by another variable in scope (`return lo` -> `return hi`)."""
    out: list[tuple[str, str, str]] = []
    if len(names) < 2:
        return out
    first = next((k for k, t in enumerate(toks) if t.type == tokenize.NAME), None)
    for k, t in enumerate(toks):
        if t.type != tokenize.NAME or t.string not in names or t.start[0] != 1:
            continue
        prev = toks[k - 1].string if k else ""
        nxt = toks[k + 1].string if k + 1 < len(toks) else ""
        # not an attribute, a call, a keyword argument's name, or the target of an assignment
        if prev in (".", "for") or nxt in ("(", "=") or (k == first and nxt in ("+=", "-=", "*=", "/=", ",")):
            continue
        for other in names:
            if other != t.string:
                out.append(("variable", f"{t.string} -> {other}", _replace_span(code, t.start[1], t.end[1], other)))
    return out


def _ast_mutations(code: str) -> list[tuple[str, str, str]]:
    parsed = _stmt_ast(code)
    if parsed is None:
        return []
    tree, indent = parsed
    out: list[tuple[str, str, str]] = []
    s = code.strip()

    def span(node: ast.AST) -> tuple[int, int] | None:
        if getattr(node, "lineno", 1) != 1 or getattr(node, "end_lineno", 1) != 1:
            return None
        return indent + node.col_offset, indent + node.end_col_offset

    def text(node: ast.AST) -> str:
        return s[node.col_offset:node.end_col_offset]

    arith_operands: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args):
            for a, b in zip(node.args, node.args[1:4]):
                sa, sb = span(a), span(b)
                if sa and sb:
                    new = code[:sa[0]] + text(b) + code[sa[1]:sb[0]] + text(a) + code[sb[1]:]
                    out.append(("swap", f"swap arguments {text(a)}, {text(b)}", new))
        if isinstance(node, ast.BinOp) and not _formats_text(node):
            arith_operands += [node.left, node.right]
            sp = span(node)
            if isinstance(node.op, (ast.Sub, ast.Div, ast.FloorDiv, ast.Mod)) and sp:
                new = _replace_span(code, *sp, f"{text(node.right)} {s[node.left.end_col_offset:node.right.col_offset].strip()} {text(node.left)}")
                out.append(("swap", f"swap operands of {text(node)}", new))
            if (isinstance(node.op, (ast.Div, ast.Mult)) and isinstance(node.right, ast.Constant)
                    and node.right.value in (100, 100.0) and sp):
                out.append(("percent", f"drop {text(node)[len(text(node.left)):].strip()}",
                            _replace_span(code, *sp, text(node.left))))
        if isinstance(node, ast.Subscript):
            sl = node.slice
            bounds = [sl.lower, sl.upper] if isinstance(sl, ast.Slice) else [sl]
            for b in bounds:
                # `e - 1` bounds are already covered by the constant mutations
                simple_offset = isinstance(b, ast.BinOp) and isinstance(b.right, ast.Constant)
                plain_index = not isinstance(sl, ast.Slice)
                if (b is not None and not isinstance(b, (ast.Constant, ast.Tuple, ast.UnaryOp)) and span(b)
                        and not simple_offset and not (plain_index and not isinstance(b, ast.Name))):
                    for d in ("+ 1", "- 1"):
                        out.append(("slice", f"{text(b)} -> {text(b)} {d}", _replace_span(code, *span(b), f"{text(b)} {d}")))
        if isinstance(node, ast.Return) and node.value is not None and span(node.value) and isinstance(
                node.value, (ast.Name, ast.Call, ast.BinOp, ast.Subscript, ast.Attribute)) and not _formats_text(node.value) \
                and not _constructs(node.value):   # `return cls(...)`: an object
            for d in ("+ 1", "- 1"):
                out.append(("offset", f"return {text(node.value)} {d}",
                            _replace_span(code, *span(node.value), f"{text(node.value)} {d}")))
        if isinstance(node, ast.Compare) and len(node.comparators) == 1 and span(node.comparators[0]) and isinstance(
                node.comparators[0], (ast.Name, ast.Call, ast.Subscript, ast.Attribute)) and isinstance(
                node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)):
            right = node.comparators[0]
            for d in ("+ 1", "- 1"):
                out.append(("offset", f"compare with {text(right)} {d}", _replace_span(code, *span(right), f"{text(right)} {d}")))
        callee = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else (
            node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else "")
        if isinstance(node, ast.Call) and callee not in ITERABLE_CALLS and callee not in ("range", "len"):
            # an argument one off (`cls(major, minor)` -> `cls(major, minor + 1)`, `islice(it, n)` -> `islice(it, n + 1)`)
            for b in node.args:
                if isinstance(b, (ast.Name, ast.Attribute, ast.Subscript)) and span(b) and not _is_callable_like(b):
                    for d in ("+ 1", "- 1"):
                        out.append(("argument", f"argument {text(b)} {d}", _replace_span(code, *span(b), f"{text(b)} {d}")))
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            # a bound with the wrong sign (`seq[n:]` -> `seq[-n:]`)
            for b in (node.slice.lower, node.slice.upper):
                if isinstance(b, ast.Name) and span(b):
                    out.append(("slice", f"{text(b)} -> -{text(b)}", _replace_span(code, *span(b), f"-{text(b)}")))
                elif isinstance(b, ast.UnaryOp) and isinstance(b.op, ast.USub) and isinstance(b.operand, ast.Name) and span(b):
                    out.append(("slice", f"{text(b)} -> {text(b.operand)}", _replace_span(code, *span(b), text(b.operand))))
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Subscript, ast.Attribute)) \
                and span(node.targets[0]) and span(node.value):
            # an accumulation written as a plain assignment (`counts[k] = 1` -> `counts[k] += 1`)
            t0, t1 = span(node.targets[0])
            v0 = span(node.value)[0]
            out.append(("arithmetic", "= -> +=", code[:t1] + " += " + code[v0:]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            for b in node.args:
                if not isinstance(b, ast.Constant) and span(b):
                    for d in ("+ 1", "- 1"):
                        out.append(("slice", f"range bound {text(b)} {d}", _replace_span(code, *span(b), f"{text(b)} {d}")))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in NUMERIC_CALLS:
            arith_operands += [a for a in node.args if isinstance(a, ast.Name)]
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
            arith_operands.append(node.value)
    seen_operands = set()
    for operand in arith_operands:
        if id(operand) in seen_operands:
            continue
        seen_operands.add(id(operand))
        if isinstance(operand, ast.Name) and span(operand):
            for op in ("/ 100", "* 100"):
                out.append(("percent", f"{operand.id} -> {operand.id} {op}",
                            _replace_span(code, *span(operand), f"{operand.id} {op}")))
    return out



def _formats_text(node: ast.AST) -> bool:
    """`"%s(%s)" % (a, b)`, `"a" + b`, `str(x)`: text, not arithmetic."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("str", "repr", "format"):
        return True
    return isinstance(node, ast.BinOp) and isinstance(node.left, (ast.Constant, ast.JoinedStr)) and isinstance(
        getattr(node.left, "value", ""), str)


def _constructs(node: ast.AST) -> bool:
    """`cls(...)`, `Version(...)`: a new object, never a number one off."""
    name = getattr(node, "func", None)
    name = name.id if isinstance(name, ast.Name) else name.attr if isinstance(name, ast.Attribute) else ""
    return name == "cls" or name[:1].isupper()


def _is_callable_like(node: ast.AST) -> bool:
    """A name that is passed as a function or class (`map(str, xs)`), not a number: its offset is noise."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(name) and (name[:1].isupper() or name in ("str", "int", "float", "bool", "len", "list", "dict",
                                                           "tuple", "set", "repr", "key", "func", "self", "cls"))


NEUTRAL_LITERALS = frozenset({"None", "True", "False", "0", "1", "-1", "0.0", "''", '""', "[]", "{}", "()"})


def documented_returns(fn: Function | None, lines: dict[int, str], failure: Failure) -> list[str]:
    """What a guard may return, from the function's annotation and docstring and the *type* of the
    value the test expects (never the value itself): `False` where it says bool, `0` for a count..."""
    header, doc, asserted = "", "", None
    if fn is not None:
        header = "".join(lines.get(n, "") for n in range(fn.def_line, fn.body_line))
        quote = min((i for i in (header.find('"""'), header.find("'''")) if i >= 0), default=-1)
        doc = header[quote:] if quote >= 0 else ""
        asserted = _expected_from_assert(fn.name, failure.assert_lines)   # its type only, never the value
    ann = re.search(r"->\s*([^:]+):", header)
    said = f"{ann.group(1) if ann else ''} {doc}".lower()
    out: list[str] = []
    if re.search(r"\bbool\b|\btrue\b|\bfalse\b|\bwhether\b", said) or asserted in ("True", "False") or (
            isinstance(failure.expected, bool) and failure.have_values):
        out += ["False", "True"]
    if re.search(r"\bint\b|\bfloat\b|\bnumber\b|\bcount\b|\bhow many\b|\btotal\b|\bsum\b", said) or (
            failure.have_values and type(failure.expected) in (int, float)):
        out.append("0")
    if re.search(r"\bstr\b|\bstring\b|\btext\b", said) or failure.have_values and isinstance(failure.expected, str):
        out.append("''")
    if re.search(r"\blist\b|\bsequence\b", said) or failure.have_values and isinstance(failure.expected, list):
        out.append("[]")
    if re.search(r"\bdict\b|\bmapping\b", said) or failure.have_values and isinstance(failure.expected, dict):
        out.append("{}")
    if re.search(r"\btuple\b", said) or failure.have_values and isinstance(failure.expected, tuple):
        out.append("()")
    out.append("None")
    return list(dict.fromkeys(out))


def frame_guards(path: str, line_no: int, lines: dict[int, str], fn: Function | None,
                 failure: Failure) -> list[Candidate]:
    """Guards right before the line that raised: `if EXPR is None` / `if not EXPR` for the names,
    attributes and calls it uses, returning a value of the documented type."""
    text = lines.get(line_no, "")
    parsed = _stmt_ast(text)
    if parsed is None or text.lstrip().startswith(("def ", "elif ", "else", "except", "finally")):
        return []
    tree, _ = parsed
    exprs = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Call, ast.Compare, ast.BinOp, ast.Subscript, ast.Attribute)):
            parts = (node.args if isinstance(node, ast.Call) else [node.left, *node.comparators]
                     if isinstance(node, ast.Compare) else [node.left, node.right] if isinstance(node, ast.BinOp)
                     else [node.value])
            for part in parts:
                if isinstance(part, (ast.Name, ast.Attribute, ast.Call)) and ast.unparse(part) not in exprs:
                    exprs.append(ast.unparse(part))
    returns = documented_returns(fn, lines, failure)
    indent = text[:len(text) - len(text.lstrip())]
    out = []
    for expr in exprs[:6]:
        if len(expr) > 60 or not re.match(r"^[\w.()\[\], ]+$", expr):
            continue
        for kind, cond in (("none-guard", f"{expr} is None"), ("empty-guard", f"not {expr}")):
            for rank, ret in enumerate(returns[:2]):
                c = Candidate(path, line_no, (f"{indent}if {cond}:\n", f"{indent}    return {ret}\n", text),
                              kind, f"guard `if {cond}: return {ret}` before the failing line")
                c.score = 2.0 - rank
                out.append(c)
    return out


def _after_checks(fn: Function, lines: dict[int, str]) -> int | None:
    """The first statement after the function's leading argument checks (`if ...: raise ...`
    blocks): an early return belongs after them, so bad arguments are still refused."""
    n, ind = fn.body_line, len(fn.body_indent)
    moved = False
    while n <= fn.end_line and (lines.get(n) or "").strip().startswith("if "):
        body = [k for k in range(n + 1, fn.end_line + 1) if (lines.get(k) or "").strip()]
        block = []
        for k in body:
            text = lines[k]
            if len(text) - len(text.lstrip()) <= ind:
                break
            block.append(k)
        # a block that only raises (the raise may continue over several lines)
        if not block or not lines[block[0]].strip().startswith("raise") or any(
                re.match(r"\s*(return|if|elif|else|for|while|with|try)\b", lines[k]) for k in block[1:]):
            break
        n, moved = block[-1] + 1, True
        while n <= fn.end_line and not (lines.get(n) or "").strip():
            n += 1
    return n if moved and n <= fn.end_line and n in lines else None


def guard_candidates(path: str, fn: Function, lines: dict[int, str], failure: Failure) -> list[Candidate]:
    out = []
    call_args = _call_args(fn.name, failure.assert_lines)
    returns = documented_returns(fn, lines, failure)
    ind = fn.body_indent
    after = _after_checks(fn, lines)
    # at the top of the body, and after the argument checks (preferred: they still refuse bad input)
    sites = [(fn.body_line, 0.0)] + ([(after, 0.5)] if after else [])
    for i, p in enumerate(fn.params):
        if call_args and i >= len(call_args):
            continue   # not passed by the failing call: its default is not the problem a guard solves
        arg = call_args[i] if i < len(call_args) else _MISSING
        relevant = arg is _MISSING or arg is None or (hasattr(arg, "__len__") and len(arg) == 0)
        if not relevant:
            continue
        for kind, cond, rets in (("none-guard", f"{p} is None", returns[:2] + ["None"]),
                                 ("empty-guard", f"not {p}", returns[:2] + [p])):
            for ret in dict.fromkeys(rets):
                for site, bonus in sites:
                    new = (f"{ind}if {cond}:\n", f"{ind}    return {ret}\n", lines[site])
                    c = Candidate(path, site, new, kind, f"guard `if {cond}: return {ret}` "
                                  + (f"at the top of {fn.name}" if site == fn.body_line else
                                     f"after {fn.name}'s argument checks"))
                    # the failing call passes exactly the value this guard catches
                    c.score = 3.0 if (arg is None and kind == "none-guard") or (arg is not _MISSING and arg is not None
                                                                                and kind == "empty-guard") else 0.0
                    c.score += bonus - (0.5 if ret != rets[0] else 0.0)
                    out.append(c)
    return out


def copies_expected(c: Candidate, original: str, failure: Failure) -> bool:
    """Does the candidate write a value the failing test expects into the code? Only neutral values
    (None, booleans, 0, 1, empty) may appear; anything else would fit the test, not the behaviour."""
    if not failure.expected_literals:
        return False
    added = "".join(c.new_lines)
    # Cheap first: a literal that is written needs its text (a string's content) in the new lines.
    if not any(_needle(lit) in added for lit in failure.expected_literals if lit not in NEUTRAL_LITERALS):
        return False
    before = _literals_in(original)
    for line in c.new_lines:
        for lit in _literals_in(line) - before:
            if lit in failure.expected_literals and lit not in NEUTRAL_LITERALS:
                return True
    return False


def _needle(lit: str) -> str:
    try:
        value = ast.literal_eval(lit)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return lit
    return value if isinstance(value, str) else lit


@functools.lru_cache(maxsize=4096)
def _literals_in(line: str) -> frozenset[str]:
    parsed = _stmt_ast(line)
    if parsed is None:
        return frozenset()
    out = set()
    for node in ast.walk(parsed[0]):
        if isinstance(node, (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.UnaryOp)):
            try:
                out.add(repr(ast.literal_eval(node)))
            except (ValueError, TypeError, SyntaxError, RecursionError):
                continue
    return frozenset(out)
