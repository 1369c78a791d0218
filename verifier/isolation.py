"""Hardened process isolation shared by the verifier and the agent's sandbox.

The verifier owns this module so that the trust root decides what "hardened" means; the
agent side imports it (never the other way round), which keeps both running under exactly
the same limits.

Kept in one module: the container's hardening, its exec with bounded output, and the local
runner with the same limits are the one definition of "hardened" both sides rely on.
"""
from __future__ import annotations

import hashlib
import inspect
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Iterable, Iterator

from pydantic import BaseModel, Field

LABEL = "org.repair-agent.managed"
OWNER_LABEL = "org.repair-agent.owner-pid"  # lets cleanup tell a live run's containers from leftovers
# The non-root uid that runs every container of the project (and owns a workspace built for one).
SANDBOX_UID = 10001


def container_user() -> str:
    """A non-root uid for containers; the host's own uid when the host is not root."""
    uid = os.getuid()
    return f"{SANDBOX_UID}:{SANDBOX_UID}" if uid == 0 else f"{uid}:{os.getgid()}"


class Limits(BaseModel):
    """Resource limits for one container or local process tree."""

    memory_bytes: int = 1024 * 1024 * 1024
    pids: int = 256
    cpus: float = 1.0
    tmpfs_bytes: int = 64 * 1024 * 1024
    # Bytes of each stream returned inline; the full stream goes to a file in the run dir.
    output_cap: int = 64 * 1024
    # Beyond this the kept file stops growing (a flood must not fill the disk); the true size
    # and the sha256 of the whole stream are still recorded.
    keep_cap: int = 64 * 1024 * 1024
    # What one run keeps of all its commands' output together (KeepBudget).
    run_keep_cap: int = 96 * 1024 * 1024
    # Grace between the in-container deadline and the host-side kill.
    kill_grace_s: float = 3.0


class StreamRecord(BaseModel):
    text: str = ""
    true_bytes: int = 0
    sha256: str = hashlib.sha256(b"").hexdigest()
    truncated: bool = False
    kept_path: str | None = None
    kept_bytes: int = 0

    def whole_bytes(self) -> bytes:
        """The whole stream as kept on disk (within the keep cap), not the capped head returned inline."""
        return Path(self.kept_path).read_bytes() if self.kept_path else self.text.encode()

    def whole(self) -> str:
        return Path(self.kept_path).read_text(errors="replace") if self.kept_path else self.text


class CommandResult(BaseModel):
    """What a command did. A timeout or a broken engine is said as such, never as an empty success."""

    argv: list[str]
    exit_code: int | None
    timed_out: bool = False
    duration_s: float
    stdout: StreamRecord = Field(default_factory=StreamRecord)
    stderr: StreamRecord = Field(default_factory=StreamRecord)
    backend: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class EngineFailure(RuntimeError):
    """The container died or the engine stopped answering: a dependency failure, not a test failure."""


class KeepBudget:
    """The bytes of command output one run may keep on the host, all streams and files together
    (a flood split over many commands or streams must not fill the disk either). Thread-safe."""

    def __init__(self, total: int):
        self.total, self.used = total, 0
        self._lock = threading.Lock()

    def take(self, wanted: int) -> int:
        with self._lock:
            granted = max(0, min(wanted, self.total - self.used))
            self.used += granted
            return granted


class StreamCapture:
    """Consumes one output stream: hashes all of it, keeps a capped head inline and the rest in a file."""

    def __init__(self, cap: int, keep_cap: int, keep_path: Path | None, budget: KeepBudget | None = None):
        self.cap, self.keep_cap, self.keep_path, self.budget = cap, keep_cap, keep_path, budget
        self._head = bytearray()
        self._hash = hashlib.sha256()
        self._size = 0
        self._kept = 0
        self._file = open(keep_path, "wb") if keep_path else None

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self._hash.update(chunk)
        self._size += len(chunk)
        if len(self._head) < self.cap:
            self._head += chunk[: self.cap - len(self._head)]
        if self._file and self._kept < self.keep_cap:
            part = chunk[: self.keep_cap - self._kept]
            if self.budget is not None:
                part = part[: self.budget.take(len(part))]
            self._file.write(part)
            self._kept += len(part)

    def finish(self) -> StreamRecord:
        if self._file:
            self._file.close()
        return StreamRecord(
            text=bytes(self._head).decode("utf-8", errors="replace"),
            true_bytes=self._size,
            sha256=self._hash.hexdigest(),
            truncated=self._size > len(self._head),
            kept_path=str(self.keep_path) if self.keep_path and self._size else None,
            kept_bytes=self._kept,
        )


