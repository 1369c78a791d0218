"""Choosers: propose one action per step from a read-only view."""
from __future__ import annotations

import importlib
import inspect

from .base import Chooser, ChooserError, ChooserUnavailable, MalformedReply, TokenBudgetExceeded
from .baseline import BaselineChooser
from .models_file import MODEL_PREFIX, named_model, untrusted_roots


def __getattr__(name: str):
    # The search chooser is imported when asked for: a baseline or model run never needs it.
    if name == "SearchChooser":
        from .search import SearchChooser

        return SearchChooser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_chooser(spec: str, scenario=None, *, seed: int = 0, models_file=None, **model_options) -> Chooser:
    """`baseline` (the scenario's recipe), `search` (repairs without a recipe; `seed` orders its
    candidates), `model` (ad hoc: `model_options` or the environment), `model:NAME` (a model of
    the models file: `models_file`, else the user's config directory's, else ./models.toml
    outside the repository under repair and the scenario trees), or a plug-in `package.module:attr` naming
    a chooser factory or class. A plug-in factory or class that takes a `seed` parameter gets it too."""
    if spec == "baseline":
        return BaselineChooser(scenario.baseline if scenario is not None else None)
    if spec == "search":
        from .search import SearchChooser

        # Deliberately not given the scenario: it must not see the recipe or the reference fix.
        return SearchChooser(seed=seed)
    options = {k: v for k, v in model_options.items() if v is not None}
    if spec == "model":
        from .model.chooser import ModelChooser

        return ModelChooser(**options)
    if spec.startswith(MODEL_PREFIX):
        from .model.chooser import ModelChooser

        if options.keys() & {"model", "base_url"}:
            raise ValueError(f"--model and --model-base-url are for --chooser model; {spec} takes its settings "
                             "from the models file")
        name = spec[len(MODEL_PREFIX):]
        settings, path = named_model(name, models_file, untrusted=untrusted_roots(scenario))
        return ModelChooser(settings=settings, name=name, models_file=str(path), **options)
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--chooser must be baseline, search, model, model:NAME or package.module:attr, got {spec!r}")
    try:
        target = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load chooser plug-in {spec!r}: {exc}") from None
    if callable(target) and not hasattr(target, "choose") or isinstance(target, type):
        chooser = target(seed=seed) if _accepts_seed(target) else target()
    else:
        chooser = target
    if not callable(getattr(chooser, "choose", None)):
        raise ValueError(f"plug-in {spec!r} did not produce an object with a choose(view) method")
    try:
        if not hasattr(chooser, "name"):
            chooser.name = spec
    except Exception:  # a name that raises: the run reads it once, under a time limit, and says why
        pass
    return chooser


def _accepts_seed(factory) -> bool:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # some builtins have no signature: call them plainly
        return False
    return "seed" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


__all__ = ["BaselineChooser", "Chooser", "ChooserError", "ChooserUnavailable", "MalformedReply", "SearchChooser",
           "TokenBudgetExceeded", "load_chooser"]
