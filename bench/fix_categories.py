"""The shape of a one-line fix, by the smallest AST difference between the buggy and the fixed line
(the single-statement bug categories of ManySStuBs4J and PySStuBs, adapted: fix_shapes.py's table).

A line that is a fragment of a longer statement (`    foo(a,`) is parsed with the few closings that
make it a statement; when neither side parses, the tokens that differ decide.
"""
from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from typing import Any

HEADS = ("", "if ", "x = ", "x ", "f(", "try:\n pass\n", "if 1:\n pass\n")
TAILS = ("", " pass", "None")
IGNORED_FIELDS = ("ctx", "type_comment", "kind")
CLOSING = {"(": ")", "[": "]", "{": "}"}
OPENING = {v: k for k, v in CLOSING.items()}


def _balance(s: str) -> tuple[str, str]:
    """The brackets a fragment of a longer statement closes without opening, and leaves open."""
    stack: list[str] = []
    before = ""
    quote = ""
    k = 0
    while k < len(s):
        ch = s[k]
        if quote:
            if ch == "\\":
                k += 1
            elif s.startswith(quote, k):
                k += len(quote) - 1
                quote = ""
        elif ch == "#":
            break
        elif ch in "'\"":
            quote = s[k:k + 3] if s[k:k + 3] in ("'''", '"""') else ch
            k += len(quote) - 1
        elif ch in CLOSING:
            stack.append(ch)
        elif ch in OPENING:
            if stack:
                stack.pop()
            else:
                before = OPENING[ch] + before
        k += 1
    return before, "".join(CLOSING[c] for c in reversed(stack))


def _stripped(line: str) -> str:
    return line.strip().rstrip("\\").strip()


def wrappers(line: str) -> list[tuple[str, str]]:
    """(head, tail) around the stripped line that may make a fragment parse, the plain ones first."""
    opens, closes = _balance(_stripped(line))
    return [(head + opens, closes + tail + (")" if head == "f(" else "")) for head in HEADS for tail in TAILS]


def _try(wrap: tuple[str, str], line: str) -> ast.AST | None:
    s = _stripped(line)
    for text in (s, s.rstrip(",")):
        try:
            return ast.parse(wrap[0] + text + wrap[1])
        except (SyntaxError, ValueError):
            continue
    return None


def parse(line: str) -> ast.AST | None:
    for w in wrappers(line):
        tree = _try(w, line)
        if tree is not None:
            return tree
    return None


def parse_pair(old: str, new: str) -> tuple[ast.AST | None, ast.AST | None]:
    """Both lines parsed with the same wrapping when one fits both (so the wrapping is no difference)."""
    for w in wrappers(old) + wrappers(new):
        a = _try(w, old)
        b = _try(w, new) if a is not None else None
        if a is not None and b is not None:
            return a, b
    return parse(old), parse(new)


def same_code(a: str, b: str) -> bool:
    """The same statement: equal ASTs, or, for fragments that do not parse, the same tokens (the text
    inside a string literal counts, whitespace between tokens does not)."""
    ta, tb = parse_pair(a, b)
    if ta is not None and tb is not None:
        return ast.dump(ta) == ast.dump(tb)
    return _tokens(a) == _tokens(b) and bool(_tokens(a))


def _diffs(a: Any, b: Any, ancestors: tuple) -> list[tuple[Any, Any, tuple, str]]:
    """(old, new, ancestors, field) at the lowest nodes where the two trees differ."""
    if type(a) is not type(b):
        return [(a, b, ancestors, "")]
    if isinstance(a, ast.AST):
        out: list[tuple[Any, Any, tuple, str]] = []
        for f in a._fields:
            if f in IGNORED_FIELDS:
                continue
            va, vb = getattr(a, f, None), getattr(b, f, None)
            if isinstance(va, list) and isinstance(vb, list):
                if len(va) != len(vb):
                    out.append((va, vb, ancestors + (a,), f))
                else:
                    for x, y in zip(va, vb):
                        out += _diffs(x, y, ancestors + (a,))
            elif isinstance(va, ast.AST) or isinstance(vb, ast.AST):
                out += _diffs(va, vb, ancestors + (a,))
            elif va != vb:
                out.append((va, vb, ancestors + (a,), f))
        return out
    return [] if a == b else [(a, b, ancestors, "")]


