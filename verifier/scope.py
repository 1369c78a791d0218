"""The diff-scope check: which paths a candidate diff touches, and whether it may touch them.

Two parsers read every diff. unidiff gives the hunks (line counts, modes, the tamper tripwire);
`git apply` itself, asked what it would do without doing it, gives the paths git will write. They
can disagree (a `+++` line ending in a carriage return, a timestamp after a space, a `rename from`
that the `diff --git` header does not name, a miscounted hunk that `--recount` reads further), and
it is git that writes the files, so a diff the two read differently is refused whole, and every
path rule is checked on both readings.

Kept in one module: the two readings, the path rules and the recount are one check whose parts
must agree on every diff; splitting them would put the agreement rule between files.
"""
from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
import subprocess
import tempfile
import threading
import unicodedata
from pathlib import Path

from pydantic import BaseModel
from unidiff import PatchSet
from unidiff.constants import DEV_NULL
from unidiff.errors import UnidiffParseError

from .spec import REFUSED_INFRASTRUCTURE, AcceptanceSpec, glob_match

# The `git apply` flags that change how a patch is *read* (not whether it applies), exactly as
# every place that applies a candidate diff passes them (the sandbox and the verifier apply with
# `--recount`, to forgive the miscounted hunk headers models write). Both parsers read the text that
# is applied, `recount_hunks(diff)`: git would otherwise read a hunk on past a miscounted header (a
# `+` line unidiff leaves out), and a traditional multi-file diff (no `diff` line between files) as
# one file.
GIT_APPLY_READ_FLAGS: tuple[str, ...] = ("--recount",)
GIT_READ_TIMEOUT_S = 30.0


class FileChange(BaseModel):
    path: str
    source: str | None
    target: str | None
    kind: str  # added | removed | modified | renamed | copied
    added: int
    removed: int
    source_mode: str | None = None
    target_mode: str | None = None
    binary: bool = False


class ScopeViolation(BaseModel):
    path: str
    rule: str
    detail: str


class ScopeVerdict(BaseModel):
    diff_sha256: str
    ok: bool
    parse_error: str | None = None
    files: list[FileChange] = []
    # The same diff as `git apply` reads it (empty when git was not asked: unparsable or oversized).
    git_files: list[FileChange] = []
    violations: list[ScopeViolation] = []
    added_lines: int = 0
    removed_lines: int = 0
    # Violations a person's grant waived: still listed, so a report can say a grant was used.
    granted: list[ScopeViolation] = []

    @property
    def grants_needed(self) -> list[str]:
        return sorted({f"{v.rule}: {v.path}" for v in self.violations})


HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


def recount_hunks(diff: str) -> str:
    """The diff with every hunk header's line counts taken from its body, as `git apply --recount`
    counts them: the commonest slip in a hand- or model-written diff is a miscounted header.

    The sandbox applies exactly this text (with --recount) and the scope check parses exactly
    this text, so both see the same lines. Git's recount runs a hunk on to the next `@@ ` or
    `diff ` line; a traditional multi-file diff (no `diff` lines) would lose its next `--- `/`+++ `
    header (followed by an `@@ ` line) to the hunk, so a `diff -u OLD NEW` line (ignored by git and unidiff alike, as in
    `diff -ruN` output) is put before such a header. A hunk git would not recount (a line no hunk
    can hold) keeps its header. Blank lines at the very end are dropped (git would count them as
    context). A diff needing none of this comes back unchanged."""
    lines = diff.split("\n")
    while lines and lines[-1] == "" and len(lines) > 1 and lines[-2] == "":
        lines.pop()  # keep one final newline, drop further blank lines
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = HUNK_HEADER.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        old = new = 0
        j, recountable, boundary = i + 1, True, None
        while j < len(lines):
            line = lines[j]
            if j == len(lines) - 1 and line == "":
                break  # the newline that ends the diff
            head = line[:1]
            if head in (" ", ""):
                old, new = old + 1, new + 1
            elif head == "-":
                if line.startswith("--- ") and lines[j + 1:j + 2] and lines[j + 1].startswith("+++ ") \
                        and HUNK_HEADER.match(lines[j + 2] if j + 2 < len(lines) else ""):
                    boundary = j
                    break
                old += 1
            elif head == "+":
                new += 1
            elif head == "\\":
                pass
            elif line.startswith(("@@ ", "diff ")):
                break
            else:
                recountable = False
                break
            j += 1
        header = lines[i]
        if recountable:
            a, b, c, d, rest = match.groups()
            if (int(b if b is not None else 1), int(d if d is not None else 1)) != (old, new):
                header = f"@@ -{a},{old} +{c},{new} @@{rest}"
        out.append(header)
        out.extend(lines[i + 1:j])
        if boundary is not None:
            src, dst = lines[j][4:].split("\t")[0], lines[j + 1][4:].split("\t")[0]
            out.append(f"diff -u {src} {dst}")
        i = j
    return "\n".join(out)


