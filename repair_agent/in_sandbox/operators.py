"""The one table of one-line edits: every edit the search chooser's catalogue proposes, the mutation
analysis runs in the sandbox and the mutant generator inverts comes from `line_mutations` here.
Shipped into the sandbox with the mutation analysis (in_sandbox/mutants.py), so: the standard library
only, Python 3.9 and later, no import of the project (its siblings are package modules on the host,
`ra_<name>` modules in the sandbox), nothing runs at import.
"""
from __future__ import annotations

import ast
import keyword
import re
import tokenize

try:
    from . import branch_edits as branches, clone_edits as clones, default_edits as defaults, effect_edits as effects
    from . import guard_edits as guards, order_edits as orders, probe_edits as probes, transform_edits as transforms
    from .condition_edits import condition_edits
    from .scope_edits import scope_edits, signatures_of, unused_callables
    from .swaps import (ARITH_SWAPS, ATTRIBUTE_ONLY, BOUNDARY_SWAPS, COMPARE_SWAPS, ITERABLE_CALLS, NAME_SWAPS,
                        NUMERIC_CALLS, call_slip_fixes, constant_extremes, literal_swaps)
    from .statement_edits import (NEUTRAL_RETURNS, Edit, StatementText, attribute_names, attribute_swaps, callable_names,
                                  char_column, neutral_text, replace_span, similar_names, single_statement_edits, source_lines,
                                  statement_ast, tokens_of)
except ImportError:   # in the sandbox: loaded as a module of its own by in_sandbox.program
    import ra_branch_edits as branches, ra_clone_edits as clones, ra_default_edits as defaults  # type: ignore[no-redef]
    import ra_guard_edits as guards, ra_order_edits as orders, ra_probe_edits as probes  # type: ignore[no-redef]
    import ra_transform_edits as transforms, ra_effect_edits as effects  # type: ignore[no-redef]
    from ra_condition_edits import condition_edits  # type: ignore[no-redef]
    from ra_scope_edits import scope_edits, signatures_of, unused_callables  # type: ignore[no-redef]
    from ra_swaps import (ARITH_SWAPS, ATTRIBUTE_ONLY, BOUNDARY_SWAPS, COMPARE_SWAPS, ITERABLE_CALLS,  # type: ignore
                          NAME_SWAPS, NUMERIC_CALLS, call_slip_fixes, constant_extremes, literal_swaps)
    from ra_statement_edits import (NEUTRAL_RETURNS, Edit, StatementText, attribute_names, attribute_swaps,  # type: ignore
                                    callable_names, char_column, neutral_text, replace_span, similar_names, single_statement_edits,
                                    source_lines, statement_ast, tokens_of)

__all__ = ["ANALYSIS_ORDER", "ITERABLE_CALLS", "branches", "LAST_IN_ANALYSIS", "NUMERIC_CALLS", "Edit", "analysis_mutations",
           "attribute_names", "callable_names", "clones", "defaults", "effects", "guards", "line_mutations", "literal_swaps", "neutral_text", "orders", "probes", "signatures_of", "similar_names", "source_lines", "transforms", "unused_callables"]


def line_mutations(line: str, goal_numbers: tuple[int, ...] = (), names: tuple[str, ...] = (), callables: tuple[str, ...] = (),
                   signatures: dict[str, tuple[str, ...]] | None = None, attributes: tuple[str, ...] = ()) -> list[Edit]:
    """(kind, what, new line) for one source line: token-level and AST-level mutations, and the same inside
    an f-string's replacement fields (`f"{n - 1}"` -> `f"{n + 1}"`).
    `goal_numbers`: integers the goal names; a constant may be replaced by one of them.
    `names`: the variables in scope (parameters and locals); a variable read may become another.
    `callables`: the functions the file defines or calls; a call may become one of a similar name. `signatures`:
    their parameters (`signatures_of`). `attributes`: those of `self` (`attribute_names`): a read may become another."""
    out = _line_mutations(line, goal_numbers, names, callables, signatures) + attribute_swaps(line.rstrip("\n"), attributes)
    code = line.rstrip("\n")
    for start, end in _fstring_fields(code):
        expr = code[start:end]
        for kind, what, new in _line_mutations(expr, goal_numbers, names, callables, signatures):
            if "\n" not in new and not set("'\"{}") & (set(new) - set(expr)):
                out.append((kind, f"{what} in an f-string", code[:start] + new + code[end:]))
    return out


FSTRING_PREFIX = re.compile(r"^[rR]?[fF][rR]?['\"]")


