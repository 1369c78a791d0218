"""The code gate: what a candidate diff ADDS is read before it runs.

Trust model: the pristine repository's code is the user's and trusted; every line a candidate diff
adds or changes is untrusted. `review` applies the diff exactly as the verifier does (`git apply
--recount --whitespace=nowarn` of `recount_hunks(diff)`) to a scratch copy of the touched files,
finds the added and changed lines by comparing pristine and patched text (git may apply a hunk at
an offset, so hunk line numbers are not trusted), and reads them with `ast`. A construct that can
reach the test process's machinery or sense the check environment is a `Finding`; each one stops
the run with `authorization_required` until a person grants its key. The rule is "deny what cannot
be read": obfuscation (a non-UTF-8 encoding, a non-NFKC identifier, a control character, a
computed attribute name, a module handed around as a value) is itself a finding.

Deliberately not findings:
- A construct that the pristine lines this added region replaced already had (same rule, same
  construct text): the user's own code did that there.
- Protected files (the verifier restores them before anything runs) and removed files.
- A `.py` file whose patched text does not parse: a module that does not compile runs nothing, and
  the tests report its SyntaxError. This assumes the check's Python is not newer than the Python
  the gate runs on (a newer grammar could accept text this one rejects); the sandbox image and the
  host are both CPython 3.11.
- A diff that does not apply: the scope check and the apply step report it.

Kept in one module: applying the diff, finding the lines it adds, and reading them (text, then
`ast` through verifier/gate_rules.py) are one pipeline whose steps share one numbering of lines.
"""
from __future__ import annotations

import codecs
import difflib
import functools
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import tokenize
import unicodedata
import warnings
from pathlib import Path

from pydantic import BaseModel, ConfigDict
from unidiff import PatchSet

from . import gate_rules as rules
from .scope import git_reading, recount_hunks
from .spec import AcceptanceSpec

RULES: dict[str, str] = {  # rule -> what a construct under it does (the report reads "`construct` <this>")
    "encoding": "declares a source encoding other than UTF-8 or does not decode, so Python runs other text "
                "than a reader sees",
    "identifier-normalisation": "is an identifier Python NFKC-normalises into another name (ｓｙｓ is sys)",
    "control-character": "is a control, format, bidi, zero-width, private-use, line-separator or non-ASCII space "
                         "character that can hide, overwrite or reorder what a person reads in the diff",
    "new-import": "imports a module the pristine code never imports, neither the project's own nor pure stdlib",
    "harness-module": "reaches the test harness (pytest, unittest, doctest, hypothesis, pluggy) in its own process",
    "protected-module-import": "imports a protected module (a test or conftest), whose globals it could rebind",
    "import-machinery": "reaches the import system (importlib, __import__, sys.path, loaders), which decides what runs",
    "dynamic-code": "builds or runs code that cannot be read before it runs (eval, exec, code objects, unpickling)",
    "frames": "reads interpreter frames or tracebacks, through which code reaches its callers' (the tests') variables",
    "gc": "walks the garbage collector's object graph, which reaches every object in the process",
    "tracing": "installs or reads tracing, profiling or audit hooks, which see and steer every call",
    "process": "starts, signals, waits for or ends processes or threads, or registers exit handlers",
    "native-code": "loads native code or reaches raw memory (ctypes, cffi)",
    "file-descriptor": "uses raw file descriptors or the standard streams, which carry the test runner's output",
    "filesystem": "reads or writes the file system, where the tests, the runner's reports and the environment live",
    "environment": "senses the check environment (variables, paths, platform, interpreter, user, network)",
    "clock": "reads the current time, so behaviour can differ between the check and later use",
    "namespace": "reaches or rewrites another namespace (module table, globals, builtins, imported attributes)",
    "builtin-rebinding": "rebinds a builtin name for the whole module",
    "module-state": "keeps state between calls (a module-level counter, flag or cache changed inside a function), "
                    "so behaviour can depend on how often or in which order it was called",
    "computed-attribute": "reaches attributes by a computed name, or hands a module or an attribute-reaching "
                          "builtin around, so what it reaches cannot be read",
    "value-type": "changes how a built-in value type compares, converts or computes, or hooks class creation "
                  "or attribute access",
    "comparison-override": "defines how objects compare, hash or test true, which lets an object equal to "
                           "everything forge assertions",
    "shadowing-module": "adds a module named like a standard-library, installed or existing project module",
    "unreadable-file": "adds or changes a file that runs as code but is not Python source the gate reads",
}

