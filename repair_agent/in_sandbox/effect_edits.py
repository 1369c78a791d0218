"""A state change a method's siblings make and it lacks, tried before each of its `return`s (stdlib
only, Python 3.9 and later, no import of the project: shipped into the sandbox with operators.py).

Methods of one class keep one object's state consistent, so the update one of them forgets is often
written out in another: `set` does `self.cache.move_to_end(key, last=True)` on an existing key and
`get` returns the value without it (the entry just read is evicted first). A forgotten statement is
among the commonest real bugs (BugsInPy and Defects4J fixes that only add a line), and no one-token edit
makes it. So for each method the analysis edits, each one-line statement of a sibling method that
changes an attribute of `self` the method itself uses (a call on it, an assignment to it) is
inserted before the method's `return` lines, when every name it reads is one the method has bound by
then or the module defines. Only what the failing and the passing tests agree with survives, as for
any mutant.
"""
from __future__ import annotations

import ast
import builtins
from typing import Dict, List, NamedTuple, Sequence, Set, Tuple

try:
    from .transform_edits import Edit, inserted
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    from ra_transform_edits import Edit, inserted  # type: ignore[no-redef]

MAX_EFFECTS = 4   # sibling statements tried before one `return`


class Method(NamedTuple):
    name: str
    first: int                  # the def's line
    last: int
    owner: int                  # the class's line: methods of one class share it
    bound: Dict[str, int]       # a parameter (line 0) or an assigned name -> the first line that binds it
    attributes: Set[str]        # `self.<name>` it reads or writes
    effects: List[Tuple[str, str, Set[str]]]   # (statement text, the attribute it changes, names it reads)


def methods(source: str) -> Tuple[List[Method], Set[str]]:
    """Every method of every class in `source`, with the one-line state changes it makes; and the names
    a statement may read anywhere in the module (module_names)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [], set()
    lines = source.splitlines()
    out: List[Method] = []
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
                continue
            me = fn.args.args[0].arg
            bound = {a.arg: 0 for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
            for name in ast.walk(fn):
                if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                    bound[name.id] = min(bound.get(name.id, name.lineno), name.lineno)
            attributes = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute) and _is(n.value, me)}
            effects = []
            for stmt in (n for n in ast.walk(fn) if isinstance(n, ast.stmt)):
                changed = _changed_attribute(stmt, me)
                if changed is None or stmt.end_lineno != stmt.lineno:
                    continue
                line = lines[stmt.lineno - 1]
                text = line.strip()
                if stmt.col_offset != len(line) - len(line.lstrip()) or stmt.end_col_offset != len(line.rstrip().encode()):
                    continue   # one line with more on it (`if x: self.n = 0`, `a(); self.n = 0`)
                reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
                effects.append((text, changed, reads - {me}))
            out.append(Method(fn.name, fn.lineno, fn.end_lineno or fn.lineno, cls.lineno, bound, attributes, effects))
    return out, module_names(tree)


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _root_attribute(node: ast.AST, me: str) -> str | None:
    """`cache` for `self.cache`, `self.cache.data` or `self.cache[k]`; None for anything not on `self`."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and _is(node.value, me):
            return node.attr
        node = node.value
    return None


def _changed_attribute(stmt: ast.stmt, me: str) -> str | None:
    """The attribute of `self` a statement changes: a call of a method on it (`self.cache.clear()`), an
    assignment to it or into it (`self.count += 1`, `self.seen[key] = True`)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute):
        return _root_attribute(stmt.value.func.value, me)
    if isinstance(stmt, ast.AugAssign):
        return _root_attribute(stmt.target, me)
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return _root_attribute(stmt.targets[0], me)
    return None


def module_names(tree: ast.Module) -> Set[str]:
    """The names a statement may read anywhere in the module: its top-level definitions and imports, and the builtins."""
    names = set(dir(builtins))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def effect_edits(line: str, number: int, all_methods: Sequence[Method], known: Set[str]) -> List[Edit]:
    """Each sibling's state change the method around `line` (a `return`, line `number`) lacks, inserted
    before it; `all_methods` and `known`: what methods() gives."""
    if not line.lstrip().startswith("return") or line.lstrip()[6:7].isidentifier():
        return []
    around = [m for m in all_methods if m.first < number <= m.last]
    if not around:
        return []
    me = min(around, key=lambda m: m.last - m.first)
    own = {text for text, _, _ in me.effects}
    ready = {name for name, at in me.bound.items() if at < number} | known
    found: List[Tuple[int, Edit]] = []
    for sibling in all_methods:
        if sibling.owner != me.owner or sibling is me:
            continue
        for text, changed, reads in sibling.effects:
            if text not in own and changed in me.attributes and reads <= ready:
                own.add(text)
                family, what, new = inserted(line, text)
                # the more of the method's own values a statement uses, the more it is about them
                found.append((-len(reads & set(me.bound)), (family, f"{what} as `{sibling.name}` does", new)))
    return [edit for _, edit in sorted(found, key=lambda x: x[0])][:MAX_EFFECTS]
