"""What a tree declares it needs, read statically (nothing of the tree is executed).

Sources: pyproject.toml (`[project] dependencies` and the optional dependencies named test, tests,
testing or dev), setup.cfg (`install_requires` and those extras), setup.py (the literal
`install_requires` / `extras_require` / `tests_require` of its `setup(...)` call, read with ast),
requirements*.txt and requirements/*.txt, and the third-party top-level imports of the test files
that no module of the tree provides. Fixtures and marks the tests use name the pytest plugins they
need (`mocker` -> pytest-mock).

`install_digest` is the part of the build files that decides what an install of the tree puts in an
image (dependencies, build backend, package layout), without what only describes it (version,
readme, classifiers, tool settings such as pytest's): commits of one project that change neither
share one environment image.
"""
from __future__ import annotations

import ast
import configparser
import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

from pydantic import BaseModel

EXTRAS = ("test", "tests", "testing", "dev")
BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
# Fixtures and marks provided by a plugin: the name a test uses -> the distribution providing it.
PLUGIN_FIXTURES = {"mocker": "pytest-mock", "class_mocker": "pytest-mock", "module_mocker": "pytest-mock",
                   "package_mocker": "pytest-mock", "session_mocker": "pytest-mock",
                   "benchmark": "pytest-benchmark"}
PLUGIN_MARKS = {"asyncio": "pytest-asyncio", "benchmark": "pytest-benchmark"}
# Import names whose distribution is named otherwise (a guess is otherwise the import name itself).
DISTRIBUTION = {"yaml": "PyYAML", "PIL": "Pillow", "dateutil": "python-dateutil", "bs4": "beautifulsoup4",
                "attr": "attrs", "sklearn": "scikit-learn", "cv2": "opencv-python", "OpenSSL": "pyOpenSSL",
                "jwt": "PyJWT", "serial": "pyserial", "dotenv": "python-dotenv", "magic": "python-magic",
                "pytest_mock": "pytest-mock", "pytest_asyncio": "pytest-asyncio", "pkg_resources": "setuptools"}
# Always there: the interpreter's own modules and what the sandbox image brings for the tests.
PROVIDED = set(sys.stdlib_module_names) | {"pytest", "_pytest", "pluggy", "iniconfig", "packaging",
                                           "pytest_timeout", "__future__"}
# Keys of [project] (and setup() keywords) that describe a distribution without changing its install.
METADATA = {"version", "description", "readme", "authors", "maintainers", "license", "license-files", "keywords",
            "classifiers", "urls", "long_description", "long_description_content_type", "author", "author_email",
            "maintainer", "maintainer_email", "url", "project_urls", "download_url", "platforms"}
# [tool.*] tables that configure the build backend; the rest (pytest, ruff, coverage...) do not.
BUILD_TOOLS = {"setuptools", "hatch", "flit", "pdm", "poetry", "maturin", "scikit-build"}


class Declared(BaseModel):
    """A tree's declared needs. `requirements` are requirement strings as the project wrote them."""
    project: str | None = None          # its own distribution name (never installed from PyPI)
    installable: bool = False           # it has a build file: `pip install -e .` can install it
    requirements: list[str] = []        # declared: dependencies, test extras, requirements files
    guesses: list[str] = []             # third-party imports of the tests that nothing declares
    plugins: list[str] = []             # pytest plugins the tests' fixtures and marks need
    python: str | None = None           # an offered Python other than the default the tree points to

    @property
    def anything(self) -> bool:
        return bool(self.requirements or self.guesses or self.plugins)


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str | None:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    return normalize(m.group(1)) if m else None


