"""The sandbox's hardening, proved from inside a real container with real commands.

Every property is observed by a process in the container (or by the engine's own record of
the container), never assumed from the settings we passed. The last tests check the
repository tools (search, read, patch, diff) and the scenario's own test run in the sandbox.
"""
from __future__ import annotations

import difflib
import errno
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from unidiff import PatchSet

from helpers import wait_until
from repair_agent.sandbox import DockerSandbox, LocalSandbox, create_workspace
from verifier.isolation import LABEL, OWNER_LABEL, EngineFailure, Limits, LocalRunner
from verifier.runner import container_user

REPO = Path(__file__).resolve().parent.parent / "sandbox_repos" / "discount_shop"
PRICING = "src/discount_shop/pricing.py"
BUG, FIX = "price * (1 - discount)", "price * (1 - discount / 100)"
CONTAINER_UID, CONTAINER_GID = (int(x) for x in container_user().split(":"))
KEEPALIVE = ["sleep", "infinity"]  # HardenedContainer's own pid-1 child

# Lists every process in the container as {pid, name, state, argv}. `name` comes from
# /proc/PID/status, so a zombie (whose cmdline is empty) is still seen.
PROC_LIST = r"""
import json, os
procs = []
for pid in os.listdir('/proc'):
    if not pid.isdigit():
        continue
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            argv = [a.decode() for a in f.read().split(b'\0')[:-1]]
        with open(f'/proc/{pid}/status') as f:
            status = dict(line.split(':\t', 1) for line in f.read().splitlines() if ':\t' in line)
    except OSError:
        continue  # exited while we looked
    procs.append({'pid': int(pid), 'name': status['Name'].strip(),
                  'state': status['State'].strip(), 'argv': argv})
print(json.dumps(procs))
"""


def make_sandbox(client, image: str, root: Path, limits: Limits | None = None) -> DockerSandbox:
    workspace = root / "workspace"
    base = create_workspace(REPO, workspace)
    return DockerSandbox(client, image, workspace, base, run_id=f"pytest-{uuid.uuid4().hex[:8]}",
                         output_dir=root / "out", limits=limits)


def py(sandbox, code: str, timeout_s: float = 20.0):
    return sandbox.run(["python3", "-c", code], timeout_s=timeout_s)


def py_json(sandbox, code: str):
    res = py(sandbox, code)
    assert res.ok, (res.exit_code, res.stderr.text)
    return json.loads(res.stdout.text)


def processes(sandbox) -> list[dict]:
    return py_json(sandbox, PROC_LIST)


def fix_diff() -> str:
    old = (REPO / PRICING).read_text()
    assert old.count(BUG) == 1, "the scenario's bug moved: update this test"
    new = old.replace(BUG, FIX)
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{PRICING}", f"b/{PRICING}"))


@pytest.fixture(scope="module")
def sandbox(docker_client, sandbox_image, tmp_path_factory):
    """One sandbox shared by the read-only probes (timeouts restart it; it stays usable)."""
    sb = make_sandbox(docker_client, sandbox_image, tmp_path_factory.mktemp("shared"))
    yield sb
    sb.close()


@pytest.fixture(scope="module")
def small_sandbox(docker_client, sandbox_image, tmp_path_factory):
    """A sandbox with small pid and memory limits, for the bombs."""
    sb = make_sandbox(docker_client, sandbox_image, tmp_path_factory.mktemp("small"),
                      Limits(pids=64, memory_bytes=128 * 1024 * 1024))
    yield sb
    sb.close()


