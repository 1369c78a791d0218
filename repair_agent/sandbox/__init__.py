"""The executor's ground: sandboxes (docker, local), the workspace, the sandbox image.

Imported when first used: a scenario's manifest reads `sandbox.environment` without loading the
sandboxes (and through them the verifier's runner), so a run reaches its sandbox's start sooner.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from verifier.lazy import lazy_attributes

if TYPE_CHECKING:
    from .base import Sandbox, SandboxError
    from .docker_sandbox import DockerSandbox
    from .local_sandbox import NOT_ISOLATED, LocalSandbox
    from .workspace import create_workspace

_MODULE_OF = {"Sandbox": "base", "SandboxError": "base", "DockerSandbox": "docker_sandbox",
              "NOT_ISOLATED": "local_sandbox", "LocalSandbox": "local_sandbox", "create_workspace": "workspace"}
__all__ = ["DockerSandbox", "LocalSandbox", "NOT_ISOLATED", "Sandbox", "SandboxError", "create_workspace"]

__getattr__ = lazy_attributes(__name__, globals(), _MODULE_OF)