APPLY_TIMEOUT_S = 30.0
# Scratch copies on a memory file system when there is one: they live for milliseconds.
_SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages"}
# Suffixes that run as code but are not Python source the gate reads.
CODE_SUFFIXES = frozenset(".pyc .pyo .pyd .so .dylib .dll .pyx .pxd .pxi .pyw .pth .pyz .egg .whl .zip .sh .bash "
                          ".zsh .ksh .fish .bat .cmd .ps1 .exe .jar .pl .rb".split())
_NEWLINE = re.compile(r"\r\n|\r|\n")  # what ends a line for Python's tokenizer (not \v, \f, U+2028...)
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})  # never shown raw in a snippet


# `construct` is the API's name for a field, and shadows pydantic's deprecated BaseModel.construct
# (pydantic warns once, at class creation; the field works as any other).
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message='Field name "construct"', category=UserWarning)

    class Finding(BaseModel):
        model_config = ConfigDict(frozen=True)

        rule: str
        path: str
        line: int       # 1-based, in the patched file; 0 for a whole-file finding
        construct: str  # type: ignore[assignment]  # (shadows the deprecated BaseModel.construct)
        snippet: str
        key: str        # code:{rule}@{path}#{hash}: what a person grants
        why: str


class GateVerdict(BaseModel):
    ok: bool
    findings: list[Finding] = []
    granted: list[Finding] = []
    files_read: int = 0

    @property
    def grants_needed(self) -> list[str]:
        return list(dict.fromkeys(f.key for f in self.findings))


# -- the pristine tree ---------------------------------------------------------------------------

def _module_parts(rel: str) -> list[str]:
    parts = rel[:-3].split("/")
    return parts[:-1] if parts[-1] == "__init__" else parts


