"""What every sandbox backend promises, checked the same way on each: the backend starts a sandbox
on a fresh workspace, and the sandbox runs commands (exit codes, environment, time limits, capped
output), reads, writes and searches files, applies patches and reports the diff, never writes
outside its workspace, and leaves nothing running when closed. Docker runs in a real engine.

A backend added to BACKENDS must be listed in BATTERY, so it runs this battery too."""
from __future__ import annotations

import difflib
import uuid
from pathlib import Path

import pytest

from repair_agent.sandbox import BACKENDS, Sandbox, SandboxError, backend_named
from verifier.isolation import EngineFailure

REPO = Path(__file__).resolve().parent.parent / "sandbox_repos" / "discount_shop"
PRICING = "src/discount_shop/pricing.py"
BUG, FIX = "price * (1 - discount)", "price * (1 - discount / 100)"
BATTERY = [pytest.param("docker", marks=pytest.mark.docker), pytest.param("local")]


def test_every_backend_runs_the_battery():
    assert {p.values[0] for p in BATTERY} == set(BACKENDS)


@pytest.fixture(params=BATTERY)
def started(request, tmp_path):
    """(backend, engine client, run id, sandbox): a backend's sandbox on a fresh discount_shop workspace."""
    backend = backend_named(request.param)
    # The docker-marked backends get the session's engine (skipped, or failed when containers are required, without one).
    client = backend.engine(request.getfixturevalue("docker_client") if request.node.get_closest_marker("docker") else None)
    image = backend.image(client, None)
    run_id = f"pytest-conformance-{uuid.uuid4().hex[:8]}"
    sandbox = backend.start(client, image, REPO, tmp_path / "workspace", run_id=run_id, output_dir=tmp_path / "out")
    try:
        yield backend, client, run_id, sandbox
    finally:
        sandbox.close()


def _fix_diff(sandbox: Sandbox) -> str:
    old = sandbox.read_file(PRICING).stdout.text
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), old.replace(BUG, FIX).splitlines(keepends=True),
                                        f"a/{PRICING}", f"b/{PRICING}"))


def test_it_is_the_protocol_and_says_what_it_is(started):
    backend, _, _, sandbox = started
    assert isinstance(sandbox, Sandbox)
    assert sandbox.kind == backend.name
    assert backend.record()["kind"] == backend.name and backend.record()["isolated"] is backend.isolated
    assert sandbox.workspace.is_dir() and (sandbox.workspace / PRICING).is_file()
    # Commands run in the workspace, whose one commit is the base every diff is taken against.
    head = sandbox.run(["git", "rev-parse", "HEAD"])
    assert head.ok and head.stdout.text.strip() == sandbox.base_commit and len(sandbox.base_commit) == 40
    assert sandbox.diff() == ""


def test_commands_exit_codes_environment_and_its_python(started):
    _, _, _, sandbox = started
    ran = sandbox.run([sandbox.python, "-c", "import sys; print(6 * 7); sys.exit(3)"])
    assert (ran.exit_code, ran.ok, ran.timed_out, ran.stdout.text) == (3, False, False, "42\n")
    said = sandbox.run(["sh", "-c", 'printf %s "$GREETING" >&2'], env={"GREETING": "hello"})
    assert said.ok and said.stderr.text == "hello"


def test_a_command_past_its_time_limit_is_stopped_and_said_to_be(started):
    _, _, _, sandbox = started
    slow = sandbox.run(["sleep", "30"], timeout_s=1.0)
    assert slow.timed_out and not slow.ok and slow.duration_s < 15


def test_output_past_its_cap_is_cut_with_its_true_size(started):
    _, _, _, sandbox = started
    flood = sandbox.run([sandbox.python, "-c", "print('x' * 100_000)"], output_cap=1_000)
    assert flood.ok and flood.stdout.truncated and flood.stdout.true_bytes == 100_001
    assert len(flood.stdout.text.encode()) <= 1_000


def test_read_write_and_search_files(started):
    _, _, _, sandbox = started
    assert BUG in sandbox.read_file(PRICING).stdout.text
    first = sandbox.read_file(PRICING, 1, 2, line_numbers=True).stdout.text.splitlines()
    assert len(first) == 2 and first[0].split("\t")[0].strip() == "1"
    assert BUG in sandbox.search(BUG).stdout.text and PRICING in sandbox.search(BUG, "src/**").stdout.text
    assert sandbox.search(BUG, "tests/**").stdout.text == ""
    sandbox.write_file("notes/new/todo.txt", b"one\ntwo\n")
    assert sandbox.read_file("notes/new/todo.txt").stdout.text == "one\ntwo\n"
    assert (sandbox.workspace / "notes/new/todo.txt").read_bytes() == b"one\ntwo\n"
    assert "+++ b/notes/new/todo.txt" in sandbox.diff()


def test_nothing_is_written_outside_the_workspace(started):
    _, _, _, sandbox = started
    with pytest.raises((SandboxError, EngineFailure)):
        sandbox.write_file("../escaped.txt", b"out")
    assert not (sandbox.workspace.parent / "escaped.txt").exists()


def test_patches_apply_and_the_diff_follows(started):
    _, _, _, sandbox = started
    fix = _fix_diff(sandbox)
    bad = fix.replace(BUG, "this line is not in the file")
    refused, none = sandbox.apply_patch_and_diff(bad)
    assert not refused.ok and none is None and sandbox.diff() == ""
    applied, diff = sandbox.apply_patch_and_diff(fix)
    assert applied.ok and diff == sandbox.diff() and f"+    discounted = {FIX}" in diff
    reverse = "".join(difflib.unified_diff(
        sandbox.read_file(PRICING).stdout.text.splitlines(keepends=True),
        sandbox.read_file(PRICING).stdout.text.replace(FIX, BUG).splitlines(keepends=True),
        f"a/{PRICING}", f"b/{PRICING}"))
    assert sandbox.apply_patch(reverse).ok and sandbox.diff() == ""


def test_closing_leaves_the_workspace_and_nothing_running(started):
    backend, client, run_id, sandbox = started
    sandbox.write_file("kept.txt", b"for review\n")
    assert sandbox.close() is True
    assert (sandbox.workspace / "kept.txt").read_bytes() == b"for review\n"  # kept in the run directory
    if client is not None:  # an engine's backend: no container of this run is left, running or not
        assert client.containers.list(all=True, filters={"label": f"org.repair-agent.run={run_id}"}) == []
    assert sandbox.close() in (True, False)  # closing twice is harmless
