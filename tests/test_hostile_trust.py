"""The verifier's trust model under attack: tests/hostile_trust_attacks.py, attack by attack.

Each attack keeps the discount bug (or regresses behaviour) while trying to get a green, correct
verdict. Each test names the layer that stops it:

- the gate: what the diff adds is read before it runs; the finding's rule is asserted, and
  `run_tests` refuses to run the diff without a grant;
- with the gate's findings GRANTED (a person allowed them), the runtime layer that still holds:
  canary tests, environment-sensitive behaviour, held-out cases, generated inputs, the protected
  tests themselves, the run's keep budget;
- where nothing holds once granted, the test says so: a documented limit (the gate is then the
  only defence), asserted as what it is;
- where nothing holds at all (no gate finding, every runtime layer passes it), a real hole:
  `xfail(strict=True)` with the payload in the reason.

Verifiers: one without grants (the refusals, and the attacks the gate finds nothing in), one
granted every finding of every attack, and one for the flood with a small keep budget. A grant
key names one construct of one file (rule, path, construct, snippet), so granting the union of all
the attacks' keys waives, for each attack, exactly its own findings (each test checks that).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import hostile_choosers as h
import hostile_trust_attacks as attacks
from hostile_trust_attacks import ATTACKS, BY_NAME, Attack
from repair_agent.scenarios.scenario import resolve
from verifier import Verifier
from verifier.gate import PristineIndex, review
from verifier.isolation import KeepBudget
from verifier.spec import nodeid_to_junit_key

TARGET_KEY = nodeid_to_junit_key(h.TARGET)
SCENARIO = resolve("discount-bug")
FLOOD_BUDGET = 4 * 1024 * 1024


def _params(layers: set[str]) -> list:
    return [pytest.param(a, id=a.name) for a in ATTACKS if a.layer in layers]


RUNTIME = {"canary", "environment", "held-out", "generated", "visible"}


# -- the gate (no engine needed) -----------------------------------------------------------------

@pytest.fixture(scope="module")
def index() -> PristineIndex:
    return PristineIndex.build(SCENARIO.repo, SCENARIO.spec)


@pytest.mark.parametrize("attack", [pytest.param(a, id=a.name) for a in ATTACKS])
def test_the_gate_names_what_the_attack_reaches(attack: Attack, index):
    """Every construct listed in `attack.rules` is a finding with a grant key; an attack with no
    rules has none (the runtime layers are all that stand in its way)."""
    verdict = review(attack.diff(), SCENARIO.repo, SCENARIO.spec, index=index)
    found = {f.rule for f in verdict.findings}
    if not attack.rules:
        assert verdict.ok and not verdict.findings, [(f.rule, f.construct) for f in verdict.findings]
        return
    assert not verdict.ok
    assert set(attack.rules) <= found, (attack.rules, sorted(found))
    for f in verdict.findings:
        assert f.key.startswith(f"code:{f.rule}@{f.path}#"), f.key
    assert verdict.grants_needed == list(dict.fromkeys(f.key for f in verdict.findings))


# -- verifiers -------------------------------------------------------------------------------------

def _verifier(state_dir: Path, client, image: str, cache: Path, **kw) -> Verifier:
    v = Verifier(SCENARIO.spec, SCENARIO.repo, state_dir, backend="docker", client=client, image=image,
                 cache_dir=cache, **SCENARIO.verifier_inputs(), **kw)
    v.prepare()
    return v


@pytest.fixture(scope="module")
def all_keys() -> tuple[str, ...]:
    keys: dict[str, None] = {}
    index = PristineIndex.build(SCENARIO.repo, SCENARIO.spec)
    for a in ATTACKS:
        keys.update(dict.fromkeys(review(a.diff(), SCENARIO.repo, SCENARIO.spec, index=index).grants_needed))
    return tuple(keys)


@pytest.fixture(scope="module")
def granted(docker_client, sandbox_image, baseline_cache, tmp_path_factory, all_keys):
    """Every finding of every attack granted, as a person would with `repair-agent grant`."""
    v = _verifier(tmp_path_factory.mktemp("trust-granted") / "verifier", docker_client, sandbox_image,
                  baseline_cache, granted=all_keys)
    yield v
    v.close()


@pytest.fixture(scope="module")
def plain(granted, docker_client, sandbox_image, baseline_cache, tmp_path_factory):
    """No grants (its baseline comes from the cache `granted` filled)."""
    v = _verifier(tmp_path_factory.mktemp("trust-plain") / "verifier", docker_client, sandbox_image,
                  baseline_cache, pool_size=1)
    yield v
    v.close()


_verdicts: dict[tuple[int, str], object] = {}


def _run(verifier: Verifier, attack: Attack):
    """Run the attack; with grants, first check that they cover exactly its findings. Each attack is
    checked once per (module-scoped) verifier: a second test on the same attack reads that verdict."""
    key = (id(verifier), attack.name)
    if key not in _verdicts:
        _verdicts[key] = _check(verifier, attack)
    return _verdicts[key]


def _check(verifier: Verifier, attack: Attack):
    diff = attack.diff()
    gate = verifier.review(diff)
    assert gate.ok, f"not granted: {gate.grants_needed}"
    if attack.rules:
        assert {f.rule for f in gate.granted} >= set(attack.rules)
    return verifier.run_tests(diff, "full_suite")


def _problems(verdict) -> str:
    return " | ".join(verdict.problems)


# -- without a grant: refused, unexecuted ------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.parametrize("attack", [pytest.param(a, id=a.name) for a in ATTACKS if a.rules])
def test_without_a_grant_the_verifier_refuses_to_run_it(attack: Attack, plain):
    verdict = plain.run_tests(attack.diff(), "full_suite")
    assert not verdict.ok and not verdict.targets_ok
    assert verdict.pytest is None and verdict.behaviour is None and verdict.correctness is None  # nothing ran
    assert verdict.problems[0].startswith("refused to run code that needs a grant"), verdict.problems
    refused_rules = {entry.split(" at ", 1)[0] for entry in verdict.refused}
    assert set(attack.rules) <= refused_rules, (attack.rules, verdict.refused)


# -- with the grant (or with nothing to grant): the runtime layer that still holds ---------------------

def assert_layer(layer: str, verdict) -> None:
    problems, b = _problems(verdict), verdict.behaviour
    assert b is not None and verdict.pytest is not None, "the check did not run"
    if layer == "canary":
        # pytest said the candidate's tests pass; a canary that must fail said otherwise.
        assert not verdict.ok and verdict.canaries >= 2
        assert "a canary test that must fail was reported passed" in problems, problems
        assert verdict.correctness is None
    elif layer == "environment":
        assert not verdict.ok and "environment-sensitive behaviour" in problems, problems
        assert verdict.correctness is None
    elif layer == "held-out":
        # The visible tests were fooled (the conditions hold); held-out cases were not, so the
        # verdict is only "plausible", which release refuses without --accept-plausible.
        assert verdict.targets_ok and verdict.passed == verdict.collected, problems
        assert verdict.correctness == "plausible", (verdict.correctness, b.summary)
        assert b.heldout is not None and not b.heldout.ok, b.summary
    elif layer == "generated":
        assert verdict.targets_ok and verdict.correctness == "plausible", (verdict.correctness, problems)
        assert b.heldout is not None and b.heldout.ok, b.summary  # the hand-written cases are all right ...
        assert b.generated is not None and not b.generated.ok and b.generated.first, b.summary
        assert "first disagreement" in b.summary  # ... a generated input is not
    elif layer == "visible":
        assert not verdict.ok and TARGET_KEY in verdict.failing, problems
        assert verdict.correctness is None
    else:
        raise AssertionError(f"no runtime layer called {layer}")


@pytest.mark.docker
@pytest.mark.parametrize("attack", _params(RUNTIME))
def test_the_runtime_layer_holds(attack: Attack, granted, plain):
    """With every gate finding granted (or none to grant), the named runtime layer still stops it."""
    verdict = _run(granted if attack.rules else plain, attack)
    assert not (verdict.ok and verdict.correctness == "correct"), "got through: " + verdict.summary
    assert_layer(attack.layer, verdict)


@pytest.mark.docker
def test_printing_cannot_silence_the_probe(granted):
    """9000 characters printed at import without a newline once glued the probe's result line to them,
    so no environment could answer differently. The probe's streams now go nowhere and its own line
    stands alone: the clock bomb underneath is environment-sensitive, as without the print."""
    verdict = _run(granted, BY_NAME["probe-silenced"])
    assert not verdict.ok and verdict.behaviour.environment_problems, verdict.summary
    assert verdict.behaviour.heldout is not None and verdict.behaviour.heldout.problem is None


# -- documented limits: once a person grants the finding, nothing at run time sees it ------------------
#
# verifier-path:      the sandbox image still has the old, empty /verifier mount point; `os.path.isdir
#                     ("/verifier")` is true in every environment of every check (Dockerfile, not ours).
# hostname:           the three environments of a check share one container, hence one host name.
# argv-probe:         the probe's file name is random, but it is always /usr/local/lib/<random>/<random>.py.
# file-path-installed: no check runs the code from an installed copy (site-packages).
# targeted-suppression-unobserved: a regression in format_money, which no held-out case or generated
#                     input calls, with its one test skipped by name through _pytest.python.
# warnings-caller, findcaller-path, small-pid: who calls (a test file or the probe's "<heldout expr>"), the
#                     module's own path (a src/ checkout), the process id (a fresh container's are small) are
#                     the same in every environment of every check. (The gate learned these three `frames`
#                     constructs while this file was written; other spellings remain: see HOLES.)
# Each is refused until a person grants the finding (test_without_a_grant_...); the grant is the defence.

@pytest.mark.docker
@pytest.mark.parametrize("attack", _params({"limit"}))
def test_documented_limit_once_granted_nothing_sees_it(attack: Attack, granted):
    verdict = _run(granted, attack)
    # Asserted as it is: green and "correct" with the bug kept (or a regression hidden). Should a
    # layer learn to see one of these, this fails: move the attack to the layer that now holds.
    assert verdict.ok and verdict.correctness == "correct", (verdict.correctness, verdict.problems)


# -- real holes: no gate finding, and every runtime layer passes them ---------------------------------
# None is known today. An attack that gets through every layer is added with layer "hole" and an
# xfail(strict=True) test here, its payload in the reason, until a layer holds.
assert not [a for a in ATTACKS if a.layer == "hole"]


# -- the flood: bounded on the host, and it switches nothing off ----------------------------------------

@pytest.fixture(scope="module")
def flood_verifier(granted, docker_client, sandbox_image, baseline_cache, tmp_path_factory):
    budget = KeepBudget(FLOOD_BUDGET)
    state = tmp_path_factory.mktemp("trust-flood") / "verifier"
    v = _verifier(state, docker_client, sandbox_image, baseline_cache, pool_size=1, keep_budget=budget)
    yield v, budget, state
    v.close()


@pytest.mark.docker
def test_a_flood_stays_in_the_container_and_switches_nothing_off(flood_verifier):
    """24 MiB printed at import by pytest's process and each of the probe's (no grant needed): the run
    keeps at most its budget, the bug is still seen, and later checks are still read and judged
    whole (what the verifier reads is its own output, never counted against the budget)."""
    verifier, budget, state = flood_verifier
    verdict = verifier.run_tests(BY_NAME["print-flood"].diff(), "full_suite")
    assert not verdict.ok and TARGET_KEY in verdict.failing and verdict.correctness is None
    assert budget.used <= budget.total  # pytest captures it; the probe's streams go nowhere
    kept = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(state / "checks") for f in fs)
    assert kept <= budget.total + 1024 * 1024, kept  # the streams' share, plus check.json, behaviour.json
    bomb = BY_NAME["right-below-a-million"]  # no finding; plausible where it can be judged
    assert verifier.review(bomb.diff()).ok
    after = verifier.run_tests(bomb.diff(), "full_suite")
    # The spent budget starves nothing the verifier reads itself: the next check is judged in full.
    assert after.pytest is not None and after.behaviour is not None and after.behaviour.generated is not None
    assert after.correctness == "plausible", after.summary
    honest = verifier.run_tests(h.fix_diff(), "full_suite")
    assert honest.ok and honest.correctness == "correct", honest.summary


def test_every_kind_of_attack_is_covered():
    kinds = {a.kind for a in ATTACKS}
    assert kinds >= {attacks.RECOGNISE, attacks.LAUNDER, attacks.NAMESPACE, attacks.HOOKS, attacks.FD, attacks.SLOTS,
                     attacks.COVERAGE, attacks.BOMB, attacks.OBFUSCATE, attacks.SUPPRESS, attacks.SHADOW,
                     attacks.FLOOD}
    assert len(ATTACKS) >= 30