def diff_sha256(diff: str) -> str:
    return hashlib.sha256(diff.encode("utf-8", errors="surrogateescape")).hexdigest()


_C_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13,
              ord('"'): 34, ord("\\"): 92}


def _unquote(name: str) -> str:
    """git's C-style quoting of unusual paths ("b/caf\\303\\251.py" is b/café.py); a name that is
    not a well-formed quoted name is returned as it was read."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    raw, out, i = name[1:-1].encode("utf-8", errors="surrogateescape"), bytearray(), 0
    while i < len(raw):
        c = raw[i]
        if c == ord('"'):
            return name
        if c != ord("\\"):
            out.append(c)
            i += 1
        elif i + 1 < len(raw) and raw[i + 1] in _C_ESCAPES:
            out.append(_C_ESCAPES[raw[i + 1]])
            i += 2
        elif re.fullmatch(rb"[0-3][0-7][0-7]", raw[i + 1:i + 4]):
            out.append(int(raw[i + 1:i + 4], 8))
            i += 4
        else:
            return name
    return out.decode("utf-8", errors="surrogateescape")


def _strip(path: str | None) -> str | None:
    if path is None or path == DEV_NULL:
        return None
    path = _unquote(path)
    for prefix in ("a/", "b/"):
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


def _path_problem(path: str) -> str | None:
    if not path or "\0" in path or "\\" in path:
        return "empty or unusual characters"
    if path.startswith("/"):
        return "absolute path"
    norm = posixpath.normpath(path)
    if norm.startswith("..") or "/../" in f"/{path}/" or norm != path.rstrip("/"):
        return "escapes or is not normalised"
    return None


def _control_characters(path: str) -> list[str]:
    """Control, format (zero-width, bidi), line-separator and undecodable characters: a path
    holding one can read differently to a parser, a file system or a person."""
    return sorted({f"U+{ord(c):04X}" for c in path if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")})


def _fold(path: str) -> str:
    """The path as a case-insensitive, Unicode-normalising file system (or NTFS's trailing dot and
    space stripping) may resolve it: `src/ConfTest.py ` and `src/ｃonftest.py` fold to src/conftest.py."""
    text = unicodedata.normalize("NFKC", path).casefold()
    return "/".join(part.rstrip(" .") or part for part in text.split("/"))


@functools.lru_cache(maxsize=64)
def _folded(patterns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_fold(p) for p in patterns)


# ---------------------------------------------------------------------------------------------
# git's reading: `git apply --numstat --summary -z` reads the patch exactly as an apply would and
# applies nothing, touches no file, and needs no repository. numstat gives one verbatim
# NUL-terminated name per patch (the new name, or the old one for a deletion); the summary then
# says which patches create, delete, rename, copy or change a mode, one newline-ended line each.

_READ_DIR: tempfile.TemporaryDirectory | None = None
_READ_DIR_LOCK = threading.Lock()


def _read_dir() -> Path:
    """An empty directory outside any repository (git apply in a repository's subdirectory would
    prefix the names it reports), removed when the process exits. Made under a lock: `check` reads
    diffs on a thread pool, and a directory made twice at once is removed under the loser's feet
    (a TemporaryDirectory cleans up when its last reference goes)."""
    global _READ_DIR
    with _READ_DIR_LOCK:
        if _READ_DIR is None or not Path(_READ_DIR.name).is_dir():
            _READ_DIR = tempfile.TemporaryDirectory(prefix="repair-agent-diff-read-")
        return Path(_READ_DIR.name)


def _git_env(cwd: Path) -> dict[str, str]:
    # No user or system configuration, and no enclosing repository: the reading depends on the
    # diff and git's version alone.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES": str(cwd.parent), "HOME": str(cwd)}


def _fact(line: str | None, verb: str, name: str) -> tuple[bool, str | None]:
    """Does a summary line say `verb` (create/delete) about `name`, and with which mode?"""
    if line is None:
        return False, None
    if line == f" {verb} {name}":
        return True, None
    m = re.match(rf" {verb} mode ([0-7]{{6}}) ", line)
    return (True, m.group(1)) if m and line[m.end():] == name else (False, None)


def _rename_source(line: str | None, new: str) -> tuple[str, str] | None:
    """(rename|copy, old name) from ` rename src/{a.py => b.py} (90%)`, given git's new name."""
    m = re.fullmatch(r" (rename|copy) (.*) \(\d+%\)", line or "", re.S)
    if not m:
        return None
    verb, body = m.groups()
    if body.endswith(f" => {new}"):
        return verb, body[:-len(f" => {new}")]
    for cut in [i + 1 for i, c in enumerate(new) if c == "/"]:
        prefix, rest = new[:cut], new[cut:]
        if body.startswith(prefix + "{") and body.endswith(f" => {rest}}}"):
            return verb, prefix + body[len(prefix) + 1:-len(f" => {rest}}}")]
    return None


