"""What the code gate (verifier/gate.py) looks for in added Python code: the rule tables, and the
reader that walks a parsed file with them.

Kept in one module: the tables and the reader that consults them change together (moving a name
from one table to another changes what the reader must resolve), and neither is used apart.

The reader resolves a name the way the interpreter would look it up, as far as that can be read
statically: import bindings anywhere in the file (`import sys as s`, `from sys import modules as
m`), simple aliases (`s = sys`, on pristine lines too), re-exports through the project's own
modules, star imports, `getattr(x, "literal")`, and builtins that no function scope shadows. What
it cannot resolve and could still reach a rule (a computed attribute name, a module handed around
as a value) is a finding of its own.
"""
from __future__ import annotations

import ast
import builtins
import re
import sys
from bisect import bisect_left
from typing import Iterable, Iterator, Protocol

PURE = "pure"  # a harmless leaf in NAMES: stops a shorter entry's rule, not a DEFAULT below it
# Pure standard-library modules (and submodules, less NOT_PURE) an honest fix may import without a
# grant: computation on values, no I/O, no interpreter state. Whether `os`, `sys`, `time`, `types`,
# `io` or `pathlib` is new is the pristine code's word, not this list's.
PURE_MODULES = frozenset(
    "__future__ math cmath re itertools functools operator collections bisect heapq decimal fractions numbers string "
    "textwrap unicodedata difflib typing dataclasses enum abc copy statistics datetime calendar json contextlib "
    "warnings logging array graphlib reprlib keyword html urllib.parse shlex fnmatch ipaddress hashlib hmac base64 "
    "binascii zlib struct random pprint colorsys".split())
NOT_PURE = frozenset({"logging.handlers", "logging.config"})
HARNESS_MODULES = frozenset("pytest _pytest pluggy unittest doctest py hypothesis _hypothesis_pytestplugin nose nose2 "
                            "xdist pytest_cov coverage".split())
# What pytest itself imports: a new module by one of these names would be the harness's.
HARNESS_DEPENDENCIES = HARNESS_MODULES | {"iniconfig", "packaging", "exceptiongroup", "tomli", "colorama", "pygments"}