class PristineIndex:
    """What the gate needs to know about the pristine tree, read once: the project's module names
    (every dotted suffix of every .py path, so `tests.test_x` and `test_x` both name a test module),
    which of them are protected, what the non-protected code imports, and each module's own import
    bindings (to follow re-exports) and value-type classes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.packages: set[str] = set()                 # directories holding an __init__.py
        self.dirs: set[str] = {""}
        self.modules: dict[str, set[str]] = {}          # non-protected module name -> paths
        self.protected_modules: set[str] = set()
        self.protected_paths: set[str] = set()          # .py files the spec protects (never read)
        self.stems: dict[str, set[str]] = {}            # module or package name -> paths
        self.imports: set[str] = set()                  # dotted names the pristine code imports
        self.import_tops: set[str] = set()
        self.provided: set[str] = set()                 # top-level names the project itself provides
        self.bindings: dict[str, dict[str, set[str]]] = {}
        self.stars: dict[str, list[str]] = {}
        self.defined: dict[str, set[str]] = {}
        self.value_classes: dict[str, set[str]] = {}

    @classmethod
    def build(cls, pristine: Path, spec: AcceptanceSpec) -> "PristineIndex":
        index = cls(Path(pristine))
        files = _python_files(index.root)
        for rel, _ in files:
            parts = rel.split("/")
            index.dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
            if parts[-1] == "__init__.py":
                index.packages.add("/".join(parts[:-1]))
        for rel, _ in files:
            parts = _module_parts(rel)
            names = {".".join(parts[i:]) for i in range(len(parts))}
            protected = bool(spec.is_protected(rel))
            if protected:
                index.protected_paths.add(rel)
            for name in names:
                if protected:
                    index.protected_modules.add(name)
                else:
                    index.modules.setdefault(name, set()).add(rel)
            if parts:
                index.stems.setdefault(parts[-1], set()).add(rel)
            if protected:
                continue
            module, is_package = index.primary(rel)
            index.provided.add(module.split(".")[0])
            try:
                tree = rules.ast.parse((index.root / rel).read_bytes())
            except (SyntaxError, ValueError, RecursionError, OSError):
                continue
            _, _, named = rules.import_bindings(rules.statements(tree), module, is_package)
            index.imports |= named
            index.import_tops |= {n.split(".")[0] for n in named}
            index.learn(module, is_package, tree)
        return index

    def learn(self, module: str, is_package: bool, tree) -> None:
        """A module's own import bindings, defined names and value-type classes."""
        level = list(rules.module_level(tree))
        bindings, stars, _ = rules.import_bindings(level, module, is_package)
        rules.assignment_aliases(level, bindings, set())
        self.bindings[module], self.stars[module] = bindings, stars
        self.defined[module] = {name for n in level for name in rules.stored_names(n)}

        def resolve(node) -> list[str]:
            if isinstance(node, rules.ast.Name):
                return sorted(bindings.get(node.id, ())) or (
                    [f"builtins.{node.id}"] if node.id in rules.BUILTIN_NAMES else [])
            if isinstance(node, rules.ast.Attribute):
                return [f"{d}.{node.attr}" for d in resolve(node.value)]
            return []
        self.value_classes[module] = rules.value_classes(level, resolve)  # what another module can import

    def primary(self, rel: str, extra_packages: frozenset[str] = frozenset()) -> tuple[str, bool]:
        """The dotted name the file is imported by (its chain of package directories), and whether
        it is a package's __init__."""
        parts = rel.split("/")
        dirs, k = parts[:-1], len(parts) - 1
        while k > 0 and ("/".join(dirs[:k]) in self.packages or "/".join(dirs[:k]) in extra_packages):
            k -= 1
        is_package = parts[-1] == "__init__.py"
        stem = [] if is_package else [parts[-1][:-3]]
        return ".".join(dirs[k:] + stem), is_package

    # -- cached builds -----------------------------------------------------------------------------
    _cache: dict[tuple, "PristineIndex"] = {}
    _lock = threading.Lock()

    @classmethod
    def cached(cls, pristine: Path, spec: AcceptanceSpec) -> "PristineIndex":
        """build(), kept per tree path, protected patterns and a fingerprint of every .py file's
        size and mtime: a tree that changed is read again."""
        root = Path(pristine).resolve()
        files = _python_files(root)
        key = (str(root), spec.all_protected, hashlib.sha256(repr(files).encode()).hexdigest())
        with cls._lock:
            if key in cls._cache:
                return cls._cache[key]
        index = cls.build(root, spec)
        with cls._lock:
            if len(cls._cache) >= 16:
                cls._cache.pop(next(iter(cls._cache)))
            cls._cache[key] = index
        return index


def _python_files(root: Path) -> list[tuple[str, tuple[int, int]]]:
    found = []
    for top, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS
                             and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = Path(top) / name
                if path.is_file() and not path.is_symlink():
                    st = path.stat()
                    found.append((path.relative_to(root).as_posix(), (st.st_size, st.st_mtime_ns)))
    return found


class _View:
    """The pristine index seen through the diff: patched modules' own bindings and new modules."""

    def __init__(self, index: PristineIndex) -> None:
        self.index = index
        self.patched = PristineIndex(index.root)  # what the patched modules bind, read from them
        self.new_modules: set[str] = set()

    def _facts(self, module: str) -> PristineIndex:
        return self.patched if module in self.patched.bindings else self.index

    def is_project(self, module: str) -> bool:
        return module in self.index.modules or module in self.new_modules

    def is_protected(self, module: str) -> bool:
        return module in self.index.protected_modules or module.split(".")[-1] == "conftest"

    def pristine_imports(self, module: str) -> bool:
        return module in self.index.imports or module.split(".")[0] in self.index.import_tops

    def is_value_class(self, dotted: str) -> bool:
        module, _, name = dotted.rpartition(".")
        return name in self._facts(module).value_classes.get(module, ())

    def reexport(self, dotted: str) -> str:
        """A name reached through a project module's own imports is the name it imports
        (`pkg.helpers.sys.modules` is `sys.modules` when helpers does `import sys`)."""
        parts = dotted.split(".")
        for _ in range(8):
            for i in range(len(parts) - 1, 0, -1):
                module, name = ".".join(parts[:i]), parts[i]
                facts = self._facts(module)
                targets = facts.bindings.get(module, {}).get(name)
                if targets:
                    parts = min(targets).split(".") + parts[i + 1:]
                    break
                stars = facts.stars.get(module)
                if stars and name not in facts.defined.get(module, ()):
                    parts = stars[0].split(".") + parts[i:]
                    break
            else:
                break
        return ".".join(parts)


