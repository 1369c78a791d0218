"""Which real one-line fixes the operator table (in_sandbox/operators.py `line_mutations`) can make.

    .venv/bin/python bench/fix_shapes.py [--bugsinpy GITDIR_OR_DIR] [--mirrors DIR] [--corpora dev,dev2,real,home]
                                         [--heldout holdout,holdout2] [--against REV] [--show N]

Fix patches come from two places:
- a public corpus of real fixes, BugsInPy (github.com/soarsmu/BugsInPy): a bare git directory or a
  checkout whose projects/<p>/bugs/<n>/bug_patch.txt are the fixes. With `--mirrors DIR` (clones
  laid out as DIR/<owner>+<name>/repo, with history) the pre-fix file is read at the bug's
  buggy_commit_id; without it, or when a project is not there, the names, callables and signatures
  come from the patch's own hunks (the old side, with its context lines), as the chooser would see a
  window of the file without its `def` when the hunk shows none.
- the project's scenario corpora (`--corpora`): each reference fix against its buggy tree. Held-out
  corpora (`--heldout`) are reported as counts only: no name, line or diff of theirs is printed.

A fix "changes one line" when, in its non-test .py files, exactly one code line is removed and one
added (blank and comment-only lines ignored); it "adds one or two lines" when nothing is removed. A
one-line fix is made when `line_mutations(buggy line, goal numbers, names, callables, signatures)`
returns the fixed line (same AST, or same text without whitespace). An added `if COND:` line with a
one-line body is a guard: made when `guard_edits` offers its condition before the next line.
The ones not made are classified by their smallest AST difference (PySStuBs-style categories, see
fix_categories.py). `--against REV` runs the same over the operator table of git revision REV too.
"""
from __future__ import annotations

import argparse
import collections
import importlib
import inspect
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from unidiff import PatchSet, UnidiffParseError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fix_categories import category, same_code  # noqa: E402

from repair_agent.choosers.search.source import (Function, _code_lines, _numbers_in, functions_in,  # noqa: E402
                                                  scope_names, string_lines)

COMMENT_OR_BLANK = re.compile(r"^\s*(#.*)?$")


@dataclass
class FilePatch:
    path: str
    hunks: list[tuple[int, list[tuple[str, str]]]] = field(default_factory=list)   # old start, (tag, text)


@dataclass
class Fix:
    """One fix: where it comes from, its patch, the pre-fix text of its files when known, goal numbers."""
    corpus: str
    name: str
    files: list[FilePatch]
    old_text: dict[str, str | None]
    goal_numbers: tuple[int, ...] = ()


def parse_diff(text: str) -> list[FilePatch]:
    """The patch's files and hunks (unidiff); none when it does not parse."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError:
        return []
    return [FilePatch(pf.path, [(h.source_start, [(line.line_type, line.value.rstrip("\n")) for line in h
                                                  if line.line_type in (" ", "-", "+")]) for h in pf])
            for pf in patch]


def is_test(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return (not path.endswith(".py") or name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or bool(re.search(r"(^|/)(tests?|testing)/", path)))


def shape(fix: Fix) -> tuple[str, Any]:
    """("one-line", (path, old line number, old, new)), ("add", (path, line number before which, added
    lines)), ("moves one line", None) or ("other", None)."""
    removed, added = [], []
    for fp in fix.files:
        if is_test(fp.path):
            continue
        for start, lines in fp.hunks:
            n = start
            for k, (tag, text) in enumerate(lines):
                if tag == "-":
                    if not COMMENT_OR_BLANK.match(text):
                        removed.append((fp.path, n, text))
                    n += 1
                elif tag == "+":
                    if not COMMENT_OR_BLANK.match(text):
                        added.append((fp.path, n, text, k, lines))
                else:
                    n += 1
    if len(removed) == 1 and len(added) == 1 and removed[0][2] == added[0][2]:
        return "moves one line", None   # the same statement elsewhere: a statement moved, no edit of one
    if len(removed) == 1 and len(added) == 1 and removed[0][0] == added[0][0]:
        return "one-line", (removed[0][0], removed[0][1], removed[0][2], added[0][2])
    if not removed and 1 <= len(added) <= 2 and len({a[0] for a in added}) == 1:
        path, n, _, k, lines = added[-1]
        return "add", (path, n, [a[2] for a in added])
    return "other", None


def file_lines(fix: Fix, path: str) -> dict[int, str]:
    """The pre-fix file (numbered from 1) when known, else the old side of the patch's hunks of it."""
    text = fix.old_text.get(path)
    if text is not None:
        return dict(enumerate(text.splitlines(keepends=True), 1))
    out = {}
    for fp in fix.files:
        if fp.path == path:
            for start, lines in fp.hunks:
                n = start
                for tag, t in lines:
                    if tag != "+":
                        out[n] = t + "\n"
                        n += 1
    return out