@pytest.fixture
def fresh_sandbox(docker_client, sandbox_image, runs_dir):
    """A sandbox on a pristine workspace, for tests that change the workspace or the container."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    sb = make_sandbox(docker_client, sandbox_image, runs_dir)
    yield sb
    sb.close()


# ---------------------------------------------------------------------- exec output
@pytest.mark.docker
def test_every_exec_output_arrives_while_another_thread_holds_the_interpreter(sandbox):
    # A run's process has busy threads (the workspace builder, the report's warm-up) while it waits
    # for the engine. When the engine's answer and a command's first output reach the socket before
    # the waiting thread reads the answer, docker-py's own exec stream skipped that output: a
    # search printed its match and the chooser saw "0 matching lines". A spinning thread and a long
    # switch interval make that moment common (docker-py's stream lost about half of such outputs);
    # every output must still arrive whole.
    stop = threading.Event()

    def spin() -> None:
        x = 0
        while not stop.is_set():
            for i in range(20_000):
                x += i

    interval = sys.getswitchinterval()
    spinner = threading.Thread(target=spin, daemon=True)
    sys.setswitchinterval(0.1)
    spinner.start()
    try:
        outputs = [sandbox.run(["echo", f"line {i}"]).stdout.text for i in range(12)]
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(interval)
    lost = [i for i, text in enumerate(outputs) if text != f"line {i}\n"]
    assert lost == [], f"{len(lost)} of 12 outputs lost or cut: {lost}"


# ----------------------------------------------------------------------------- network


@pytest.mark.docker
def test_no_network_only_loopback(sandbox):
    got = py_json(sandbox, r"""
import json, os, socket
out = {'tcp': {}, 'udp': None}
for host, port in [('1.1.1.1', 53), ('172.17.0.1', 80), ('8.8.8.8', 443)]:
    try:
        socket.create_connection((host, port), timeout=3).close()
        out['tcp'][host] = 'connected'
    except OSError as e:
        out['tcp'][host] = e.errno
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('1.1.1.1', 53))
    out['udp'] = 'sent'
except OSError as e:
    out['udp'] = e.errno
out['sys_class_net'] = sorted(os.listdir('/sys/class/net'))
out['proc_net_dev'] = sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:])
print(json.dumps(out))
""")
    for host, outcome in got["tcp"].items():
        assert isinstance(outcome, int), f"TCP connect to {host} succeeded from inside the sandbox"
    assert got["udp"] != "sent", "a UDP datagram left the sandbox"
    assert got["sys_class_net"] == ["lo"]
    assert got["proc_net_dev"] == ["lo"]


# ----------------------------------------------------------------------------- files


@pytest.mark.docker
def test_root_filesystem_is_read_only_tmp_and_workspace_writable(sandbox):
    got = py_json(sandbox, r"""
import json, os
out = {}
for d in ['/', '/usr', '/etc', '/tmp', '/workspace']:
    p = os.path.join(d, '.ra-probe')
    try:
        with open(p, 'w') as f:
            f.write('probe')
        os.unlink(p)
        out[d] = 'written'
    except OSError as e:
        out[d] = e.errno
root = [l.split() for l in open('/proc/self/mountinfo') if l.split()[4] == '/']
out['root_mount_opts'] = root[-1][5].split(',')
print(json.dumps(out))
""")
    for d in ["/", "/usr", "/etc"]:
        # EROFS, not EACCES: the mount itself refuses, whatever the uid.
        assert got[d] == errno.EROFS, f"{d}: {got[d]!r}"
    assert got["/tmp"] == "written"
    assert got["/workspace"] == "written"
    assert "ro" in got["root_mount_opts"]


@pytest.mark.docker
def test_not_root_no_capabilities_no_new_privileges(sandbox):
    got = py_json(sandbox, r"""
