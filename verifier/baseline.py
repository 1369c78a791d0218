"""The pristine suite's result, cached between runs: keyed by everything it depends on (the
verifier's PoolKey: tree, image, setup) and trusted only whole."""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from .files import atomic_write
from .judge import Baseline
from .pool import PoolKey
from .spec import AcceptanceSpec, nodeid_to_junit_key


class CachedBaseline(BaseModel):
    """What runs/.cache/baselines/KEY.json holds: the baseline bound to its inputs and a digest."""

    format: Literal[3] = 3
    inputs: dict[str, str]  # the PoolKey: tree, image, setup (spec, held-out checks, boot, limits, uid)
    baseline_sha256: str
    baseline: Baseline
    # The pristine suite's slowest test when the baseline was made (pytest's timing), which a screening
    # check's per-test limit is fitted to: a timing, not a result, so outside the baseline and its
    # digest (None: cached before it was kept; the spec's limit then holds).
    slowest_test_s: float | None = None


def baseline_digest(baseline: Baseline) -> str:
    return hashlib.sha256(json.dumps(baseline.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def baseline_cache_path(cache_dir: Path, key: PoolKey) -> Path:
    digest = hashlib.sha256("\0".join([key.pristine_tree_sha256, key.environment_id,
                                       key.setup_sha256]).encode()).hexdigest()[:24]
    return Path(cache_dir) / "baselines" / f"{digest}.json"


def load_cached_baseline(cache: Path, key: PoolKey, spec: AcceptanceSpec) -> tuple[CachedBaseline | None, str | None]:
    """(the cached baseline, None) when trusted; (None, why not) otherwise. Trusted only whole: it parses,
    its content matches the digest stored with it, it was made from the same inputs, and it agrees
    with the spec. Anything else is set aside (kept as *.rejected for inspection).

    The digest catches corruption and hand edits; it is not a secret, so someone who can write
    runs/.cache and recompute it can still forge one (the candidate cannot: it never sees it)."""
    if not cache.is_file():
        return None, None
    try:
        envelope = CachedBaseline.model_validate_json(cache.read_bytes())
        problem = None
        if envelope.inputs != key.model_dump():
            problem = "made from other inputs"
        elif envelope.baseline_sha256 != baseline_digest(envelope.baseline):
            problem = "content does not match its digest"
        else:
            bl = envelope.baseline
            targets = [nodeid_to_junit_key(t) for t in spec.target_tests]
            known = set(bl.all_tests)
            if (bl.target_keys != targets or not set(targets) <= known or not set(bl.pass_to_pass) <= known
                    or not set(bl.known_failing) <= known or not set(bl.known_skipped) <= known
                    or set(bl.target_failures) != set(targets) or bl.listed != bool(spec.pass_to_pass)):
                problem = "inconsistent with the acceptance spec"
    except (ValueError, OSError) as exc:  # pydantic's ValidationError is a ValueError
        problem = f"unreadable ({type(exc).__name__}: {str(exc)[:200]})"
    if problem is None:
        return envelope, None
    try:
        os.replace(cache, cache.with_name(f"{cache.name}.rejected"))
    except OSError:
        pass
    return None, f"cached baseline {cache.name} not trusted ({problem}); rebuilt by running the suite"


def store_cached_baseline(cache: Path, key: PoolKey, baseline: Baseline, slowest_test_s: float | None = None) -> None:
    """Best effort and atomic: two runs filling the same cache at once each rename a whole file
    into place, so neither ever reads half of the other's; a full disk only costs the cache."""
    envelope = CachedBaseline(inputs=key.model_dump(), baseline_sha256=baseline_digest(baseline), baseline=baseline,
                              slowest_test_s=slowest_test_s)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(cache, envelope.model_dump_json(indent=1))
    except OSError:
        pass