_FILES: dict[int, tuple[dict[int, str], list, tuple[str, ...], dict[str, tuple[str, ...]]]] = {}


def context(lines: dict[int, str], n: int) -> tuple:
    """What the chooser hands line_mutations for line `n` (ranking.scored_candidates): the variables of
    the innermost function around it (or of the window, when its `def` is not in view), the callables,
    the signatures and the attributes of `self` of the lines known."""
    if id(lines) not in _FILES or _FILES[id(lines)][0] is not lines:
        ops = OPS["now"]
        fns = []
        for lo in sorted(lines):
            if lo - 1 not in lines:   # each window of known lines on its own, as the chooser reads them
                hi = lo
                while hi + 1 in lines:
                    hi += 1
                fns += [(lo, hi, fn) for fn in functions_in(lo, [lines[i] for i in range(lo, hi + 1)])]
        _FILES.clear()
        _FILES[id(lines)] = (lines, fns, ops.callable_names(lines), ops.signatures_of(lines), ops.attribute_names(lines))
    _, fns, callables, signatures, attributes = _FILES[id(lines)]
    around = [fn for _, _, fn in fns if fn.def_line <= n <= fn.end_line]
    if around:
        scope = min(around, key=lambda fn: fn.end_line - fn.def_line)
    else:
        lo = hi = n
        while lo - 1 in lines:
            lo -= 1
        while hi + 1 in lines:
            hi += 1
        scope = Function(lo, "", [], lo, "", hi)
    return scope_names(scope, lines), callables, signatures, attributes


def mutations(ops: Any, line: str, goal: tuple[int, ...], ctx: tuple) -> list:
    """`ops.line_mutations` with the context its revision takes (attributes came later). Read off its
    signature: a TypeError raised inside it is a bug to see, not a sign of an older revision."""
    takes_attributes = "attributes" in inspect.signature(ops.line_mutations).parameters
    return ops.line_mutations(line, goal, *(ctx if takes_attributes else ctx[:3]))


OPS: dict[str, Any] = {}