# -- reading a diff ------------------------------------------------------------------------------

def _git_env(cwd: Path) -> dict[str, str]:
    # No user or system configuration and no enclosing repository, as verifier/scope.py reads diffs.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES": str(cwd.parent), "HOME": str(cwd)}


def _safe(rel: str | None) -> bool:
    return bool(rel) and "\0" not in rel and not rel.startswith("/") and ".." not in rel.split("/")  # type: ignore


def _named_paths(text: str) -> set[str] | None:
    """The paths a diff names, read in-process by unidiff (git's own reading costs a process)."""
    try:
        patch = PatchSet(text)
    except Exception:  # unidiff raises plain errors on odd input too
        return None
    names = set()
    for pf in patch:
        for name in (pf.source_file, pf.target_file):
            if name and name != "/dev/null" and not name.startswith('"'):
                names.add(name[2:] if name.startswith(("a/", "b/")) else name)
            elif name and name.startswith('"'):
                return None  # a quoted name: let git say what it is
    return names


def _apply(text: str, pristine: Path, scratch: Path) -> dict[str, bytes | None] | None:
    """Apply the diff to copies of the pristine files it names; {path: pristine bytes or None (new)}
    for every file git wrote, or None when the diff does not apply. The names come from unidiff, and
    from git's own reading when git needs a file unidiff did not name."""
    root = pristine.resolve()
    before: dict[str, bytes] = {}
    modes: dict[str, int] = {}

    def copy(names) -> None:
        for rel in names:
            if not _safe(rel) or rel in before:
                continue
            src = pristine / rel
            if src.is_file() and not src.is_symlink() and src.resolve().is_relative_to(root):
                dest = scratch / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
                before[rel], modes[rel] = src.read_bytes(), src.stat().st_mode & 0o111

    def git_apply() -> bool:
        proc = subprocess.run(["git", "apply", "--recount", "--whitespace=nowarn", "-"], cwd=scratch,
                              env=_git_env(scratch), input=text.encode("utf-8", errors="surrogateescape"),
                              capture_output=True, timeout=APPLY_TIMEOUT_S)
        return proc.returncode == 0

    named = _named_paths(text)
    copy(named or ())
    if named is None or not git_apply():
        changes, _ = git_reading(text)
        if changes is None:
            return None
        copy(p for c in changes for p in (c.source, c.target) if p)
        if not git_apply():
            return None
    written: dict[str, bytes | None] = {}
    for top, dirnames, filenames in os.walk(scratch):
        for name in filenames + [d for d in dirnames if (Path(top) / d).is_symlink()]:
            rel = (Path(top) / name).relative_to(scratch).as_posix()
            path = scratch / rel
            if path.is_symlink() or before.get(rel) != path.read_bytes() or modes.get(rel) != _mode(path):
                written[rel] = before.get(rel)
    return written


def _mode(path: Path) -> int:
    return path.lstat().st_mode & 0o111


def _split(text: str) -> tuple[list[str], list[bool]]:
    """Lines as Python numbers them, and which ended in a lone carriage return (a line break to
    Python, none to most viewers)."""
    if "\r" not in text:  # the common case, at a tenth of the cost
        lines = text.split("\n")
        lines = lines[:-1] if lines[-1] == "" else lines
        return lines, [False] * len(lines)
    lines, lone, pos = [], [], 0
    for m in _NEWLINE.finditer(text):
        lines.append(text[pos:m.start()])
        lone.append(m.group() == "\r")
        pos = m.end()
    if pos < len(text):
        lines.append(text[pos:])
        lone.append(False)
    return lines, lone


