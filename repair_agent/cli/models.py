"""`repair-agent models check`: can each model of the models file drive a run, and how?"""
from __future__ import annotations

import json

from .common import say


def register(sub, common) -> None:
    models = sub.add_parser("models", parents=[common], help="the models of the models file")
    actions = models.add_subparsers(dest="models_command", required=True)
    ck = actions.add_parser("check", parents=[common], help="one request per model, as a run's step makes it, "
                            "asking for a known tool call: reachable, calls tools (natively or as text), reports usage")
    ck.add_argument("names", nargs="*", metavar="NAME", help="models to check (default: all in the file)")
    ck.add_argument("--models", metavar="FILE", help="the models file (default: your config directory's, else ./models.toml)")
    ck.add_argument("--timeout", type=float, default=120.0, help="seconds per model, retries included")
    ck.add_argument("--json", action="store_true", help="one JSON object per model, in a list")
    ck.set_defaults(func=cmd_models_check)


def cmd_models_check(args) -> int:
    """Exit 0 when every model checked can drive a run, 1 when one cannot."""
    from ..choosers.model.chooser import ModelCheck, ModelChooser
    from ..choosers.models_file import config_models_file, find_models_file, load_models_file, named_model

    found = find_models_file(args.models)
    if found is None:
        raise ValueError(f"models check needs a models file: --models FILE, {config_models_file()} or ./models.toml "
                         "(see docs/models.md)")
    path = found.path
    models = load_models_file(path)
    unknown = [n for n in args.names if n not in models]
    if unknown:
        raise ValueError(f"{path}: no model named {', '.join(map(repr, unknown))} (defined: "
                         f"{', '.join(sorted(models)) or 'none'})")
    results = []
    for name in args.names or models:
        try:
            named_model(name, found)  # the same rules as a run: only the user's own file may name a key
            chooser = ModelChooser(settings=models[name], name=name)
        except ValueError as exc:  # e.g. api_key_env names a variable that is not set
            settings = models[name]
            results.append(ModelCheck(name=name, model=settings.model, endpoint=settings.base_url or "?", ok=False,
                                      problem=str(exc)))
            continue
        results.append(chooser.check(args.timeout))
    if args.json:
        say(json.dumps([r.model_dump(mode="json") for r in results], indent=2))
    for r in results if not args.json else ():
        if r.ok:
            say(f"{r.name}: ok — {r.model} at {r.endpoint}; the call came as "
                f"{'native tool_calls' if r.call_format == 'tool_calls' else 'text (read by the chooser)'}; usage "
                f"{'reported' if r.usage_reported else 'NOT reported (tokens unknown; --max-tokens unusable)'}; "
                f"{r.requests} request(s), {r.latency_s:.1f}s"
                + (f"; adjusted: {', '.join(r.adjusted)}" if r.adjusted else ""))
        else:
            say(f"{r.name}: FAILED — {r.model} at {r.endpoint}: {r.problem}")
    return 0 if all(r.ok for r in results) else 1
