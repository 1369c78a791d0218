"""Building the sandbox image when several processes want it at once (the suite's workers on a fresh
machine, two sweeps): one builds, the others wait for its image instead of building their own."""
from __future__ import annotations

import io
import subprocess
import sys
import threading
import uuid

import pytest

from repair_agent.sandbox.image import DEFAULT_BASE_IMAGE, ensure_sandbox_image

_HOLD = """
import sys, time
from repair_agent.resources import machine_lock
with machine_lock(sys.argv[1]):
    print("in", time.monotonic(), flush=True)
    time.sleep(0.5)
    print("out", time.monotonic(), flush=True)
"""


def test_a_machine_lock_is_held_by_one_process_at_a_time():
    name = f"test-{uuid.uuid4().hex}"
    procs = [subprocess.Popen([sys.executable, "-c", _HOLD, name], stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    spans = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0
        (_, start), (_, end) = (line.split() for line in out.splitlines())
        spans.append((float(start), float(end)))
    spans.sort()
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end, f"two holders at once: {spans}"


@pytest.mark.docker
def test_concurrent_requests_for_one_missing_image_build_it_once(docker_client, sandbox_image):
    # The sandbox's own base with a label of this test's: a sandbox tag no other test uses, and an image
    # id no build cache knows, so each build really runs the Dockerfile (seconds, not milliseconds).
    refs = {ref for image in docker_client.images.list() for ref in image.tags}
    present = sorted(r for r in refs if r == DEFAULT_BASE_IMAGE or r.startswith("repair-agent-base:bookworm-"))
    assert present, f"the sandbox image {sandbox_image} is built, but on no base this test knows: {sorted(refs)}"
    base = f"repair-agent-test-base:{uuid.uuid4().hex[:12]}"
    docker_client.images.build(fileobj=io.BytesIO(f"FROM {present[0]}\nLABEL test={base}\n".encode()), tag=base,
                               rm=True, pull=False)
    logs: list[str] = []
    tags: list[str] = []
    errors: list[BaseException] = []

    def want() -> None:
        try:
            tags.append(ensure_sandbox_image(docker_client, base_image=base, log=logs.append))
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)

    threads = [threading.Thread(target=want) for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=600)
        assert not errors, errors
        assert len(set(tags)) == 1 and len(tags) == 3, tags
        builds = [line for line in logs if line.startswith("building sandbox image")]
        assert len(builds) == 1, logs
    finally:
        for tag in {*tags, base}:
            try:
                docker_client.images.remove(tag, force=True)
            except Exception:
                pass


def test_a_lock_file_planted_as_a_link_is_not_followed_and_its_target_is_untouched(tmp_path, monkeypatch):
    # The lock directory lives in the shared temp directory: a link planted where a lock file goes
    # must not let the lock truncate (or create) the file it points at.
    import errno
    import os
    import tempfile

    from repair_agent.resources import machine_lock

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    locks = tmp_path / f"repair-agent-{os.getuid()}-locks"
    locks.mkdir(mode=0o700)
    (locks / "planted.lock").symlink_to(victim)
    try:
        with machine_lock("planted"):
            raise AssertionError("the lock was taken through a link")
    except OSError as exc:
        assert exc.errno == errno.ELOOP
    assert victim.read_text() == "keep me\n"
    # nor a lock directory that is a link to somewhere else
    (locks / "planted.lock").unlink()
    locks.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    locks.symlink_to(elsewhere)
    try:
        with machine_lock("x"):
            raise AssertionError("a linked lock directory was used")
    except OSError as exc:
        assert "not a directory of this user's" in str(exc)
    assert list(elsewhere.iterdir()) == []