def read_declared(tree: Path) -> Declared:
    project, reqs, installable = None, [], False
    classifiers: list[str] = []
    requires_python: str | None = None
    pyproject = _toml(tree / "pyproject.toml")
    if pyproject is not None:
        table = pyproject.get("project") or {}
        classifiers += _strings(table.get("classifiers"))
        requires_python = table.get("requires-python") if isinstance(table.get("requires-python"), str) else None
        project = table.get("name") if isinstance(table.get("name"), str) else None
        reqs += _strings(table.get("dependencies"))
        extras = table.get("optional-dependencies") or {}
        for extra in EXTRAS:
            reqs += _strings(extras.get(extra) if isinstance(extras, dict) else None)
        installable = bool(table) or "build-system" in pyproject
    cfg = _cfg(tree / "setup.cfg")
    if cfg is not None:
        project = project or cfg.get("metadata", "name", fallback=None)
        classifiers += _lines(cfg.get("metadata", "classifiers", fallback=""))
        requires_python = requires_python or cfg.get("options", "python_requires", fallback=None)
        reqs += _lines(cfg.get("options", "install_requires", fallback=""))
        reqs += _lines(cfg.get("options", "tests_require", fallback=""))
        for extra in EXTRAS:
            reqs += _lines(cfg.get("options.extras_require", extra, fallback=""))
        installable = True
    setup = _setup_call(tree / "setup.py")
    if setup is not None:
        kw = {k.arg: k.value for k in setup.keywords if k.arg}
        project = project or _literal(kw.get("name"), str)
        classifiers += _strings(_literal(kw.get("classifiers"), list))
        requires_python = requires_python or _literal(kw.get("python_requires"), str)
        reqs += _strings(_literal(kw.get("install_requires"), list))
        reqs += _strings(_literal(kw.get("tests_require"), list))
        extras = _literal(kw.get("extras_require"), dict) or {}
        for extra in EXTRAS:
            reqs += _strings(extras.get(extra))
    installable = installable or (tree / "setup.py").is_file()
    for path in sorted([*tree.glob("requirements*.txt"), *tree.glob("requirements/*.txt")]):
        reqs += _requirements_file(path, tree, set())
    own = normalize(project) if project else None
    reqs = [r for r in dict.fromkeys(r.strip() for r in reqs) if r and requirement_name(r) not in (own, None)]
    declared_names = {requirement_name(r) for r in reqs}
    tests = _test_files(tree)
    local = _local_modules(tree)
    guesses = []
    for name in sorted(_imports(tests) - local - PROVIDED):
        dist = DISTRIBUTION.get(name, name)
        if normalize(dist) not in declared_names and normalize(dist) != own:
            guesses.append(dist)
    plugins = sorted(p for p in _plugins(tests) if normalize(p) not in declared_names)
    guesses = [g for g in guesses if normalize(g) not in {normalize(p) for p in plugins}]
    return Declared(project=project, installable=installable, requirements=reqs, guesses=guesses, plugins=plugins,
                    python=offered_python(classifiers, requires_python))


# The Pythons an environment can have (image.PYTHON_SUITES), and the default.
OFFERED_PYTHONS = ("3.9", "3.11", "3.13")
DEFAULT_PYTHON = "3.11"


def offered_python(classifiers: list[str], requires_python: str | None) -> str | None:
    """The offered Python a tree's declarations point to, when it is not the default: the nearest one
    its `requires-python` admits when that excludes the default; 3.9 when the newest Python its
    classifiers list is 3.7 or older (such a tree was last tested before 3.8 warned about what 3.10
    removed, `collections.Mapping` and the like; a tree that lists 3.8 mostly runs on 3.11, where
    its tests run on a newer pytest). None: the default."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(requires_python or "")
    except InvalidSpecifier:
        spec = SpecifierSet("")
    admitted = [v for v in OFFERED_PYTHONS if spec.contains(f"{v}.0", prereleases=True)]
    if DEFAULT_PYTHON not in admitted:
        return min(admitted, key=lambda v: abs(int(v.split(".")[1]) - 11)) if admitted else None
    listed = [int(m.group(1)) for c in classifiers
              for m in [re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c.strip())] if m]
    if listed and max(listed) < 8 and "3.9" in admitted:
        return "3.9"
    return None


def install_digest(tree: Path) -> str:
    """sha256 of what an install of the tree depends on in its build files (see the module doc)."""
    parts: dict[str, object] = {}
    for name in BUILD_FILES:
        path = tree / name
        if not (path.is_file() or path.is_symlink()):
            continue
        try:
            parts[name] = _install_part(name, path)
        except (OSError, ValueError, SyntaxError, configparser.Error, tomllib.TOMLDecodeError, RecursionError):
            # Unreadable as its format: the whole file decides, as any change may matter.
            parts[name] = hashlib.sha256(path.read_bytes() if path.is_file() else b"link").hexdigest()
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _install_part(name: str, path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    if name == "pyproject.toml":
        data = tomllib.loads(text)
        project = {k: v for k, v in (data.get("project") or {}).items() if k not in METADATA}
        tools = {k: v for k, v in (data.get("tool") or {}).items() if k in BUILD_TOOLS}
        return {"build-system": data.get("build-system"), "project": project, "tool": tools}
    if name == "setup.cfg":
        cfg = configparser.ConfigParser(interpolation=None)
        cfg.read_string(text)
        return {s: dict(cfg[s]) for s in cfg.sections() if s.startswith("options")} | {
            "name": cfg.get("metadata", "name", fallback=None)}
    module = ast.parse(text)
    for node in ast.walk(module):  # the describing keywords of setup() (and their values) left out
        if isinstance(node, ast.Call) and _is_setup(node):
            node.keywords = [k for k in node.keywords if k.arg not in METADATA]
    return ast.dump(module)


# -- reading ---------------------------------------------------------------------------------------

def _toml(path: Path) -> dict | None:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None


def _cfg(path: Path) -> configparser.ConfigParser | None:
    if not path.is_file():
        return None
    cfg = configparser.ConfigParser(interpolation=None)
    try:
        cfg.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        return None
    return cfg


def _is_setup(node: ast.Call) -> bool:
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "setup") or (isinstance(f, ast.Attribute) and f.attr == "setup")


def _setup_call(path: Path) -> ast.Call | None:
    """setup(...) of a setup.py, with a keyword whose value is a module-level name assigned a
    literal once (`extras_require=EXTRAS_REQUIRE`) given that literal instead."""
    try:
        module = ast.parse(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    call = next((n for n in ast.walk(module) if isinstance(n, ast.Call) and _is_setup(n)), None) if module else None
    if call is None or module is None:
        return call
    assigned: dict[str, list[ast.expr]] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    for kw in call.keywords:
        if isinstance(kw.value, ast.Name) and len(assigned.get(kw.value.id, [])) == 1:
            kw.value = assigned[kw.value.id][0]
    return call


def _literal(node: ast.AST | None, kind: type):
    """A keyword's value when it is a literal of `kind` (a computed value is not guessed at)."""
    try:
        value = ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None
    return value if isinstance(value, kind) else None


