"""Rules for the test suite itself, checked on its source: helpers live in tests/helpers.py (or
the other non-test modules beside it), so no test module imports another test module, and no test
skips a part that CI requires (a missing module or tool goes through helpers, which fail instead
of skipping when REPAIR_AGENT_REQUIRE_DOCKER=1)."""
from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
TEST_MODULES = sorted(p for p in TESTS.glob("test_*.py"))


def _imported_modules(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):  # `from tests import test_x` names the module in its alias
            names += [node.module or "", *(f"{node.module or ''}.{a.name}".lstrip(".") for a in node.names)]
    return names


def test_no_test_module_imports_another_test_module():
    test_names = {p.stem for p in TEST_MODULES}
    offenders = []
    for path in TEST_MODULES:
        for name in _imported_modules(ast.parse(path.read_text(), str(path))):
            parts = name.split(".")
            if parts[-1] in test_names or (parts[0] == "tests" and len(parts) > 1 and parts[1] in test_names) \
                    or parts[0] in test_names:
                offenders.append(f"{path.name} imports {name}")
    assert offenders == [], offenders


def test_the_rule_sees_every_form_of_import():
    sources = ["import test_a", "from test_a import x", "from tests.test_a import x", "from tests import test_a",
               "def f():\n    from test_a import x"]
    for source in sources:
        names = _imported_modules(ast.parse(source))
        assert any("test_a" in n.split(".") for n in names), source


def test_no_test_skips_by_importorskip_or_a_bare_skip_of_a_missing_part():
    """pytest.importorskip skips even where CI requires everything: helpers.import_required fails there."""
    offenders = []
    for path in TEST_MODULES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "pytest" \
                    and node.func.attr == "importorskip":
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == [], offenders


def test_the_modules_the_scheduler_starts_first_exist():
    """conftest.SLOW_MODULES orders the workers' queue, and ENGINE_FREE_MODULES is what they run while
    the images build: a renamed module would silently drop out."""
    tree = ast.parse((TESTS / "conftest.py").read_text())
    root = TESTS.parent
    for name in ("SLOW_MODULES", "ENGINE_FREE_MODULES"):
        (listed,) = [ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
        assert listed and all((root / m).is_file() for m in listed), (name, [m for m in listed if not (root / m).is_file()])


def test_the_pytest_processes_the_suite_starts_autoload_only_the_plugins_it_uses():
    # Every local check, import and traced run of the suite is a pytest process of this interpreter
    # (several hundred per suite), and each autoloads every plugin installed here: one that comes
    # with a dependency costs every one of them (anyio's, through openai's HTTP client, was 0.25 s of
    # a 0.5 s start). scripts/_venv.sh runs scripts/_no_unused_pytest_plugins.py; a new one goes there.
    import importlib.metadata

    loaded = {entry.dist.name.lower() for entry in importlib.metadata.entry_points(group="pytest11") if entry.dist}
    assert loaded <= {"pytest-xdist", "pytest-timeout"}, f"plugins no test uses autoload here: {sorted(loaded)}"


def test_the_plugin_is_dropped_from_a_replaced_file_never_through_a_link_to_the_installers_cache(tmp_path):
    # uv links installed files from its cache: writing through the link would change the cache's copy
    import importlib.util

    spec = importlib.util.spec_from_file_location("no_plugin", TESTS.parent / "scripts" / "_no_unused_pytest_plugins.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    text = "[console_scripts]\nhypothesis = hypothesis.extra.cli:main\n\n[pytest11]\nhypothesispytest = _hypothesis_pytestplugin\n"
    cached = tmp_path / "cache-entry_points.txt"
    cached.write_text(text)
    installed = tmp_path / "entry_points.txt"
    installed.hardlink_to(cached)
    script.drop_pytest_entry_points(installed)
    assert installed.read_text() == "[console_scripts]\nhypothesis = hypothesis.extra.cli:main\n\n"
    assert cached.read_text() == text and installed.stat().st_nlink == 1


def test_the_dependencies_the_cli_imports_carry_their_bytecode():
    # with PYTHONDONTWRITEBYTECODE set (as on the development machines), a dependency installed without
    # its bytecode is compiled again by every process that imports it: ~0.3 s more per CLI command,
    # paid by the suite's hundreds of them (an install by uv compiles only when asked)
    import importlib.util

    missing = []
    for module in ("pydantic.main", "pydantic.fields", "docker.api.client", "requests.sessions", "jinja2.environment"):
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin, module
        if not Path(importlib.util.cache_from_source(spec.origin)).is_file():
            missing.append(module)
    assert missing == [], f"installed without bytecode: {missing}"