# (rule, owner, names): `owner.name` for each name ("" owner: top-level modules). A module entry
# covers everything under it; a longer entry wins over a shorter one.
_ENTRIES: list[tuple[str, str, str]] = [
    ("namespace", "", "__main__"),
    ("namespace", "sys", "modules"),
    ("namespace", "codecs", "register register_error unregister"),
    ("namespace", "builtins", "globals vars locals"),
    ("import-machinery", "", "importlib imp pkgutil zipimport runpy modulefinder _imp _frozen_importlib "
                             "_frozen_importlib_external pkg_resources"),
    ("import-machinery", "sys", "path meta_path path_hooks path_importer_cache"),
    ("import-machinery", "builtins", "__import__"),
    ("dynamic-code", "", "code codeop marshal pickle _pickle pickletools shelve copyreg dill cloudpickle py_compile "
                         "compileall"),
    ("dynamic-code", "types", "FunctionType LambdaType CodeType MethodType ModuleType new_class prepare_class "
                              "BuiltinFunctionType BuiltinMethodType"),
    ("dynamic-code", "typing", "get_type_hints ForwardRef _eval_type"),
    ("dynamic-code", "dataclasses", "make_dataclass"),
    ("dynamic-code", "logging", "config"),
    ("dynamic-code", "builtins", "eval exec compile breakpoint __build_class__"),
    ("frames", "", "inspect traceback dis linecache"),
    ("frames", "sys", "_getframe _getframemodulename exc_info exception _current_frames _current_exceptions "
                      "last_traceback last_value last_type last_exc excepthook __excepthook__ unraisablehook"),
    ("frames", "types", "FrameType TracebackType"),
    # A log record carries the time, the pid and the caller's file; recorded warnings the caller's file.
    ("frames", "logging", "currentframe makeLogRecord LogRecord setLogRecordFactory getLogRecordFactory Handler "
                          "Filter"),
    ("frames", "warnings", "WarningMessage filterwarnings simplefilter catch_warnings resetwarnings warn_explicit"),
    ("gc", "", "gc"),
    ("gc", "sys", "getrefcount getallocatedblocks"),
    ("tracing", "", "trace tracemalloc faulthandler cProfile profile pdb bdb _lsprof"),
    ("tracing", "sys", "settrace setprofile gettrace getprofile monitoring addaudithook audit call_tracing "
                       "activate_stack_trampoline remote_exec"),
    ("tracing", "threading", "settrace setprofile settrace_all_threads setprofile_all_threads gettrace getprofile"),
    ("process", "", "subprocess _posixsubprocess multiprocessing concurrent pty signal _signal atexit threading "
                    "_thread _xxsubinterpreters _interpreters webbrowser"),
    ("process", "sys", "exit"),
    ("process", "asyncio", "subprocess create_subprocess_exec create_subprocess_shell to_thread"),
    ("process", "weakref", "finalize"),
    ("process", "builtins", "exit quit SystemExit KeyboardInterrupt"),
    ("native-code", "", "ctypes _ctypes cffi _cffi_backend _testcapi _testinternalcapi"),
    ("file-descriptor", "", "fcntl termios tty select selectors"),
    ("file-descriptor", "sys", "stdin stdout stderr __stdin__ __stdout__ __stderr__ displayhook __displayhook__"),
    ("file-descriptor", "os", "dup dup2 open openpty write read close closerange pipe pipe2 fdopen sendfile lseek "
                              "fsync fdatasync ftruncate fstat fstatvfs fchmod fchown fchdir isatty set_inheritable "
                              "get_inheritable set_blocking get_blocking memfd_create eventfd eventfd_read "
                              "eventfd_write splice copy_file_range readv writev pread pwrite preadv pwritev "
                              "device_encoding ttyname login_tty tcgetpgrp tcsetpgrp posix_fadvise posix_fallocate "
                              "lockf get_terminal_size"),
    ("file-descriptor", "io", "FileIO open_code TextIOWrapper BufferedReader BufferedWriter BufferedRandom "
                              "BufferedRWPair"),
    ("file-descriptor", "contextlib", "redirect_stdout redirect_stderr"),
    ("file-descriptor", "builtins", "input help"),
    ("filesystem", "", "shutil tempfile glob fileinput mmap filecmp zipfile tarfile zipapp dbm sqlite3"),
    ("filesystem", "os", "listdir scandir stat lstat remove unlink rename renames replace mkdir makedirs rmdir "
                         "removedirs walk fwalk access chmod lchmod chown lchown link symlink readlink truncate "
                         "utime chflags lchflags mkfifo mknod statvfs listxattr getxattr setxattr removexattr chroot "
                         "sync"),
    ("filesystem", "os.path", "exists lexists isfile isdir islink ismount isjunction getsize getmtime getatime "
                              "getctime samefile sameopenfile samestat realpath"),
    ("filesystem", "io", "open"),
    ("filesystem", "codecs", "open"),
    ("filesystem", "logging", "FileHandler basicConfig handlers"),
    ("filesystem", "builtins", "open"),
    ("environment", "", "platform socket _socket ssl getpass pwd grp spwd locale sysconfig site http urllib.request "
                        "urllib.error urllib.robotparser ftplib smtplib poplib imaplib telnetlib socketserver xmlrpc "
                        "ensurepip venv resource uuid zoneinfo"),
    ("environment", "os", "environ environb getenv getenvb putenv unsetenv getuid geteuid getgid getegid getgroups "
                          "getpid getppid getpgrp getpgid getsid getlogin getresuid getresgid uname getcwd getcwdb "
                          "chdir cpu_count process_cpu_count getloadavg get_exec_path confstr sysconf pathconf "
                          "urandom getrandom name"),
    ("environment", "os.path", "expanduser expandvars abspath"),
    ("environment", "contextlib", "chdir"),
    ("environment", "warnings", "filters showwarning formatwarning _showwarnmsg _filters_mutated"),
    ("environment", "logging", "root"),
    ("environment", "pathlib.Path", "cwd home"),
    ("clock", "time", "time time_ns monotonic monotonic_ns perf_counter perf_counter_ns process_time process_time_ns "
                      "thread_time thread_time_ns localtime gmtime ctime asctime strftime clock_gettime "
                      "clock_gettime_ns get_clock_info"),
    ("clock", "datetime.datetime", "now utcnow today"),
    ("clock", "datetime.date", "today"),
    ("clock", "uuid", "uuid1"),
    (PURE, "sys", "maxsize float_info int_info hash_info byteorder maxunicode getrecursionlimit getsizeof "
                  "getdefaultencoding float_repr_style intern"),
    (PURE, "os", "path sep altsep linesep curdir pardir extsep pathsep defpath devnull fspath fsencode fsdecode "
                 "PathLike stat_result DirEntry terminal_size"),
    (PURE, "os.path", "join split splitext basename dirname normpath normcase isabs relpath commonpath commonprefix "
                      "sep splitdrive splitroot extsep altsep curdir pardir pathsep"),
    (PURE, "io", "StringIO BytesIO IOBase TextIOBase RawIOBase BufferedIOBase SEEK_SET SEEK_CUR SEEK_END "
                 "UnsupportedOperation DEFAULT_BUFFER_SIZE"),
    (PURE, "uuid", "UUID uuid3 uuid4 uuid5 NAMESPACE_DNS NAMESPACE_URL NAMESPACE_OID NAMESPACE_X500"),
]
NAMES = {(f"{owner}.{name}" if owner else name): rule for rule, owner, names in _ENTRIES for name in names.split()}
# The rule for an attribute of these that no entry names (`os.name` is environment, `os.path.foo` filesystem).
DEFAULTS = {"sys": "environment", "os": "environment", "os.path": "filesystem", "io": "file-descriptor",
            "pathlib.Path": "filesystem", "pathlib.PosixPath": "filesystem", "pathlib.WindowsPath": "filesystem"}
_OS_PROCESS = re.compile(r"(system|popen|fork\w*|exec\w*|spawn\w*|posix_spawn\w*|kill\w*|wait\w*|abort|_exit|"
                         r"register_at_fork|nice|set\w*|sched_\w*|pidfd_\w*|startfile|plock|times)\Z")
_CANONICAL = {"posix": "os", "nt": "os", "posixpath": "os.path", "ntpath": "os.path", "genericpath": "os.path",
              "_io": "io", "_pyio": "io", "_datetime": "datetime", "_pydatetime": "datetime", "_operator": "operator",
              "_functools": "functools", "_collections": "collections"}  # other spellings of a public module
CLOCK_WITH_ARGS = {"time.localtime": 1, "time.gmtime": 1, "time.ctime": 1, "time.asctime": 1, "time.strftime": 2}
IMPORT_ONLY = {"builtins": "namespace", "__builtin__": "namespace"}  # what it holds is judged name by name

