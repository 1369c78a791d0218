"""The check process's first code: installed before pytest imports any candidate code.

Run in the check container as `python3 -I boot.py PYTEST_ARGS...` with RA_BOOT (JSON) in the
environment. Stdlib and pytest only: nothing else of the verifier exists in the container.

Kept in one module: the check container runs this file alone (`python3 -I boot.py`), with nothing
else of the verifier present, so its layers cannot be split into imports.

It adds three layers to a pytest run whose process also runs the candidate's code:
1. A runtime audit hook (PEP 578). Once added it cannot be removed from Python. While any frame
   of candidate code is on the stack it refuses, and records: process creation (exec, spawn,
   fork, subprocess, system, kill), ctypes, the garbage collector's object graph, frame and code
   access (sys._getframe, tb_frame, f_code, gi_frame, __code__), tracing and profiling hooks,
   building functions or code objects, __class__/__code__ assignment, compiling strings, writes
   outside /tmp, and reads of /proc secrets, mount tables and the verifier's own files. The
   JUnit file may be written once, by pytest's own junitxml code, with no candidate frame below.
2. An integrity snapshot of the runner (every pytest and pluggy module and class namespace, the
   registered hook implementations, each collected item's own attributes), compared before and
   after every test call and at the end: patched runner internals are reported by name.
3. A record stream on a private duplicate of stderr, taken before any candidate import: the
   process facts (pid, cwd, argv, executable, rootdir), each test's raw call outcome seen from
   the innermost wrapper, every refusal, every integrity change, new subclasses of built-in
   value types defined outside the standard library (values that may lie in __eq__), and the
   final exit status. The host judges this stream together with the JUnit file it reads itself.

None of this makes in-process Python tamper-proof (code that reaches these closures, or that
uses a path no audit event covers, can still interfere); it makes each forgery need several
independent evasions at once, and the verdict also needs held-out checks the process never sees.
"""