def _captures(limits: Limits, output_dir: Path | None, name: str, cap: int | None = None,
              budget: KeepBudget | None = None) -> tuple[StreamCapture, StreamCapture]:
    paths: tuple[Path | None, Path | None] = (None, None)
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
        paths = (output_dir / f"{name}.stdout", output_dir / f"{name}.stderr")
    cap = cap or limits.output_cap
    return (StreamCapture(cap, limits.keep_cap, paths[0], budget), StreamCapture(cap, limits.keep_cap, paths[1], budget))


def _deadline_argv(argv: list[str], timeout_s: float, limits: Limits) -> list[str]:
    # coreutils timeout makes itself a process-group leader and kills the whole group.
    return ["timeout", "-k", f"{limits.kill_grace_s:g}s", f"{timeout_s:g}s", *argv]


def _timed_out(exit_code: int | None, elapsed: float, timeout_s: float) -> bool:
    return exit_code in (124, 137, -9, None) and elapsed >= timeout_s * 0.98


def docker_hardening(limits: Limits, user: str, labels: dict[str, str],
                     extra_tmpfs: dict[str, str] | None = None, hostname: str | None = None) -> dict:
    """The container settings every sandbox and verification container gets."""
    return dict(
        **({"hostname": hostname} if hostname else {}),
        network_mode="none",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        pids_limit=limits.pids,
        mem_limit=limits.memory_bytes,
        memswap_limit=limits.memory_bytes,  # swap equal to memory: no swap escape
        nano_cpus=int(limits.cpus * 1e9),
        user=user,
        read_only=True,
        tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits.tmpfs_bytes}", **(extra_tmpfs or {})},
        init=True,
        ipc_mode="private",
        labels={LABEL: "1", OWNER_LABEL: str(os.getpid()), **labels},
    )


def read_capped(path: str, cap: int) -> tuple[bytes | None, str | None]:
    """(bytes, None), (None, None) when there is no such file, or (None, why not). Opens without
    following a symlink and without blocking on a FIFO, refuses anything but a regular file, never
    reads more than `cap` + 1 bytes. Stdlib only and self-contained: the same source also runs
    inside check containers (see HardenedContainer.read_file)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, "a symlink" if exc.errno == 40 else str(exc.strerror)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "not a regular file"
        data = b""
        while len(data) <= cap:
            chunk = os.read(fd, cap + 1 - len(data))
            if not chunk:
                break
            data += chunk
        return (None, f"larger than {cap} bytes") if len(data) > cap else (data, None)
    finally:
        os.close(fd)


# What runs in the check container after the tests (no candidate import): read_capped, its answer
# printed (and flushed) as one line for the host; then, when a command follows the two arguments,
# that command in this process's place. Whatever the command prints comes after the line, so code
# it runs cannot change what was read, and a check's next command costs no exec of its own.
# The future import: its annotations are not evaluated, so the reader also runs on Python 3.9.
_READER = "from __future__ import annotations\n" + inspect.getsource(read_capped) + """
import base64, os, sys
try:
    data, why = read_capped(sys.argv[1], int(sys.argv[2]))
    line = "ERR " + why if why else "ERR missing" if data is None else base64.b64encode(data).decode()
except Exception as exc:
    line = "ERR reader failed: " + type(exc).__name__
print(line, flush=True)
if len(sys.argv) > 3:
    os.execvp(sys.argv[3], sys.argv[3:])
"""


def absolute_mount(mount):
    """A bind mount's host path made absolute: the engine refuses a relative one (`--out imported`)."""
    if mount.get("Type") == "bind" and mount.get("Source") and not os.path.isabs(mount["Source"]):
        mount["Source"] = os.path.abspath(mount["Source"])
    return mount


