"""Trees and archives a candidate, a scenario or a user supplies, handled as hostile file-system objects.

The one place that walks, hashes, copies and unpacks such trees. It never follows a link (a link is
data: its target text), never opens anything but a regular file (a FIFO, a device or a socket would
block or stream forever), and bounds counts and sizes. A copy keeps links that stay inside the tree,
dangling ones included, AS LINKS, and leaves out (and reports) links that point out of the tree and
special files. What it will not handle at all is a `TreeRefused` naming the path and the reason.

Importable from both sides: the verifier never imports repair_agent; repair_agent imports this.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict

IGNORED = (".git", "__pycache__", ".pytest_cache")  # never part of a tree's identity or copy
_CHUNK = 1 << 20


class TreeRefused(ValueError):
    """A tree or archive that will not be copied, hashed or unpacked; the message says what and why."""


class TreeLimits(BaseModel):
    """Bounds on one tree or archive: a hostile one may be endless."""

    model_config = ConfigDict(frozen=True)
    max_entries: int = 200_000
    max_bytes: int = 4 << 30
    max_file_bytes: int = 1 << 30


TREE_LIMITS = TreeLimits()
ARCHIVE_LIMITS = TreeLimits(max_entries=100_000, max_bytes=1 << 30, max_file_bytes=512 << 20)


@dataclass(frozen=True)
class Entry:
    rel: str                                # POSIX path below the root
    kind: Literal["file", "link", "dir"]
    target: str = ""                        # a link's target text
    inside: bool = True                     # a link that resolves inside the tree (or dangles inside it)


@dataclass
class Scan:
    entries: list[Entry] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)  # path -> why: never copied nor hashed

    @property
    def files(self) -> list[str]:
        return [e.rel for e in self.entries if e.kind != "dir"]


def _kind_name(mode: int) -> str:
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file")


def link_inside(root: Path, rel: str, target: str) -> bool:
    """Whether the link `rel` -> `target` stays inside `root`: relative, no escape when read as text,
    and none when resolved through the tree's real links (realpath reads links, never opens files)."""
    if not target or os.path.isabs(target):
        return False
    lexical = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    if lexical == ".." or lexical.startswith("../"):
        return False
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, rel))
    return real == real_root or real.startswith(real_root + os.sep)


def scan(root: Path, *, only: Iterable[str] | None = None, ignore: tuple[str, ...] = IGNORED,
         limits: TreeLimits = TREE_LIMITS) -> Scan:
    """Every directory, regular file and link below `root` (sorted), by lstat only; `only`: just
    these paths (a list git gave), each of which must lie below real directories of the tree."""
    root = Path(root)
    if root.is_symlink() or not root.is_dir():
        raise TreeRefused(f"{root}: not a directory")
    out = Scan()
    total = 0

    def add(rel: str, st: os.stat_result) -> None:
        nonlocal total
        if len(out.entries) >= limits.max_entries:
            raise TreeRefused(f"{root}: more than {limits.max_entries} entries")
        if stat.S_ISDIR(st.st_mode):
            out.entries.append(Entry(rel, "dir"))
        elif stat.S_ISLNK(st.st_mode):
            target = os.readlink(root / rel)
            out.entries.append(Entry(rel, "link", target, link_inside(root, rel, target)))
        elif stat.S_ISREG(st.st_mode):
            if st.st_size > limits.max_file_bytes:
                raise TreeRefused(f"{root / rel}: {st.st_size} bytes, more than {limits.max_file_bytes}")
            total += st.st_size
            if total > limits.max_bytes:
                raise TreeRefused(f"{root}: more than {limits.max_bytes} bytes of files")
            out.entries.append(Entry(rel, "file"))
        else:
            out.dropped[rel] = f"{_kind_name(st.st_mode)} (never opened)"

    if only is not None:
        for rel in dict.fromkeys(only):
            parts = PurePosixPath(rel).parts
            if not parts or rel.startswith("/") or ".." in parts or any(p in ignore for p in parts):
                continue
            try:
                if not all(stat.S_ISDIR(os.lstat(root.joinpath(*parts[:i])).st_mode) for i in range(1, len(parts))):
                    out.dropped[rel] = "below a link"
                    continue
                st = os.lstat(root / rel)
            except (FileNotFoundError, NotADirectoryError):
                out.dropped[rel] = "listed but not on disk"
                continue
            if stat.S_ISDIR(st.st_mode):
                out.dropped[rel] = "a directory (a submodule?)"
                continue
            add(rel, st)
    else:
        stack = [""]
        while stack:
            top = stack.pop()
            with os.scandir(root / top if top else root) as it:
                children = sorted(it, key=lambda d: d.name)
            for child in children:
                if child.name in ignore:
                    continue
                rel = f"{top}/{child.name}" if top else child.name
                st = child.stat(follow_symlinks=False)
                add(rel, st)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(rel)
    out.entries.sort(key=lambda e: e.rel)
    return out