import json, os
status = dict(l.split(':\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\t' in l)
print(json.dumps({'uid': os.getuid(), 'euid': os.geteuid(), 'gid': os.getgid(), 'groups': os.getgroups(),
                  'status': {k: v.strip() for k, v in status.items()}}))
""")
    assert got["uid"] != 0 and got["euid"] != 0 and got["gid"] != 0
    assert 0 not in got["groups"]
    assert (got["uid"], got["gid"]) == (CONTAINER_UID, CONTAINER_GID)
    status = got["status"]
    for cap in ["CapEff", "CapPrm", "CapInh", "CapAmb", "CapBnd"]:
        assert int(status[cap], 16) == 0, f"{cap} = {status[cap]}"
    assert status["NoNewPrivs"] == "1"


@pytest.mark.docker
def test_no_docker_socket_visible(sandbox):
    got = py_json(sandbox, r"""
import json, os, stat
socks = []  # every unix socket file anywhere outside /proc and /sys
for dirpath, dirnames, filenames in os.walk('/'):
    if dirpath.startswith(('/proc', '/sys')):
        dirnames[:] = []
        continue
    for f in filenames + dirnames:
        p = os.path.join(dirpath, f)
        try:
            if stat.S_ISSOCK(os.lstat(p).st_mode) or f.endswith('.sock'):
                socks.append(p)
        except OSError:
            pass
print(json.dumps({'exists': [p for p in ['/var/run/docker.sock', '/run/docker.sock'] if os.path.exists(p)],
                  'socks': sorted(set(socks)),
                  'mounts': [l for l in open('/proc/self/mountinfo') if 'docker.sock' in l]}))
""")
    assert got == {"exists": [], "socks": [], "mounts": []}


# ----------------------------------------------------------------------------- processes


@pytest.mark.docker
def test_fork_bomb_stopped_by_pids_limit(small_sandbox, docker_client):
    # Forks until the kernel refuses, reports, then everything sleeps: the deadline ends it.
    res = py(small_sandbox, r"""
import os, sys, time
kids = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        kids += 1
except OSError as e:
    print(kids, e.errno, flush=True)
time.sleep(60)
""", timeout_s=3)
    count, err = (int(x) for x in res.stdout.text.split())
    assert 0 < count < 64, count
    assert err == errno.EAGAIN
    assert res.timed_out and not res.ok
    assert res.duration_s < 15
    # The sandbox still answers, with no bomb left in it; the host still forks and the engine answers.
    assert small_sandbox.run(["true"], timeout_s=10).ok
    left = processes(small_sandbox)
    assert not [p for p in left if any("os.fork()" in a for a in p["argv"])], left
    assert len(left) <= 4, left  # docker-init, the keep-alive, and this listing (timeout + python3)
    assert subprocess.run(["true"]).returncode == 0
    assert docker_client.ping()


@pytest.mark.docker
def test_memory_limit_kills_a_hog(small_sandbox, docker_client):
    limit = small_sandbox.limits.memory_bytes
    seen = py(small_sandbox, r"""
import os
for p in ['/sys/fs/cgroup/memory.max', '/sys/fs/cgroup/memory/memory.limit_in_bytes']:
    if os.path.exists(p):
        print(open(p).read().strip())
        break
""")
    assert seen.ok and int(seen.stdout.text) == limit
    # Touch 4x the limit: with swap equal to memory there is nowhere to go but the OOM killer.
    res = py(small_sandbox, f"b = b'x' * {4 * limit}; print(len(b))", timeout_s=20)
    assert res.exit_code == 128 + 9 and not res.timed_out, (res.exit_code, res.stderr.text)
    assert res.stdout.text == ""
    assert small_sandbox.run(["true"], timeout_s=10).ok


@pytest.mark.docker
def test_host_config_is_hardened(sandbox, docker_client):
    attrs = docker_client.api.inspect_container(sandbox.container.id)
    hc, limits = attrs["HostConfig"], sandbox.limits
    assert hc["Memory"] == hc["MemorySwap"] == limits.memory_bytes
    assert hc["NetworkMode"] == "none"
    assert hc["CapDrop"] == ["ALL"] and not hc.get("CapAdd")
    assert "no-new-privileges" in hc["SecurityOpt"]
    assert hc["ReadonlyRootfs"] is True
    assert hc["Init"] is True
    assert hc["PidsLimit"] == limits.pids
    assert hc["Privileged"] is False
    assert hc["NanoCpus"] == int(limits.cpus * 1e9)
    assert attrs["Config"]["User"] == container_user()
    assert [(m["Destination"], m["Type"]) for m in attrs["Mounts"]] == [("/workspace", "bind")]
    assert attrs["Mounts"][0]["Source"] == str(sandbox.workspace)
    labels = attrs["Config"]["Labels"]
    assert labels[LABEL] == "1" and labels["org.repair-agent.role"] == "sandbox"
    assert labels[OWNER_LABEL] == str(os.getpid())  # what the session's leak check looks for


# ----------------------------------------------------------------------------- deadlines


def sleeps(sandbox) -> list[list[str]]:
    return [p["argv"] for p in processes(sandbox) if p["name"] == "sleep"]


@pytest.mark.docker
def test_sleep_killed_at_deadline(sandbox):
    res = sandbox.run(["sleep", "30"], timeout_s=1)
    assert res.timed_out is True
    assert res.exit_code != 0 and not res.ok
    assert 1 <= res.duration_s < 10
    # Only the container's keep-alive sleeps on.
    assert sleeps(sandbox) == [KEEPALIVE]


@pytest.mark.docker
@pytest.mark.parametrize("redirect", ["> /dev/null 2>&1", ""], ids=["detached", "holding-stdout"])
def test_child_escaping_process_group_gone_after_deadline(sandbox, redirect):
    # `setsid` puts `sleep 29` in a new session: the in-container timeout cannot reach it;
    # without the redirect it also keeps the exec's output stream open.
    res = sandbox.run(["sh", "-c", f"setsid sleep 29 {redirect} & sleep 30"], timeout_s=1)
    assert res.timed_out and not res.ok
    assert res.duration_s < 10
    assert sleeps(sandbox) == [KEEPALIVE]


# ----------------------------------------------------------------------------- output


@pytest.mark.docker
def test_flood_of_output_is_capped_with_true_size(sandbox):
    size = 50_000_000
    res = sandbox.run(["python3", "-c", f"import sys; sys.stdout.write('x' * {size})"], timeout_s=30)
    assert res.ok, res.stderr.text
    out, cap = res.stdout, sandbox.limits.output_cap
    assert cap == 64 * 1024
    assert len(out.text) == cap and out.text == "x" * cap
    assert out.true_bytes == size
    assert out.truncated is True
    assert out.sha256 == hashlib.sha256(b"x" * size).hexdigest()
    kept = Path(out.kept_path)
    assert kept.parent == sandbox.output_dir
    assert kept.stat().st_size == out.kept_bytes == size  # keep_cap (64 MiB) > 50 MB
    assert res.stderr.true_bytes == 0 and not res.stderr.truncated


# ----------------------------------------------------------------------------- engine failure


@pytest.mark.docker
def test_dead_container_is_engine_failure(fresh_sandbox, docker_client):
    docker_client.containers.get(fresh_sandbox.container.id).kill()
    with pytest.raises(EngineFailure):
        fresh_sandbox.run(["true"])


@pytest.mark.docker
def test_container_dying_mid_command_is_engine_failure(fresh_sandbox, docker_client):
    killer = threading.Timer(1.0, lambda: docker_client.containers.get(fresh_sandbox.container.id).kill())
    killer.start()
    started = time.monotonic()
    try:
        with pytest.raises(EngineFailure):
            fresh_sandbox.run(["sleep", "30"], timeout_s=20)
    finally:
        killer.join()  # never let teardown's remove race the kill
    assert time.monotonic() - started < 15


# ----------------------------------------------------------------------------- repository tools


@pytest.mark.docker
def test_git_history_is_one_commit_without_remotes_tags_or_reflog(sandbox):
    res = sandbox.run(["sh", "-c",
                       "echo count=$(git rev-list --all --count); "
                       "echo remotes=$(git remote); echo tags=$(git tag); "
                       "echo reflog=$(git reflog 2>/dev/null); echo stash=$(git stash list); "
                       "echo refs=$(git for-each-ref --format='%(refname)'); "
                       "echo commits=$(git cat-file --batch-all-objects --batch-check | grep -c ' commit '); "
                       "echo logs=$(test -e .git/logs && echo present || echo absent)"])
    assert res.ok, res.stderr.text
    facts = dict(line.split("=", 1) for line in res.stdout.text.splitlines())
    assert facts == {"count": "1", "remotes": "", "tags": "", "reflog": "", "stash": "",
                     "refs": "refs/heads/main", "commits": "1", "logs": "absent"}
    assert sandbox.run(["git", "rev-parse", "HEAD"]).stdout.text.strip() == sandbox.base_commit


@pytest.mark.docker
def test_search_read_patch_diff_on_discount_repo(fresh_sandbox):
    sb = fresh_sandbox
    found = sb.search(BUG)
    assert found.ok
    hits = found.stdout.text.splitlines()
    assert len(hits) == 1 and hits[0].startswith(f"{PRICING}:")
    line_no = int(hits[0].split(":")[1])
    assert sb.search(BUG, "tests/*").exit_code == 1  # git grep: no match

    read = sb.read_file(PRICING, line_no, line_no)
    assert read.ok and read.stdout.text.strip() == f"discounted = {BUG}"
    numbered = sb.read_file(PRICING, line_no - 1, line_no, line_numbers=True)
    assert numbered.ok and numbered.stdout.text.splitlines()[1] == f"{line_no:>6}\t    discounted = {BUG}"
    assert not sb.read_file("no/such.py", line_numbers=True).ok

    # Applied with its hunk headers recounted: a miscounted header is the commonest slip.
    applied = sb.apply_patch(re.sub(r"^@@ -(\d+),\d+ \+(\d+),\d+ @@", r"@@ -\1,99 +\2,1 @@", fix_diff(), flags=re.M))
    assert applied.ok, applied.stderr.text
    diff = sb.diff()
    assert [p.path for p in PatchSet(diff)] == [PRICING]
    assert f"+    discounted = {FIX}" in diff and f"-    discounted = {BUG}\n" in diff
    assert "discount / 100" in diff
    # The incoming patch file lives in .git: never part of the candidate diff.
    assert "ra-incoming" not in diff
    # A patch that does not apply says so.
    assert not sb.apply_patch(fix_diff()).ok
    # Apply and diff as one command: refused, the tree as it was; applied, the whole new diff.
    refused, none = sb.apply_patch_and_diff(fix_diff())
    assert not refused.ok and none is None and sb.diff() == diff
    applied, after = sb.apply_patch_and_diff("--- /dev/null\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+why\n")
    assert applied.ok and after == sb.diff() and "+why" in after and f"+    discounted = {FIX}" in after


@pytest.mark.docker
def test_patch_larger_than_one_environment_string_is_written_through_the_engine(fresh_sandbox):
    """A small patch rides in the apply command's environment; one too large for that is written
    through the engine first. Both apply exactly, bytes and all, and neither file shows in the diff."""
    from repair_agent.sandbox.base import PATCH_ENV_MAX

    sb = fresh_sandbox
    lines = [f"line {i} {'x' * 60} \u00e9" for i in range(PATCH_ENV_MAX // 50)]
    large = "--- /dev/null\n+++ b/BIG.md\n@@ -0,0 +1 @@\n" + "".join(f"+{line}\n" for line in lines)
    assert len(large.encode()) * 4 // 3 > PATCH_ENV_MAX
    applied, after = sb.apply_patch_and_diff(large)
    assert applied.ok, applied.stderr.text
    assert sb.run(["cat", "BIG.md"]).stdout.true_bytes == len("".join(f"{line}\n" for line in lines).encode())
    small = "--- /dev/null\n+++ b/SMALL.md\n@@ -0,0 +1 @@\n+caf\u00e9 'quoted' $HOME `x`\n"
    applied, after = sb.apply_patch_and_diff(small)
    assert applied.ok, applied.stderr.text
    assert sb.run(["cat", "SMALL.md"]).stdout.text == "caf\u00e9 'quoted' $HOME `x`\n"
    assert "ra-incoming" not in after and "+++ b/BIG.md" in after and "+++ b/SMALL.md" in after


@pytest.mark.docker
def test_write_file_owned_by_container_uid(fresh_sandbox):
    sb = fresh_sandbox
    sb.write_file("NOTES.txt", b"hello\n")
    st = (sb.workspace / "NOTES.txt").stat()
    assert (st.st_uid, st.st_gid) == (CONTAINER_UID, CONTAINER_GID)
    # ...so the sandbox user can change it afterwards.
    res = sb.run(["sh", "-c", "echo more >> NOTES.txt && cat NOTES.txt && stat -c %u NOTES.txt"])
    assert res.ok, res.stderr.text
    assert res.stdout.text.splitlines() == ["hello", "more", str(CONTAINER_UID)]
    assert "NOTES.txt" in sb.diff()


@pytest.mark.docker
def test_write_file_new_directories_owned_by_container_uid(fresh_sandbox):
    sb = fresh_sandbox
    sb.write_file("docs/notes/a.txt", b"a\n")
    for rel in ["docs", "docs/notes", "docs/notes/a.txt"]:
        st = (sb.workspace / rel).stat()
        assert (st.st_uid, st.st_gid) == (CONTAINER_UID, CONTAINER_GID), rel
    assert sb.run(["sh", "-c", "echo b > docs/notes/b.txt"]).ok


@pytest.mark.docker
def test_repo_pytest_fails_then_passes_after_fix(fresh_sandbox):
    sb = fresh_sandbox
    pytest_argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    before = sb.run(pytest_argv, timeout_s=60)
    assert before.exit_code == 1 and not before.timed_out, before.stdout.text[-2000:]
    assert "1 failed, 47 passed" in before.stdout.text
    assert "assert 100 == 90" in before.stdout.text
    assert "FAILED tests/test_pricing.py::test_ten_percent_discount" in before.stdout.text

    assert sb.apply_patch(fix_diff()).ok
    after = sb.run(pytest_argv, timeout_s=60)
    assert after.exit_code == 0 and after.ok, after.stdout.text[-2000:]
    assert "48 passed" in after.stdout.text and "failed" not in after.stdout.text
    # The test run left nothing behind in the candidate diff (no caches, no .pyc).
    assert [p.path for p in PatchSet(sb.diff())] == [PRICING]


# ----------------------------------------------------------------------------- local (no engine)


def host_processes_with_argv(argv: list[str]) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if raw.split(b"\0")[:-1] == [a.encode() for a in argv]:
            found.append(int(pid))
    return found


def test_local_sandbox_deadline_and_output_cap(tmp_path):
    ws = tmp_path / "workspace"
    base = create_workspace(REPO, ws, for_container=False)
    limits = Limits(output_cap=4096, keep_cap=1_000_000)
    sb = LocalSandbox(ws, base, output_dir=tmp_path / "out", limits=limits)
    assert isinstance(sb.runner, LocalRunner)

    # Deadline: the command and its background child (same session) are killed.
    secs = f"30.{uuid.uuid4().int % 10**6:06d}"  # unique argv, to find leftovers on this host
    res = sb.run(["sh", "-c", f"sleep {secs} & sleep {secs}"], timeout_s=1)
    assert res.timed_out is True and res.exit_code is None and not res.ok
    assert 1 <= res.duration_s < 10
    # Killed means gone: the kernel reaps them just after the deadline, so poll (bounded).
    wait_until(lambda: host_processes_with_argv(["sleep", secs]) == [], 10, "the killed sleeps to be gone")

    # Output cap: inline head, true size and hash of everything, kept file up to keep_cap.
    size = 5_000_000
    res = sb.run([sys.executable, "-c", f"import sys; sys.stdout.write('x' * {size}); "
                  "sys.stderr.write('warn')"], timeout_s=30)
    assert res.ok
    out = res.stdout
    assert len(out.text) == 4096 and out.truncated and out.true_bytes == size
    assert out.sha256 == hashlib.sha256(b"x" * size).hexdigest()
    assert Path(out.kept_path).stat().st_size == out.kept_bytes == 1_000_000
    assert res.stderr.text == "warn" and not res.stderr.truncated and res.stderr.true_bytes == 4


@pytest.mark.docker
def test_the_mutation_analysis_sees_the_sandboxs_cpus(sandbox):
    # The sandbox gets two CPUs where the host has them, and the analysis's workers read that quota
    # (not the host's count) from inside the container: one CPU would make a second process a loss.
    from repair_agent import in_sandbox
    code = in_sandbox.program(("workers",), "print(workers.available_cpus())")
    res = sandbox.run(["python3", "-c", code], timeout_s=20)
    assert res.ok, res.stderr.text
    assert int(res.stdout.text) == min(2, os.cpu_count() or 1) == sandbox.limits.cpus