def _decode(data: bytes) -> tuple[str | None, str, int]:
    """(text or None, encoding, line of the coding declaration or 0), as Python reads source."""
    first = data.split(b"\n", 2)
    line = 0
    if first and _COOKIE.match(first[0]):
        line = 1
    elif len(first) > 1 and re.match(rb"^[ \t\f]*(#.*)?\r?$", first[0]) and _COOKIE.match(first[1]):
        line = 2
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding), codecs.lookup(encoding).name, line
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        return None, str(exc)[:80], line


def _regions(old: list[str], new: list[str]) -> tuple[dict[int, int], dict[int, int]]:
    """{patched line: region} for added or changed lines, {pristine line: region} for the lines each
    region replaced."""
    added: dict[int, int] = {}
    replaced: dict[int, int] = {}
    # The common head and tail first: matching a large file's few changed lines is then quick.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    matcher = difflib.SequenceMatcher(None, old[head:len(old) - tail], new[head:len(new) - tail], autojunk=False)
    for region, (tag, i1, i2, j1, j2) in enumerate(matcher.get_opcodes()):
        if tag in ("replace", "insert"):
            added.update((head + j + 1, region) for j in range(j1, j2))
            replaced.update((head + i + 1, region) for i in range(i1, i2))
    return added, replaced


def _is_hidden(c: str) -> bool:
    """A character a reader does not see as itself: a control (an escape sequence, a carriage
    return), a format character (bidi, zero-width, BOM), private use, unassigned, a line or
    paragraph separator, or a space that is not the ASCII one."""
    return c != "\t" and (unicodedata.category(c) in _HIDDEN or (c != " " and unicodedata.category(c) == "Zs"))


def _hidden_findings(lines: list[str], lone: list[bool], interest: dict[int, int]) -> list[rules.Raw]:
    """Hidden characters on the lines of interest: in any text file, they can hide a line from the
    person reviewing the diff (a terminal acts on them) or reorder what it reads."""
    found: list[rules.Raw] = []
    for n in sorted(interest):
        line = lines[n - 1]
        hidden = [] if line.isascii() and line.isprintable() else sorted(
            {f"U+{ord(c):04X}" for c in line if _is_hidden(c)})
        hidden += ["U+000D (a lone carriage return: a line break to Python)"] if lone[n - 1] else []
        if hidden:
            found.append(("control-character", n, ", ".join(hidden)))
    return found


def _text_findings(text: str, lines: list[str], lone: list[bool], interest: dict[int, int]) -> list[rules.Raw]:
    """Hidden characters on the lines of interest, and identifiers Python reads as other names."""
    found = _hidden_findings(lines, lone, interest)
    if all(lines[n - 1].isascii() for n in interest):
        return found  # ASCII is NFKC-normal
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.NAME and tok.start[0] in interest \
                    and unicodedata.normalize("NFKC", tok.string) != tok.string:
                found.append(("identifier-normalisation", tok.start[0],
                              f"{tok.string} reads as {unicodedata.normalize('NFKC', tok.string)}"))
    except (tokenize.TokenError, SyntaxError):
        for n in interest:
            for word in re.findall(r"[^\W\d]\w*", lines[n - 1]):
                if unicodedata.normalize("NFKC", word) != word:
                    found.append(("identifier-normalisation", n, f"{word} reads as "
                                                                 f"{unicodedata.normalize('NFKC', word)}"))
    return found


