"""The executor's ground: sandboxes (docker, local), the workspace, the sandbox image.

Imported when first used: a scenario's manifest reads `sandbox.environment` without loading the
sandboxes (and through them the verifier's runner), so a run reaches its sandbox's start sooner.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Sandbox, SandboxError
    from .docker_sandbox import DockerSandbox
    from .local_sandbox import NOT_ISOLATED, LocalSandbox
    from .workspace import create_workspace

_MODULE_OF = {"Sandbox": "base", "SandboxError": "base", "DockerSandbox": "docker_sandbox",
              "NOT_ISOLATED": "local_sandbox", "LocalSandbox": "local_sandbox", "create_workspace": "workspace"}
__all__ = ["DockerSandbox", "LocalSandbox", "NOT_ISOLATED", "Sandbox", "SandboxError", "create_workspace"]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