# Attribute names judged on any object: dunders, and names distinctive enough that a module kept
# where names are not followed (`self._os = os` on a pristine line) is still read through them.
ATTRIBUTES = {name: rule for rule, names in [
    ("namespace", "__dict__ __globals__ __builtins__ __subclasses__ __mro__ __bases__ __base__ __self__ __closure__ "
                  "cell_contents __objclass__ __defaults__ __kwdefaults__"),
    ("import-machinery", "__loader__ __spec__ __path__ __import__ import_module meta_path path_hooks"),
    ("dynamic-code", "__code__ co_code __reduce__ __reduce_ex__ __build_class__"),
    ("frames", "f_back f_locals f_globals f_code f_lineno f_builtins f_trace f_lasti tb_frame tb_next tb_lineno "
               "gi_frame cr_frame ag_frame gi_code cr_code ag_code __traceback__ _getframe exc_info _current_frames "
               "findCaller addFilter makeRecord"),
    ("gc", "get_objects get_referrers get_referents"),
    ("tracing", "settrace setprofile addaudithook"),
    ("computed-attribute", "__getattribute__ __setattr__ __delattr__ __getattr__"),
    ("environment", "__file__ __cached__ environ getenv putenv handlers loggerDict"),  # handlers: the runner's logs
    ("process", "subprocess_exec subprocess_shell run_in_executor _exit"),
    # Path methods: a pathlib object is seldom named by a resolvable expression.
    ("filesystem", "open stat glob read_text read_bytes write_text write_bytes iterdir rglob touch mkdir rmdir "
                   "unlink symlink_to hardlink_to readlink is_mount is_symlink lchmod chmod expanduser samefile "
                   "is_file is_dir exists lstat link_to is_fifo is_socket is_block_device is_char_device"),
] for name in names.split()}
BARE_NAMES = {"__builtins__": "namespace", "__loader__": "import-machinery", "__spec__": "import-machinery",
              "__path__": "import-machinery", "__file__": "environment", "__cached__": "environment"}
BUILTIN_NAMES = frozenset(n for n in dir(builtins) if n != "__doc__")
# Builtins that reach attributes, namespaces or code: handed around, what they are used on is hidden.
VALUE_USE = frozenset("getattr setattr delattr hasattr __import__ eval exec compile globals vars locals breakpoint "
                      "__build_class__".split())
ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "setattr", "delattr", "hasattr"})
STORE_OK = frozenset("__doc__ __name__ __qualname__ __module__ __wrapped__ __annotations__ __signature__".split())
FORMAT_OK = frozenset("__class__ __name__ __qualname__ __module__ __doc__".split())  # "{0.__class__.__name__}"

VALUE_TYPES = frozenset(
    [f"builtins.{n}" for n in "int float complex str bytes bytearray bool tuple list dict set frozenset".split()]
    + "decimal.Decimal fractions.Fraction datetime.date datetime.datetime datetime.time datetime.timedelta "
      "datetime.timezone datetime.tzinfo collections.OrderedDict collections.defaultdict collections.Counter "
      "collections.deque collections.UserDict collections.UserList collections.UserString collections.ChainMap "
      "typing.NamedTuple enum.IntEnum enum.IntFlag enum.StrEnum".split())
COMPARISON = frozenset("__eq__ __ne__ __lt__ __le__ __gt__ __ge__ __hash__ __bool__ __contains__".split())
VALUE_DUNDERS = COMPARISON | frozenset(
    [f"__{p}{op}__" for op in "add sub mul matmul truediv floordiv mod divmod pow lshift rshift and xor or".split()
     for p in ("", "r", "i")]
    + "__neg__ __pos__ __abs__ __invert__ __round__ __trunc__ __floor__ __ceil__ __int__ __float__ __complex__ "
      "__index__ __str__ __repr__ __bytes__ __format__ __len__ __iter__ __getitem__ __reversed__".split())
HOOKS = frozenset("__init_subclass__ __set_name__ __class_getitem__ __instancecheck__ __subclasscheck__ __getattr__ "
                  "__getattribute__ __setattr__ __delattr__ __del__ __prepare__ __mro_entries__ __class__ "
                  "__dict__".split())  # `__class__` as a property makes isinstance() say anything
PICKLE_HOOKS = frozenset({"__reduce__", "__reduce_ex__", "__setstate__"})
FORGING = COMPARISON | HOOKS | PICKLE_HOOKS  # named as strings, they build a class's behaviour out of sight
MODULE_HOOKS = frozenset({"__getattr__", "__dir__"})  # PEP 562: a module's own attribute lookups
DATA_DUNDERS = frozenset("__slots__ __match_args__ __doc__ __module__ __qualname__ __annotations__ __all__ "
                         "__version__ __author__ __abstractmethods__ __weakref__".split())  # data, not behaviour

# Strings that name the check environment, or an absolute path in a place a check runs in.
FACT_WORDS = re.compile(r"(?<![a-z])(pytest|py\.test|pluggy|junit|conftest|site-packages|dist-packages|sitecustomize|"
                        r"usercustomize|verifier|repair[_-]agent|held-?out|xdist)|/proc\b", re.I)
ABS_PATH = re.compile(r"(/(proc|sys|dev|etc|tmp|var|usr|home|root|opt|run|mnt|media|srv|boot|bin|sbin|lib|lib64|"
                      r"snap|nix|work|workspace|app|private|Users|Volumes|Library|System)(/|\Z)|~[\w.-]*/|"
                      r"[A-Za-z]:[\\/])")
# Methods that change a container in place: called on module-level state from a function, they
# keep a count or a flag between calls (behaviour that depends on how often it ran).
MUTATORS = frozenset("append extend insert pop popitem clear update setdefault add discard remove appendleft "
                     "popleft extendleft rotate __setitem__ __delitem__ __iadd__ send".split())