def load_ops(rev: str | None) -> Any:
    """The operators module of this tree, or of git revision `rev` (its in_sandbox package, imported
    under a name of its own)."""
    if rev is None:
        return importlib.import_module("repair_agent.in_sandbox.operators")
    pkg = "in_sandbox_" + re.sub(r"\W", "_", rev)
    tmp = Path(tempfile.mkdtemp()) / pkg
    tmp.mkdir()
    names = subprocess.run(["git", "ls-tree", "--name-only", rev, "repair_agent/in_sandbox/"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for name in names:
        if name.endswith(".py"):
            (tmp / Path(name).name).write_text(subprocess.run(["git", "show", f"{rev}:{name}"], cwd=ROOT, check=True,
                                                              capture_output=True, text=True).stdout)
    sys.path.insert(0, str(tmp.parent))
    return importlib.import_module(pkg + ".operators")


def strings_of(text: str | None) -> set[int]:
    """The lines of the pre-fix file inside a string literal (source.string_lines, by the tokenizer: a
    scan for triple quotes loses count where code mentions them, as black does)."""
    if text is None:
        return set()
    return string_lines({n: line for n, line in enumerate(text.splitlines(keepends=True), 1)}) or set()


def indent(line: str) -> str:
    return line[:len(line) - len(line.lstrip())]


def made(ops: Any, old: str, new: str, goal: tuple[int, ...], ctx: tuple) -> tuple[bool, int]:
    edits = mutations(ops, old + "\n", goal, ctx)
    return any(same_code(e[2], new) and indent(e[2]) == indent(new) for e in edits), len(edits)


def guard_made(ops: Any, fix: Fix, path: str, n: int, added: list[str]) -> bool | None:
    """None when the added lines are no guard (`if COND:` and one body line) before a statement."""
    if len(added) != 2 or not (m := re.match(r"^\s*if\s+(.+):\s*$", added[0])):
        return None
    lines = file_lines(fix, path)
    nxt = lines.get(n)
    if nxt is None or not nxt.strip():
        return None
    body = added[1].strip()
    guards = getattr(ops, "guards", None) or importlib.import_module(ops.__name__.rsplit(".", 1)[0] + ".guard_edits")
    ctx = guards.GuardContext(body if body.startswith("raise") else None,
                              (body[len("return"):].strip() or "None",) if body.startswith("return") else ("None",))
    names = context(lines, n)[0]
    return any(same_code(re.match(r"^\s*if\s+(.+):", e[2]).group(1), m.group(1))   # type: ignore[union-attr]
               for e in guards.guard_edits(nxt, names, ctx))


def guard_category(line: str) -> str:
    """What an added guard's condition tests: None, truth, membership, a type, an order, or else."""
    cond = re.sub(r"^\s*(el)?if\s+|:\s*(#.*)?$", "", line)
    tests = [("None", r"\bis\s+(not\s+)?None\b"), ("isinstance", r"\bisinstance\("), ("len", r"\blen\("),
             ("order", r"[<>]=?"), ("equality", r"[!=]="), ("membership", r"\b(not\s+)?in\b")]
    found = [what for what, pattern in tests if re.search(pattern, cond)]
    if not found:
        found = ["truth (`X` / `not X`)" if re.fullmatch(r"(not\s+)?[\w.]+", cond.strip()) else "call or other"]
    return (" and " if " and " in cond else " or " if " or " in cond else " + ").join(found)


def bugsinpy(source: str, mirrors: Path | None) -> Iterator[Fix]:
    """BugsInPy's fixes, from a bare git directory (read at HEAD) or a checkout."""
    root = Path(source)
    bare = (root / "HEAD").is_file() and (root / "objects").is_dir()

    def read(path: str) -> str:
        if bare:
            return subprocess.run(["git", "--git-dir", str(root), "show", f"HEAD:{path}"], capture_output=True,
                                  text=True, errors="replace").stdout
        return (root / path).read_text(errors="replace")

    if bare:
        paths = subprocess.run(["git", "--git-dir", str(root), "ls-tree", "-r", "--name-only", "HEAD", "projects/"],
                               capture_output=True, text=True, check=True).stdout.split()
    else:
        paths = [str(p.relative_to(root)) for p in (root / "projects").rglob("*")]
    urls: dict[str, str] = {}
    for p in sorted(paths, key=lambda p: [(int(x), "") if x.isdigit() else (0, x) for x in p.split("/")]):
        if not p.endswith("bug_patch.txt"):
            continue
        project, n = p.split("/")[1], p.split("/")[3]
        if project not in urls:
            m = re.search(r'github_url="https://github.com/([^/"]+)/([^/"]+?)/?"', read(f"projects/{project}/project.info"))
            urls[project] = f"{m.group(1)}+{m.group(2)}" if m else ""
        files = parse_diff(read(p))
        info = re.search(r'buggy_commit_id="(\w+)"', read(p.replace("bug_patch.txt", "bug.info")))
        old_text: dict[str, str | None] = {}
        gitdir = mirrors / urls[project] / "repo" if mirrors and urls[project] else None
        if gitdir is not None and (gitdir / ".git").is_dir():
            gitdir = gitdir / ".git"
        for fp in files:
            old_text[fp.path] = None
            if gitdir is not None and gitdir.is_dir() and info and not is_test(fp.path):
                r = subprocess.run(["git", "--git-dir", str(gitdir), "show", f"{info.group(1)}:{fp.path}"],
                                   capture_output=True, text=True, errors="replace")
                old_text[fp.path] = r.stdout if r.returncode == 0 else None
        yield Fix("bugsinpy", f"{project}-{n}", files, old_text)


FIX_MESSAGE = re.compile(r"\b(fix(e[sd])?|bugs?|typo|wrong|incorrect|regression)\b", re.I)


def mined(mirrors: Path, per_repo: int) -> Iterator[Fix]:
    """One-line fixes from the histories of the clones under `mirrors` (DIR/<owner>+<name>/repo), as
    PySStuBs mined them: a commit whose message says it fixes something and which changes one line of
    one non-test .py file, or adds two lines to it (tests may change too), the most recent `per_repo`
    of each clone."""
    for repo in sorted(mirrors.glob("*/repo")):
        gitdir = repo / ".git" if (repo / ".git").is_dir() else repo
        log = subprocess.run(["git", "--git-dir", str(gitdir), "log", "--no-merges", "--format=@%H %s", "--numstat"],
                             capture_output=True, text=True, errors="replace").stdout
        found = 0
        for block in log.split("\n@")[:]:
            head, _, stats = block.lstrip("@").partition("\n")
            sha, _, subject = head.partition(" ")
            if not FIX_MESSAGE.search(subject):
                continue
            rows = [r.split("\t") for r in stats.split("\n") if r.count("\t") == 2]
            source = [r for r in rows if not is_test(r[2])]
            if len(source) != 1 or source[0][:2] not in (["1", "1"], ["2", "0"]) or "=>" in source[0][2]:
                continue
            path = source[0][2]
            diff = subprocess.run(["git", "--git-dir", str(gitdir), "show", "--format=", sha, "--", path],
                                  capture_output=True, text=True, errors="replace").stdout
            old = subprocess.run(["git", "--git-dir", str(gitdir), "show", f"{sha}^:{path}"],
                                 capture_output=True, text=True, errors="replace")
            yield Fix("mined", f"{repo.parent.name}@{sha[:8]}", parse_diff(diff),
                      {path: old.stdout if old.returncode == 0 else None})
            found += 1
            if found >= per_repo:
                break


def scenarios(corpus: str) -> Iterator[Fix]:
    from repair_agent.scenarios.scenario import load_manifest
    where = ROOT / "sandbox_repos" / ("" if corpus == "home" else corpus)
    for manifest in sorted(where.glob("*.scenario.toml")):
        try:
            sc = load_manifest(manifest)
        except Exception:   # noqa: BLE001 - counted, never named (held-out corpora)
            yield Fix(corpus, "", [], {})
            continue
        if sc.reference_fix is None:
            continue
        files = parse_diff(sc.reference_fix.read_text(errors="replace"))
        old_text = {fp.path: (sc.repo / fp.path).read_text(errors="replace") if (sc.repo / fp.path).is_file() else None
                    for fp in files}
        prose = re.sub(r"'[^']*'|\"[^\"]*\"|`[^`]*`", " ", sc.goal.text)
        goal = tuple(dict.fromkeys(n for n in _numbers_in(prose) if n <= 1000))[:6]
        yield Fix(corpus, sc.name, files, old_text, goal)


def measure(fixes: list[Fix], labels: list[str], private: bool, show: int) -> list[str]:
    """Report lines for one corpus (`private`: counts only)."""
    counts: collections.Counter[str] = collections.Counter()
    cats: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    cost: dict[str, list[int]] = {label: [] for label in labels}
    for fix in fixes:
        if not fix.files:
            counts["unreadable"] += 1
            continue
        kind, what = shape(fix)
        counts[kind] += 1
        if kind == "one-line":
            path, n, old, new = what
            lines = file_lines(fix, path)
            if (same_code(old, new) and indent(old) == indent(new)) or n in strings_of(fix.old_text.get(path)):
                same = same_code(old, new) and indent(old) == indent(new)
                counts["one-line: same code" if same else "one-line: inside a string (a docstring, a text over several lines)"] += 1
                counts[kind] -= 1
                continue
            counts["pre-fix file read" if fix.old_text.get(path) is not None else "hunk context only"] += 1
            ctx = context(lines, n)
            ok = {}
            for label in labels:
                ok[label] = made(OPS[label], old, new, fix.goal_numbers, ctx)[0]
                counts[f"made ({label})"] += ok[label]
            if not ok[labels[-1]]:
                cat = category(old, new)
                cats[cat] += 1
                if not private and len(examples[cat]) < show:
                    examples[cat].append(f"{fix.name}: {old.strip()[:90]}  =>  {new.strip()[:90]}")
        elif kind == "add":
            path, n, added = what
            counts[f"adds {len(added)} line(s)"] += 1
            for k, label in enumerate(labels):
                g = guard_made(OPS[label], fix, path, n, added)
                if g is not None:
                    counts["guards (if + one line)"] += k == 0
                    counts[f"guard made ({label})"] += g
                    if not g and label == labels[-1]:
                        cat = "guard: " + guard_category(added[0])
                        cats[cat] += 1
                        if not private and len(examples[cat]) < show:
                            examples[cat].append(f"{fix.name}: {added[0].strip()[:90]} ;; {added[1].strip()[:60]}")
        # the cost: edits per code line of the buggy files (scenarios), or of the fixed line (BugsInPy)
        for fp in fix.files:
            if is_test(fp.path) or (fix.corpus in ("bugsinpy", "mined") and kind != "one-line"):
                continue
            lines = file_lines(fix, fp.path)
            numbers = _code_lines(lines, min(lines), max(lines), known_start=True, strings=string_lines(lines)) if lines else set()
            todo = [what[1]] if fix.corpus in ("bugsinpy", "mined") else sorted(numbers)
            for n in todo:
                if n in lines and lines[n].strip() and not lines[n].strip().startswith("#"):
                    ctx = context(lines, n)
                    for label in labels:
                        cost[label].append(len(mutations(OPS[label], lines[n], fix.goal_numbers, ctx)))
    out = [f"  fixes {len(fixes)}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))]
    out.append("  edits per line: " + ", ".join(f"{label} {sum(c) / max(1, len(c)):.1f} over {len(c)} lines"
                                                 for label, c in cost.items()))
    if cats and not private:   # a held-out corpus: its totals only, not even the shapes of its fixes
        out.append(f"  one-line fixes not made ({labels[-1]}), by category:")
        for cat, k in cats.most_common():
            out.append(f"    {k:4d}  {cat}")
            out += [f"            {e}" for e in examples[cat]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bugsinpy", help="BugsInPy: a bare git directory or a checkout")
    parser.add_argument("--mirrors", type=Path, help="clones with history, DIR/<owner>+<name>/repo")
    parser.add_argument("--mine", type=Path, help="mine one-line fixes from the histories of the clones in DIR")
    parser.add_argument("--mine-max", type=int, default=200, help="mined fixes per clone")
    parser.add_argument("--corpora", default="dev,dev2,real,home", help="scenario corpora (comma-separated, '' for none)")
    parser.add_argument("--heldout", default="", help="held-out corpora: counts only")
    parser.add_argument("--against", help="git revision whose operator table is measured too")
    parser.add_argument("--show", type=int, default=3, help="examples per category (public corpora only)")
    args = parser.parse_args()
    labels = ["now"]
    OPS["now"] = load_ops(None)
    if args.against:
        OPS[args.against] = load_ops(args.against)
        labels.insert(0, args.against)
    groups: list[tuple[str, list[Fix], bool]] = []
    if args.bugsinpy:
        groups.append(("BugsInPy", list(bugsinpy(args.bugsinpy, args.mirrors)), False))
    if args.mine:
        groups.append(("mined one-line fixes", list(mined(args.mine, args.mine_max)), False))
    for corpus in filter(None, args.corpora.split(",")):
        groups.append((corpus, list(scenarios(corpus)), False))
    for corpus in filter(None, args.heldout.split(",")):
        groups.append((corpus + " (counts only)", list(scenarios(corpus)), True))
    for title, fixes, private in groups:
        print(title)
        print("\n".join(measure(fixes, labels, private, args.show)))
    print("fix shapes measured:", ", ".join(f"{t} {len(f)}" for t, f, _ in groups))


if __name__ == "__main__":
    main()
