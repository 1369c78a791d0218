"""The protected verifier: acceptance specs, protected copies and hashes, test runs, diff scope, Uₜ.

It imports nothing from `repair_agent` (the agent side). Nothing of it is mounted or copied
into the agent's container.

The names below are imported when first used: reading a scenario's spec or held-out checks
(verifier.spec, verifier.heldout) does not load the runner, the judge and the engine's side,
so a run's command reaches its sandbox's start sooner.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_attributes

if TYPE_CHECKING:
    from .conditions import CONDITIONS, Condition, u_count, unsatisfied
    from .isolation import CommandResult, EngineFailure, HardenedContainer, Limits, LocalRunner, container_user
    from .judge import Baseline
    from .runner import ScenarioError, TestVerdict, Verifier, VerifierCompromised
    from .scope import ScopeVerdict, check_scope, diff_sha256
    from .spec import DEFAULT_PROTECTED, AcceptanceSpec, ProtectedSnapshot, glob_match

_MODULE_OF = {
    "CONDITIONS": "conditions", "Condition": "conditions", "u_count": "conditions", "unsatisfied": "conditions",
    "CommandResult": "isolation", "EngineFailure": "isolation", "HardenedContainer": "isolation",
    "Limits": "isolation", "LocalRunner": "isolation", "Baseline": "judge",
    "ScenarioError": "runner", "TestVerdict": "runner", "Verifier": "runner", "VerifierCompromised": "runner",
    "container_user": "isolation", "ScopeVerdict": "scope", "check_scope": "scope", "diff_sha256": "scope",
    "DEFAULT_PROTECTED": "spec", "AcceptanceSpec": "spec", "ProtectedSnapshot": "spec", "glob_match": "spec",
}
__all__ = [
    "AcceptanceSpec", "Baseline", "CONDITIONS", "CommandResult", "Condition", "DEFAULT_PROTECTED",
    "EngineFailure", "HardenedContainer", "Limits", "LocalRunner", "ProtectedSnapshot", "ScenarioError",
    "ScopeVerdict", "TestVerdict", "Verifier", "VerifierCompromised", "check_scope", "container_user",
    "diff_sha256", "glob_match", "u_count", "unsatisfied",
]

__getattr__ = lazy_attributes(__name__, globals(), _MODULE_OF)