FORMAT_FIELD = re.compile(r"\{([^{}]*)\}")
DUNDER = re.compile(r"__\w+?__")
_STDLIB = frozenset(sys.stdlib_module_names)

Raw = tuple[str, int, str]  # (rule, line, construct)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
           ast.GeneratorExp)
_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class ProjectView(Protocol):
    """What the reader asks about the project (verifier/gate.py answers from the pristine index)."""

    def is_project(self, module: str) -> bool: ...
    def is_protected(self, module: str) -> bool: ...
    def pristine_imports(self, module: str) -> bool: ...
    def reexport(self, dotted: str) -> str: ...
    def is_value_class(self, dotted: str) -> bool: ...


def canonical(dotted: str) -> str:
    head, _, rest = dotted.partition(".")
    head = _CANONICAL.get(head, head)
    return f"{head}.{rest}" if rest else head


def classify(dotted: str) -> tuple[str, str] | None:
    """(rule, the part of the name that decides it), or None: harness first, then the longest entry,
    then the default of the nearest owner. A bare builtin is `builtins.NAME`; an attribute of a
    builtin (`float.__ge__`) is judged by its own name."""
    parts = canonical(dotted).split(".")
    if parts[0] in HARNESS_MODULES:
        return "harness-module", parts[0]
    if parts[0] == "builtins":
        rule = NAMES.get(".".join(parts[:2]))
        return (rule, ".".join(parts[:2])) if rule and rule != PURE else None
    if parts[0] == "os" and len(parts) >= 2 and _OS_PROCESS.match(parts[1]):
        return "process", ".".join(parts[:2])
    if parts[0] == "os" and len(parts) == 2 and parts[1].isupper():
        return None  # a constant (os.SEEK_END, os.O_RDONLY): what uses it is judged
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        rule = NAMES.get(prefix)
        if rule is not None:
            if rule != PURE:
                return rule, prefix
            default = DEFAULTS.get(prefix) if i < len(parts) else None
            return (default, ".".join(parts[:i + 1])) if default else None
        if i < len(parts) and prefix in DEFAULTS:
            return DEFAULTS[prefix], ".".join(parts[:i + 1])
    return None


def is_pure_module(module: str) -> bool:
    parts = module.split(".")
    prefixes = {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    return bool(prefixes & PURE_MODULES) and not prefixes & NOT_PURE


def pretty(dotted: str) -> str:
    return dotted[len("builtins."):] if dotted.startswith("builtins.") else dotted


def relative_base(module: str, is_package: bool, level: int, name: str | None) -> str | None:
    """`from ..x import y` in `module`: the absolute module it names, or None past the top."""
    if not level:
        return name
    package = module.split(".") if is_package else module.split(".")[:-1]
    if not module or level - 1 >= len(package):
        return None  # past the top-level package: Python refuses it
    return ".".join(package[:len(package) - (level - 1)] + ([name] if name else []))


def statements(node: ast.AST, into_scopes: bool = True) -> Iterator[ast.stmt]:
    """Every statement below `node` (imports, globals, classes and defs are statements: walking only
    these is a tenth of a full walk), or only those of its own scope."""
    stack: list[ast.stmt] = list(reversed(getattr(node, "body", [])))
    while stack:
        stmt = stack.pop()
        yield stmt
        if not into_scopes and isinstance(stmt, _DEFS):
            continue
        inner: list[ast.stmt] = []
        for field in ("body", "orelse", "finalbody"):
            value = getattr(stmt, field, None)
            inner += value if isinstance(value, list) else []
        for part in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
            inner += part.body
        stack.extend(reversed(inner))


def module_level(tree: ast.AST) -> Iterator[ast.stmt]:
    return statements(tree, into_scopes=False)


def stored_names(node: ast.stmt) -> set[str]:
    """The names a statement binds in its own scope (its targets, imports, def or class name)."""
    if isinstance(node, _DEFS):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"}
    targets: list[ast.AST] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names | {h.name for h in getattr(node, "handlers", ()) if h.name}


def import_bindings(nodes: Iterable[ast.stmt], module: str, is_package: bool) -> tuple[
        dict[str, set[str]], list[str], set[str]]:
    """The import bindings (local name -> dotted targets), star-import sources and modules named by
    these statements (all of a file's, or its module level's)."""
    bindings: dict[str, set[str]] = {}
    stars: list[str] = []
    named: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                named.add(a.name)
                local, target = (a.asname, a.name) if a.asname else (a.name.split(".")[0], a.name.split(".")[0])
                bindings.setdefault(local, set()).add(target)
        elif isinstance(node, ast.ImportFrom):
            if (base := relative_base(module, is_package, node.level, node.module)) is None:
                continue
            named.add(base)
            for a in node.names:
                if a.name == "*":
                    stars.append(base)
                else:
                    named.add(f"{base}.{a.name}")
                    bindings.setdefault(a.asname or a.name, set()).add(f"{base}.{a.name}")
    return bindings, stars, named


def assignment_aliases(nodes: list[ast.stmt], bindings: dict[str, set[str]], builtin: set[str]) -> None:
    """`x = sys` / `x = os.path`: the name stands for what the value names (import bindings, earlier
    such aliases, or a builtin in `builtin`) wherever it is used; added to `bindings` in place."""
    assigns = [(n.targets[0] if isinstance(n, ast.Assign) else n.target, n.value) for n in nodes
               if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, (ast.Name, ast.Attribute))
               and len(getattr(n, "targets", [None])) == 1]

    def static(node: ast.expr) -> set[str]:
        if isinstance(node, ast.Name):
            return set(bindings.get(node.id, ())) or ({f"builtins.{node.id}"} if node.id in builtin else set())
        return {f"{d}.{node.attr}" for d in static(node.value)} if isinstance(node, ast.Attribute) else set()
    for _ in range(2):  # an alias of an alias
        for target, value in assigns:
            if isinstance(target, ast.Name) and (found := static(value)):  # type: ignore[arg-type]
                bindings.setdefault(target.id, set()).update(found)


