"""Parsing one source line and the single-statement edits of it (stdlib only, Python 3.9 and later,
no import of the project: it is shipped into the sandbox with operators.py).

Edits from the published taxonomy of single-statement bugs (ManySStuBs4J, Karampatsis & Sutton,
MSR 2020), adapted to Python: the kinds of one-line fix real projects' histories show most often and
the operator catalogue did not already cover.

- same function, fewer arguments: the last positional argument or a keyword argument dropped
  (`s.replace(a, b, 1)` -> `s.replace(a, b)`);
- same function, more arguments: the documented optional argument of a few builtins
  (`int(s)` -> `int(s, 16)`, `round(x)` -> `round(x, 2)`);
- change numeral: a power of ten one order of magnitude off (`% 10` -> `% 100`);
- a missing or extra normalizing call on a compared value (`w in WORDS` -> `w.lower() in WORDS`);
- swapped branches of a conditional expression (`a if c else b` -> `b if c else a`);
- an expression one off where it is returned or assigned from a conditional expression
  (`None if n is None else n` -> `... else n + 1`);
- a regular expression's character class or quantifier inverted (`\\D` -> `\\d`, `+` -> `*`);
- a less or more specific condition: one operand of `and`/`or` dropped;
- a statement deleted (a call, or a transformation of a value, that should not run);
- a lost sign or negation: a self-assignment `x = x` (a statement with no effect, which linters flag)
  is the remnant of `x = -x` or `x = not x`; a returned or assigned name may lack its minus;
- a character range in a regular expression one off at either end (`[0-6]` -> `[0-7]`), in a pattern
  passed to `re` or written as a raw string.

Each function takes one source line and returns (kind, what, new line) triples, like the catalogue.
"""
from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from dataclasses import dataclass
Edit = tuple[str, str, str]   # (family, what, the new line)


def source_lines(text: str, ends: bool = True) -> list[str]:
    """A source's lines (with their ends, or without the "\n"), split on "\n" only, as Python numbers them
    (str.splitlines also splits on \x0c, \x1c-\x1e, \x85 and \u2028-\u2029, which a module may hold in a
    page break or a string)."""
    lines = re.findall(r"[^\n]*\n|[^\n]+$", text)
    return lines if ends else [t.rstrip("\n") for t in lines]


def tokens_of(line: str) -> list[tokenize.TokenInfo]:
    toks = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(line).readline):
            toks.append(t)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return toks


def parses(stmt: str) -> bool | None:
    """Does the stripped line parse as a statement (a header gets a `pass` body)? None: it is a
    fragment of a longer statement, so nothing can be said."""
    s = stmt.strip()
    if not s or s.startswith("#"):
        return None
    variants = [s, s + " pass", s + "\n    pass", "if 1:\n    pass\n" + s + "\n    pass"]
    if s.startswith(("elif ", "else")):
        variants.insert(0, "if 1:\n    pass\n" + s + "\n    pass")
    for v in variants:
        try:
            ast.parse(v)
            return True
        except SyntaxError:
            continue
    return False


def statement_ast(line: str) -> tuple[ast.AST, int] | None:
    """The line's AST and the column offset of its stripped text."""
    s = line.strip()
    indent = len(line) - len(line.lstrip())
    # a header's trailing comment would swallow the `pass` body (`for x in xs:  # note`); cut before
    # it, the columns of what precedes it are unchanged
    comment = next((t.start[1] for t in tokens_of(s + "\n") if t.type == tokenize.COMMENT and t.start[0] == 1), None)
    for v in (s, s + " pass") + ((s[:comment].rstrip() + " pass",) if comment else ()):
        try:
            return ast.parse(v), indent
        except SyntaxError:
            continue
    return None


def char_column(text: str, byte_column: int) -> int:
    """The parser's column (UTF-8 bytes into `text`) as a character index into `text`."""
    return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))


