"""Host git on a repository that is not ours to trust: the user's repository under `run --repo`, a
scenario's repository, the clone a release commits in. Its `.git/config` (and what it includes)
must run nothing on the host: fsmonitor, hooks, pager, editor, signing program, external diff,
textconv, filter and merge drivers, credential helpers, ssh; no network protocol but local files.

Every host git call on such a tree goes through `run_git`: the system and global config are not
read (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), and every command-carrying key is
overridden on the command line (`-c`), which outranks the repository's own config. Driver keys
have names the repository chooses (`filter.<name>.clean`), so they are read from its config first
(`git config --list` reads, it runs nothing) and each is overridden too.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Mapping, Sequence

# Overrides that hold whatever the repository says. `false`/`cat` are harmless programs where git
# insists on running something; an empty value switches a command off where git allows it.
SAFE_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("core.attributesFile", os.devnull),
    ("core.alternateRefsCommand", ""),
    ("core.untrackedCache", "false"),
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("gpg.program", "false"),
    ("gpg.ssh.program", "false"),
    ("gpg.x509.program", "false"),
    ("diff.external", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("protocol.file.allow", "always"),
)
# Keys under a name the repository picks, and what each becomes.
_DRIVER_KEY = re.compile(r"^(filter|diff|merge)\.(.+)\.(clean|smudge|process|textconv|command|driver)$", re.I)
_DRIVER_SAFE = {"clean": "cat", "smudge": "cat", "process": "", "textconv": "cat", "command": "false",
                "driver": "false"}
_PAGER_KEY = re.compile(r"^pager\..+$", re.I)
# Inherited variables that would point git somewhere else than the repository asked for.
_REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
              "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
              "GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_EXEC_PATH")


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of host git: the caller's, without redirections, with no system or global
    config, no prompts, and `extra` (an index file, an identity) on top."""
    env = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
    env.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0",
                "GIT_PROTOCOL_FROM_USER": "0", "GIT_PAGER": "cat", "GIT_EDITOR": "false", "GIT_ASKPASS": "false",
                "SSH_ASKPASS": "false", "GIT_OPTIONAL_LOCKS": "0"})
    env.update(extra or {})
    return env


def _overrides(pairs) -> list[str]:
    return [arg for key, value in pairs for arg in ("-c", f"{key}={value}")]


def repo_overrides(repo: Path | None) -> list[str]:
    """`-c` overrides of the repository's own command-carrying keys (driver and pager keys it named)."""
    if repo is None or not Path(repo).exists():
        return []
    proc = subprocess.run(["git", *_overrides(SAFE_CONFIG), "config", "--list", "--name-only", "--includes"],
                          cwd=repo, env=git_env(), capture_output=True, text=True, timeout=60)
    pairs = []
    for key in dict.fromkeys(proc.stdout.splitlines() if proc.returncode == 0 else ()):
        driver = _DRIVER_KEY.match(key)
        if driver:
            pairs.append((key, _DRIVER_SAFE[driver.group(3).lower()]))
        elif _PAGER_KEY.match(key):
            pairs.append((key, "cat"))
    return _overrides(pairs)


def git_argv(args: Sequence[str], repo: Path | None) -> list[str]:
    """`git` with every override, run in (or on) `repo`; safe.directory names only that repository."""
    where = [("safe.directory", str(Path(repo).resolve()))] if repo is not None else []
    return ["git", *_overrides([*SAFE_CONFIG, *where]), *repo_overrides(repo), *args]


def run_git(args: Sequence[str], repo: Path, *, stdin: bytes | str = b"", env: Mapping[str, str] | None = None,
            cwd: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run host git on `repo` (in `cwd`, default the repository) with its config neutralised; the
    caller reads returncode, stdout and stderr (bytes)."""
    data = stdin.encode("utf-8", errors="surrogateescape") if isinstance(stdin, str) else stdin
    return subprocess.run(git_argv(args, repo), cwd=cwd or repo, input=data, capture_output=True,
                          env=git_env(env), timeout=timeout)