def value_classes(nodes: Iterable[ast.stmt], resolve) -> set[str]:
    """Names of these classes that subclass a built-in value type, directly or through each other."""
    classes = [n for n in nodes if isinstance(n, ast.ClassDef)]
    found: set[str] = set()
    for _ in range(len(classes)):
        grown = {c.name for c in classes if any(
            isinstance(b, ast.Name) and b.id in found or any(d in VALUE_TYPES for d in resolve(b)) for b in
            (getattr(b, "value", b) if isinstance(b, ast.Subscript) else b for b in c.bases))}
        if grown <= found:
            break
        found |= grown
    return found


def _header_end(node: ast.stmt) -> int:
    """The last line of a compound statement's header (`class X(\\n  float):`), or of a simple one."""
    body = getattr(node, "body", None)
    if not isinstance(body, list) or not body:
        return node.end_lineno or node.lineno
    return max(node.lineno, body[0].lineno - 1)


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _scope_bindings(node: ast.AST, aliases: dict[str, set[str]]) -> tuple[set[str], set[str]]:
    """Names a function, lambda or comprehension binds itself, less those it declares global: (plain
    locals: parameters, loop targets, other stores; names it may bind to a module or builtin: imports
    and `x = name` / `x = a.b` from an alias or a builtin)."""
    if isinstance(node, _COMPS):
        return {n.id for gen in node.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)}, set()
    args = node.args  # type: ignore[attr-defined]
    bound = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
    aliased: set[str] = set()
    declared_global: set[str] = set()
    stack: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)  # type: ignore
    while stack:
        n = stack.pop()
        if isinstance(n, _DEFS):
            bound.add(n.name)
        elif isinstance(n, (ast.Lambda, *_COMPS)):  # only a walrus inside binds here
            bound |= {w.target.id for w in ast.walk(n) if isinstance(w, ast.NamedExpr) and isinstance(w.target, ast.Name)}
        elif isinstance(n, ast.Global):
            declared_global |= set(n.names)
        else:
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                aliased |= stored_names(n)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, (ast.Name, ast.Attribute)) \
                    and (_root(n.value) in aliases or _root(n.value) in BUILTIN_NAMES):
                aliased |= stored_names(n)
            elif isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                bound.add(n.id)
            elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
                bound.add(n.name)
            stack.extend(ast.iter_child_nodes(n))
    return bound - declared_global - aliased, aliased - declared_global