def _boot():
    import gc
    import json
    import os
    import sys
    import _thread

    config = json.loads(os.environ.get("RA_BOOT", "{}"))
    root = config.get("root", os.getcwd()).rstrip("/") + "/"
    protected = frozenset(config.get("protected", ()))
    junit = config.get("junit", "")
    out_dir = config.get("out_dir", "").rstrip("/") + "/"
    verifier_dir = config.get("verifier_dir", "/verifier").rstrip("/") + "/"
    marker = "\x1eRA-GUARD "

    # Everything the hook and the emitter use is captured now: code under test may later rebind
    # module attributes and builtins, but not these local names.
    channel = os.dup(2)
    write, getpid, get_ident, getframe = os.write, os.getpid, _thread.get_ident, sys._getframe
    _isinstance, _len, _tuple, _type = isinstance, len, tuple, type
    dumps = json.JSONEncoder(sort_keys=True, default=lambda o: "<unserializable>").encode  # our own instance
    startswith, str_of = str.startswith, str.__str__
    lstat, readlink, getcwd = os.lstat, os.readlink, os.getcwd
    O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND = os.O_WRONLY, os.O_RDWR, os.O_CREAT, os.O_TRUNC, os.O_APPEND
    code_type = type((lambda: 0).__code__)
    qualname_of = type.__dict__["__qualname__"].__get__
    pid = getpid()
    seq = [0]
    busy = {}

    def emit(kind, **record):
        seq[0] += 1
        record.update(kind=kind, seq=seq[0], pid=pid)
        try:
            write(channel, (marker + dumps(record) + "\n").encode("utf-8", "replace"))
        except OSError:
            pass

    stdlib = _tuple(p.rstrip("/") + "/" for p in {os.path.dirname(os.__file__)} if p)
    # Stdlib helpers that read a caller's frame for a name or a line and hand no frame back.
    frame_readers = _tuple(os.path.join(stdlib[0], n) for n in (
        "logging/__init__.py", "collections/__init__.py", "enum.py", "typing.py", "contextlib.py",
        "functools.py", "dataclasses.py", "abc.py"))
    verdict_cache = {}
    interpreter_dirs = _tuple({p.rstrip("/") + "/" for p in (sys.prefix, sys.exec_prefix, sys.base_prefix) if p}
                              | set(stdlib))

    def candidate_file(filename):
        known = verdict_cache.get(filename)
        if known is None:
            if startswith(filename, root):
                known = filename[_len(root):] not in protected
            elif startswith(filename, verifier_dir) or startswith(filename, interpreter_dirs):
                # The boot and the probe themselves, and the interpreter's own library (the local
                # backend may keep them, or a virtualenv, under /tmp).
                known = False
            else:
                known = startswith(filename, ("/tmp/", "/dev/shm/", "/var/tmp/"))
            verdict_cache[filename] = known
        return known

    def stack_origin(start):
        """The first candidate file on the stack (None: no candidate frame) and the direct caller."""
        frame, direct = start, None
        while frame is not None:
            filename = frame.f_code.co_filename
            if direct is None:
                direct = filename
            if candidate_file(filename):
                return filename, direct
            frame = frame.f_back
        return None, direct

    always_refused = ("os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "subprocess.Popen",
                      "os.system", "os.kill", "os.killpg", "pty.spawn")
    tainted_refused = frozenset((
        "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames", "sys.settrace",
        "sys.setprofile", "sys.addaudithook",
        "os.chroot", "mmap.__new__", "socket.__new__", "socket.connect", "os.dup2"))
    frame_events = frozenset(("sys._getframe", "object.__getattr__"))
    # Refused when candidate code itself makes the call (the import system does these too).
    direct_refused = frozenset(("compile", "exec", "marshal.loads", "marshal.load", "code.__new__",
                                "function.__new__"))
    # Reading code objects is allowed (inspect.signature does it for dataclasses); getting hold
    # of a frame is not: from one frame, f_back and f_locals reach every caller's variables.
    frame_attrs = frozenset(("tb_frame", "gi_frame", "cr_frame", "ag_frame"))
    secret_reads = ("/proc/", "/sys/", "/dev/", verifier_dir, out_dir, "/etc/")
    junit_writes = [0]
    junit_writer = []  # filled after pytest is imported: the genuine junitxml code object

    def plain(value):
        """A loggable form of an audit argument that runs no method of the value's own class."""
        t = _type(value)
        if t is str or t is int or t is bool or value is None:
            return value
        if _isinstance(value, str):
            return str_of(value)
        if _isinstance(value, bytes):
            return bytes.decode(bytes(value), "utf-8", "replace")
        return "<" + qualname_of(t) + ">"

    def refuse(event, args, origin, why):
        shown = [plain(a) for a in (args if _type(args) is tuple else ())][:4]
        emit("refused", event=event, origin=origin, why=why, args=shown)
        raise PermissionError("refused by the verifier's check process: " + event + " (" + why + ")")

    def resolve(path):
        """The real path, symlinks followed with captured C calls only (no patchable Python)."""
        if _type(path) is not str:
            path = plain(path) if _isinstance(path, (str, bytes)) else ""
        if not path:
            return ""
        if not startswith(path, "/"):
            path = getcwd() + "/" + path
        parts, seen = [], 0
        todo = path.split("/")[::-1]
        while todo:
            part = todo.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            candidate = "/" + "/".join(parts + [part])
            try:
                mode = lstat(candidate).st_mode
            except OSError:
                parts.append(part)
                continue
            if mode & 0o170000 == 0o120000 and seen < 40:
                seen += 1
                target = readlink(candidate)
                if startswith(target, "/"):
                    parts = []
                todo.extend(target.split("/")[::-1])
                continue
            parts.append(part)
        return "/" + "/".join(parts)

    fs_events = {"os.rename": 2, "os.link": 2, "os.symlink": 2, "os.remove": 1, "os.rmdir": 1, "os.mkdir": 1,
                 "os.truncate": 1, "os.chmod": 1, "os.chown": 1, "os.utime": 1, "shutil.rmtree": 1,
                 "shutil.copyfile": 2, "shutil.move": 2, "shutil.copytree": 2}

    def check_fs(event, args, origin):
        paths = [resolve(a) for a in (args if _type(args) is tuple else ())[:fs_events[event]]
                 if _isinstance(a, (str, bytes))]
        for real in paths:
            if real == junit or startswith(real, out_dir) or (origin is not None and startswith(real, verifier_dir)
                                                               and not startswith(real, root)):
                refuse(event, args, origin, "the verifier's files are not to be touched")
        if origin is not None:
            if event in ("os.symlink", "os.link"):
                refuse(event, args, origin, "candidate code may not create links")
            if any(not startswith(r, "/tmp/") for r in paths):
                refuse(event, args, origin, "candidate code may change files only under /tmp")

    def check_open(args, origin):
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writing = (_isinstance(mode, str) and any(str.__contains__(str_of(mode), c) for c in "wax+")) or (
            _type(flags) is int and flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND))
        if not writing and origin is None:
            return  # the runner's own reads (imports above all): nothing to decide
        real = resolve(path)
        if writing and (real == junit or startswith(real, out_dir)):
            if origin is None and junit_writer and junit_writes[0] == 0 and real == junit and writer_on_stack():
                junit_writes[0] += 1
                return
            refuse("open", (real,), origin, "the result directory is written only by pytest's junitxml, once")
        if origin is None:
            return
        if writing and not (startswith(real, "/tmp/") or real == "/dev/null"):
            refuse("open", (real,), origin, "candidate code may write only under /tmp")
        if not writing and startswith(real, secret_reads) and not startswith(real, root) \
                and real not in ("/dev/null", "/dev/urandom"):
            refuse("open", (real,), origin, "reads of /proc, /sys, /dev, /etc and verifier files are refused")

    def writer_on_stack():
        frame = getframe(2)
        while frame is not None:
            if frame.f_code is junit_writer[0]:
                return True
            frame = frame.f_back
        return False

    original_start = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None):
        origin, _ = stack_origin(getframe(1))
        if origin is not None:
            refuse("_thread.start_new_thread", (), origin, "candidate code may not start threads")
        return original_start(function, args, kwargs or {})

    def clean(value, depth=0):
        """Plain data only: exact str/int/bool/None and lists/dicts of them (no method of a
        candidate-made subclass runs inside the hook)."""
        t = _type(value)
        if t is str or t is int or t is bool or value is None:
            return value
        if depth < 4 and (t is list or t is tuple):
            return [clean(v, depth + 1) for v in list.__iter__(list(value))] if t is tuple else \
                [clean(v, depth + 1) for v in list.__iter__(value)]
        if depth < 4 and t is dict:
            return {k: clean(v, depth + 1) for k, v in dict.items(value) if _type(k) is str}
        return "<" + qualname_of(t) + ">"

    def hook(event, args):
        ident = get_ident()
        if busy.get(ident):
            return  # an event raised by this hook's own frame walk
        if event == "ra.record":
            busy[ident] = True
            try:
                origin, _ = stack_origin(getframe(1))
                if origin is not None:
                    emit("refused", event=event, origin=origin, why="candidate code raised a guard record")
                    return
                kind, payload = (tuple(args) + (None, None))[:2]
                if _type(kind) is str and _type(payload) is dict:
                    emit(kind, **clean(payload))
            finally:
                busy[ident] = False
            return
        if _type(event) is not str:
            return
        watched = (event in tainted_refused or event in frame_events or event in fs_events or event == "open"
                   or event in direct_refused or event == "import" or startswith(event, "ctypes.")
                   or startswith(event, always_refused) or event == "object.__setattr__")
        if not watched:
            return
        busy[ident] = True
        try:
            origin, direct = stack_origin(getframe(1))
            if startswith(event, always_refused):
                refuse(event, args, origin, "no process may be created or signalled during a check")
            if event == "open":
                return check_open(args, origin)
            if event in fs_events:
                return check_fs(event, args, origin)
            if origin is None:
                return
            if startswith(event, "ctypes."):
                refuse(event, args, origin, "ctypes reaches past every Python-level guard")
            if event == "import":
                name = plain(args[0]) if args else ""
                if _type(name) is str and name.split(".")[0] in ("ctypes", "_ctypes", "gc", "_posixsubprocess", "signal", "_signal",
                                          "faulthandler", "_testcapi", "_testinternalcapi", "pluggy", "_pytest",
                                          "pytest", "_xxsubinterpreters", "_thread", "threading", "multiprocessing",
                                          "inspect", "pty", "subprocess", "socket", "_socket", "mmap", "resource"):
                    refuse(event, args, origin, "candidate code may not import runtime-introspection modules")
                return
            if event in tainted_refused:
                refuse(event, args, origin, "candidate code may not reach into the runtime")
            if event == "object.__setattr__":
                name = plain(args[1]) if _len(args) > 1 else ""
                if name in ("__code__", "__class__", "__bases__", "__dict__", "__globals__"):
                    refuse(event, (name,), origin, "rebinding code or classes")
                return
            if event in frame_events:
                if event == "object.__getattr__" and (_len(args) < 2 or plain(args[1]) not in frame_attrs):
                    return
                if direct in frame_readers:
                    return
                refuse(event, (event,), origin, "candidate code may not reach frames or code objects")
            if event in direct_refused and candidate_file(direct or ""):
                if event == "exec" and args and _type(args[0]) is code_type and \
                        candidate_file(args[0].co_filename):
                    return  # the module's own body, run by the import system
                refuse(event, (event,), origin, "candidate code may not compile or run strings")
        finally:
            busy[ident] = False

    # pytest and its built-in plugins are trusted: imported before the hook, so the hook does not pay
    # for their hundreds of import events. No candidate code has run yet.
    sys.dont_write_bytecode = True
    import importlib

    import pytest  # noqa: F401
    import _pytest.config
    import _pytest.junitxml

    for name in _pytest.config.default_plugins:
        try:
            importlib.import_module(f"_pytest.{name}")
        except ImportError:
            pass
    junit_writer.append(_pytest.junitxml.LogXML.pytest_sessionfinish.__code__)

    sys.addaudithook(hook)
    # Threads are not audit events before Python 3.13: every way to start one goes through here.
    import threading
    _thread.start_new_thread = _thread.start_new = threading._start_new_thread = start_new_thread
    gc.disable()  # a lying value's class stays alive until the post-call scan sees it
    return emit, config


