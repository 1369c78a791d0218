"""The diff-scope check: which paths a candidate diff touches, and whether it may touch them."""
from __future__ import annotations

import hashlib
import posixpath
import re

from pydantic import BaseModel
from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from .spec import REFUSED_INFRASTRUCTURE, AcceptanceSpec, glob_match

# Added source lines that reach into the test harness. Obfuscation can evade a token list,
# so this is a tripwire on top of the structural checks, not the defence itself.
TAMPER_TOKENS = re.compile(
    r"\b(_pytest\w*|pytest\w*|conftest|junit\w*|hookimpl|pluginmanager|sys\.modules|_getframe|f_locals|"
    r"f_globals|f_back|os\._exit|atexit|sys\.settrace|sys\.setprofile|builtins|__builtins__|__import__|"
    r"importlib|inspect|PYTEST_\w+|subprocess|ctypes|socket)\b"
    r"|(?<![\w.])(eval|exec|compile)\s*\(")


class FileChange(BaseModel):
    path: str
    source: str | None
    target: str | None
    kind: str  # added | removed | modified | renamed
    added: int
    removed: int
    source_mode: str | None = None
    target_mode: str | None = None


class ScopeViolation(BaseModel):
    path: str
    rule: str
    detail: str


class ScopeVerdict(BaseModel):
    diff_sha256: str
    ok: bool
    parse_error: str | None = None
    files: list[FileChange] = []
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


def _strip(path: str | None) -> str | None:
    if path is None or path == "/dev/null":
        return None
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


# What a person's grant for a path can waive. A protected file stays protected for verification
# (the verifier restores it from its own copy before any test runs), so granting its edit, and
# the tripwire on it, cannot weaken a verdict. Escapes, symlinks, binaries, renames, modes, sizes
# and added test infrastructure are never waived.
GRANTABLE_RULES = ("protected", "not-writable")


def check_scope(diff: str, spec: AcceptanceSpec, *, require_change: bool = True,
                granted: tuple[str, ...] = ()) -> ScopeVerdict:
    """Judge a unified diff against the spec without applying it. `granted`: path globs a person
    allowed for this run (see GRANTABLE_RULES for what that waives)."""
    digest = diff_sha256(diff)
    violations: list[ScopeViolation] = []
    waived: list[ScopeViolation] = []

    def refuse(path: str, rule: str, detail: str) -> None:
        violation = ScopeViolation(path=path, rule=rule, detail=detail)
        restored_anyway = rule == "harness-tampering" and spec.is_protected(path)
        if (rule in GRANTABLE_RULES or restored_anyway) and glob_match(path, granted):
            waived.append(violation)
        else:
            violations.append(violation)

    if len(diff.encode("utf-8", errors="surrogateescape")) > spec.max_diff_bytes:
        refuse("*", "size", f"diff is larger than {spec.max_diff_bytes} bytes")
    if "GIT binary patch" in diff or re.search(r"^Binary files .* differ$", diff, re.M):
        refuse("*", "binary", "binary patches are refused")
    try:
        # What the sandbox applies: the diff with its hunk headers recounted.
        patch = PatchSet(recount_hunks(diff))
    except (UnidiffParseError, Exception) as exc:  # unidiff raises plain errors on odd input too
        return ScopeVerdict(diff_sha256=digest, ok=False, parse_error=f"{type(exc).__name__}: {exc}",
                            violations=violations + [ScopeViolation(path="*", rule="unparsable",
                                                                    detail=str(exc)[:500])])
    if diff.strip() and not len(patch):
        refuse("*", "unparsable", "no file changes found in a non-empty diff")

    files: list[FileChange] = []
    for pf in patch:
        source, target = _strip(pf.source_file), _strip(pf.target_file)
        kind = ("added" if pf.is_added_file else "removed" if pf.is_removed_file
                else "renamed" if pf.is_rename or (source and target and source != target) else "modified")
        change = FileChange(path=target or source or "?", source=source, target=target, kind=kind,
                            added=pf.added, removed=pf.removed,
                            source_mode=getattr(pf, "source_mode", None),
                            target_mode=getattr(pf, "target_mode", None))
        files.append(change)
        for path in {p for p in (source, target) if p}:
            problem = _path_problem(path)
            if problem:
                refuse(path, "path", problem)
                continue
            if protected := spec.is_protected(path):
                refuse(path, "protected", f"matches protected pattern {protected!r}")
            elif infra := glob_match(path, REFUSED_INFRASTRUCTURE):
                refuse(path, "test-infrastructure", f"matches refused pattern {infra!r}")
            elif not spec.is_writable(path):
                refuse(path, "not-writable", f"outside writable globs {list(spec.writable)}")
        if pf.is_binary_file:
            refuse(change.path, "binary", "binary file change")
        if pf.is_symlink or "120000" in (change.source_mode or "", change.target_mode or ""):
            refuse(change.path, "symlink", "symlinks are refused")
        if kind == "modified" and change.source_mode and change.target_mode \
                and change.source_mode != change.target_mode:
            refuse(change.path, "mode-change", f"{change.source_mode} -> {change.target_mode}")
        if "160000" in (change.source_mode or "", change.target_mode or ""):
            refuse(change.path, "submodule", "submodules are refused")
        if kind == "renamed":
            refuse(change.path, "rename", f"{source} -> {target}")
        if change.path.endswith(".py"):
            for hunk in pf:
                for line in hunk:
                    if line.is_added and (m := TAMPER_TOKENS.search(line.value)):
                        refuse(change.path, "harness-tampering",
                               f"added line {line.target_line_no} mentions {m.group(0)!r}")
                        break

    added = sum(f.added for f in files)
    removed = sum(f.removed for f in files)
    if added + removed > spec.max_changed_lines:
        refuse("*", "size", f"{added + removed} changed lines > {spec.max_changed_lines}")
    if require_change and not files:
        refuse("*", "empty", "the diff changes nothing")
    return ScopeVerdict(diff_sha256=digest, ok=not violations, files=files, violations=violations,
                        added_lines=added, removed_lines=removed, granted=waived)