def _eq(a: Any, b: Any) -> bool:
    return isinstance(a, ast.AST) and isinstance(b, ast.AST) and ast.dump(a) == ast.dump(b)


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return any(_eq(n, inner) for n in ast.walk(outer) if n is not outer)


def _list_change(old: list, new: list, parent: ast.AST, f: str) -> str:
    more = len(new) > len(old)
    what = {("Call", "args"): "argument", ("Call", "keywords"): "keyword argument",
            ("BoolOp", "values"): "operand of and/or", ("Compare", "ops"): "comparison in a chain",
            ("List", "elts"): "element", ("Tuple", "elts"): "element", ("Set", "elts"): "element",
            ("Dict", "keys"): "dict entry", ("JoinedStr", "values"): "f-string part",
            ("ExceptHandler", "type"): "exception type", ("arguments", "args"): "parameter",
            ("FunctionDef", "decorator_list"): "decorator", ("comprehension", "ifs"): "comprehension filter",
            ("Subscript", "elts"): "index"}.get((type(parent).__name__, f), f"{type(parent).__name__}.{f}")
    if isinstance(parent, ast.BoolOp):
        return f"condition: {'added' if more else 'removed'} `{ast.dump(parent.op)[:-2].lower()} X`"
    return f"{'added' if more else 'removed'} {what}"


def _scalar_change(old: Any, new: Any, ancestors: tuple, f: str) -> str:
    parent = ancestors[-1] if ancestors else None
    grand = ancestors[-2] if len(ancestors) > 1 else None
    called = isinstance(grand, ast.Call) and grand.func is parent
    if isinstance(parent, ast.Attribute) and f == "attr":
        return "changed method called" if called else "changed attribute"
    if isinstance(parent, ast.Name) and f == "id":
        return "changed function called" if called else "changed identifier"
    if isinstance(parent, ast.Constant) and f == "value":
        if isinstance(old, bool) or isinstance(new, bool) or old is None or new is None:
            return "changed True/False/None literal"
        if isinstance(old, (int, float)) and isinstance(new, (int, float)):
            return "changed number literal"
        if isinstance(old, str) and isinstance(new, str):
            return "changed string literal"
        return "changed literal type"
    if isinstance(parent, ast.keyword) and f == "arg":
        return "changed keyword argument name"
    return f"changed {type(parent).__name__}.{f}"