class Reader:
    """One parsed file, judged on its lines of interest (the added lines): `run()` gives raw findings."""

    def __init__(self, tree: ast.Module, lines: Iterable[int], view: ProjectView, module: str, is_package: bool):
        self.tree, self.view, self.module, self.is_package = tree, view, module, is_package
        self.lines = sorted(lines)
        self.found: list[Raw] = []
        every = list(statements(tree))
        self.aliases, self.stars, _ = import_bindings(every, module, is_package)
        self.imported_modules = {t for n in every if isinstance(n, ast.Import)
                                 for a in n.names for t in (a.name, a.name.split(".")[0])}
        # Names the module binds itself (directly, or through `global` in a function).
        self.module_bound = {name for n in module_level(tree) for name in stored_names(n)}
        self.module_bound |= {name for n in every if isinstance(n, ast.Global) for name in n.names}
        assignment_aliases(every, self.aliases, set(BUILTIN_NAMES) - self.module_bound)
        self.scopes: list[ast.AST] = [tree]
        self._bindings: dict[int, tuple[set[str], set[str]]] = {}
        self.tested: set[int] = set()    # names only tested (`if mod:`, `mod is None`): handed to nothing
        self.inner: set[int] = set()     # chain bases and getattr targets: judged as part of a whole
        self.called: set[int] = set()    # call targets
        self.exempt: set[int] = set()    # call targets whose arguments make them harmless
        self.local_values = value_classes(every, self.dotted)

    def run(self) -> list[Raw]:
        self.visit(self.tree)
        return self.found

    def first(self, lo: int, hi: int) -> int | None:
        """The first line of interest in [lo, hi]."""
        i = bisect_left(self.lines, lo)
        return self.lines[i] if i < len(self.lines) and self.lines[i] <= hi else None

    def at(self, node: ast.AST) -> int | None:
        lo = getattr(node, "lineno", None)
        if lo is None:
            return None
        lo = min([lo] + [d.lineno for d in getattr(node, "decorator_list", ())])  # decorators stand above
        return self.first(lo, getattr(node, "end_lineno", None) or lo)

    def emit(self, rule: str, line: int, construct: str) -> None:
        self.found.append((rule, line, construct))

    # -- names ----------------------------------------------------------------------------------
    def in_function(self) -> bool:
        return any(isinstance(s, _SCOPES) for s in self.scopes)

    def at_module(self) -> bool:
        return len(self.scopes) == 1

    def local(self, name: str) -> bool | None:
        """True: a plain local of an enclosing function (Python decides at compile time, so it is never
        the module-level import or a builtin); None: a function there may bind it to a module or
        builtin (an import or `x = sys`); False: no function scope binds it."""
        for scope in reversed(self.scopes):
            if isinstance(scope, _SCOPES):
                if id(scope) not in self._bindings:
                    self._bindings[id(scope)] = _scope_bindings(scope, self.aliases)
                plain, aliased = self._bindings[id(scope)]
                if name in aliased:
                    return None if name in self.aliases else True
                if name in plain:
                    return True
        return False

    def resolve_name(self, name: str) -> list[str]:
        """The dotted names a bare name may stand for: its bindings (imports and aliases anywhere in the
        file), unless it is a plain local of an enclosing function; else the builtin (unless the module
        binds the name and this is inside a function), and what a star import may have bound."""
        local = self.local(name)
        if local:
            return []
        if name in self.aliases:
            return sorted({self.view.reexport(t) for t in self.aliases[name]})
        if local is None:
            return []
        mine = name in self.module_bound
        out = [f"builtins.{name}"] if name in BUILTIN_NAMES and not (mine and self.in_function()) else []
        return out + ([] if mine else [self.view.reexport(f"{s}.{name}") for s in self.stars])

    def dotted(self, node: ast.AST) -> list[str]:
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id)
        if isinstance(node, ast.Attribute):
            return [self.view.reexport(f"{d}.{node.attr}") for d in self.dotted(node.value)]
        if isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and "builtins.getattr" in self.dotted(node.func):
            return [self.view.reexport(f"{d}.{node.args[1].value}") for d in self.dotted(node.args[0])]
        return []

    def is_module(self, dotted: str) -> bool:
        return dotted in self.imported_modules or self.view.is_project(dotted) or dotted in _STDLIB \
            or dotted == "os.path"

    # -- judging ----------------------------------------------------------------------------------
    def judge_names(self, names: list[str], line: int, called: bool, exempt: bool = False, tested: bool = False) -> bool:
        """The rule of each name a reference may stand for or, for a value that is not called, a module
        or an attribute-reaching builtin handed around."""
        hit = False
        for d in names:
            found = classify(d)
            if found and not (found[0] == "clock" and exempt):
                self.emit(found[0], line, pretty(found[1]) + ("(...)" if called and found[1] == canonical(d) else ""))
            elif called:
                continue
            elif d.startswith("builtins.") and d[9:] in VALUE_USE:
                self.emit("computed-attribute", line, f"{d[9:]} used as a value")
            elif self.is_module(d) and not is_pure_module(d) and not tested:
                self.emit("computed-attribute", line, f"module {d} used as a value")
            else:
                continue
            hit = True
        return hit

    def judge_store(self, node: ast.Attribute, line: int) -> None:
        """`x.attr = ...` / `del x.attr` on an imported module or name, or a builtin, rewrites what other
        code (the tests) sees; so does rewriting a dunder on anything."""
        if bases := self.dotted(node.value):
            self.emit("namespace", line, f"{pretty(bases[0])}.{node.attr} = ...")
        if DUNDER.fullmatch(node.attr) and node.attr not in STORE_OK:
            self.emit("namespace", line, f".{node.attr} = ...")
        for d in self.dotted(node):
            if (found := classify(d)) and found[0] != "namespace":
                self.emit(found[0], line, pretty(found[1]))

    def judge_string(self, value: str, line: int) -> None:
        if FACT_WORDS.search(value) or ABS_PATH.match(value):
            self.emit("environment", line, f"string {value if len(value) <= 40 else value[:37] + '...'!r}")
        if value in FORGING:  # {"__eq__": ...} for type(), setattr, dict.fromkeys: a class's behaviour by name
            self.emit("value-type", line, f"string {value!r} names a behaviour dunder")
        for field in FORMAT_FIELD.findall(value):  # "{0.__globals__}".format(f) reaches attributes too
            parts = re.split(r"[.\[]", field.split("!")[0].split(":")[0])[1:]
            if any(DUNDER.fullmatch(a) and a not in FORMAT_OK or a in ATTRIBUTES for a in parts):
                self.emit("computed-attribute", line, f"format field {{{field[:40]}}}")
                break

    def judge_import(self, line: int, module: str, sub: str | None, text: str) -> None:
        if isinstance(self.scopes[-1], ast.ClassDef):  # the module becomes a class attribute, out of sight
            self.emit("computed-attribute", line, f"{text} in a class body")
        if module.split(".")[0] in HARNESS_MODULES:
            self.emit("harness-module", line, text)
        elif self.view.is_protected(module) or (sub and self.view.is_protected(sub)):
            self.emit("protected-module-import", line, text)
        elif found := IMPORT_ONLY.get(module) or classify(sub or module) or classify(module):
            self.emit(found if isinstance(found, str) else found[0], line, text)
        elif not (is_pure_module(module) or self.view.is_project(module) or self.view.pristine_imports(module)):
            self.emit("new-import", line, text)

    def rebinding(self, line: int, name: str) -> None:
        if self.at_module() and name in BUILTIN_NAMES:
            self.emit("builtin-rebinding", line, f"{name} rebound at module level")

    # -- the walk --------------------------------------------------------------------------------
    def visit(self, node: ast.AST | None) -> None:
        if node is None or hasattr(node, "lineno") and self.at(node) is None:
            return  # nothing of interest below a node whose span holds no line of interest
        getattr(self, f"visit_{type(node).__name__}", self.generic)(node)

    def generic(self, node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def scoped(self, scope: ast.AST, nodes: Iterable[ast.AST | None]) -> None:
        self.scopes.append(scope)
        try:
            for n in nodes:
                self.visit(n)
        finally:
            self.scopes.pop()

    def _test(self, node: ast.expr) -> None:
        """A value used only as a truth test (`if brotli:`, `not mod`, `a and b` as a test)."""
        if isinstance(node, (ast.Name, ast.Attribute)):
            self.tested.add(id(node))
        for part in node.values if isinstance(node, ast.BoolOp) else \
                [node.operand] if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else []:
            self._test(part)

    def visit_If(self, node: ast.If | ast.While | ast.IfExp | ast.Assert) -> None:
        self._test(node.test)
        self.generic(node)

    visit_While = visit_IfExp = visit_Assert = visit_If

    def visit_Compare(self, node: ast.Compare) -> None:
        if all(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops):  # `mod is None`
            self.tested |= {id(n) for n in [node.left, *node.comparators] if isinstance(n, (ast.Name, ast.Attribute))}
        self.generic(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if not isinstance(node.value, ast.Constant):  # a docstring or bare string runs nothing
            self.generic(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if (line := self.at(node)) is not None and isinstance(node.value, (str, bytes)):
            self.judge_string(node.value if isinstance(node.value, str) else node.value.decode("latin-1"), line)

    def visit_Name(self, node: ast.Name) -> None:
        line = self.at(node)
        assert line is not None
        if node.id in BARE_NAMES:  # read, or (worse) rebound: __builtins__ = {...}
            self.emit(BARE_NAMES[node.id], line, node.id)
        if not isinstance(node.ctx, ast.Load):
            if self.at_module() and node.id in BUILTIN_NAMES:
                self.emit("builtin-rebinding", line, f"{node.id} rebound at module level")
            return
        if id(node) not in self.inner:
            self.judge_names(self.dotted(node), line, id(node) in self.called, id(node) in self.exempt,
                             id(node) in self.tested)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        line = self.at(node)
        assert line is not None
        self.inner.add(id(node.value))
        hit = False
        if not isinstance(node.ctx, ast.Load):
            self.judge_store(node, line)
        elif id(node) not in self.inner:
            hit = self.judge_names(self.dotted(node), line, id(node) in self.called, id(node) in self.exempt,
                                   id(node) in self.tested)
        if hit:  # the whole chain was read by name: its links need no second reading
            link: ast.expr = node.value
            while isinstance(link, ast.Attribute):
                self.exempt.add(id(link))
                link = link.value
        if node.attr in ATTRIBUTES and not hit and id(node) not in self.exempt and isinstance(node.ctx, ast.Load):
            self.emit(ATTRIBUTES[node.attr], line, f".{node.attr}")
        self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        line = self.at(node)
        assert line is not None
        self.called.add(id(node.func))
        funcs = self.dotted(node.func)
        names = {pretty(f) for f in funcs}
        literal = [a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else None for a in node.args]
        for fn in names & ATTRIBUTE_FUNCTIONS:
            if len(node.args) < 2 or literal[1] is None:
                self.emit("computed-attribute", line, f"{fn}(...) with a computed name")
                continue
            attr, target = literal[1], self.dotted(node.args[0])
            self.inner.add(id(node.args[0]))  # read as the attribute it names: getattr(sys, "modules")
            hit = self.judge_names([self.view.reexport(f"{d}.{attr}") for d in target], line, id(node) in self.called)
            if attr in ATTRIBUTES and not hit:
                self.emit(ATTRIBUTES[attr], line, f".{attr}")
            if fn in ("setattr", "delattr") and (target or DUNDER.fullmatch(attr) and attr not in STORE_OK):
                self.emit("namespace", line, f"{fn}({pretty(target[0]) if target else '...'}, {attr!r})")
        if "type" in names and len(node.args) == 3:
            self.emit("dynamic-code", line, "type(...) with 3 arguments")
        if any(n.startswith("type.") for n in names) or len(node.args) >= 3 and (  # the metaclass, reached
                isinstance(node.func, ast.Attribute) and node.func.attr == "__class__"  # otherwise
                or isinstance(node.func, ast.Call) and "type" in {pretty(f) for f in self.dotted(node.func.func)}):
            self.emit("dynamic-code", line, "a class built by calling its metaclass")
        if "warnings.catch_warnings" in names and any(k.arg == "record" for k in node.keywords):
            self.emit("frames", line, "warnings.catch_warnings(record=...)")  # each names the caller's file
        for k in node.keywords:
            if k.arg in FORGING:  # dict(__eq__=...)
                self.emit("value-type", line, f"keyword {k.arg} names a behaviour dunder")
        if "open" in names and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, int):
            self.emit("file-descriptor", line, "open(<file descriptor>)")
        if names & {"operator.attrgetter", "operator.methodcaller"}:
            used = literal if "operator.attrgetter" in names else literal[:1]
            if not node.args or None in used:
                self.emit("computed-attribute", line, "operator.attrgetter/methodcaller with a computed name")
            for attr in (part for text in used if text for part in text.split(".") if part in ATTRIBUTES):
                self.emit(ATTRIBUTES[attr], line, f".{attr}")
        if isinstance(node.func, ast.Attribute) and node.func.attr == "__setattr__" \
                and "builtins.object.__setattr__" in funcs and len(node.args) == 3 \
                and isinstance(node.args[0], ast.Name) and node.args[0].id == "self" and literal[1] is not None:
            self.exempt.add(id(node.func))  # object.__setattr__(self, "x", v) in a frozen dataclass: self.x = v
        if any(len(node.args) >= CLOCK_WITH_ARGS.get(f, 99) for f in funcs):
            self.exempt.add(id(node.func))  # time.strftime(fmt, t) formats the time it is given
        if isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS \
                and (root := self.state_root(node.func.value)):
            self.emit("module-state", line, f"{root}.{node.func.attr}(...) inside a function")
        if "builtins.next" in funcs and node.args and isinstance(node.args[0], ast.Name) \
                and self.state_root(ast.Attribute(value=node.args[0], attr="_")):
            self.emit("module-state", line, f"next({node.args[0].id}) inside a function")
        self.generic(node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if (line := self.at(a)) is not None:
                self.judge_import(line, a.name, None, f"import {a.name}")
                self.rebinding(line, a.asname or a.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = relative_base(self.module, self.is_package, node.level, node.module)
        for a in node.names:
            if (line := self.at(a)) is None or base is None:
                continue
            if a.name == "*":
                self.judge_import(line, base, None, f"from {base} import *")
                if not (is_pure_module(base) or self.view.is_project(base) or classify(base) or base in IMPORT_ONLY):
                    self.emit("namespace", line, f"from {base} import * (names that cannot be read)")
            else:
                self.judge_import(line, base, f"{base}.{a.name}", f"from {base} import {a.name}")
                self.rebinding(line, a.asname or a.name)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            if isinstance(node, ast.Global) and name in BUILTIN_NAMES:
                self.emit("builtin-rebinding", node.lineno, f"global {name}")
            elif self.in_function():
                self.emit("module-state", node.lineno, f"{type(node).__name__.lower()} {name}")

    visit_Nonlocal = visit_Global

    # -- state kept between calls ----------------------------------------------------------------
    def state_root(self, node: ast.expr) -> str | None:
        """The module-level name a subscript or attribute chain hangs from, seen from inside a
        function (None: a local, a parameter, an import, or not in a function)."""
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        if not isinstance(node, ast.Name) or not self.in_function() or node.id in self.aliases:
            return None
        return node.id if node.id in self.module_bound and self.local(node.id) is False else None

    def judge_state_stores(self, targets: list[ast.expr], line: int) -> None:
        for t in targets:
            for part in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                if isinstance(part, (ast.Subscript, ast.Attribute)) and (root := self.state_root(part)):
                    self.emit("module-state", line, f"{root} changed inside a function")

    def visit_Assign(self, node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) -> None:
        line = self.at(node)
        if line is not None:
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            self.judge_state_stores(list(targets), line)
        self.generic(node)

    visit_AugAssign = visit_AnnAssign = visit_Delete = visit_Assign

    def _evaluated_here(self, args: ast.arguments) -> list[ast.expr | None]:
        """What a def or lambda evaluates where it stands: defaults and annotations."""
        params = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        return [*args.defaults, *args.kw_defaults, *(p.annotation for p in params)]

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if (head := self.first(node.lineno, _header_end(node))) is not None and self.at_module():
            self.rebinding(head, node.name)
            if node.name in MODULE_HOOKS:
                self.emit("namespace", head, f"module-level def {node.name}")
        for n in [*node.decorator_list, *self._evaluated_here(node.args), node.returns]:
            self.visit(n)
        self.scoped(node, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for n in self._evaluated_here(node.args):
            self.visit(n)
        self.scoped(node, [node.body])

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        first, *rest = node.generators
        self.visit(first.iter)  # evaluated in the enclosing scope
        parts: list[ast.expr | None] = [first.target, *first.ifs]
        for gen in rest:
            parts += [gen.target, gen.iter, *gen.ifs]
        parts += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        self.scoped(node, parts)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        head = self.first(node.lineno, _header_end(node))
        for n in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
            self.visit(n)
        plain = [b.value if isinstance(b, ast.Subscript) else b for b in node.bases]  # Generic[T] is Generic
        value_base = next((pretty(d) for b in plain for d in self.dotted(b)
                           if d in VALUE_TYPES or self.view.is_value_class(d)), None) or \
            next((b.id for b in plain if isinstance(b, ast.Name) and b.id in self.local_values), None)
        label = f"class {node.name}" + (f"({value_base})" if value_base else "")
        if head is not None:
            self.rebinding(head, node.name)
            if any(not isinstance(b, (ast.Name, ast.Attribute)) for b in plain):
                self.emit("value-type", head, f"{label} has a computed base")
            for k in node.keywords:
                if k.arg in ("metaclass", None):
                    self.emit("value-type", head, f"{label}({k.arg or '**'}=...)")
        defs = {s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for stmt in statements(node, into_scopes=False):  # through if/try blocks of the body too
            if (line := self.first(stmt.lineno, _header_end(stmt)) or head) is not None:
                self.members(stmt, line, label, value_base is not None, defs)
        self.scoped(node, node.body)

    def members(self, stmt: ast.stmt, line: int, label: str, is_value: bool, defs: set[str]) -> None:
        """The class-level rules for one statement of a class body."""
        value: ast.expr | None = None
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names = [stmt.name]
        elif isinstance(stmt, ast.Assign):
            names, value = [t.id for t in stmt.targets if isinstance(t, ast.Name)], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names, value = [stmt.target.id], stmt.value
        else:
            return
        for name in (n for n in names if DUNDER.fullmatch(n) and n not in DATA_DUNDERS):
            if name == "__hash__" and isinstance(value, ast.Constant) and value.value is None:
                continue  # unhashable: the honest way to say "no hash"
            if is_value and name in VALUE_DUNDERS:
                self.emit("value-type", line, f"{label} defines {name}")
            if name in COMPARISON:
                self.emit("comparison-override", line, f"{label} defines {name}")
            if name in HOOKS:
                self.emit("value-type", line, f"{label} defines {name}")
            if name in PICKLE_HOOKS:
                self.emit("dynamic-code", line, f"{label} defines {name}")
            if value is not None and not (isinstance(value, ast.Name) and value.id in defs):
                self.emit("value-type", line, f"{label} borrows {name} from an expression")
