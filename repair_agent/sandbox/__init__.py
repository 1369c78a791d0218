"""The executor's ground: sandboxes (docker, local), the workspace, the sandbox image."""
from .base import Sandbox, SandboxError
from .docker_sandbox import DockerSandbox
from .local_sandbox import NOT_ISOLATED, LocalSandbox
from .workspace import create_workspace

__all__ = ["DockerSandbox", "LocalSandbox", "NOT_ISOLATED", "Sandbox", "SandboxError", "create_workspace"]