def _parse_git_reading(out: bytes) -> tuple[list[FileChange], list[str]]:
    text = out.decode("utf-8", errors="surrogateescape")
    cut = text.rfind("\0") + 1
    records, summary = text[:cut].split("\0")[:-1], text[cut:]
    problems: list[str] = []
    if summary and not summary.endswith("\n"):
        problems.append(f"git's summary is cut short: {summary[-200:]!r}")
    lines = summary.split("\n")[:-1]
    pos = 0

    def peek() -> str | None:
        return lines[pos] if pos < len(lines) else None

    changes: list[FileChange] = []
    for record in records:
        fields = record.split("\t", 2)
        if len(fields) != 3 or not (fields[0] == fields[1] == "-" or fields[0].isdigit() and fields[1].isdigit()):
            problems.append(f"git numstat record not understood: {record[:200]!r}")
            continue
        added, removed, name = fields
        binary = added == "-"
        source: str | None = name
        target: str | None = name
        source_mode: str | None = None
        target_mode: str | None = None
        kind = "modified"
        if (hit := _fact(peek(), "create", name))[0]:
            kind, source, target_mode, pos = "added", None, hit[1], pos + 1
        elif (hit := _fact(peek(), "delete", name))[0]:
            kind, target, source_mode, pos = "removed", None, hit[1], pos + 1
        elif renamed := _rename_source(peek(), name):
            kind, source, pos = ("renamed" if renamed[0] == "rename" else "copied"), renamed[1], pos + 1
            if m := re.fullmatch(r" mode change ([0-7]{6}) => ([0-7]{6})", peek() or ""):
                (source_mode, target_mode), pos = m.groups(), pos + 1
        else:
            rewrite = re.fullmatch(r" rewrite (.*) \(\d+%\)", peek() or "", re.S)
            if rewrite and name in (rewrite.group(1), _unquote(rewrite.group(1))):
                pos += 1  # a whole-file rewrite is an ordinary modification
            m = re.match(r" mode change ([0-7]{6}) => ([0-7]{6}) ", peek() or "")
            if m and (peek() or "")[m.end():] == name:
                (source_mode, target_mode), pos = m.groups(), pos + 1
        changes.append(FileChange(path=name, source=source, target=target, kind=kind,
                                  added=0 if binary else int(added), removed=0 if binary else int(removed),
                                  source_mode=source_mode, target_mode=target_mode, binary=binary))
    if pos < len(lines):
        problems.append(f"git summary line not understood: {lines[pos][:200]!r}")
    return changes, problems