def _parse(text: str | None) -> rules.ast.Module | None:
    try:
        return rules.ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _read_python(old: bytes | None, new: tuple[str | None, str, int, rules.ast.Module | None], view: _View,
                 module: str, is_package: bool) -> tuple[list[rules.Raw], list[str]]:
    """Raw findings on the added and changed lines of one patched .py file (decoded and parsed), and
    its lines."""
    text, encoding, cookie, tree = new
    if text is None:
        return [("encoding", cookie, f"does not decode: {encoding}")], []
    lines, lone = _split(text)
    old_text = _decode(old)[0] if old is not None else None
    if old is not None and old_text is None:
        old_text = old.decode("utf-8", errors="replace")
    old_lines, old_lone = _split(old_text or "")
    # A lone carriage return is part of what a line is: a line that gains one has changed.
    added, replaced = _regions([s + "\r" * c for s, c in zip(old_lines, old_lone)] if any(old_lone) else old_lines,
                               [s + "\r" * c for s, c in zip(lines, lone)] if any(lone) else lines)
    if not added:
        return [], lines
    if tree is None:
        # Compiles to nothing (the tests report it), but a person still reads it in the diff.
        return _unseen(_hidden_findings(lines, lone, added), added,
                       _hidden_findings(old_lines, old_lone, replaced), replaced), lines
    raw = _text_findings(text, lines, lone, added)
    if not encoding.startswith("utf-8") and cookie in added:  # utf-8-sig: a BOM, still UTF-8
        raw.append(("encoding", cookie, f"coding: {encoding}"))
    raw += rules.Reader(tree, added, view, module, is_package).run()
    if raw and replaced and old_text is not None:
        mine = _text_findings(old_text, old_lines, old_lone, replaced)
        if (old_tree := _parse(old_text)) is not None:
            mine += rules.Reader(old_tree, replaced, view, module, is_package).run()
        before = {(replaced[line], rule, what) for rule, line, what in mine}
        raw = [r for r in raw if (added.get(r[1]), r[0], r[2]) not in before]
    return raw, lines


def _unseen(raw: list[rules.Raw], added: dict[int, int], mine: list[rules.Raw],
            replaced: dict[int, int]) -> list[rules.Raw]:
    """`raw` less what the pristine lines each region replaced already had."""
    before = {(replaced[line], rule, what) for rule, line, what in mine}
    return [r for r in raw if (added.get(r[1]), r[0], r[2]) not in before]


def _read_text(old: bytes | None, new: bytes) -> tuple[list[rules.Raw], list[str]]:
    """Hidden characters on the added lines of a file that is not Python: a README, a config or a
    data file is read in the diff as much as code is. A file that is not UTF-8 text (NUL bytes, or
    no decoding) is binary to a reader: the diff shows no lines of it."""
    if b"\0" in new:
        return [], []
    try:
        text = new.decode("utf-8")
    except UnicodeDecodeError:
        return [], []
    lines, lone = _split(text)
    old_lines, old_lone = _split((old or b"").decode("utf-8", errors="replace"))
    added, replaced = _regions([s + "\r" * c for s, c in zip(old_lines, old_lone)] if any(old_lone) else old_lines,
                               [s + "\r" * c for s, c in zip(lines, lone)] if any(lone) else lines)
    if not added:
        return [], lines
    return _unseen(_hidden_findings(lines, lone, added), added,
                   _hidden_findings(old_lines, old_lone, replaced), replaced), lines


@functools.lru_cache(maxsize=1)
def _installed() -> frozenset[str]:
    """Top-level names the host's installed distributions provide."""
    from importlib import metadata
    try:
        return frozenset(metadata.packages_distributions())
    except Exception:  # a broken distribution's metadata must not stop the gate
        return frozenset()


def _shadowing(rel: str, index: PristineIndex) -> list[rules.Raw]:
    """A new module or package directory named like a module the code could mean instead."""
    parts = rel.split("/")
    names = [(parts[i], "/".join(parts[:i + 1])) for i in range(len(parts) - 1) if "/".join(parts[:i + 1])
             not in index.dirs]
    if parts[-1] != "__init__.py":
        names.append((parts[-1][:-3], rel))
    found: list[rules.Raw] = []
    for name, where in names:
        elsewhere = {p for p in index.stems.get(name, ()) if not p.startswith(where + "/") and p != where}
        reason = ("a module the test harness imports" if name in rules.HARNESS_DEPENDENCIES
                  else "a standard-library module" if name in sys.stdlib_module_names
                  else "an installed distribution's module" if name in _installed()
                  else "a module the pristine code imports" if name in index.import_tops - index.provided
                  else f"the project module at {sorted(elsewhere)[0]}" if elsewhere else None)
        if reason:
            found.append(("shadowing-module", 0, f"new module {name!r} ({where}) shadows {reason}"))
    return found