@dataclass
class StatementText:
    """One line parsed as a statement: where each of its one-line nodes sits in the line, and its text.
    The parser counts columns in UTF-8 bytes, the line's text in characters: `"é"` before a node would
    shift every edit placed by the parser's columns."""
    code: str
    indent: int

    def span(self, node: ast.AST) -> tuple[int, int] | None:
        if getattr(node, "lineno", 1) != 1 or getattr(node, "end_lineno", 1) != 1:
            return None
        stripped = self.code.strip()
        return (self.indent + char_column(stripped, node.col_offset),                     # type: ignore[attr-defined]
                self.indent + char_column(stripped, node.end_col_offset))                 # type: ignore[attr-defined]

    def at(self, node: ast.AST) -> tuple[int, int]:
        """`span` of a node the caller knows is on this line."""
        where = self.span(node)
        if where is None:
            raise ValueError("a node over several lines has no span in one line")
        return where

    def text(self, node: ast.AST) -> str:
        stripped = self.code.strip()
        return stripped[char_column(stripped, node.col_offset):char_column(stripped, node.end_col_offset)]   # type: ignore[attr-defined]


def replace_span(line: str, start: int, end: int, text: str) -> str:
    return line[:start] + text + line[end:]


def callable_names(lines: dict[int, str]) -> tuple[str, ...]:
    """The functions and methods the lines define, and the functions they call by a bare name
    (`f(x)`, not `x.f()`: a method of some other object is no sibling), in order of first appearance."""
    found: list[str] = []
    for n in sorted(lines):
        found += re.findall(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)", lines[n])
        found += re.findall(r"(?<![\w.])([A-Za-z_]\w*)\s*\(", lines[n])
    return tuple(dict.fromkeys(x for x in found if not keyword.iskeyword(x)))


ATTRIBUTE_READ = re.compile(r"\bself\.([A-Za-z_]\w*)\b(?!\s*\()")
MAX_ALL_ATTRIBUTES = 8   # a class with more: only the attributes whose names look alike are swapped


def attribute_names(lines: dict[int, str]) -> tuple[str, ...]:
    """The attributes of `self` the lines read or set (not its methods: `self.f(` is a call), in order."""
    return tuple(dict.fromkeys(a for n in sorted(lines) for a in ATTRIBUTE_READ.findall(lines[n])))