def _run_readers(data: bytes, cwd: Path, flags: tuple[str, ...], reverse: bool) -> list[tuple[int, bytes, bytes]]:
    """The forward reading and, when asked, the reversed one (-R), side by side: two short
    processes at once cost about what one does."""
    argv = ["git", "apply", "--numstat", "--summary", "-z", *flags]
    procs = [subprocess.Popen(argv + extra + ["-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, cwd=cwd, env=_git_env(cwd))
             for extra in ([], ["-R"])[:2 if reverse else 1]]
    try:
        outputs = [p.communicate(data, timeout=GIT_READ_TIMEOUT_S) for p in procs]
        return [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


# Only a `diff --git` section can name two different files without a rename or copy line (its
# `---` and `+++`); a traditional patch has one name, or /dev/null on one side.
_GIT_HEADER = re.compile(r"^diff --git ", re.M)


def git_reading(diff: str, flags: tuple[str, ...] | None = None) -> tuple[list[FileChange] | None, list[str]]:
    """The files `git apply` (with `flags`, by default GIT_APPLY_READ_FLAGS) would write and remove
    for this diff, without applying it; None and the reason when git cannot read the diff at all.

    numstat names only one side of each patch, and a `diff --git` section whose `---` names
    another file than its `+++` moves that file without any `rename` line. For such diffs the
    reversed reading (-R) names the other side, so the old name of every patch comes from git."""
    cwd, two_sided = _read_dir(), bool(_GIT_HEADER.search(diff))
    try:
        readings = _run_readers(diff.encode("utf-8", errors="surrogateescape"), cwd,
                                GIT_APPLY_READ_FLAGS if flags is None else flags, two_sided)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, [f"git apply could not be run to read the diff: {exc}"]
    for (code, _, err), direction in zip(readings, ("", " in reverse")):
        if code:
            return None, [f"git apply cannot read the diff{direction}: {err.decode(errors='replace').strip()[-500:]}"]
    changes, problems = _parse_git_reading(readings[0][1])
    if not two_sided:
        return changes, problems
    reverse, _ = _parse_git_reading(readings[1][1])
    reverse.reverse()  # -R also lists the patches last first
    if [(c.added, c.removed) for c in changes] != [(r.removed, r.added) for r in reverse]:
        return changes, problems + ["git's forward and reversed readings of the diff differ"]
    for change, back in zip(changes, reverse):
        if change.kind == "added":
            continue
        if change.kind in ("renamed", "copied") and change.source != back.path:
            problems.append(f"git's summary names {change.source!r}, its reversed reading {back.path!r}")
        change.source = back.path
        if change.kind == "modified" and change.source != change.target:
            change.kind = "renamed"  # git reads the old file and removes it: a move with no rename line
    return changes, problems


def _unidiff_change(pf) -> FileChange:
    source, target = _strip(pf.source_file), _strip(pf.target_file)
    # Only /dev/null makes a creation or deletion, for git as here: a hunk `@@ -0,0 +1 @@` on an
    # existing empty file is a modification.
    kind = ("added" if pf.source_file == DEV_NULL else "removed" if pf.target_file == DEV_NULL
            else "renamed" if source != target else "modified")
    return FileChange(path=target or source or "?", source=source, target=target, kind=kind,
                      added=pf.added, removed=pf.removed, source_mode=getattr(pf, "source_mode", None),
                      target_mode=getattr(pf, "target_mode", None), binary=bool(pf.is_binary_file))


def _mode(mode: str | None) -> int | str | None:
    try:
        return int(mode, 8) if mode else None  # "0120000" and "120000" are one mode to git
    except ValueError:
        return mode


def _shape(change: FileChange) -> tuple:
    """What a reading says a file change does: paths, kind, the modes it sets, its line counts."""
    s, t = _mode(change.source_mode), _mode(change.target_mode)
    modes = ((None, t) if change.kind == "added" else (s, None) if change.kind == "removed"
             else (s, t) if s and t and s != t else (None, None))
    counts = (None, None) if change.binary else (change.added, change.removed)
    return (change.source, change.target, change.kind, modes, counts)


def _describe(change: FileChange) -> str:
    source, target, kind, (old_mode, new_mode), (added, removed) = _shape(change)
    paths = repr(source) if target is None else repr(target) if source in (None, target) else f"{source!r} -> {target!r}"
    modes = [f"{m:o}" if isinstance(m, int) else str(m) for m in (old_mode, new_mode) if m]
    mode = f", mode {' -> '.join(modes)}" if modes else ""
    lines = "binary" if change.binary else f"+{added} -{removed}"
    return f"{kind} {paths} ({lines}{mode})"


def _disagreements(ours: list[FileChange], gits: list[FileChange]) -> list[tuple[str, str]]:
    if len(ours) != len(gits):
        return [("*", f"unidiff reads {len(ours)} file change(s): {'; '.join(map(_describe, ours)) or 'none'}; "
                      f"git apply reads {len(gits)}: {'; '.join(map(_describe, gits)) or 'none'}")]
    return [(g.path, f"unidiff reads {_describe(u)}; git apply reads {_describe(g)}")
            for u, g in zip(ours, gits) if _shape(u) != _shape(g)]


# What a person's grant for a path can waive. A protected file stays protected for verification
# (the verifier restores it from its own copy before any test runs), so granting its edit cannot
# weaken a verdict. (What the added code does is the gate's question: verifier/gate.py.) Escapes, symlinks, binaries, renames, modes, sizes,
# added test infrastructure and diffs the parsers read differently are never waived.
GRANTABLE_RULES = ("protected", "not-writable")


def check_scope(diff: str, spec: AcceptanceSpec, *, require_change: bool = True,
                granted: tuple[str, ...] = ()) -> ScopeVerdict:
    """Judge a unified diff against the spec without applying it. `granted`: path globs a person
    allowed for this run (see GRANTABLE_RULES for what that waives)."""
    digest = diff_sha256(diff)
    violations: list[ScopeViolation] = []
    waived: list[ScopeViolation] = []
    seen: set[tuple[str, str, str]] = set()

    def refuse(path: str, rule: str, detail: str) -> None:
        if (path, rule, detail) in seen:  # both readings agree on most paths: say it once
            return
        seen.add((path, rule, detail))
        violation = ScopeViolation(path=path, rule=rule, detail=detail)
        if rule in GRANTABLE_RULES and glob_match(path, granted):
            waived.append(violation)
        else:
            violations.append(violation)

    def judge(change: FileChange, reader: str) -> None:
        """The path and file-type rules, on one parser's reading of one file change."""
        for path in dict.fromkeys(p for p in (change.source, change.target) if p is not None):
            if controls := _control_characters(path):
                refuse(path, "control-character", f"the path holds {', '.join(controls)}: {path!r}")
                continue
            if problem := _path_problem(path):
                refuse(path, "path", problem)
                continue
            if protected := spec.is_protected(path):
                refuse(path, "protected", f"matches protected pattern {protected!r}")
            elif infra := glob_match(path, REFUSED_INFRASTRUCTURE):
                refuse(path, "test-infrastructure", f"matches refused pattern {infra!r}")
            else:
                folded = _fold(path)
                look_alike = folded != path and (glob_match(folded, _folded(spec.all_protected))
                                                 or glob_match(folded, _folded(REFUSED_INFRASTRUCTURE)))
                if look_alike:
                    refuse(path, "confusable-path", f"{path!r} folds to {folded!r} (case, Unicode form, trailing "
                                                    f"dots or spaces), which matches {look_alike!r}")
                elif not spec.is_writable(path):
                    refuse(path, "not-writable", f"outside writable globs {list(spec.writable)}")
        if change.source is None and change.target is None:
            refuse(change.path, "path", f"{reader} reads a change with no file name")
        modes = (change.source_mode or "", change.target_mode or "")
        if change.binary:
            refuse(change.path, "binary", "binary file change")
        # Substring as well as value: unidiff keeps odd spellings like 0120000 verbatim.
        if any(_mode(m) == 0o120000 or "120000" in m for m in modes if m):
            refuse(change.path, "symlink", "symlinks are refused")
        if change.kind in ("modified", "renamed", "copied") and all(modes) and _mode(modes[0]) != _mode(modes[1]):
            refuse(change.path, "mode-change", f"{change.source_mode} -> {change.target_mode}")
        if any(_mode(m) == 0o160000 or "160000" in m for m in modes if m):
            refuse(change.path, "submodule", "submodules are refused")
        if change.kind == "renamed":
            refuse(change.path, "rename", f"{change.source} -> {change.target}")
        if change.kind == "copied":
            refuse(change.path, "copy", f"{reader} reads a copy: {change.source} -> {change.target}")

    size = len(diff.encode("utf-8", errors="surrogateescape"))
    if size > spec.max_diff_bytes:
        refuse("*", "size", f"diff is larger than {spec.max_diff_bytes} bytes")
    if "GIT binary patch" in diff or re.search(r"^Binary files .* differ$", diff, re.M):
        refuse("*", "binary", "binary patches are refused")
    # Both parsers read exactly the text that `git apply` is given.
    text = recount_hunks(diff)
    try:
        patch = PatchSet(text)
    except (UnidiffParseError, Exception) as exc:  # unidiff raises plain errors on odd input too
        return ScopeVerdict(diff_sha256=digest, ok=False, parse_error=f"{type(exc).__name__}: {exc}",
                            violations=violations + [ScopeViolation(path="*", rule="unparsable",
                                                                    detail=str(exc)[:500])])
    if text.strip() and not len(patch):
        refuse("*", "unparsable", "no file changes found in a non-empty diff")

    files = [_unidiff_change(pf) for pf in patch]
    for pf, change in zip(patch, files):
        judge(change, "unidiff")
        if pf.is_symlink:
            refuse(change.path, "symlink", "symlinks are refused")

    # git writes the files, so git's reading is judged too, and must be the same reading.
    git_files: list[FileChange] = []
    parse_error = None
    if files and size <= spec.max_diff_bytes:
        read, problems = git_reading(text)
        if read is None:
            if problems[0].startswith("git apply cannot read"):
                parse_error = problems[0]  # as unusable as a diff unidiff cannot parse
            refuse("*", "ambiguous-diff", f"{problems[0]}; unidiff reads: {'; '.join(map(_describe, files))}")
        else:
            git_files = read
            for problem in problems:
                refuse("*", "ambiguous-diff", problem)
            for change in git_files:
                judge(change, "git apply")
            for path, detail in _disagreements(files, git_files):
                refuse(path, "ambiguous-diff", detail)

    added = sum(f.added for f in files)
    removed = sum(f.removed for f in files)
    if added + removed > spec.max_changed_lines:
        refuse("*", "size", f"{added + removed} changed lines > {spec.max_changed_lines}")
    if require_change and not files:
        refuse("*", "empty", "the diff changes nothing")
    return ScopeVerdict(diff_sha256=digest, ok=not violations, parse_error=parse_error, files=files,
                        git_files=git_files, violations=violations, added_lines=added, removed_lines=removed,
                        granted=waived)
