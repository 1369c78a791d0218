"""Package attributes imported when first used (a module `__getattr__`): reading one part of a
package does not load the others. Used by the verifier's package and the sandbox's."""
from __future__ import annotations

import importlib
from typing import Any, Callable


def lazy_attributes(package: str, namespace: dict[str, Any], module_of: dict[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: `name` comes from the submodule `module_of[name]`, once."""
    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value
        return value
    return __getattr__
