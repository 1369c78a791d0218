"""The executor's ground: the backends (docker, local) and their sandboxes, the workspace, the sandbox image.

Imported when first used: a scenario's manifest reads `sandbox.environment` without loading the
sandboxes (and through them the verifier's runner), so a run reaches its sandbox's start sooner.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from verifier.lazy import lazy_attributes

if TYPE_CHECKING:
    from .backends import BACKENDS, NOT_ISOLATED, Backend, backend_named
    from .base import Sandbox, SandboxError
    from .docker_sandbox import DockerSandbox
    from .local_sandbox import LocalSandbox
    from .workspace import create_workspace

_MODULE_OF = {"BACKENDS": "backends", "Backend": "backends", "backend_named": "backends", "Sandbox": "base",
              "SandboxError": "base", "DockerSandbox": "docker_sandbox", "NOT_ISOLATED": "backends",
              "LocalSandbox": "local_sandbox", "create_workspace": "workspace"}
__all__ = ["BACKENDS", "Backend", "backend_named", "DockerSandbox", "LocalSandbox", "NOT_ISOLATED", "Sandbox",
           "SandboxError", "create_workspace"]

__getattr__ = lazy_attributes(__name__, globals(), _MODULE_OF)
