"""The shape of the code, checked from its source with `ast`: no import circle in repair_agent/ or
verifier/, each layer importing only the layers the table below allows (ALLOWED), no private `_name`
taken from another package, renderers that nothing imports back, and no module past ~400 lines
unless a reviewed list (LONG_MODULES) says why."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("repair_agent", "verifier")
MAX_LINES = 400
# The modules allowed past MAX_LINES, each with the reason a reviewer accepted (their docstrings say it
# at length). A new long module fails until it is split or argued for here; a module that shrinks
# below the limit must leave the list, so the list stays what it claims.
LONG_MODULES = {
    "repair_agent.in_sandbox.mutants": "one program shipped as one source text into the sandbox",
    "repair_agent.loop.journal": "records, their hashing writer and the chain check are one file format",
    "repair_agent.lifecycle.resume": "checkpoint, grant, rebuilt session and resumed controller are one protocol",
    "repair_agent.sandbox.environment": "key, build, labels, listing and pruning are one naming scheme",
    "verifier.gate": "apply, find the added lines and read them: one pipeline over one line numbering",
    "verifier.gate_rules": "the tables and the reader that consults them change together",
    "verifier.isolation": "the one definition of 'hardened' both the container and the local runner use",
    "verifier.runner": "set-up and the per-check sequence are one protocol, read top to bottom",
    "verifier.scope": "two readings of a diff and the rule that they agree must stay in one place",
}


# -- layers ----------------------------------------------------------------------------------------
# Every module belongs to one layer: a subpackage of repair_agent is its own layer (repair_agent.X.*
# is layer X), verifier/ is "verifier", and a module still at the top of repair_agent/ is placed by
# TOP_LEVEL (one entry a line; a new top-level module fails until it is placed here).
TOP_LEVEL = {
    "repair_agent": "base",
    "repair_agent.__main__": "cli",
    "repair_agent.resources": "base",
}
# What each layer may import besides itself: a layer's name allows all of it, a module's name only
# that module (the narrow door into a layer whose insides stay closed). The layer names alone form
# no circle (test_the_layer_table_has_no_circle), so the table reads bottom to top.
_LOOP_RECORDS = {"repair_agent.loop.actions", "repair_agent.loop.state", "repair_agent.loop.stops",  # what the loop leaves,
                 "repair_agent.loop.journal", "repair_agent.loop.outcome", "repair_agent.loop.usage"}  # not how it runs
ALLOWED: dict[str, set[str]] = {
    "verifier": set(),                      # protected: nothing of the agent side
    "in_sandbox": set(),                    # shipped into the sandbox (standard library and pytest only),
                                            # so any layer may use them as plain functions too
    "base": set(),                          # where shipped files live
    "untrusted": set(),                     # showing, redacting and bounding what comes from outside
    "hints": {"in_sandbox", "verifier"},    # localization and mutation analysis for an observation
    "sandbox": {"base", "untrusted", "verifier"},
    # the loop: the Chooser protocol is its one door into the choosers; never the run lifecycle
    "loop": {"hints", "sandbox", "untrusted", "verifier", "repair_agent.choosers.base"},
    # a manifest states a budget in the loop's own terms
    "scenarios": {"base", "sandbox", "untrusted", "verifier", "repair_agent.loop.state"},
    # choosers see a View and propose actions: never the verifier, the controller or the run lifecycle
    "choosers": {"hints", "in_sandbox", "scenarios", "untrusted", "repair_agent.loop.actions", "repair_agent.loop.state",
                 "repair_agent.loop.stops"},
    # the run's records and their renderings read what the loop left, not its insides
    "reports": {"base", "scenarios", "untrusted", "verifier", *_LOOP_RECORDS},
    "importers": {"base", "in_sandbox", "sandbox", "scenarios", "untrusted", "verifier"},
    "lifecycle": {"base", "choosers", "hints", "importers", "loop", "reports", "sandbox", "scenarios", "untrusted",
                  "verifier"},
    "sweep": {"base", "choosers", "lifecycle", "reports", "scenarios", "untrusted", "verifier", *_LOOP_RECORDS},
    "cli": {"base", "choosers", "hints", "importers", "lifecycle", "loop", "reports", "sandbox", "scenarios", "sweep",
            "untrusted", "verifier"},
}
# Single imports the table does not allow, each with the reason a reviewer accepted. An entry that no
# import uses any more must leave the list.
EXCEPTIONS = {
    ("repair_agent.sandbox", "repair_agent.scenarios.scenario"):
        "type annotations only (TYPE_CHECKING): a sandbox is made for a scenario, which imports the sandbox",
    ("repair_agent.choosers.models_file", "repair_agent.importers.local_repo"):
        "a `run --repo` run's repository is not the user's configuration (its origin record says where)",
    ("repair_agent.choosers.search.patch", "verifier.scope"):
        "the one hunk-header pattern, so both sides read a diff's hunks alike",
    ("repair_agent.choosers.search.failure", "verifier.spec"):
        "glob_match: the chooser reads the writable globs exactly as the verifier does",
    ("repair_agent.loop.usage", "repair_agent.choosers.model.records"):
        "a model step's journaled call record is the model chooser's own type; usage sums its requests",
}


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every module of ours this one names in an import statement: top level, inside functions and
    under TYPE_CHECKING alike (a deferred import is still a dependency). A package's __init__ that
    Python runs on the way to a submodule is not counted: only what the statement names."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            named.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")[: len(name.split(".")) - (0 if path.name == "__init__.py" else 1)]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from pkg import mod` names the module; `from mod import name` names mod.
            named.update(f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names)
    deps = set()
    for target in named:
        while target and target not in modules:  # `from .x import y`: y is a name in x, or a module
            target = target.rpartition(".")[0]
        if target and target != name:
            deps.add(target)
    return deps


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_in_the_agent_or_the_verifier():
    graph = _graph()
    assert "repair_agent.loop.controller" in graph and "verifier.rubric" in graph  # the walk found the code
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_circle():
    # The same check on a graph with a known circle: it must name exactly its members.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_renderers_import_the_report_model_and_nothing_imports_them_back():
    graph = _graph()
    renderers = {"repair_agent.reports.report", "repair_agent.reports.html_report", "repair_agent.sweep.html"}
    assert "repair_agent.reports.records" in graph["repair_agent.reports.report"] & graph["repair_agent.reports.html_report"]
    assert "repair_agent.sweep.records" in graph["repair_agent.sweep.html"]
    # Only the places that write or show a report reach the renderers; the records never do.
    importers = {m for m, deps in graph.items() if deps & renderers and m not in renderers}
    assert "repair_agent.reports.records" not in importers and "repair_agent.loop.controller" not in importers
    assert not any(graph[r] & renderers for r in renderers)
    # The run's page and the sweep's share only the page environment: neither imports the other's side.
    assert not any(d.startswith("repair_agent.sweep") for d in graph["repair_agent.reports.html_report"])


def test_no_module_past_the_size_limit_unless_listed_with_a_reason():
    modules = {name: path.read_text().count("\n") for name, path in _modules().items()}
    too_long = sorted(f"{name} ({lines} lines)" for name, lines in modules.items()
                      if lines > MAX_LINES and name not in LONG_MODULES)
    assert too_long == []
    # The list holds only what is still long (and still exists).
    stale = sorted(name for name in LONG_MODULES if modules.get(name, 0) <= MAX_LINES)
    assert stale == []


def _layer(module: str) -> str | None:
    if module.split(".")[0] == "verifier":
        return "verifier"
    if module in TOP_LEVEL:
        return TOP_LEVEL[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (ROOT / "repair_agent" / parts[-1]).is_dir() else None


def _within(module: str, entry: str) -> bool:
    return module == entry or module.startswith(entry + ".")


def _edges_outside_the_table(graph: dict[str, set[str]]) -> tuple[list[str], set[tuple[str, str]]]:
    """Imports the table does not allow (as 'importer -> imported (layer -> layer)'), and the
    exceptions that were used."""
    wrong, used = [], set()
    for module, deps in sorted(graph.items()):
        layer = _layer(module)
        for dep in sorted(deps):
            target = _layer(dep)
            if target == layer or target in ALLOWED[layer] or any(_within(dep, e) for e in ALLOWED[layer]):
                continue
            excepted = [key for key in EXCEPTIONS if _within(module, key[0]) and _within(dep, key[1])]
            if excepted:
                used.update(excepted)
            else:
                wrong.append(f"{module} -> {dep} ({layer} -> {target})")
    return wrong, used


def test_every_module_has_a_layer_and_every_layer_a_row():
    modules = _modules()
    unplaced = sorted(m for m in modules if _layer(m) is None)
    assert unplaced == [], "place each in TOP_LEVEL (or move it into a subpackage)"
    missing = sorted({layer for m in modules if (layer := _layer(m)) not in ALLOWED})
    assert missing == [], "give each new layer a row in ALLOWED"
    # TOP_LEVEL names only modules still at the top of repair_agent/.
    assert sorted(m for m in TOP_LEVEL if m not in modules) == []


def test_each_layer_imports_only_what_the_table_allows():
    graph = _graph()
    wrong, used = _edges_outside_the_table(graph)
    assert wrong == []
    assert sorted(set(EXCEPTIONS) - used) == []  # an exception no import needs any more leaves the list
    # Named doors and exceptions name modules that exist.
    modules = _modules()
    named = {e for allowed in ALLOWED.values() for e in allowed if "." in e} | {d for _, d in EXCEPTIONS}
    assert sorted(n for n in named if n not in modules) == []


def test_the_table_refuses_what_the_layout_forbids():
    # The rules the table encodes, each read back from it and shown to refuse a made-up import.
    graph = {"repair_agent.loop.controller": {"repair_agent.lifecycle.run"}, "repair_agent.reports.html_report": {"repair_agent.loop.tools"},
             "repair_agent.choosers.baseline": {"verifier.gate", "repair_agent.lifecycle.resume"},
             "verifier.rubric": {"repair_agent.loop.state"}, "repair_agent.sandbox.base": {"repair_agent.loop.controller"},
             "repair_agent.reports.records": {"repair_agent.loop.journal"}}
    wrong, _ = _edges_outside_the_table(graph)
    assert wrong == ["repair_agent.choosers.baseline -> repair_agent.lifecycle.resume (choosers -> lifecycle)",
                     "repair_agent.choosers.baseline -> verifier.gate (choosers -> verifier)",
                     "repair_agent.loop.controller -> repair_agent.lifecycle.run (loop -> lifecycle)",
                     "repair_agent.reports.html_report -> repair_agent.loop.tools (reports -> loop)",
                     "repair_agent.sandbox.base -> repair_agent.loop.controller (sandbox -> loop)",
                     "verifier.rubric -> repair_agent.loop.state (verifier -> loop)"]


def test_the_layer_table_has_no_circle():
    layers = {layer: {e for e in allowed if e in ALLOWED} for layer, allowed in ALLOWED.items()}
    assert _cycles(layers) == []


def _private_names_taken(name: str, path: Path, modules: dict[str, Path]) -> list[str]:
    """`_name`s this module takes from a module of ours in another package: imported by name, or
    read as an attribute of a module it imported."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    taken: list[str] = []
    aliases: dict[str, str] = {}  # local name -> our module it is bound to

    def private(attr: str) -> bool:
        return attr.startswith("_") and not attr.startswith("__")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                if full in modules:
                    aliases[alias.asname or alias.name] = full
                    owner = source  # a module: private if its own name is
                elif source in modules:
                    owner = source
                else:
                    continue
                if private(alias.name) and owner.rpartition(".")[0] != package and owner != package:
                    taken.append(f"{name}: {alias.name} from {owner}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and private(node.attr)):
            owner = aliases[node.value.id]
            if owner.rpartition(".")[0] != package and owner != package:
                taken.append(f"{name}: {node.attr} of {owner}")
    return taken


def test_no_private_name_crosses_a_package():
    """A `_name` is private to its package: its siblings may use it, another package may not."""
    modules = _modules()
    taken = [t for name, path in sorted(modules.items()) for t in _private_names_taken(name, path, modules)]
    assert taken == []


def test_the_private_name_check_finds_one(tmp_path):
    importer = tmp_path / "importer.py"
    importer.write_text("from ..sandbox.base import _Hidden, Public\nfrom .sibling import _shared\n"
                        "from repair_agent.sweep import statistics as stats\nstats._hidden_too\n")
    modules = {"repair_agent.sandbox.base": Path("a"), "repair_agent.choosers.sibling": Path("b"),
               "repair_agent.sweep.statistics": Path("c")}
    assert _private_names_taken("repair_agent.choosers.importer", importer, modules) == [
        "repair_agent.choosers.importer: _Hidden from repair_agent.sandbox.base",
        "repair_agent.choosers.importer: _hidden_too of repair_agent.sweep.statistics"]
