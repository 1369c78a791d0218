"""Where and how a check runs, chosen afresh for every check so that nothing about it is a
constant a candidate could test for.

A check runs the suite the way a person's `python -m pytest` would: the repository at an
ordinary path (never the same one twice in a row), a writable tree, default bytecode and
buffering, an ordinary environment and host name. The held-out probe then runs again under
perturbed environments — the tree at another path, another user id, another environment, a
shifted clock, another interpreter mode — and any case whose answer changes between them is
environment-sensitive behaviour, which fails the check. A fix that is right only when the check's
facts hold (an isolated interpreter, a path, a date) answers differently in one of them.
"""
from __future__ import annotations

import secrets

from pydantic import BaseModel, ConfigDict

_RANDOM = secrets.SystemRandom()
_USERS = ("dev", "ci", "build", "alex", "sam", "maria", "runner", "jenkins", "user", "kim", "jo", "lee")
_LAYOUTS = ("/home/{u}/{name}", "/home/{u}/src/{name}", "/home/{u}/work/{name}", "/home/{u}/code/{name}",
            "/srv/{name}", "/opt/{name}", "/builds/{u}/{name}", "/code/{name}", "/app/{name}", "/project/{name}")
_HOSTS = ("build", "ci", "runner", "dev", "laptop", "workstation", "box", "node", "worker", "devbox")
_ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "Pacific/Kiritimati",
          "America/Sao_Paulo", "Asia/Kolkata")
_LANGS = ("C.UTF-8", "en_US.UTF-8", "de_DE.UTF-8", "C")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def _token(n: int = 6) -> str:
    return "".join(_RANDOM.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(n))


def _safe_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip(".-") or "project"
    return cleaned[:60]


class Perturbation(BaseModel):
    """One environment the held-out probe runs in."""

    model_config = ConfigDict(frozen=True)

    name: str                  # "check" (as the suite ran), "moved", "isolated"
    root: str                  # where the tree is seen from
    cwd: str | None = None     # where the probe runs from (None: the tree's root)
    user: str | None = None    # uid:gid for the exec (None: the container's)
    env: dict[str, str]
    clock_shift: str = ""      # libfaketime offset, e.g. "+17y" ("" : the real clock)
    python_flags: tuple[str, ...] = ()

    @property
    def describe(self) -> str:
        parts = [f"the tree at {self.root}" + (f", run from {self.cwd}" if self.cwd else "")]
        if self.user:
            parts.append(f"uid {self.user.split(':')[0]}")
        if self.clock_shift:
            parts.append(f"the clock {self.clock_shift.replace('y', ' years')}")
        if self.python_flags:
            parts.append(f"python {' '.join(self.python_flags)}")
        parts.append("another environment" if self.name != "check" else "the suite's environment")
        return ", ".join(parts)


class CheckLayout(BaseModel):
    """The ordinary-looking paths, names and users of one check (see the module docstring)."""

    model_config = ConfigDict(frozen=True)

    root: str          # the candidate tree, writable, where pytest runs
    alt_root: str      # the same tree again, at another ordinary path
    source: str        # where the check's tree is mounted read-only, to be copied from
    tools: str         # a read-only directory holding the probe (under a random name)
    probe_name: str
    junit: str         # where pytest writes its JUnit file (in the container's /tmp)
    hostname: str
    user_name: str
    moved_uid: int     # the other user the perturbed probes run as (it owns nothing else in the container)

    @classmethod
    def fresh(cls, repo_name: str) -> "CheckLayout":
        name = _safe_name(repo_name)
        user = _RANDOM.choice(_USERS)
        first, second = _RANDOM.sample(_LAYOUTS, 2)
        other_user = _RANDOM.choice([u for u in _USERS if u != user])
        return cls(moved_uid=_RANDOM.randrange(20000, 60000),root=first.format(u=user, name=name), alt_root=second.format(u=other_user, name=name),
                   source=f"/var/lib/{_token(8)}", tools=f"/usr/local/lib/{_token(8)}", probe_name=f"{_token(8)}.py",
                   junit=f"/tmp/{_token(10)}/{_RANDOM.choice(('junit', 'report', 'results', 'tests'))}.xml",
                   hostname=f"{_RANDOM.choice(_HOSTS)}-{_token(4)}", user_name=user)

    @property
    def probe(self) -> str:
        return f"{self.tools}/{self.probe_name}"

    def suite_env(self) -> dict[str, str]:
        """What a person's shell would hand pytest: nothing of the verifier's."""
        return {"HOME": "/tmp", "USER": self.user_name, "LOGNAME": self.user_name, "LANG": "C.UTF-8", "PATH": PATH}

    def perturbations(self) -> list[Perturbation]:
        """The suite's own environment first, then two that differ from it in every fact a
        candidate could test: path, uid, environment, clock (years ahead and behind), interpreter
        mode (isolated, no bytecode). Fresh random values for every check; the two share their
        path and user (they run side by side in one exec)."""
        user = f"{self.moved_uid}:{self.moved_uid}"
        ahead, behind = _RANDOM.randint(3, 40), _RANDOM.randint(2, 9)
        moved_user = _RANDOM.choice(_USERS)
        return [
            Perturbation(name="check", root=self.root, env=self.suite_env()),
            Perturbation(name="moved", root=self.alt_root, user=user, clock_shift=f"+{ahead}y",
                         env={"HOME": "/tmp", "USER": moved_user, "LOGNAME": moved_user, "PATH": PATH,
                              "LANG": _RANDOM.choice(_LANGS), "TZ": _RANDOM.choice(_ZONES),
                              "PYTHONHASHSEED": str(_RANDOM.randint(1, 2**31)), "CI": _RANDOM.choice(("1", "true")),
                              "TERM": "xterm-256color"}),
            Perturbation(name="isolated", root=self.alt_root, cwd="/", user=user, clock_shift=f"-{behind}y",
                         python_flags=("-I", "-B"), env={"PATH": PATH, "LANG": "C"}),
        ]
