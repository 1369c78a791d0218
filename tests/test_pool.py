"""The verifier's pool of fresh check containers keeps every guarantee of a container per check.

Containers are made ahead of time, but each check still runs in one that nothing ran in before,
over its own pristine copy; a pooled one that no longer matches its key, its pristine tree hash
or the engine's record of it is discarded, and close() leaves nothing behind.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

import hostile_choosers as h
from repair_agent.scenarios.scenario import resolve
from verifier import Verifier
from verifier.isolation import LABEL, OWNER_LABEL
from verifier.runner import PRISTINE_LABEL

# Candidate code that, at the end of pytest's process (pytest's capture is over by then), writes a
# marker into every directory it can write to anywhere in its container and reports markers another
# container left. Its receipt is a line on pytest's stdout, which the host keeps in the check's own
# directory. The gate finds what it does (the walk, the writes, the exit hook): the test grants it.
PROBE = '''import json as _json, os as _os


def _ra_probe():
    me, wrote, found, own = _os.uname().nodename, [], [], []
    for root, dirs, files in _os.walk("/"):
        dirs[:] = [d for d in dirs if _os.path.join(root, d) not in ("/proc", "/sys")]
        for name in files:  # the name says which container wrote it (some files read back otherwise)
            if name.startswith(".ra-marker-"):
                owner = name.split("-")[2]
                (own if owner == me else found).append(_os.path.join(root, name))
        try:
            with open(_os.path.join(root, ".ra-marker-%s-%d" % (me, _os.getpid())), "w") as fh:
                fh.write(me)
            wrote.append(root)
        except OSError:
            pass
    print("RA-RECEIPT " + _json.dumps({"host": me, "wrote": wrote, "found": found, "own": own}))


import atexit as _atexit
import sys as _sys

if "pytest" in _sys.modules:  # pytest's process, not the held-out probe's
    _atexit.register(_ra_probe)
'''


def managed(docker_client, **labels) -> list:
    wanted = [LABEL, f"{OWNER_LABEL}={os.getpid()}", "org.repair-agent.role=verifier",
              *(f"{k}={v}" for k, v in labels.items())]
    return docker_client.containers.list(all=True, filters={"label": wanted}, ignore_removed=True)


def probe_diff() -> str:
    return h.unified(h.PRICING, h.pristine(h.PRICING), PROBE + "\n\n" + h.fixed_pricing())


def probe_grants(scenario) -> tuple[str, ...]:
    from verifier.gate import review
    return tuple(f.key for f in review(probe_diff(), scenario.repo, scenario.spec).findings)


def receipts(verifier: Verifier) -> dict[str, list[dict]]:
    """The probe's receipts of every check so far, by the check's own directory."""
    out = {}
    for check in sorted((verifier.state_dir / "checks").iterdir()):
        found = [json.loads(line[len("RA-RECEIPT "):]) for p in sorted(check.glob("exec-*.stdout"))
                 for line in p.read_text(errors="replace").splitlines() if line.startswith("RA-RECEIPT ")]
        if found:
            out[check.name] = found
    return out


@pytest.fixture(scope="module")
def scenario():
    return resolve("discount-bug")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")  # the pristine suite runs once for the whole module


@pytest.fixture
def make_verifier(docker_client, sandbox_image, scenario, cache_dir, tmp_path):
    made = []

    def make(repo: Path | None = None, **kw) -> Verifier:
        v = Verifier(scenario.spec, repo or scenario.repo, tmp_path / f"v{len(made)}", backend="docker",
                     client=docker_client, image=sandbox_image, heldout=scenario.heldout, cache_dir=cache_dir, **kw)
        made.append(v)
        return v

    yield make
    for v in made:
        v.close()


@pytest.mark.docker
def test_a_marker_written_anywhere_is_never_found_by_a_later_check(make_verifier, scenario):
    v = make_verifier(granted=probe_grants(scenario))
    v.prepare()
    diff = probe_diff()
    verdicts = [v.run_tests(diff, kind) for kind in ("target_test", "target_test", "full_suite")]
    assert all(verdict.ok for verdict in verdicts), [verdict.problems for verdict in verdicts]
    by_check = receipts(v)
    assert len(by_check) == 3, by_check.keys()  # three checks, three directories
    hosts = set()
    for check, recs in by_check.items():
        assert len(recs) == 1, recs  # pytest's process ran it once per check
        hosts.add(recs[0]["host"])
        for r in recs:
            # It really could write: the container's /tmp and the tree it ran in at least.
            assert "/tmp" in r["wrote"] and len(r["wrote"]) >= 3, r["wrote"]
            assert r["found"] == [], f"{check}: markers of an earlier check: {r['found']}"
    assert len(hosts) == 3  # one container per check


@pytest.mark.docker
def test_a_pooled_check_whose_pristine_hash_differs_is_discarded(make_verifier, docker_client):
    v = make_verifier()
    v.prepare()
    v.review(h.fix_diff())  # a diff is coming: two are made ahead
    assert v.pool.wait_ready(2)
    forged, written = list(v.pool._ready)
    # One recorded as made for another pristine tree; the other's copy altered on disk.
    forged.key = forged.key.model_copy(update={"pristine_tree_sha256": "0" * 64})
    (written.tree / h.PRICING).write_text(h.fixed_pricing())
    bad_ids = {forged.runner.id, written.runner.id}
    verdict = v.run_tests("", "target_test")
    assert not verdict.ok and verdict.problems  # the pristine tree, unfixed: the target fails
    assert verdict.failing and not verdict.missing  # ...because it really ran, not because it broke
    assert len(v.pool.discarded) == 2, v.pool.discarded
    assert "another image, pristine tree or spec" in v.pool.discarded[0]
    assert "is not the pristine tree" in v.pool.discarded[1]
    used = [json.loads(p.read_text()) for p in (v.state_dir / "checks").glob("*/check.json")]
    used = [u for u in used if not u["baseline"]]
    assert len(used) == 1 and used[0]["container_id"] not in bad_ids
    v.close()
    assert not [c for c in managed(docker_client) if c.id in bad_ids]  # discarded means removed


@pytest.mark.docker
def test_one_check_is_made_ahead_until_a_diff_is_reviewed_and_one_stays_ready_after_the_checks(make_verifier):
    """Many runs end before any diff (a hand-off, a refused proposal): they leave one unused
    container, not two. A reviewed diff has its two checks (target tests, then the suite) made
    ahead; after them one stays ready, so a run that ends there leaves at most one."""
    v = make_verifier()
    v.prepare()
    assert v.pool.wait_ready(1) and not v.pool.wait_ready(2)  # the filler stopped at one
    v.review(h.fix_diff())
    assert v.pool.wait_ready(2)
    made = {c.runner.id for c in v.pool._ready}
    for kind in ("target_test", "full_suite"):
        verdict = v.run_tests(h.fix_diff(), kind)
        assert verdict.ok, verdict.problems
    used = {json.loads(p.read_text())["container_id"] for p in (v.state_dir / "checks").glob("*/check.json")}
    assert made <= used  # both checks ran in the containers made ahead
    assert v.pool.wait_ready(1) and not v.pool.wait_ready(2)
    assert not v.pool.discarded


@pytest.mark.docker
def test_a_restarted_pooled_container_is_discarded(make_verifier):
    v = make_verifier()
    v.prepare()
    assert v.pool.wait_ready(1)
    v.pool._ready[0].runner.container.restart(timeout=0)
    v.run_tests("", "target_test")
    assert v.pool.discarded and "restarted" in v.pool.discarded[0]


@pytest.mark.docker
def test_a_changed_pristine_tree_gets_containers_made_for_it(make_verifier, docker_client, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(h.pristine_repo(), repo, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    v = make_verifier(repo)
    v.prepare()
    old = v.snapshot.tree_sha256
    v.review(h.fix_diff())
    assert v.pool.wait_ready(2)
    (repo / "README.md").write_text("changed after the first prepare\n")
    v.prepare()  # a new snapshot: none of the containers made for the old one may serve it
    assert v.snapshot.tree_sha256 != old
    assert not managed(docker_client, **{PRISTINE_LABEL: old})
    verdict = v.run_tests("", "target_test")
    assert verdict.failing  # it ran
    assert v.pool.wait_ready(1)
    assert all(c.key.pristine_tree_sha256 == v.snapshot.tree_sha256 for c in v.pool._ready)


@pytest.mark.docker
def test_idle_too_long_is_discarded_and_the_check_still_runs(make_verifier):
    v = make_verifier(pool_size=1, pool_max_idle_s=0.5)
    v.prepare()
    assert v.pool.wait_ready(1)
    time.sleep(0.6)  # the idle limit itself is the condition: time must pass, no event to poll for
    verdict = v.run_tests(h.fix_diff(), "target_test")
    assert verdict.ok, verdict.problems
    assert v.pool.discarded and all("idle" in d for d in v.pool.discarded)


@pytest.mark.docker
def test_close_leaves_no_pooled_container(make_verifier, docker_client):
    v = make_verifier()
    v.prepare()
    v.review(h.fix_diff())
    assert v.pool.wait_ready(2)
    assert len(managed(docker_client, **{PRISTINE_LABEL: v.snapshot.tree_sha256})) >= 2
    v.close()
    assert not managed(docker_client, **{PRISTINE_LABEL: v.snapshot.tree_sha256})
    # Closed while a container is still being made: that one is removed as well.
    w = make_verifier()
    w.prepare()
    w.close()
    assert not managed(docker_client, **{PRISTINE_LABEL: w.snapshot.tree_sha256})


def test_a_torn_baseline_cache_file_is_recomputed_not_fatal(scenario, tmp_path):
    """Runs of a sweep share the cache: a half-written or old-format entry must not stop a run."""
    first = Verifier(scenario.spec, scenario.repo, tmp_path / "a", backend="local", cache_dir=tmp_path / "cache")
    with first:
        expected = first.prepare()
    (entry,) = (tmp_path / "cache" / "baselines").glob("*.json")
    entry.write_text(entry.read_text()[:40])
    with Verifier(scenario.spec, scenario.repo, tmp_path / "b", backend="local", cache_dir=tmp_path / "cache") as second:
        assert second.prepare() == expected
    # Rewritten whole; the torn entry is kept aside for inspection, never trusted.
    assert sorted(p.name for p in (tmp_path / "cache" / "baselines").iterdir()) == [entry.name, f"{entry.name}.rejected"]
    assert json.loads(entry.read_text())["baseline"]["all_tests"] == expected.all_tests
    assert second.cache_note and "not trusted" in second.cache_note


CHILD = '''
import sys, time
from pathlib import Path
import docker
from repair_agent.scenarios.scenario import resolve
from verifier import Verifier
scenario = resolve("discount-bug")
v = Verifier(scenario.spec, scenario.repo, Path(sys.argv[1]), backend="docker", client=docker.from_env(),
             image=sys.argv[2], heldout=scenario.heldout, cache_dir=Path(sys.argv[3]))
v.prepare()
v.pool.fill()
assert v.pool.wait_ready(2)
print("ready", flush=True)
time.sleep(120)
'''


def _child_with_a_full_pool(sandbox_image, cache_dir, tmp_path):
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "v"), sandbox_image, str(cache_dir)],
                             stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    assert child.stdout.readline().strip() == "ready"
    return child


@pytest.mark.docker
def test_ctrl_c_leaves_no_pooled_container_and_a_crash_leaves_them_to_cleanup(docker_client, sandbox_image,
                                                                            cache_dir, tmp_path):
    import signal

    from repair_agent.sandbox.leftovers import pid_alive as _pid_alive

    child = _child_with_a_full_pool(sandbox_image, cache_dir, tmp_path / "int")
    owned = {"label": [LABEL, f"{OWNER_LABEL}={child.pid}"]}
    assert len(docker_client.containers.list(all=True, filters=owned, ignore_removed=True)) == 2
    child.send_signal(signal.SIGINT)  # KeyboardInterrupt: the interpreter exits, the pool closes
    child.wait(60)
    assert docker_client.containers.list(all=True, filters=owned, ignore_removed=True) == []

    child = _child_with_a_full_pool(sandbox_image, cache_dir, tmp_path / "kill")
    owned = {"label": [LABEL, f"{OWNER_LABEL}={child.pid}"]}
    child.kill()  # no close() at all: the owner-pid label is what `repair-agent cleanup` goes by
    child.wait(60)
    left = docker_client.containers.list(all=True, filters=owned, ignore_removed=True)
    try:
        assert len(left) == 2 and not _pid_alive(left[0].labels[OWNER_LABEL])
    finally:
        for c in left:
            c.remove(force=True, v=True)