def _strings(value) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []


def _lines(text: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()]


def _requirements_file(path: Path, tree: Path, seen: set[Path]) -> list[str]:
    """Requirement lines; `-r` into another file of the tree is followed, other options are left out."""
    try:
        real = path.resolve()
        if real in seen or not real.is_relative_to(tree.resolve()) or not real.is_file():
            return []
        seen.add(real)
        lines = _lines(real.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []
    found: list[str] = []
    for line in lines:
        if line.startswith(("-r ", "--requirement ")):
            found += _requirements_file(path.parent / line.split(None, 1)[1], tree, seen)
        elif not line.startswith(("-", ".", "/")) and "://" not in line and requirement_name(line):
            found.append(line)
    return found


TEST_DIRS = {"tests", "test", "testing"}


def _test_files(tree: Path) -> list[Path]:
    """Test modules, conftest files, and every module in a test directory (the helpers tests import)."""
    return sorted(p for p in tree.rglob("*.py") if p.is_file() and not p.is_symlink()
                  and (p.name.startswith("test_") or p.name.endswith("_test.py") or p.name == "conftest.py"
                       or TEST_DIRS & set(p.relative_to(tree).parts[:-1]))
                  and not any(part.startswith(".") or part in ("node_modules", "venv")
                              for part in p.relative_to(tree).parts))  # the tree itself may be under a dot directory


def _local_modules(tree: Path) -> set[str]:
    """Every name a module or package of the tree could be imported as (anywhere in it: tests often
    import helpers beside them)."""
    names = set()
    for p in tree.rglob("*.py"):
        names.add(p.stem)
        names.update(part for part in p.relative_to(tree).parts[:-1])
    return names


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError):
        return None


def _imports(files: list[Path]) -> set[str]:
    names = set()
    for path in files:
        module = _parse(path)
        for node in ast.walk(module) if module else ():
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def _plugins(files: list[Path]) -> set[str]:
    found = set()
    for path in files:
        module = _parse(path)
        for node in ast.walk(module) if module else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.update(PLUGIN_FIXTURES[a.arg] for a in node.args.args if a.arg in PLUGIN_FIXTURES)
            elif isinstance(node, ast.Attribute) and node.attr in PLUGIN_MARKS:
                inner = node.value  # pytest.mark.asyncio
                if isinstance(inner, ast.Attribute) and inner.attr == "mark":
                    found.add(PLUGIN_MARKS[node.attr])
    return found