def _node_change(old: Any, new: Any, ancestors: tuple) -> str:
    if isinstance(old, ast.AST) and isinstance(new, ast.AST):
        for base, what in ((ast.operator, "binary operator"), (ast.cmpop, "comparison operator"),
                           (ast.boolop, "and/or"), (ast.unaryop, "unary operator")):
            if isinstance(old, base) and isinstance(new, base):
                return f"changed {what}"
        if isinstance(new, ast.Call) and isinstance(new.func, ast.Attribute) and _eq(new.func.value, old):
            return "added method call on an expression"
        if isinstance(old, ast.Call) and isinstance(old.func, ast.Attribute) and _eq(old.func.value, new):
            return "removed method call on an expression"
        if isinstance(new, ast.Call) and any(_eq(a, old) for a in new.args):
            return "added call around an expression"
        if isinstance(old, ast.Call) and any(_eq(a, new) for a in old.args):
            return "removed call around an expression"
        if isinstance(new, ast.BoolOp) and any(_eq(v, old) for v in new.values):
            return f"condition: added `{type(new.op).__name__.lower()} X`"
        if isinstance(old, ast.BoolOp) and any(_eq(v, new) for v in old.values):
            return f"condition: removed `{type(old.op).__name__.lower()} X`"
        if isinstance(new, ast.UnaryOp) and _eq(new.operand, old):
            return "added `not`" if isinstance(new.op, ast.Not) else "added unary operator"
        if isinstance(old, ast.UnaryOp) and _eq(old.operand, new):
            return "removed `not`" if isinstance(old.op, ast.Not) else "removed unary operator"
        if isinstance(new, ast.Attribute) and _eq(new.value, old):
            return "added attribute access"
        if isinstance(old, ast.Attribute) and _eq(old.value, new):
            return "removed attribute access"
        if isinstance(new, ast.Subscript) and _eq(new.value, old):
            return "added subscript"
        if isinstance(old, ast.Subscript) and _eq(old.value, new):
            return "removed subscript"
        if isinstance(new, ast.BinOp) and (_eq(new.left, old) or _eq(new.right, old)):
            return "added binary operand (`x` -> `x OP y`)"
        if isinstance(old, ast.BinOp) and (_eq(old.left, new) or _eq(old.right, new)):
            return "removed binary operand"
        if isinstance(new, ast.Compare) and _eq(new.left, old):
            return "condition: value -> comparison"
        if isinstance(new, ast.IfExp) and (_eq(new.body, old) or _eq(new.orelse, old)):
            return "added conditional expression"
        if isinstance(new, ast.Call) and isinstance(old, ast.Call) and _eq(new.func, old.func):
            return "changed arguments"
        if _contains(new, old):
            return "wrapped expression (other)"
        if _contains(old, new):
            return "unwrapped expression (other)"
        kinds = {ast.Name: "name", ast.Attribute: "attribute", ast.Constant: "literal", ast.Call: "call"}
        ko, kn = kinds.get(type(old)), kinds.get(type(new))
        if ko and kn:
            return f"replaced {ko} with {kn}"
        if isinstance(old, ast.stmt) or isinstance(new, ast.stmt):
            return "changed statement kind"
        return f"replaced {type(old).__name__} with {type(new).__name__}"
    if old is None or new is None:
        node = new if old is None else old
        return f"{'added' if old is None else 'removed'} {type(node).__name__}" + (
            f" of {type(ancestors[-1]).__name__}" if ancestors else "")
    return "other"


def category(old: str, new: str) -> str:
    ta, tb = parse_pair(old, new)
    if ta is None or tb is None:
        return "token-level: " + _token_category(old, new)
    diffs = _diffs(ta, tb, ())
    if not diffs:
        return "changed indentation (moved into or out of a block)" if old[:len(old) - len(old.lstrip())] != \
            new[:len(new) - len(new.lstrip())] else "same AST (formatting)"
    if len(diffs) == 1:
        return _one(*diffs[0])
    if len(diffs) == 2 and all(isinstance(d[0], ast.AST) for d in diffs) and _eq(diffs[0][0], diffs[1][1]) \
            and _eq(diffs[0][1], diffs[1][0]):
        return "swapped two expressions"
    return "several: " + " + ".join(sorted({_one(*d) for d in diffs}))


def _one(a: Any, b: Any, ancestors: tuple, f: str) -> str:
    if isinstance(a, list):
        return _list_change(a, b, ancestors[-1], f)
    if f:
        return _scalar_change(a, b, ancestors, f)
    return _node_change(a, b, ancestors)


def _tokens(line: str) -> list[str]:
    out = []
    try:
        for t in tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline):
            if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
                out.append(t.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return out


def _token_category(old: str, new: str) -> str:
    a, b = _tokens(old), _tokens(new)
    i = len(os.path.commonprefix([a, b]))   # the tokens both share at the start, then at the end
    j = len(os.path.commonprefix([a[i:][::-1], b[i:][::-1]]))
    ma, mb = a[i:len(a) - j], b[i:len(b) - j]
    if len(ma) == 1 and len(mb) == 1:
        x, y = ma[0], mb[0]
        if x[:1] in "'\"rbfu" and y[:1] in "'\"rbfu" and (x[-1:] in "'\"" and y[-1:] in "'\""):
            return "changed string literal"
        if re.fullmatch(r"\w+", x) and re.fullmatch(r"\w+", y):
            return "changed name"
        return "changed operator"
    if not ma:
        return "inserted " + ("argument" if mb[:1] == [","] or mb[-1:] == [","] else "tokens")
    if not mb:
        return "deleted " + ("argument" if ma[:1] == [","] or ma[-1:] == [","] else "tokens")
    return "several tokens"