def _runner_guard(config):
    """The pytest plugin: outcomes, integrity, lying value types. Its records go out through the
    audit hook, so no function of the hook's world is reachable from the plugin."""
    import os
    import sys

    import pytest

    audit = sys.audit

    def emit(kind, **payload):
        audit("ra.record", kind, payload)

    import itertools
    import operator
    import types

    # No id(): it is an audit event, and thousands per test would cost seconds. Identity is
    # compared element-wise with operator.is_, which calls no __eq__ a value might override.
    _is, _vars, _len, _type, _sorted, _isinstance = operator.is_, vars, len, type, sorted, isinstance

    def same_refs(a, b):
        return _len(a) == _len(b) and all(map(_is, a, b))
    value_types = (int, float, complex, str, bytes, tuple, list, dict, set, frozenset)
    method_type = types.MethodType
    suspect = frozenset(("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__bool__",
                         "__sub__", "__rsub__", "__add__", "__radd__", "__abs__", "__float__", "__int__",
                         "__index__", "__round__", "__len__", "__contains__", "__str__", "__repr__",
                         "__format__", "__instancecheck__", "__subclasscheck__"))
    trusted_dirs = tuple({os.path.dirname(os.__file__) + "/", os.path.dirname(os.path.dirname(pytest.__file__)) + "/"})
    # Slots a C-defined class got from its own C code (pwd.struct_passwd's __repr__), or a base's
    # own C method reused (IntFlag's __format__ is int.__format__): the class behaves as that C
    # code does. A C callable merely stored on a Python class (operator.truth as __eq__) stays
    # suspect: only a descriptor owned by the class or one of its bases counts.
    c_slot_types = (type(str.__eq__), type(str.upper))

    def override_source(cls, fn):
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if code is not None:
            return code.co_filename
        if fn is None:  # `__hash__ = None` (implied by defining __eq__): unhashable, nothing to lie with
            return "<C>"
        if _type(fn) in c_slot_types and getattr(fn, "__objclass__", None) in type.__dict__["__mro__"].__get__(cls):
            return "<C>"
        return "?"

    # Not candidate code either: the protected tests (restored from the verifier's copy) and the
    # scenario's environment (packages installed in the image, outside the writable places).
    root = config.get("root", os.getcwd()).rstrip("/") + "/"
    protected = frozenset(config.get("protected", ()))
    writable = ("/tmp/", "/dev/shm/", "/var/tmp/")

    def trusted_source(filename):
        if filename == "<C>" or filename.startswith(trusted_dirs):
            return True
        if filename == "?" or not filename.startswith("/") or filename.startswith(writable):
            return False
        return filename[len(root):] in protected if filename.startswith(root) else True

    def modules():
        return [(n, m) for n, m in list(sys.modules.items())
                if m is not None and (n.split(".")[0] in ("_pytest", "pytest", "pluggy", "py", "iniconfig"))]

    def namespaces():
        spaces = {}
        for name, module in modules():
            d = getattr(module, "__dict__", None)
            if _type(d) is dict:
                spaces[f"module {name}"] = d
                for key, value in list(d.items()):
                    if _isinstance(value, type) and getattr(value, "__module__", "") == name:
                        spaces[f"class {name}.{key}"] = value.__dict__
        return spaces

    # Names pytest itself rebinds while it runs (per test, or on first use).
    volatile = {"module _pytest.assertion.util": {"_config", "_reprcompare", "_assertion_pass"},
                "class _pytest.python.Function": {"_pytest_diamond_inheritance_warning_shown"},
                "class _pytest.python.FunctionDefinition": {"_pytest_diamond_inheritance_warning_shown"},
                "class _pytest.unittest.TestCaseFunction": {"_pytest_diamond_inheritance_warning_shown"}}
    # The warnings machinery's per-module record of warnings already shown: written into whichever
    # module a warning is attributed to (a real suite's deprecation warnings land in pytest's).
    volatile_everywhere = frozenset({"__warningregistry__"})
    # (name, the live namespace, a copy taken before any candidate import, volatile names left out)
    watched: list = []
    absent = object()

    # The namespaces pytest never rebinds, flattened once: a check compares all of them in a few
    # C-speed passes (hundreds of namespaces per test were a Python loop, ~2 ms a test), and only a
    # difference there sends it through the per-namespace comparison that names what changed.
    steady: dict = {}
    # Module namespaces are dicts, class namespaces mappingproxies: both C types whose methods no
    # code under test can replace.
    values_of, chained = operator.methodcaller("values"), itertools.chain.from_iterable

    def take_baseline():
        watched[:] = [(k, d, {n: v for n, v in d.items() if n not in volatile.get(k, ())})
                      for k, d in namespaces().items()]
        kept = [(d, before) for k, d, before in watched if k not in volatile]
        steady["live"] = [d for d, _ in kept]
        steady["lens"] = [_len(before) for _, before in kept]
        steady["keys"] = [n for _, before in kept for n in before]
        steady["values"] = [v for _, before in kept for v in before.values()]
        steady["volatile"] = [w for w in watched if w[0] in volatile]

    def steady_unchanged():
        live = steady.get("live", ())
        return (list(map(_len, live)) == steady["lens"]
                and all(map(_is, chained(map(iter, live)), steady["keys"]))
                and all(map(_is, chained(map(values_of, live)), steady["values"])))

    state = {"reported": set()}
    # object.__hash__ is the object's address (unique among live objects, and these stay alive with
    # the collector off); unlike id() it is no audit event, and no metaclass can override it.
    addr = object.__hash__
    known_subclasses: set = set()

    def subclasses_now():
        found, todo = [], list(value_types)
        while todo:
            cls = todo.pop()
            for sub in type.__subclasses__(cls):
                found.append(sub)
                todo.append(sub)
        return found

    for cls in subclasses_now():
        known_subclasses.add(addr(cls))

    # The hooks that run, report or judge a test: where a swallowed failure would be made.
    verdict_hooks = ("pytest_runtest_", "pytest_pyfunc_call", "pytest_make", "pytest_report_", "pytest_assert",
                     "pytest_collect", "pytest_itemcollected", "pytest_exception_interact", "pytest_fixture_")

    callers_cache: dict = {}

    def hook_callers(config):
        # The verdict hooks' callers, found once (hook callers are created when specs register,
        # before collection); their implementation lists are read afresh at every check.
        if not callers_cache.get("list"):
            callers_cache["list"] = [(n, c) for n, c in _vars(config.hook).items()
                                     if hasattr(c, "get_hookimpls") and n.startswith(verdict_hooks)]
        return callers_cache["list"]

    def runtime_objects(session):
        config = session.config
        objs = {"session": session, "config": config, "pluginmanager": config.pluginmanager, "hook": config.hook}
        for name, caller in hook_callers(config):
            objs[f"hook.{name}"] = caller
            for i, impl in enumerate(caller.get_hookimpls()):
                objs[f"hookimpl.{name}.{i}"] = impl
        for item in state.get("items", ()):
            objs[f"item {item.nodeid}"] = item
        return objs

    def identities(session, item=None):
        """What must not change once collected: each hook implementation's function (added
        implementations are judged by where their code is) and each test's function (after a test
        call: that test's; at collection and at the end: all of them)."""
        ids = {}
        for name, caller in hook_callers(session.config):
            for impl in caller.get_hookimpls():
                ids[f"hook {name} {getattr(impl, 'plugin_name', '?')}"] = (impl.function,)
        for it in ([item] if item is not None else state.get("items", ())):
            # A unittest item's obj is its class's function at collection and a method bound to
            # a fresh TestCase instance while it runs: the function is what must not change.
            obj = getattr(it, "obj", None)
            ids[f"item {it.nodeid}"] = (obj.__func__ if _type(obj) is method_type else obj,)
        return ids

    def added_impl_is_foreign(key, session):
        for name, caller in hook_callers(session.config):
            for impl in caller.get_hookimpls():
                if key == f"hook {name} {getattr(impl, 'plugin_name', '?')}":
                    fn = getattr(impl.function, "__func__", impl.function)
                    code = getattr(fn, "__code__", None)
                    return code is None or not code.co_filename.startswith(trusted_dirs + ("/verifier/",))
        return True

    def shadowing(session, item=None):
        """Instance attributes that hide a method of their class (e.g. item.runtest = ...)."""
        found = []
        config = session.config
        objs = ({"session": session, "config": config, "pluginmanager": config.pluginmanager, "hook": config.hook}
                if item is not None else runtime_objects(session))
        if item is not None:
            objs[f"item {item.nodeid}"] = item
        for key, obj in objs.items():
            cls = _type(obj)
            for name in list(getattr(obj, "__dict__", {})):
                if name.startswith("__"):
                    continue
                attr = getattr(cls, name, None)
                if callable(attr) and name not in allowed_shadows.get(f"{cls.__module__}.{cls.__qualname__}", ()):
                    found.append(f"{key}.{name}")
        return found

    allowed_shadows = {}

    def take_extra(session):
        state["ids"] = identities(session)
        # What pytest itself shadows on these objects is learned once, before any test runs.
        for key, obj in runtime_objects(session).items():
            cls = _type(obj)
            names = allowed_shadows.setdefault(f"{cls.__module__}.{cls.__qualname__}", set())
            if not key.startswith("item "):
                names.update(n for n in getattr(obj, "__dict__", {}) if callable(getattr(cls, n, None)))

    def check(where, session, item=None):
        changed = []
        for key, live, before in (steady["volatile"] if steady and steady_unchanged() else watched):
            if key not in volatile and _len(live) == _len(before) and all(map(_is, live.values(), before.values())) \
                    and live.keys() == before.keys():
                continue  # the common case, at C speed
            skip = volatile.get(key, ())
            names = [n for n in set(before) | set(live) if n not in skip and n not in volatile_everywhere
                     and before.get(n, absent) is not live.get(n, absent)]
            if names:
                changed.append(f"{key}: {', '.join(_sorted(map(str, names))[:5])}")
        if session is not None and "ids" in state:
            ids = identities(session, item)
            expected = state["ids"] if item is None else {k: v for k, v in state["ids"].items()
                                                          if not k.startswith("item ") or k == f"item {item.nodeid}"}
            for k in _sorted(set(ids) | set(expected)):
                if k not in state["ids"]:
                    if added_impl_is_foreign(k, session):
                        changed.append(f"{k}: registered by code outside pytest")
                elif not same_refs(ids.get(k, ()), state["ids"][k]):
                    changed.append(f"{k}: {'removed' if k not in ids else 'replaced'}")
            changed += [f"{k}: shadows a method" for k in shadowing(session, item)]
        new = [c for c in subclasses_now() if addr(c) not in known_subclasses]
        lying = []
        for cls in new:
            known_subclasses.add(addr(cls))
            overrides = [n for n in cls.__dict__ if n in suspect]
            sources = [override_source(cls, cls.__dict__[n]) for n in overrides]
            if overrides and not all(trusted_source(s) for s in sources):
                lying.append(f"{type.__dict__['__qualname__'].__get__(cls)} overrides {_sorted(overrides)[:6]}")
        for text in changed:
            if text not in state["reported"]:
                state["reported"].add(text)
                emit("integrity", where=where, change=text)
        for text in lying:
            emit("value_type", where=where, detail=text)

    # A test that hangs fails alone, with its id, and the others keep their results: an alarm
    # interrupts the call (a BaseException, so `except Exception` in code under test does not
    # swallow it). Setup and teardown, and code stuck inside C, still fall to the run's deadline.
    import signal

    per_test_s = float(config.get("per_test_timeout_s") or 0)
    set_handler, set_timer, SIGALRM, ITIMER_REAL = signal.signal, signal.setitimer, signal.SIGALRM, signal.ITIMER_REAL

    class TestTimedOut(BaseException):
        pass

    def on_alarm(signum, frame):
        raise TestTimedOut(f"the test ran longer than its {per_test_s:g}s limit")

    class Guard:
        @pytest.hookimpl(trylast=True)
        def pytest_sessionstart(self, session):
            take_baseline()  # pytest is configured; no candidate module is imported yet

        @pytest.hookimpl(trylast=True)
        def pytest_collection_finish(self, session):
            state["items"] = list(session.items)
            check("collected", None)
            take_extra(session)
            emit("collected", count=_len(session.items), rootdir=str(session.config.rootpath),
                 ids=[i.nodeid for i in session.items])

        @pytest.hookimpl(hookwrapper=True, trylast=True)
        def pytest_runtest_call(self, item):
            # Import-time patches were checked at collection; what a test call changes shows here.
            if per_test_s:
                set_handler(SIGALRM, on_alarm)
                set_timer(ITIMER_REAL, per_test_s)
            try:
                outcome = yield
            finally:
                if per_test_s:
                    set_timer(ITIMER_REAL, 0)
            excinfo = outcome.excinfo
            emit("call", nodeid=item.nodeid, raised=None if excinfo is None else excinfo[0].__name__)
            check(f"after {item.nodeid}", item.session, item)

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(self, session, exitstatus):
            check("finished", session)
            emit("finished", exitstatus=int(exitstatus))

    return Guard()


def main():
    import os
    import sys

    emit, config = _boot()
    emit("start", cwd=os.getcwd(), argv=list(sys.argv), executable=sys.executable, ppid=os.getppid())
    import pytest

    guard = _runner_guard(config)
    try:
        code = int(pytest.main(sys.argv[1:], plugins=[guard]))
    except BaseException as exc:  # noqa: BLE001 - whatever ended the session is the record
        emit("crashed", error=type(exc).__name__)
        code = 70
    emit("exit", code=code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass
    # No atexit handler, lingering thread or finalizer of candidate code runs after the verdict.
    os._exit(code)


def _private(fn):
    """The same function with a private copy of the builtins as its globals: code under test
    may rebind builtins.any or builtins.len; functions created inside `fn` never see it."""
    import builtins
    import types

    return types.FunctionType(fn.__code__, {"__builtins__": dict(vars(builtins)), "__name__": "ra_boot"},
                              fn.__name__, fn.__defaults__, fn.__closure__)


if __name__ == "__main__":
    _boot, _runner_guard = _private(_boot), _private(_runner_guard)
    main()