def attribute_swaps(code: str, attributes: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """`self.a` read where another attribute of the object was meant (`self._step` -> `self._stop`,
    `self.path[section]` -> `self.sections[section]`): every other attribute when the class has few,
    else those of a similar name or sharing a word. Never the target of an assignment, a method
    call, or text inside a string or a comment (the line's tokens are read, not its characters)."""
    out = []
    toks = [t for t in tokens_of(code + "\n") if t.type in (tokenize.NAME, tokenize.OP)]
    for k in range(len(toks) - 2):
        base, dot, attr = toks[k], toks[k + 1], toks[k + 2]
        after = toks[k + 3].string if k + 3 < len(toks) else ""
        if base.string != "self" or dot.string != "." or attr.string not in attributes or attr.start[0] != 1 \
                or (k and toks[k - 1].string == ".") or after == "(" or (k == 0 and after in ("=", ":")):
            continue
        name = attr.string
        others = [a for a in attributes if a != name] if len(attributes) <= MAX_ALL_ATTRIBUTES else (
            similar_names(name, attributes) + [a for a in attributes if a != name and _shares_word(a, name)])
        for other in dict.fromkeys(others):
            out.append(("field", f"self.{name} -> self.{other}", replace_span(code, attr.start[1], attr.end[1], other)))
    return out


def _shares_word(a: str, b: str) -> bool:
    return bool(set(a.strip("_").split("_")) & set(b.strip("_").split("_")) - {""}) or (
        len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1)


def similar_names(name: str, pool: tuple[str, ...]) -> list[str]:
    """Names in `pool` one could write for `name` by a slip: one extends the other by a letter or two
    (`concat`/`concatv`, `sort`/`sorted`), or they differ only in leading underscores."""
    out = []
    for other in pool:
        if other == name or min(len(name), len(other)) < 3:
            continue
        short, long_ = sorted((name, other), key=len)
        if (long_.startswith(short) and len(long_) - len(short) <= 2) or name.lstrip("_") == other.lstrip("_"):
            out.append(other)
    return out


# The forms "no result" takes, and the ones each is mistaken for.
NEUTRAL_RETURNS = {"None": ("[]", "''", "False"), "[]": ("None", "()"), "()": ("None", "[]"), "{}": ("None",),
                   "''": ("None",), "set()": ("None",)}


def neutral_text(node: ast.AST) -> str | None:
    """`None`, `[]`, `()`, `{}`, `''`, `set()` as written, for a node that is one of them."""
    if isinstance(node, ast.Constant) and (node.value is None or node.value == ""):
        return "None" if node.value is None else "''"
    if isinstance(node, (ast.List, ast.Tuple)) and not node.elts:
        return "[]" if isinstance(node, ast.List) else "()"
    if isinstance(node, ast.Dict) and not node.keys:
        return "{}"
    if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "set" and not node.args:
        return "set()"
    return None


# Builtins whose optional argument is a well-known fix: the argument and the values it usually takes.
MORE_ARGS = {"int": ("16", "8", "2"), "round": ("2",)}
# Builtins that take at least this many positional arguments: one fewer can only raise TypeError
MIN_ARGS = {"hasattr": 2, "getattr": 2, "setattr": 3, "delattr": 2, "isinstance": 2, "issubclass": 2,
            "divmod": 2, "pow": 2}
# Normalizing calls whose absence (or presence) on a compared value is a common bug.
NORMALIZERS = ("lower", "strip")
REGEX_CALLS = frozenset({"compile", "sub", "subn", "match", "fullmatch", "search", "findall", "finditer", "split"})
CLASS_ESCAPES = "dDwWsSbB"


def single_statement_edits(code: str) -> list[Edit]:
    parsed = statement_ast(code)
    if parsed is None:
        return []
    tree, indent = parsed
    s = code.strip()
    out: list[Edit] = []
    stmt = StatementText(code, indent)
    span, at, text = stmt.span, stmt.at, stmt.text

    # a power of ten that scales or wraps a value (`n % 10`, `x * 100`)
    scales = {id(b.right): True for b in ast.walk(tree)
              if isinstance(b, ast.BinOp) and isinstance(b.op, (ast.Mod, ast.FloorDiv, ast.Div, ast.Mult))}
    patterns: set[int] = set()   # pattern literals already given regex edits through their call
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and span(node):
            out += _fewer_args(code, node, stmt)
            out += _more_args(code, node, stmt)
            if _callee(node) in REGEX_CALLS:
                out += _regex_edits(code, node, stmt)
                if node.args:
                    patterns.add(id(node.args[0]))
        # ... written as an integer or a float (`/ 10.0`): ten times larger or smaller, in the same form
        if isinstance(node, ast.Constant) and type(node.value) in (int, float) and span(node) \
                and (power := re.fullmatch(r"1(0+)(\.0*)?", text(node))):
            zeros, point = len(power.group(1)), power.group(2) or ""
            for new in ("1" + "0" * (zeros + 1) + point, "1" + "0" * (zeros - 1) + point):
                if float(new) == 1 and scales.get(id(node)):
                    continue   # `x % 1`, `x * 1`: degenerate, never the intended scale
                out.append(("scale" if scales.get(id(node)) else "numeral", f"{text(node)} -> {new}",
                            replace_span(code, *at(node), new)))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(
                node.ops[0], (ast.In, ast.NotIn, ast.Eq, ast.NotEq)) and span(node.left):
            out += _normalize(code, node.left, stmt)
        if isinstance(node, ast.IfExp) and span(node.body) and span(node.orelse):
            (b0, b1), (o0, o1) = at(node.body), at(node.orelse)
            out.append(("branches", f"swap the branches of `{text(node)}`",
                        code[:b0] + text(node.orelse) + code[b1:o0] + text(node.body) + code[o1:]))
            for branch in (node.body, node.orelse):
                if isinstance(branch, (ast.Name, ast.Attribute, ast.Subscript)) and span(branch):
                    for d in ("+ 1", "- 1"):
                        out.append(("offset", f"{text(branch)} -> {text(branch)} {d} (a branch of a conditional)",
                                    replace_span(code, *at(branch), f"{text(branch)} {d}")))
        if isinstance(node, ast.BoolOp) and len(node.values) == 2 and span(node):
            for keep in node.values:
                if span(keep):
                    out.append(("condition", f"`{text(node)}` -> `{text(keep)}`",
                                replace_span(code, *at(node), text(keep))))
    # a raw string literal is, in practice, a regular expression: its character ranges may be one off
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in patterns and span(node) \
                and code[at(node)[0]:at(node)[0] + 1] in "rR":
            out += _range_edits(code, *at(node))
    top = tree.body[0] if isinstance(tree, ast.Module) and tree.body else None
    if isinstance(top, ast.Assign) and len(top.targets) == 1 and isinstance(top.targets[0], ast.Name) \
            and isinstance(top.value, ast.Name) and top.value.id == top.targets[0].id and span(top.value):
        name = top.value.id   # `x = x`: no effect; what was meant changed the value
        for new, what in ((f"-{name}", "restore the sign"), (f"not {name}", "restore the negation")):
            out.append(("sign", f"{what}: `{name} = {new}`", replace_span(code, *at(top.value), new)))
    elif isinstance(top, (ast.Return, ast.Assign)) and isinstance(top.value, ast.Name) and span(top.value):
        name = top.value.id   # `return offset` for `return -offset`: a value with the wrong sign
        out.append(("negate", f"{name} -> -{name}", replace_span(code, *at(top.value), f"-{name}")))
    # a call whose effect should not happen, or a transformation of a value (`text = f(text)`): deleting
    # either leaves every name defined
    transforms = isinstance(top, ast.Assign) and len(top.targets) == 1 and isinstance(top.targets[0], ast.Name) and any(
        isinstance(n, ast.Name) and n.id == top.targets[0].id for n in ast.walk(top.value))
    if (isinstance(top, ast.Expr) or transforms) and isinstance(getattr(top, "value", None), ast.Call) \
            and not s.endswith((",", "(", "[", "{", "\\")):
        out.append(("delete", f"delete `{s[:60]}`", code[:indent] + "pass"))   # `pass`: the block stays valid
    return out


def _callee(node: ast.Call) -> str:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _fewer_args(code: str, node: ast.Call, stmt: StatementText) -> list[Edit]:
    span, at, text = stmt.span, stmt.at, stmt.text
    out = []
    args = node.args
    builtin = node.func.id if isinstance(node.func, ast.Name) else ""
    if len(args) > max(1, MIN_ARGS.get(builtin, 1)) and not any(isinstance(a, ast.Starred) for a in args) \
            and span(args[-1]) and span(args[-2]):
        cut0, cut1 = at(args[-2])[1], at(args[-1])[1]
        out.append(("arguments", f"drop the argument {text(args[-1])} of {_callee(node)}()", code[:cut0] + code[cut1:]))
    for k, kw in enumerate(node.keywords):
        if kw.arg is None or not span(kw.value):
            continue
        v0, v1 = at(kw.value)
        start = code.rfind(kw.arg, 0, v0)
        if k == 0 and not args:   # the first argument: drop it and the comma after it
            nxt = code.find(",", v1)
            stop = nxt + 1 if nxt >= 0 and nxt < at(node)[1] - 1 else v1
            new = code[:start] + code[stop:].lstrip(" ") if stop != v1 else code[:start] + code[v1:]
        else:
            before = code.rfind(",", 0, start)
            new = code[:before] + code[v1:]
        out.append(("arguments", f"drop {kw.arg}={text(kw.value)} of {_callee(node)}()", new))
    return out


def _more_args(code: str, node: ast.Call, stmt: StatementText) -> list[Edit]:
    span, at, text = stmt.span, stmt.at, stmt.text
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    if name not in MORE_ARGS or len(node.args) != 1 or node.keywords or not span(node.args[0]):
        return []
    end = at(node.args[0])[1]
    return [("arguments", f"{name}({text(node.args[0])}) -> {name}({text(node.args[0])}, {extra})",
             code[:end] + f", {extra}" + code[end:]) for extra in MORE_ARGS[name]]


def _normalize(code: str, operand: ast.AST, stmt: StatementText) -> list[Edit]:
    """`w in WORDS` -> `w.lower() in WORDS`; `w.lower() in WORDS` -> `w in WORDS`."""
    span, at, text = stmt.span, stmt.at, stmt.text
    if isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute) and operand.func.attr in NORMALIZERS \
            and not operand.args and span(operand.func.value):
        inner = text(operand.func.value)
        return [("normalize", f"{text(operand)} -> {inner}", replace_span(code, *at(operand), inner))]
    if not isinstance(operand, (ast.Name, ast.Attribute, ast.Subscript)):
        return []
    return [("normalize", f"{text(operand)} -> {text(operand)}.{m}()",
             replace_span(code, *at(operand), f"{text(operand)}.{m}()")) for m in NORMALIZERS]


