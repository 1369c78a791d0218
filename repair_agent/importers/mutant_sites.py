"""Where a generated bug can go (mutants.py): every mutation site inside the function bodies of one
module, each with one replacement line or a deletion, of the kinds and weights below."""
from __future__ import annotations

import ast
import difflib
import random
from dataclasses import dataclass, field

from ..in_sandbox.swaps import FUNCTION_SLIPS, METHOD_SLIPS

# Kinds and their weights. Identifier and call mistakes dominate real one-line bugs, then
# operators, literals and missing code; the two `missing-*` kinds (and a dropped conjunct,
# whose fix re-adds code too) are the ones whose fix adds a line.
WEIGHTS: dict[str, int] = {
    "wrong-variable": 12, "wrong-function": 9, "wrong-attribute": 4, "swapped-arguments": 4,
    "comparison-operator": 9, "arithmetic-operator": 5, "augmented-assignment": 3, "boolean-operator": 4,
    "negation": 7, "off-by-one": 10, "wrong-constant": 5, "return-value": 6, "dropped-condition": 3,
    "missing-statement": 24, "missing-guard": 12,
}
ADDED_LINE = {"missing-statement", "missing-guard"}
COMPARE_SWAP = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "==",
                ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in"}
COMPARE_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
                ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
ARITH = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*"),
         ast.Div: ("/", "*"), ast.Mod: ("%", "//"), ast.BitAnd: ("&", "|"), ast.BitOr: ("|", "&")}
AUG = {ast.Add: ("+=", "-="), ast.Sub: ("-=", "+="), ast.Mult: ("*=", "+="), ast.BitOr: ("|=", "&="),
       ast.BitAnd: ("&=", "|=")}
STRING_SWAP = {"-": "_", "_": "-", " ": "", "": " ", ".": ",", ",": ".", ":": ";", ";": ":", "/": "\\",
               "\\": "/", "\n": " ", "=": ":", "(": "[", ")": "]", "[": "(", "]": ")"}



@dataclass
class Site:
    kind: str
    file: str
    first: int                  # 1-based, inclusive: the pristine lines replaced
    last: int
    new: list[str]              # their replacement (no lines: a deletion)
    function: str
    note: str                   # what changed, for mutants.json only
    covered_by: list[str] = field(default_factory=list)


def _segment(lines: list[bytes], node: ast.AST) -> bytes:
    return lines[node.lineno - 1][node.col_offset:node.end_col_offset]  # type: ignore[attr-defined]


def _end(node: ast.AST) -> int:
    """Where a node's text ends on its (last) line: always known for the nodes parsed from source."""
    end = getattr(node, "end_col_offset", None)
    assert end is not None, ast.dump(node)
    return end


def _one_line(*nodes: ast.AST) -> bool:
    return all(getattr(n, "lineno", None) is not None and n.lineno == n.end_lineno == nodes[0].lineno  # type: ignore[attr-defined]
               for n in nodes)