def _unreadable(rel: str, new: bytes, executable: bool) -> list[rules.Raw]:
    """A changed file that is not Python source but runs as code (its changes cannot be read)."""
    found: list[rules.Raw] = []
    suffix = Path(rel).suffix.lower()
    if suffix in CODE_SUFFIXES:
        found.append(("unreadable-file", 0, f"a {suffix} file"))
    if executable:
        found.append(("unreadable-file", 0, "an executable file"))
    if new.startswith(b"#!"):
        found.append(("unreadable-file", 1, "starts with #!"))
    return found


def _escape(text: str) -> str:
    return "".join((f"\\u{ord(c):04X}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08X}")
                   if unicodedata.category(c) in _HIDDEN or (c != " " and unicodedata.category(c) == "Zs") else c
                   for c in text)


def _finding(rule: str, path: str, line: int, construct: str, lines: list[str]) -> Finding:
    snippet = _escape(lines[line - 1].strip(" \t"))[:160] if 0 < line <= len(lines) else ""
    construct = _escape(construct)[:200]
    digest = hashlib.sha256("\0".join((rule, path, construct, " ".join(snippet.split())))
                            .encode("utf-8", errors="backslashreplace")).hexdigest()[:10]
    why = f"`{construct}` {RULES[rule]}, so it needs a person's grant."
    return Finding(rule=rule, path=path, line=line, construct=construct, snippet=snippet,
                   key=f"code:{rule}@{path}#{digest}", why=why)


def review(diff: str, pristine: Path, spec: AcceptanceSpec, *, granted: tuple[str, ...] = (),
           index: PristineIndex | None = None) -> GateVerdict:
    """Read what `diff` adds to `pristine`; findings whose key is in `granted` are waived."""
    pristine = Path(pristine)
    index = index or PristineIndex.cached(pristine, spec)
    with tempfile.TemporaryDirectory(prefix="repair-agent-gate-", dir=_SCRATCH) as tmp:
        scratch = Path(tmp) / "tree"
        scratch.mkdir()
        written = _apply(recount_hunks(diff), pristine, scratch)
        if written is None:
            return GateVerdict(ok=True)
        files = {rel: (old, b"" if link else (scratch / rel).read_bytes(), not link and bool(_mode(scratch / rel)), link)
                 for rel, old in written.items() if not spec.is_protected(rel)
                 for link in [(scratch / rel).is_symlink() or not (scratch / rel).is_file()]}
        new_packages = frozenset(rel.rpartition("/")[0] for rel in written if rel.endswith("/__init__.py"))
    view = _View(index)
    parsed = {}
    for rel, (old, new, _, link) in files.items():
        if rel.endswith(".py") and not link:
            if old is None:
                parts = _module_parts(rel)
                view.new_modules |= {".".join(parts[i:]) for i in range(len(parts))}
            text, encoding, cookie = _decode(new)
            parsed[rel] = (text, encoding, cookie, _parse(text))
            if parsed[rel][3] is not None:
                view.patched.learn(*index.primary(rel, new_packages), parsed[rel][3])
    raw: list[tuple[str, rules.Raw, list[str]]] = []
    for rel in sorted(files):
        old, new, executable, link = files[rel]
        if link:
            raw.append((rel, ("unreadable-file", 0, "a symbolic link"), []))
        elif not rel.endswith(".py"):
            raw += [(rel, r, new.decode("utf-8", "replace").splitlines()) for r in _unreadable(rel, new, executable)]
            found, lines = _read_text(old, new)
            raw += [(rel, r, lines) for r in found]
        else:
            module, is_package = index.primary(rel, new_packages)
            found, lines = _read_python(old, parsed[rel], view, module, is_package)
            found += _shadowing(rel, index) if old is None else []
            raw += [(rel, r, lines) for r in found]
    findings: dict[tuple, Finding] = {}
    for rel, (rule, line, construct), lines in raw:
        findings.setdefault((rule, rel, line, construct), _finding(rule, rel, line, construct, lines))
    allowed = {g for g in granted if g.startswith("code:")}
    ordered = sorted(findings.values(), key=lambda f: (f.path, f.line, f.rule, f.construct))
    open_ = [f for f in ordered if f.key not in allowed]
    return GateVerdict(ok=not open_, findings=open_, granted=[f for f in ordered if f.key in allowed],
                       files_read=len(files))