def _regex_edits(code: str, node: ast.Call, stmt: StatementText) -> list[Edit]:
    """Inside the pattern literal: one class escape's case flipped, one `+`/`*` quantifier swapped."""
    span = stmt.span
    pattern = node.args[0] if node.args else None
    if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str) and span(pattern)):
        return []
    p0, p1 = stmt.at(pattern)
    literal = code[p0:p1]
    on_re = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
    if not (on_re or literal[:1] in "rR" or _callee(node) == "compile"):
        return []   # `text.split("+")`: a plain string method, not a pattern
    out = []
    for m in re.finditer(r"(?<!\\)((?:\\\\)*)\\([%s])" % CLASS_ESCAPES, literal):
        at = m.end() - 1
        flipped = literal[:at] + literal[at].swapcase() + literal[at + 1:]
        out.append(("regex", f"\\{literal[at]} -> \\{literal[at].swapcase()} in the pattern",
                    code[:p0] + flipped + code[p1:]))
    for m in re.finditer(r"(?<!\\)[+*]", literal):
        at = m.start()
        new = "*" if literal[at] == "+" else "+"
        out.append(("regex", f"quantifier {literal[at]} -> {new} in the pattern",
                    code[:p0] + literal[:at] + new + literal[at + 1:] + code[p1:]))
    return out + _range_edits(code, p0, p1)