def _open_regular(path: Path) -> int:
    """A descriptor of a regular file, never through a final link and never blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TreeRefused(f"{path}: not a regular file")
    return fd


def sha256_file(path: Path) -> str:
    """sha256 of a regular file's bytes, or of `link\\0TARGET` for a link (never followed)."""
    if os.path.islink(path):
        return hashlib.sha256(b"link\0" + os.fsencode(os.readlink(path))).hexdigest()
    h = hashlib.sha256()
    with os.fdopen(_open_regular(path), "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def tree_files(root: Path) -> list[str]:
    """Every regular file and link below root, as sorted POSIX paths (.git and caches skipped)."""
    return scan(root).files


def tree_sha256(root: Path, digests: dict[str, str] | None = None) -> str:
    """One digest of a whole tree: every file's sha256 and path (the pristine tree's identity). The
    one tree hash of the project; `digests` when the caller has hashed the files already."""
    digests = digests if digests is not None else {rel: sha256_file(root / rel) for rel in tree_files(root)}
    whole = hashlib.sha256()
    for rel in sorted(digests):
        whole.update(f"{digests[rel]}  {rel}\n".encode())
    return whole.hexdigest()


def copy_tree(src: Path, dest: Path, *, only: Iterable[str] | None = None, ignore: tuple[str, ...] = IGNORED,
              limits: TreeLimits = TREE_LIMITS) -> Scan:
    """Copy `src` into `dest` (new or empty): regular files with their mode bits and times, links
    inside the tree as links; links out of it and special files are left out and listed in the
    returned scan's `dropped`."""
    found = scan(src, only=only, ignore=ignore, limits=limits)
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise TreeRefused(f"{dest}: not empty")
    for entry in found.entries:
        target = dest / entry.rel
        if entry.kind == "dir":
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.kind == "link":
            if entry.inside:
                os.symlink(entry.target, target)
            else:
                found.dropped[entry.rel] = f"a link out of the tree ({entry.target})"
            continue
        fd = _open_regular(src / entry.rel)  # the file may have changed since the scan
        with os.fdopen(fd, "rb") as f, open(target, "xb") as out:
            st = os.fstat(fd)
            copied = 0
            for chunk in iter(lambda: f.read(_CHUNK), b""):
                copied += len(chunk)
                if copied > limits.max_file_bytes:
                    raise TreeRefused(f"{src / entry.rel}: grew past {limits.max_file_bytes} bytes while copied")
                out.write(chunk)
        os.chmod(target, stat.S_IMODE(st.st_mode))
        os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    found.entries = [e for e in found.entries if e.kind != "link" or e.inside]
    return found


# -- archives ------------------------------------------------------------------------------------

def _member_path(archive: str, name: str) -> str:
    path = PurePosixPath(name)
    if not name or name.startswith("/") or "\\" in name or ".." in path.parts or ":" in path.parts[0]:
        raise TreeRefused(f"{archive}: member {name!r}: absolute or escaping path")
    return path.as_posix()


# The `data` extraction filter came with Python 3.11.4 (Debian 12's python3 is 3.11.2): without it the
# members already checked are written by _extract_plainly, which takes from the archive nothing but
# names, contents and the executable bit.
class _NoFilterError(Exception):
    """Stands for tarfile.FilterError where the interpreter has none; never raised."""


DATA_FILTER = getattr(tarfile, "data_filter", None)
FILTER_ERROR: type[Exception] = getattr(tarfile, "FilterError", _NoFilterError)


def _extract_plainly(tf: tarfile.TarFile, members: list[tarfile.TarInfo], dest: Path, label: str) -> None:
    """Directories and regular files, each member's name checked by the caller (relative, inside,
    no link or file above it; links are made after): contents written into new files only, modes
    0o755 or 0o644 by the owner's executable bit, never an owner, a time or a special bit."""
    for member in members:
        target = dest / _member_path(label, member.name)
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        source = tf.extractfile(member)
        if source is None:
            raise TreeRefused(f"{label}: member {member.name!r} has no contents")
        with source, open(target, "xb") as out:  # "x": never through anything already there
            shutil.copyfileobj(source, out)
        target.chmod(0o755 if member.mode & 0o100 else 0o644)


def extract_tar(archive: Path | str | None, dest: Path, *, fileobj: IO[bytes] | None = None,
                limits: TreeLimits = ARCHIVE_LIMITS) -> None:
    """Unpack a tar into `dest` (new or empty). Only directories, regular files and links that stay
    inside: an absolute or escaping member, a hard link, a device, a FIFO, a member below a link
    member, or too many members or bytes refuse the whole archive. Files and directories are
    extracted first, with the interpreter's `data` filter as a second layer; links are made last,
    so no member is ever written through one."""
    label = Path(archive).name if archive else "archive"
    files: list[tarfile.TarInfo] = []
    links: list[tuple[str, str]] = []
    seen: dict[str, str] = {}
    total = 0
    try:
        tf = tarfile.open(archive) if fileobj is None else tarfile.open(fileobj=fileobj)
    except (tarfile.TarError, OSError) as exc:
        raise TreeRefused(f"{label}: not a readable tar archive: {exc}") from None
    with tf:
        try:
            for count, member in enumerate(tf, 1):
                if count > limits.max_entries:
                    raise TreeRefused(f"{label}: more than {limits.max_entries} members")
                name = _member_path(label, member.name)
                kind = "dir" if member.isdir() else "file" if member.isreg() else "link" if member.issym() else ""
                if not kind:
                    what = "a hard link" if member.islnk() else "a device" if member.ischr() or member.isblk() \
                        else "a FIFO" if member.isfifo() else "a special member"
                    raise TreeRefused(f"{label}: member {name!r} is {what}")
                if seen.get(name, kind) != kind or (name in seen and kind != "dir"):
                    raise TreeRefused(f"{label}: member {name!r} appears twice")
                seen[name] = kind
                parents = PurePosixPath(name).parents
                if any(seen.get(p.as_posix()) in ("link", "file") for p in parents):
                    raise TreeRefused(f"{label}: member {name!r} lies below a link or file member")
                if kind == "file":
                    total += member.size
                    if member.size > limits.max_file_bytes or total > limits.max_bytes:
                        raise TreeRefused(f"{label}: more than {limits.max_bytes} bytes (or a member over "
                                          f"{limits.max_file_bytes})")
                if kind == "link":
                    if not link_inside(dest, name, member.linkname):
                        raise TreeRefused(f"{label}: member {name!r} links out of the tree ({member.linkname})")
                    links.append((name, member.linkname))
                else:
                    if DATA_FILTER is not None:
                        DATA_FILTER(member, str(dest))  # the interpreter's own check, a second layer
                    files.append(member)
            dest.mkdir(parents=True, exist_ok=True)
            if any(dest.iterdir()):
                raise TreeRefused(f"{dest}: not empty")
            if DATA_FILTER is not None:
                tf.extractall(dest, members=files, filter="data")
            else:
                _extract_plainly(tf, files, dest, label)
        except FILTER_ERROR as exc:
            raise TreeRefused(f"{label}: unsafe member: {exc}") from None
        except (tarfile.TarError, OSError) as exc:
            raise TreeRefused(f"{label}: cannot be unpacked: {exc}") from None
    for name, target in links:
        if any(seen.get(p.as_posix()) == "link" for p in PurePosixPath(name).parents):
            raise TreeRefused(f"{label}: member {name!r} lies below a link member")
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, dest / name)
    # Resolved through the links now present: a chain of inside-looking links must still stay inside.
    for name, target in links:
        if not link_inside(dest, name, target):
            raise TreeRefused(f"{label}: member {name!r} resolves out of the tree through other links")


def extract_zip(archive: Path, dest: Path, *, limits: TreeLimits = ARCHIVE_LIMITS) -> None:
    """Unpack a zip into `dest`: directories and regular files only, bounded, no escaping name."""
    try:
        with zipfile.ZipFile(archive) as zf:
            infos = zf.infolist()
            if len(infos) > limits.max_entries:
                raise TreeRefused(f"{archive.name}: more than {limits.max_entries} members")
            total = 0
            for info in infos:
                _member_path(archive.name, info.filename.rstrip("/") or info.filename)
                mode = info.external_attr >> 16
                if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                    raise TreeRefused(f"{archive.name}: member {info.filename!r} is a link or special file")
                total += info.file_size
                if info.file_size > limits.max_file_bytes or total > limits.max_bytes:
                    raise TreeRefused(f"{archive.name}: more than {limits.max_bytes} bytes unpacked")
            zf.extractall(dest)
    except (zipfile.BadZipFile, OSError) as exc:
        raise TreeRefused(f"{archive.name}: cannot be unpacked: {exc}") from None
