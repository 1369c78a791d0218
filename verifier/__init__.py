"""The protected verifier: acceptance specs, protected copies and hashes, test runs, diff scope, Uₜ.

It imports nothing from `repair_agent` (the agent side). Nothing of it is mounted or copied
into the agent's container.
"""
from .conditions import CONDITIONS, Condition, u_count, unsatisfied
from .isolation import CommandResult, EngineFailure, HardenedContainer, Limits, LocalRunner
from .judge import Baseline
from .runner import ScenarioError, TestVerdict, Verifier, VerifierCompromised, container_user
from .scope import ScopeVerdict, check_scope, diff_sha256
from .spec import DEFAULT_PROTECTED, AcceptanceSpec, ProtectedSnapshot, glob_match

__all__ = [
    "AcceptanceSpec", "Baseline", "CONDITIONS", "CommandResult", "Condition", "DEFAULT_PROTECTED",
    "EngineFailure", "HardenedContainer", "Limits", "LocalRunner", "ProtectedSnapshot", "ScenarioError",
    "ScopeVerdict", "TestVerdict", "Verifier", "VerifierCompromised", "check_scope", "container_user",
    "diff_sha256", "glob_match", "u_count", "unsatisfied",
]