def _fstring_fields(code: str) -> list[tuple[int, int]]:
    """Where the expressions of the line's f-strings' replacement fields are (start, end): up to a
    `!` conversion or a `:` format spec outside brackets; `{{` is a brace, not a field."""
    spans = []
    for t in tokens_of(code + "\n"):
        if t.type != tokenize.STRING or t.start[0] != 1 or t.end[0] != 1 or not FSTRING_PREFIX.match(t.string):
            continue
        text, base, i = t.string, t.start[1], 0
        while i < len(text):
            if text.startswith("{{", i) or text.startswith("}}", i):
                i += 2
                continue
            if text[i] == "{":
                depth, j = 0, i + 1
                while j < len(text) and not (depth == 0 and text[j] in "}!:"):
                    depth += (text[j] in "([{") - (text[j] in ")]}")
                    j += 1
                if j < len(text) and text[i + 1:j].strip():
                    spans.append((base + i + 1, base + j))
                i = j
            i += 1
    return spans


def _line_mutations(line: str, goal_numbers: tuple[int, ...], names: tuple[str, ...],
                    callables: tuple[str, ...], signatures: dict[str, tuple[str, ...]] | None) -> list[Edit]:
    out: list[Edit] = []
    code = line.rstrip("\n")
    if not code.strip() or code.strip().startswith(("#", '"""', "'''")):
        return out
    is_def = code.lstrip().startswith(("def ", "async def ", "class "))
    toks = [t for t in tokens_of(code + "\n") if t.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NL,
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
                out.append((kind, f"{t.string} -> {new}", replace_span(code, c0, c1, new)))
        elif t.type == tokenize.OP and t.string in ARITH_SWAPS and not is_def and not (
                (k and toks[k - 1].type == tokenize.STRING and t.string in ("%", "+", "+="))
                or (k + 1 < len(toks) and toks[k + 1].type == tokenize.STRING)):   # `"%s" % x`, `x + ".0"`: text
            for new in ARITH_SWAPS[t.string]:
                out.append(("arithmetic", f"{t.string} -> {new}", replace_span(code, c0, c1, new)))
        elif t.type == tokenize.NUMBER and re.fullmatch(r"\d+", t.string):
            n = int(t.string)
            prev = toks[k - 1] if k else None
            binary = (prev is not None and prev.type == tokenize.OP and prev.string in "+-" and k >= 2
                      and (toks[k - 2].type in (tokenize.NAME, tokenize.NUMBER) or toks[k - 2].string in ")]"))
            for g in goal_numbers:
                if g != n and g not in (n + 1, n - 1):
                    out.append(("default" if is_def else "goal-constant", f"{n} -> {g} (named in the goal)",
                                replace_span(code, c0, c1, str(g))))
            for bumped in (n + 1, n - 1):
                if is_def:
                    out.append(("default", f"{n} -> {bumped}", replace_span(code, c0, c1, str(bumped))))
                    continue
                kind = "slice" if depth > 0 else "constant"
                if bumped == 0 and binary:   # `x - 1` -> `x`, not `x - 0`
                    cut = toks[k - 2].end[1]
                    out.append((kind, f"drop {toks[k - 1].string} 1", code[:cut] + code[c1:]))
                elif bumped > 0 or (bumped == 0 and not (prev is not None and prev.string == "-")):   # never `x[-0]`
                    out.append((kind, f"{n} -> {bumped}", replace_span(code, c0, c1, str(bumped))))
        elif t.type == tokenize.NAME and t.string in NAME_SWAPS and (
                t.string not in ATTRIBUTE_ONLY or (k and toks[k - 1].string == ".")):
            for new in NAME_SWAPS[t.string]:
                kind = ("default" if is_def else "boolean") if t.string in ("True", "False") else (
                    "boolean" if t.string in ("and", "or", "any", "all") else
                    "extreme" if t.string in ("min", "max", "nlargest", "nsmallest") else "name")
                out.append((kind, f"{t.string} -> {new}", replace_span(code, c0, c1, new)))
        elif t.type == tokenize.NAME and t.string == "not" and not is_def:
            # `not x` -> `x`, `x not in y` -> `x in y`
            out.append(("boolean", "drop `not`", replace_span(code, c0, c1 + 1 if code[c1:c1 + 1] == " " else c1, "")))
        elif t.type == tokenize.NAME and t.string in ("if", "elif", "while") and k == 0:
            head = re.match(r"^(\s*(?:if|elif|while)\s+)(.+?):(\s*(?:#.*)?)$", code)   # a comment stays
            # `if not x:` is negated by dropping its `not` (above): `not (not x)` is the same edit, worse written
            if head and not re.match(r"not\s(?!.*\b(?:and|or|if)\b)", head.group(2)):
                out.append(("boolean", "negate the condition", f"{head.group(1)}not ({head.group(2)}):{head.group(3)}"))
        elif t.type == tokenize.NAME and t.string in ("in", "is") and not code.lstrip().startswith("for ") \
                and not (k + 1 < len(toks) and toks[k + 1].string == "not"):
            negated = "not in" if t.string == "in" else "is not"
            out.append(("comparison", f"{t.string} -> {negated}", replace_span(code, c0, c1, negated)))
        elif t.type == tokenize.NAME and t.string == "None" and is_def:
            for new in ("0", "1", "''"):
                out.append(("default", f"None -> {new}", replace_span(code, c0, c1, new)))
    if not is_def:
        out += _ast_mutations(code)
        out += _variable_swaps(code, toks, names)
        out += _call_name_swaps(code, toks, callables)
        made = {new for _, _, new in out}
        out += [e for e in call_slip_fixes(code, toks) if e[2] not in made]
        out += single_statement_edits(code)
        out += scope_edits(code, names, callables, signatures or {})
        out += condition_edits(code, names)
    bounds = constant_extremes(code)   # no edit may make `max(n, maxsize)` (or `min(-inf, n)`): a bound made a constant
    return [e for e in out if constant_extremes(e[2]) <= bounds]


def _call_name_swaps(code: str, toks: list[tokenize.TokenInfo], callables: tuple[str, ...]) -> list[Edit]:
    """A call to a function of a similar name that the file also defines or calls (`concatv(...)` ->
    `concat(...)`): a slip between sibling functions."""
    out = []
    for k, t in enumerate(toks[:-1]):
        if t.type != tokenize.NAME or toks[k + 1].string != "(" or t.start[0] != 1 or keyword.iskeyword(t.string):
            continue
        if k and toks[k - 1].string == "." and not (k > 1 and toks[k - 2].string in ("self", "cls")):
            continue   # a method of another object: its siblings are not in this file
        for other in similar_names(t.string, callables):
            out.append(("call-name", f"{t.string}() -> {other}()", replace_span(code, t.start[1], t.end[1], other)))
    return out


def _variable_swaps(code: str, toks: list[tokenize.TokenInfo], names: tuple[str, ...]) -> list[Edit]:
    """A variable read replaced by another variable in scope (`return lo` -> `return hi`)."""
    out = _attribute_base_swaps(code, toks, names)
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
                out.append(("variable", f"{t.string} -> {other}", replace_span(code, t.start[1], t.end[1], other)))
    return out


def _attribute_base_swaps(code: str, toks: list[tokenize.TokenInfo],
                          names: tuple[str, ...]) -> list[Edit]:
    """The object of an attribute replaced by `self` or by a parameter that has the same attribute on
    this line (`self.parts[:len(self.parts)] == ptr.parts` -> `self.parts[:len(ptr.parts)] ...`):
    the other variable swaps never touch `self`, which is no parameter."""
    bases = ("self", *names)
    at: dict[str, set[str]] = {}   # attribute -> the bases it is read from on this line
    sites = []
    for k in range(len(toks) - 2):
        t, dot, attr = toks[k], toks[k + 1], toks[k + 2]
        if t.type == tokenize.NAME and t.string in bases and dot.string == "." and attr.type == tokenize.NAME \
                and t.start[0] == 1 and not (k and toks[k - 1].string == "."):
            at.setdefault(attr.string, set()).add(t.string)
            sites.append((t, attr.string))
    out = []
    for t, name in sites:
        others = at[name] - {t.string}
        if "self" not in at[name] | {t.string}:
            continue   # two parameters: the plain variable swaps cover them
        for other in sorted(others):
            out.append(("variable", f"{t.string} -> {other} ({t.string}.{name})",
                        replace_span(code, t.start[1], t.end[1], other)))
    return out


def _ast_mutations(code: str) -> list[Edit]:
    parsed = statement_ast(code)
    if parsed is None:
        return []
    tree, indent = parsed
    out: list[Edit] = []
    s = code.strip()
    stmt = StatementText(code, indent)
    span, at, text = stmt.span, stmt.at, stmt.text

    arith_operands: list[ast.AST] = []
    raises = isinstance(tree, ast.Module) and bool(tree.body) and isinstance(tree.body[0], ast.Raise)
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
                between = s[char_column(s, node.left.end_col_offset or 0):char_column(s, node.right.col_offset)].strip()
                new = replace_span(code, *sp, f"{text(node.right)} {between} {text(node.left)}")
                out.append(("swap", f"swap operands of {text(node)}", new))
            if (isinstance(node.op, (ast.Div, ast.Mult)) and isinstance(node.right, ast.Constant)
                    and node.right.value in (100, 100.0) and sp):
                out.append(("percent", f"drop {text(node)[len(text(node.left)):].strip()}",
                            replace_span(code, *sp, text(node.left))))
            if isinstance(node.op, (ast.Add, ast.Sub)) and sp and not isinstance(node.right, ast.Constant) \
                    and not isinstance(node.left, ast.Constant):
                # a term too many (`remaining - len(separator)` -> `remaining`); a constant term is the
                # constant edits'
                sign = "+" if isinstance(node.op, ast.Add) else "-"
                out.append(("term", f"drop `{sign} {text(node.right)}`", replace_span(code, *sp, text(node.left))))
                if isinstance(node.op, ast.Add):
                    out.append(("term", f"drop `{text(node.left)} +`", replace_span(code, *sp, text(node.right))))
        if isinstance(node, ast.Subscript):
            sl = node.slice
            bounds: list[ast.expr | None] = [sl.lower, sl.upper] if isinstance(sl, ast.Slice) else [sl]
            for bound in bounds:
                # `e - 1` bounds are already covered by the constant mutations
                simple_offset = isinstance(bound, ast.BinOp) and isinstance(bound.right, ast.Constant)
                plain_index = not isinstance(sl, ast.Slice)
                if (bound is not None and not isinstance(bound, (ast.Constant, ast.Tuple, ast.UnaryOp)) and span(bound)
                        and not simple_offset and not (plain_index and not isinstance(bound, ast.Name))):
                    for d in ("+ 1", "- 1"):
                        out.append(("slice", f"{text(bound)} -> {text(bound)} {d}", replace_span(code, *at(bound), f"{text(bound)} {d}")))
        if isinstance(node, ast.Return) and node.value is not None and span(node.value) and isinstance(
                node.value, (ast.Name, ast.Call, ast.BinOp, ast.Subscript, ast.Attribute)) and not _formats_text(node.value) \
                and not _constructs(node.value):   # `return cls(...)`: an object
            for d in ("+ 1", "- 1"):
                out.append(("offset", f"return {text(node.value)} {d}",
                            replace_span(code, *at(node.value), f"{text(node.value)} {d}")))
        if isinstance(node, ast.Return) and node.value is not None and span(node.value) \
                and (empty := neutral_text(node.value)) is not None:
            # a function that returns "nothing" in the wrong form: `return []` where None is documented
            for other in NEUTRAL_RETURNS.get(empty, ()):
                out.append(("return-value", f"return {empty} -> return {other}",
                            replace_span(code, *at(node.value), other)))
        if isinstance(node, ast.Compare) and len(node.comparators) == 1 and span(node.comparators[0]) and isinstance(
                node.comparators[0], (ast.Name, ast.Call, ast.Subscript, ast.Attribute)) and isinstance(
                node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)):
            right = node.comparators[0]
            for d in ("+ 1", "- 1"):
                out.append(("offset", f"compare with {text(right)} {d}", replace_span(code, *at(right), f"{text(right)} {d}")))
        callee = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else (
            node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else "")
        if isinstance(node, ast.Call) and callee not in ITERABLE_CALLS and callee not in ("range", "len") and not raises:
            # an argument one off (`cls(major, minor)` -> `cls(major, minor + 1)`, `islice(it, n)` -> `islice(it, n + 1)`);
            # never of an exception being raised: its arguments do not decide whether it is raised
            for b in node.args:
                # a number's whole computed argument too (`min(max(start, stop), n)` -> `min(max(start, stop) + 1, n)`)
                computed = callee in NUMERIC_CALLS and isinstance(b, (ast.Call, ast.BinOp)) and not _formats_text(b) \
                    and not (isinstance(b, ast.BinOp) and isinstance(b.right, ast.Constant))
                if (computed or isinstance(b, (ast.Name, ast.Attribute, ast.Subscript)) and not _is_callable_like(b)) and span(b):
                    for d in ("+ 1", "- 1"):
                        out.append(("argument", f"argument {text(b)} {d}", replace_span(code, *at(b), f"{text(b)} {d}")))
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            # a bound with the wrong sign (`seq[n:]` -> `seq[-n:]`)
            for bound in (node.slice.lower, node.slice.upper):
                if isinstance(bound, ast.Name) and span(bound):
                    out.append(("slice", f"{text(bound)} -> -{text(bound)}", replace_span(code, *at(bound), f"-{text(bound)}")))
                elif isinstance(bound, ast.UnaryOp) and isinstance(bound.op, ast.USub) and isinstance(bound.operand, ast.Name) and span(bound):
                    out.append(("slice", f"{text(bound)} -> {text(bound.operand)}", replace_span(code, *at(bound), text(bound.operand))))
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Subscript, ast.Attribute)) \
                and span(node.targets[0]) and span(node.value):
            # an accumulation written as a plain assignment (`counts[k] = 1` -> `counts[k] += 1`)
            t0, t1 = at(node.targets[0])
            v0 = at(node.value)[0]
            out.append(("arithmetic", "= -> +=", code[:t1] + " += " + code[v0:]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
            for b in node.args:
                if not isinstance(b, ast.Constant) and span(b):
                    for d in ("+ 1", "- 1"):
                        out.append(("slice", f"range bound {text(b)} {d}", replace_span(code, *at(b), f"{text(b)} {d}")))
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
            out += [("percent", f"{operand.id} -> {operand.id} {op}", replace_span(code, *at(operand), f"{operand.id} {op}"))
                    for op in ("/ 100", "* 100")]
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


# Names that by convention hold a collection, a text or a function, never a count (`iterable`, `seq`, `pred`...).
NOT_A_NUMBER = re.compile(r"^(?:iterables?|it|seq|sequence|items|string|text|data|obj|func|pred|predicate|key|"
                          r"callback|mapping|values|args|kwargs|self|cls|[a-z]+_(?:list|dict|set|iter|func|str))$")


def _is_callable_like(node: ast.AST) -> bool:
    """A name that is passed as a function or class (`map(str, xs)`), or holds a collection or a text
    (`islice(iterable, n)`), not a number: its offset is noise."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return bool(name) and (name[:1].isupper() or bool(NOT_A_NUMBER.match(name)) or name in (
        "str", "int", "float", "bool", "len", "list", "dict", "tuple", "set", "repr"))


# The order the mutation analysis runs a line's edits in (its time may run out): the families real one-line
# fixes take most often first, the broad ones last; the families not named here come before `variable`.
ANALYSIS_ORDER = ("boundary", "comparison", "arithmetic", "boolean", "constant", "slice", "offset", "extreme", "argument", "term",
                  "name", "arguments", "return-value", "swap", "branches", "condition", "normalize", "regex", "scale",
                  "numeral", "sign", "negate", "percent", "case-call", "call-name", "goal-constant", "more-arguments", "opposite",
                  "return-variable", "missing-call")
LAST_IN_ANALYSIS = ("variable", "delete", "statement-removed")
HEADERS = ("def ", "class ", "if ", "elif ", "else", "for ", "while ", "try", "except", "finally", "with ",
           "async ", "@", "return", "yield", "raise", "import ", "from ")


def analysis_mutations(line: str, names: tuple[str, ...], callables: tuple[str, ...] = (),
                       signatures: dict[str, tuple[str, ...]] | None = None, attributes: tuple[str, ...] = ()) -> list[Edit]:
    """(family, what, new line with the line's own ending) for the mutation analysis: every catalogue
    edit of the line (`line_mutations`) but a `def` line's defaults (they are not part of the code
    object the analysis swaps in), in ANALYSIS_ORDER, then the line replaced by `pass` (a probe: a
    line whose removal changes nothing the failing tests show is off their path). No duplicates."""
    code = line.rstrip("\r\n")
    ending = line[len(code):] or "\n"
    stripped = code.strip()
    if not stripped or stripped.startswith(("def ", "async def ", "class ", "@", "#")):
        return []
    edits = [(family, what, new.rstrip("\r\n") + ending) for family, what, new in line_mutations(line, (), names, callables, signatures, attributes)
             if family != "default"]
    if not stripped.startswith(HEADERS) and not stripped.endswith((":", "(", "[", "{", ",", "\\")):
        edits.append(("statement-removed", "statement removed", code[:len(code) - len(code.lstrip())] + "pass" + ending))
    rank = {family: k for k, family in enumerate(ANALYSIS_ORDER)}
    late = {family: len(ANALYSIS_ORDER) + 1 + k for k, family in enumerate(LAST_IN_ANALYSIS)}
    edits.sort(key=lambda e: rank.get(e[0], late.get(e[0], len(ANALYSIS_ORDER))))
    seen = {line}
    out = []
    for family, what, new in edits:
        if new not in seen:
            seen.add(new)
            out.append((family, what, new))
    return out