class SiteFinder:
    """Every mutation site of one module, inside function bodies, with one replacement each
    (picked by `rng` where several are possible)."""

    def __init__(self, rel: str, text: str, rng: random.Random):
        self.rel, self.text, self.rng = rel, text, rng
        self.lines = [l.encode() for l in text.splitlines(keepends=True)]
        self.tree = ast.parse(text)
        self.module_functions = {n.name for n in self.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.sites: list[Site] = []

    def find(self) -> list[Site]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self._function(item, node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node in self.tree.body:
                self._function(node, None)
        return self.sites

    # where the text of one line is edited between two byte offsets
    def _edit(self, kind: str, line: int, start: int, end: int, new: bytes, fn: str, note: str) -> None:
        old = self.lines[line - 1]
        changed = old[:start] + new + old[end:]
        if changed != old:
            self.sites.append(Site(kind, self.rel, line, line, [changed.decode()], fn, note))

    def _function(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> None:
        name = f"{cls.name}.{fn.name}" if cls else fn.name
        locals_ = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                locals_.add(node.id)
        locals_.discard("self")
        locals_.discard("cls")
        self_attrs = sorted({n.attr for n in ast.walk(cls) if isinstance(n, ast.Attribute)
                             and isinstance(n.value, ast.Name) and n.value.id == "self"}) if cls else []
        calls = {id(n.func) for n in ast.walk(fn) if isinstance(n, ast.Call)}
        for stmt in fn.body:
            for node in ast.walk(stmt):
                self._expression(node, name, sorted(locals_), self_attrs, calls)
        self._blocks(fn, name)

    def _expression(self, node: ast.AST, fn: str, locals_: list[str], self_attrs: list[str], calls: set[int]) -> None:
        rng = self.rng
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and _one_line(node.left, node.comparators[0]):
            op = type(node.ops[0])
            line = self.lines[node.lineno - 1]
            a, b = _end(node.left), node.comparators[0].col_offset
            between = line[a:b]
            old = COMPARE_TEXT[op].encode()
            if between.strip() == old:
                i = a + between.index(old)
                self._edit("comparison-operator", node.lineno, i, i + len(old), COMPARE_SWAP[op].encode(), fn,
                           f"{COMPARE_TEXT[op]} -> {COMPARE_SWAP[op]}")
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITH and _one_line(node.left, node.right):
            if any(isinstance(s, ast.Constant) and isinstance(s.value, (str, bytes)) for s in (node.left, node.right)):
                return  # string formatting and concatenation: a type error, not a plausible slip
            old_t, new_t = ARITH[type(node.op)]
            line = self.lines[node.lineno - 1]
            a, b = _end(node.left), node.right.col_offset
            if line[a:b].strip() == old_t.encode():
                i = a + line[a:b].index(old_t.encode())
                self._edit("arithmetic-operator", node.lineno, i, i + len(old_t), new_t.encode(), fn, f"{old_t} -> {new_t}")
            for operand in (node.left, node.right):
                self._off_by_one(operand, fn)
        elif isinstance(node, ast.AugAssign) and _one_line(node.target, node.value):
            line = self.lines[node.lineno - 1]
            a, b = _end(node.target), node.value.col_offset
            ops = AUG.get(type(node.op))
            if ops and line[a:b].strip() == ops[0].encode():
                i = a + line[a:b].index(ops[0].encode())
                new = ops[1] if rng.random() < 0.6 else "="
                self._edit("augmented-assignment", node.lineno, i, i + len(ops[0]), new.encode(), fn, f"{ops[0]} -> {new}")
        elif isinstance(node, ast.BoolOp) and _one_line(*node.values):
            line = self.lines[node.lineno - 1]
            old_t, new_t = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
            for left, right in zip(node.values, node.values[1:]):
                a, b = _end(left), right.col_offset
                if line[a:b].strip() == old_t.encode():
                    i = a + line[a:b].index(old_t.encode())
                    self._edit("boolean-operator", node.lineno, i, i + len(old_t), new_t.encode(), fn, f"{old_t} -> {new_t}")
                    break
        elif isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) and _one_line(node.test):
            test = node.test
            if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
                self._edit("negation", test.lineno, test.col_offset, test.operand.col_offset, b"", fn, "not removed")
            elif isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
                self._edit("negation", test.lineno, test.col_offset, test.col_offset, b"not ", fn, "not added")
            if isinstance(test, ast.BoolOp) and len(test.values) == 2 and isinstance(node, (ast.If, ast.While)):
                keep = test.values[rng.randrange(2)]
                if _one_line(test, keep):
                    self._edit("dropped-condition", test.lineno, test.col_offset, test.end_col_offset,  # type: ignore[arg-type]
                               _segment(self.lines, keep), fn, "one operand of the condition dropped")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            for bound in (node.slice.lower, node.slice.upper):
                if bound is not None and isinstance(bound, (ast.Name, ast.Attribute, ast.Call)) and _one_line(bound):
                    delta = rng.choice((b" + 1", b" - 1"))
                    self._edit("off-by-one", bound.lineno, bound.end_col_offset, bound.end_col_offset, delta, fn,  # type: ignore[arg-type]
                               f"slice bound{delta.decode()}")
                elif bound is not None:
                    self._off_by_one(bound, fn)
        elif isinstance(node, ast.Call) and _one_line(node):
            self._call(node, fn, self_attrs)
            if isinstance(node.func, ast.Name) and node.func.id == "range":
                for arg in node.args:
                    self._off_by_one(arg, fn)
        elif isinstance(node, ast.Return) and node.value is not None and _one_line(node.value):
            v = node.value
            if isinstance(v, ast.Constant) and isinstance(v.value, bool):
                returned = b"False" if v.value else b"True"
            elif isinstance(v, ast.Constant) and v.value is None:
                return
            else:
                returned = b"None"
            self._edit("return-value", v.lineno, v.col_offset, v.end_col_offset, returned, fn,  # type: ignore[arg-type]
                       f"return {returned.decode()}")
        elif isinstance(node, ast.Constant) and _one_line(node):
            if isinstance(node.value, bool):
                self._edit("wrong-constant", node.lineno, node.col_offset, node.end_col_offset,  # type: ignore[arg-type]
                           str(not node.value).encode(), fn, f"{node.value} -> {not node.value}")
            elif isinstance(node.value, str) and node.value in STRING_SWAP:
                seg = _segment(self.lines, node)
                quote = seg[:1] if seg[:1] in (b"'", b'"') else None
                if quote and seg == quote + node.value.encode("unicode_escape") + quote:
                    swapped = quote + STRING_SWAP[node.value].encode("unicode_escape") + quote
                    self._edit("wrong-constant", node.lineno, node.col_offset, node.end_col_offset, swapped, fn,  # type: ignore[arg-type]
                               f"{node.value!r} -> {STRING_SWAP[node.value]!r}")
            elif isinstance(node.value, int) and not isinstance(node.value, bool):
                self._off_by_one(node, fn)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in locals_ \
                and id(node) not in calls and len(locals_) > 1:
            other = rng.choice([n for n in locals_ if n != node.id])
            self._edit("wrong-variable", node.lineno, node.col_offset, node.end_col_offset, other.encode(), fn,  # type: ignore[arg-type]
                       f"{node.id} -> {other}")
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and id(node) not in calls \
                and isinstance(node.value, ast.Name) and node.value.id == "self" and _one_line(node):
            others = [a for a in self_attrs if a != node.attr and not a.startswith("__")]
            if others:
                other = rng.choice(others)
                end = _end(node)
                self._edit("wrong-attribute", node.lineno, end - len(node.attr.encode()), end, other.encode(), fn,
                           f"self.{node.attr} -> self.{other}")

    def _off_by_one(self, node: ast.AST, fn: str) -> None:
        if isinstance(node, ast.Constant) and type(node.value) is int and _one_line(node):
            seg = _segment(self.lines, node)
            if not seg.isdigit():
                return  # hex, octal, underscores: leave them alone
            negative = self.lines[node.lineno - 1][:node.col_offset].rstrip().endswith(b"-")  # type: ignore[attr-defined]
            # -1 becomes -2, not -0; a 0 becomes 1
            value = node.value + 1 if negative or not node.value else node.value + self.rng.choice((1, -1))
            self._edit("off-by-one", node.lineno, node.col_offset, node.end_col_offset, str(value).encode(), fn,  # type: ignore[arg-type]
                       f"{node.value} -> {value}")

    def _call(self, node: ast.Call, fn: str, self_attrs: list[str]) -> None:
        rng = self.rng
        func = node.func
        if isinstance(func, ast.Name):
            similar = [f for f in self.module_functions if f != func.id
                       and difflib.SequenceMatcher(None, f, func.id).ratio() >= 0.7]
            pick = FUNCTION_SLIPS.get(func.id) or (rng.choice(sorted(similar)) if similar else None)
            if pick:
                self._edit("wrong-function", func.lineno, func.col_offset, func.end_col_offset, pick.encode(), fn,  # type: ignore[arg-type]
                           f"{func.id}() -> {pick}()")
        elif isinstance(func, ast.Attribute) and _one_line(func):
            pick = METHOD_SLIPS.get(func.attr)
            if pick is None and isinstance(func.value, ast.Name) and func.value.id == "self":
                similar = [a for a in self_attrs if a != func.attr
                           and difflib.SequenceMatcher(None, a, func.attr).ratio() >= 0.7]
                pick = rng.choice(similar) if similar else None
            if pick:
                end = _end(func)
                self._edit("wrong-function", func.lineno, end - len(func.attr.encode()), end, pick.encode(), fn,
                           f".{func.attr}() -> .{pick}()")
        simple = (ast.Name, ast.Attribute, ast.Constant)
        if len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2]):
            a, b = node.args[0], node.args[1]
            if isinstance(a, simple) and isinstance(b, simple) and _one_line(a, b):
                sa, sb = _segment(self.lines, a), _segment(self.lines, b)
                if sa != sb:
                    line = self.lines[a.lineno - 1]
                    mid = line[a.end_col_offset:b.col_offset]  # type: ignore[misc]
                    self._edit("swapped-arguments", a.lineno, a.col_offset, b.end_col_offset, sb + mid + sa, fn,  # type: ignore[arg-type]
                               f"arguments {sa.decode()} and {sb.decode()} swapped")

    def _blocks(self, fn: ast.AST, name: str) -> None:
        """Deleted statements and deleted guards: the fix has to add the line(s) back."""
        for node in ast.walk(fn):
            for attr in ("body", "orelse", "finalbody"):
                block = getattr(node, attr, None)
                if not isinstance(block, list) or len(block) < 2 or node is not fn and isinstance(
                        node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                for stmt in block:
                    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                        continue  # a docstring
                    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise,
                                         ast.Expr, ast.Continue, ast.Break)) and stmt.lineno == stmt.end_lineno \
                            and self._whole_lines(stmt):
                        self.sites.append(Site("missing-statement", self.rel, stmt.lineno, stmt.lineno, [], name,
                                               f"deleted: {ast.unparse(stmt)[:80]}"))
                    elif isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 \
                            and stmt.test.lineno == stmt.lineno and stmt.body[0].end_lineno == stmt.lineno + 1 \
                            and isinstance(stmt.body[0], (ast.Return, ast.Raise, ast.Assign, ast.AugAssign,
                                                          ast.Expr, ast.Continue, ast.Break)) \
                            and self._whole_lines(stmt):
                        self.sites.append(Site("missing-guard", self.rel, stmt.lineno, stmt.lineno + 1, [], name,
                                               f"deleted guard: if {ast.unparse(stmt.test)[:60]}: ..."))

    def _whole_lines(self, stmt: ast.stmt) -> bool:
        # The statement alone on its lines (no `a = 1; b = 2`, no trailing comment to keep).
        first = self.lines[stmt.lineno - 1]
        last = self.lines[stmt.end_lineno - 1]  # type: ignore[operator]
        return first[:stmt.col_offset].strip() == b"" and last[stmt.end_col_offset:].strip() == b""  # type: ignore[misc]


def mutate_text(text: str, site: Site) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[:site.first - 1] + site.new + lines[site.last:])


def unified(rel: str, before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{rel}", f"b/{rel}", n=3))