RANGE_RE = re.compile(r"(?<!\\)\[\^?[^\]]*?(?<![\\])([0-9A-Za-z])-([0-9A-Za-z])")


def _range_edits(code: str, p0: int, p1: int) -> list[Edit]:
    """A character range of a pattern literal one off at either end: `[0-6]` -> `[0-7]`, `[a-y]` -> `[a-z]`."""
    literal, out = code[p0:p1], []
    for m in RANGE_RE.finditer(literal):
        lo, hi = m.group(1), m.group(2)
        if not (lo <= hi and (lo.isdigit() == hi.isdigit()) and (lo.isdigit() or lo.islower() == hi.islower())):
            continue
        for at, ch in ((m.start(1), lo), (m.start(2), hi)):
            for step in (1, -1):
                new = chr(ord(ch) + step)
                if not new.isalnum() or (new.isdigit() != ch.isdigit()) or (at == m.start(1) and new > hi) \
                        or (at == m.start(2) and new < lo):
                    continue
                rng = f"{lo}-{hi}".replace(ch, new, 1) if at == m.start(1) else f"{lo}-{new}"
                out.append(("regex", f"range [{lo}-{hi}] -> [{rng}] in the pattern",
                            code[:p0] + literal[:at] + new + literal[at + 1:] + code[p1:]))
    return out