class HardenedContainer:
    """One long-lived hardened container; commands run in it with `exec`, each under a deadline."""

    backend = "docker"

    def __init__(self, client, image: str, *, mounts: Iterable = (), limits: Limits | None = None,
                 user: str = f"{SANDBOX_UID}:{SANDBOX_UID}", labels: dict[str, str] | None = None,
                 workdir: str = "/workspace", extra_tmpfs: dict[str, str] | None = None,
                 hostname: str | None = None, budget: KeepBudget | None = None):
        import docker.errors

        self.client, self.limits, self.workdir, self.budget = client, limits or Limits(), workdir, budget
        # Named up front: `run` is create + start, and an interrupt (Ctrl-C, a cancelled sweep
        # task) between the two would otherwise leave a container nobody holds a handle to.
        name = f"repair-agent-{uuid.uuid4().hex[:16]}"
        try:
            self.container = client.containers.run(
                image, command=["sleep", "infinity"], detach=True, working_dir=workdir, name=name,
                mounts=[absolute_mount(m) for m in mounts], **docker_hardening(self.limits, user, labels or {}, extra_tmpfs, hostname))
        except BaseException as exc:
            _remove_by_name(client, name)
            if isinstance(exc, (docker.errors.DockerException, OSError)):
                raise EngineFailure(f"could not start container from {image}: {exc}") from exc
            raise

    @property
    def id(self) -> str:
        return self.container.id

    def started_at(self) -> str:
        """When the engine started this container (a restart changes it)."""
        import docker.errors

        try:
            self.container.reload()
        except (docker.errors.DockerException, OSError) as exc:
            raise EngineFailure(f"engine stopped answering: {exc}") from exc
        return self.container.attrs.get("State", {}).get("StartedAt", "")

    def untouched(self, image_id: str, started_at: str) -> str | None:
        """Why this container is not as it was when it started (None: it is), asked of the engine:
        still running since `started_at`, from `image_id`, and nothing executing in it. (The engine
        forgets finished execs; that no exec was ever made is the pool's own bookkeeping.)"""
        import docker.errors

        try:
            self.container.reload()
        except (docker.errors.DockerException, OSError) as exc:
            return f"the engine does not answer for it: {exc}"
        attrs = self.container.attrs
        state = attrs.get("State", {})
        if not state.get("Running") or state.get("Restarting") or state.get("Paused"):
            return f"not running ({state.get('Status')})"
        if attrs.get("RestartCount") or state.get("StartedAt") != started_at:
            return "it was restarted"
        if attrs.get("ExecIDs"):
            return f"{len(attrs['ExecIDs'])} command(s) executing in it"
        if attrs.get("Image") != image_id:
            return f"its image {attrs.get('Image')} is not {image_id}"
        return None

    def exec(self, argv: list[str], *, timeout_s: float, output_dir: Path | None = None,
             env: dict[str, str] | None = None, workdir: str | None = None,
             output_cap: int | None = None, user: str | None = None, budgeted: bool = True) -> CommandResult:
        """`argv` under its deadline. `budgeted=False`: a command whose output is the verifier's own
        (the result reader, the quiet probe), not counted against the run's KeepBudget, so a flood
        earlier in the run cannot starve what later checks read."""
        import docker.errors

        name = f"exec-{uuid.uuid4().hex[:10]}"
        out, err = _captures(self.limits, output_dir, name, output_cap, self.budget if budgeted else None)
        full_argv = _deadline_argv(argv, timeout_s, self.limits)
        api = self.client.api
        started = time.monotonic()
        try:
            exec_id = api.exec_create(self.container.id, full_argv, environment=env or {},
                                      workdir=workdir or self.workdir, user=user or "")["Id"]
            stream = _frames(api.exec_start(exec_id, socket=True))
        except (docker.errors.DockerException, OSError) as exc:
            raise EngineFailure(f"exec failed to start in {self.container.short_id}: {exc}") from exc

        reader = threading.Thread(target=_drain, args=(stream, out, err), daemon=True)
        reader.start()
        # Host-side deadline: killing a `docker exec` client does not kill the process inside
        # (moby #9098), so if the in-container timeout did not end it, we reset the namespace.
        reader.join(timeout_s + self.limits.kill_grace_s + 2.0)
        host_killed = reader.is_alive()
        if host_killed:
            self._reset_processes()
            reader.join(5.0)
        elapsed = time.monotonic() - started
        try:
            exit_code = api.exec_inspect(exec_id).get("ExitCode")
        except (docker.errors.DockerException, OSError) as exc:
            raise EngineFailure(f"engine stopped answering: {exc}") from exc
        timed_out = host_killed or _timed_out(exit_code, elapsed, timeout_s)
        if timed_out and not host_killed:
            # Processes may have left the timeout's process group (setsid); restarting
            # under init ends every process in the container's pid namespace.
            self._reset_processes()
        if not timed_out and (exit_code is None or exit_code >= 128):
            # Killed by a signal: either the command alone (e.g. the OOM killer) or the whole
            # container, whose status can still read "running" for a moment. Ask it directly.
            self._probe()
        self._check_alive()
        return CommandResult(argv=argv, exit_code=exit_code, timed_out=timed_out,
                             duration_s=round(elapsed, 4), stdout=out.finish(), stderr=err.finish(),
                             backend=self.backend)

    def processes(self) -> list[str]:
        """Every process in the container but its init and the idle command it was started with."""
        return [title for _, title in self._listing()]

    def end_processes(self) -> list[str]:
        """Kill every process but init and the idle command (what a check left running) and say
        which there were. The container stays up: its tmpfs still holds what the check wrote."""
        found = self._listing()
        if found:  # the engine lists host pids: the killing is done inside, by container pid
            self.exec(["python3", "-I", "-S", "-c", _KILL_THE_REST], timeout_s=10.0)
        return [title for _, title in found]

    def _listing(self) -> list[tuple[str, str]]:
        import docker.errors

        try:
            listing = self.container.top(ps_args="-eo pid,args")
        except (docker.errors.DockerException, OSError) as exc:
            raise EngineFailure(f"engine stopped answering: {exc}") from exc
        titles = listing.get("Titles") or []
        pid_col = titles.index("PID") if "PID" in titles else 0
        column = titles.index("COMMAND") if "COMMAND" in titles else -1
        rows = [(str(row[pid_col]), " ".join(map(str, row)) if column < 0 else str(row[column]))
                for row in listing.get("Processes") or []]
        return [(pid, r) for pid, r in rows
                if not (r.startswith(("/sbin/docker-init", "docker-init")) or r == "sleep infinity")]

    def read_file(self, path: str, cap: int) -> tuple[bytes | None, str | None]:
        """One regular file out of the container, read inside it by a fixed stdlib reader after
        every process of the check has ended (the engine's archive API cannot see a tmpfs): never
        a host mount, never a symlink followed, never more than `cap` bytes."""
        res = self.exec(["python3", "-I", "-S", "-c", _READER, path, str(cap)], timeout_s=READ_TIMEOUT_S,
                        output_cap=cap * 4 // 3 + 4096)
        if res.stdout.truncated:
            return None, f"result file {_name(path)} could not be read within bounds"
        return _reader_answer(path, res.stdout.text.strip() if not res.timed_out else None)

    def read_file_then(self, path: str, cap: int, argv: list[str], *, timeout_s: float, output_dir: Path,
                       env: dict[str, str] | None = None, workdir: str | None = None, budgeted: bool = True
                       ) -> tuple[bytes | None, str | None, CommandResult, str]:
        """read_file, then `argv` in the same exec (one engine round trip and one container
        command fewer): the reader prints its line and only then becomes `argv`. Returns the
        file's (bytes, problem) as read_file does, `argv`'s result, and its whole stdout after
        the reader's line. A line cut short (the deadline, the container reset) is not an answer."""
        # `argv` keeps its own deadline (the reader becomes `timeout`, which runs it): a command
        # that hangs costs its own timeout, not the reader's too.
        res = self.exec(["python3", "-I", "-S", "-c", _READER, path, str(cap), *_deadline_argv(argv, timeout_s, self.limits)],
                        timeout_s=READ_TIMEOUT_S + timeout_s + self.limits.kill_grace_s, output_dir=output_dir,
                        env=env, workdir=workdir, output_cap=cap * 4 // 3 + 4096, budgeted=budgeted)
        if not res.timed_out and _timed_out(res.exit_code, res.duration_s, timeout_s):
            self._reset_processes()  # as exec does after its deadline: nothing the command began lives on
            res = res.model_copy(update={"timed_out": True})
        line, newline, rest = res.stdout.whole_bytes().partition(b"\n")
        whole_line = newline and len(line) <= cap * 4 // 3 + 4096
        data, problem = _reader_answer(path, line.decode("ascii", errors="replace").strip() if whole_line else None)
        return data, problem, res, rest.decode("utf-8", errors="replace")

    def _reset_processes(self) -> None:
        import docker.errors

        try:
            self.container.restart(timeout=0)
        except (docker.errors.DockerException, OSError) as exc:
            raise EngineFailure(f"could not reset container after a timeout: {exc}") from exc

    def _probe(self) -> None:
        import docker.errors

        api = self.client.api
        try:
            probe = api.exec_create(self.container.id, ["true"])["Id"]
            api.exec_start(probe)
            code = api.exec_inspect(probe).get("ExitCode")
        except (docker.errors.DockerException, OSError) as exc:
            raise EngineFailure(f"container {self.container.short_id} stopped answering: {exc}") from exc
        if code != 0:
            raise EngineFailure(f"container {self.container.short_id} cannot run `true` (exit {code})")

    def _check_alive(self) -> None:
        import docker.errors

        try:
            self.container.reload()
        except (docker.errors.DockerException, OSError) as exc:
            raise EngineFailure(f"engine stopped answering: {exc}") from exc
        state = self.container.attrs.get("State", {})
        if state.get("Status") != "running":
            raise EngineFailure(
                f"container {self.container.short_id} is {state.get('Status')} "
                f"(exit code {state.get('ExitCode')}, OOMKilled={state.get('OOMKilled')})")

    def close(self) -> bool:
        """Remove the container; False when it could not be (the caller says so)."""
        import docker.errors

        interrupted, removed = None, False
        for attempt in range(3):
            try:
                self.container.remove(force=True, v=True)
                removed = True
                break
            except docker.errors.NotFound:
                removed = True
                break
            except KeyboardInterrupt as exc:  # Ctrl-C mid-removal: finish removing, then let it go on
                interrupted = exc
            except Exception:  # a kill or removal still in progress: try again shortly
                time.sleep(0.2 * (attempt + 1))
        if interrupted is not None:
            raise interrupted
        # Not removed: the engine is down or refuses; `repair-agent cleanup` removes leftovers by label.
        return removed


READ_TIMEOUT_S = 30.0
# Every process but init, the idle command, this one and its `timeout` parent, killed.
_KILL_THE_REST = """
import os, signal
spared = {1, os.getpid(), os.getppid()}
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) not in spared:
        try:
            with open("/proc/" + entry + "/cmdline", "rb") as f:
                if f.read() == b"sleep\\0infinity\\0":
                    continue
            os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
"""


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _reader_answer(path: str, out: str | None) -> tuple[bytes | None, str | None]:
    """The reader's one line as (bytes, None), (None, None) for no file, or (None, why not); None
    for a line that never came whole."""
    import base64

    if out is None:
        return None, f"result file {_name(path)} could not be read within bounds"
    if out.startswith("ERR "):
        reason = out[4:200]
        return (None, None) if reason == "missing" else (None, f"result file {_name(path)} refused: {reason}")
    try:
        return base64.b64decode(out, validate=True), None
    except ValueError:
        return None, f"result file {_name(path)}: unreadable reader output"


def _remove_by_name(client, name: str, wait_s: float = 3.0) -> None:
    """Remove a container that may still be being created: a create request interrupted after it
    was sent still completes in the engine, a moment later."""
    import docker.errors

    deadline = time.monotonic() + wait_s
    while True:
        try:
            client.api.remove_container(name, force=True, v=True)
            return
        except docker.errors.NotFound:
            pass
        except Exception:  # removal in progress, or the engine is gone: `repair-agent cleanup` finds leftovers
            pass
        if time.monotonic() >= deadline:
            return
        time.sleep(0.25)


def _frames(sock) -> Iterator[tuple[bytes | None, bytes | None]]:
    """An exec's output as (stdout, stderr) chunks, read through the HTTP response's own buffer.

    docker-py reads an exec's frames from the socket under the response's buffered reader, so the
    frames that arrived together with the response's headers are skipped: now and then an exec's
    output is empty though the command printed it (docker/docker-py#2042 and #3332; seen here as a
    search that matched nothing, when another thread held the interpreter while the headers came).
    The same multiplexed stream (an 8-byte header: the stream, three zero bytes, the payload's
    big-endian size; then the payload) read through that buffer loses nothing."""
    response = sock._response  # kept on the socket by docker-py for this connection's lifetime
    reader = response.raw._fp.fp
    try:
        while True:
            header = reader.read(8)
            if len(header) < 8:
                return
            size = int.from_bytes(header[4:8], "big")
            payload = reader.read(size) if size else b""
            yield (payload, None) if header[0] == 1 else (None, payload)
            if len(payload) < size:
                return
    finally:
        response.close()


def _drain(stream: Iterator, out: StreamCapture, err: StreamCapture) -> None:
    try:
        for chunk_out, chunk_err in stream:
            if chunk_out:
                out.feed(chunk_out)
            if chunk_err:
                err.feed(chunk_err)
    except Exception:
        pass  # the stream is cut when the container is reset; the result says timed_out


class LocalRunner:
    """Runs commands as plain subprocesses. It does NOT isolate anything: no network, file or
    process boundary beyond a deadline and an output cap. Use it only where no engine exists."""

    backend = "local (NOT isolated)"

    def __init__(self, limits: Limits | None = None, workdir: Path | None = None, budget: KeepBudget | None = None):
        self.limits, self.workdir, self.budget = limits or Limits(), workdir, budget

    def exec(self, argv: list[str], *, timeout_s: float, output_dir: Path | None = None,
             env: dict[str, str] | None = None, workdir: str | Path | None = None,
             output_cap: int | None = None) -> CommandResult:
        name = f"exec-{uuid.uuid4().hex[:10]}"
        out, err = _captures(self.limits, output_dir, name, output_cap, self.budget)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(argv, cwd=workdir or self.workdir, env={**_host_basics(), **(env or {})},
                                    stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise EngineFailure(f"could not start {argv[0]}: {exc}") from exc
        threads = [threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
                   threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True)]
        for t in threads:
            t.start()
        # A timer kills at the deadline and the wait blocks: Popen.wait(timeout) would poll with
        # sleeps of up to 50 ms, a delay every short command (a git grep, a sed) paid.
        fired = threading.Event()

        def kill_at_deadline() -> None:
            fired.set()
            _kill_group(proc.pid)

        timer = threading.Timer(timeout_s, kill_at_deadline)
        timer.daemon = True
        timer.start()
        proc.wait()
        timer.cancel()
        timed_out = fired.is_set()
        # Kill the whole session either way: a finished command must not leave children behind.
        _kill_group(proc.pid)
        for t in threads:
            t.join(5.0)
        return CommandResult(argv=argv, exit_code=None if timed_out else proc.returncode,
                             timed_out=timed_out, duration_s=round(time.monotonic() - started, 4),
                             stdout=out.finish(), stderr=err.finish(), backend=self.backend)

    def close(self) -> None:
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _host_basics() -> dict[str, str]:
    """Only what a command needs to start: no PYTEST_ADDOPTS, PYTHONPATH or the like leaks in."""
    return {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TMPDIR", "HOME", "USER")}


def _pump(pipe, capture: StreamCapture) -> None:
    for chunk in iter(lambda: pipe.read(65536), b""):
        capture.feed(chunk)
