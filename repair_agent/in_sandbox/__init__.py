"""Programs that run inside the agent's sandbox, kept as real modules so that linters, type checkers
and tests see them: spectrum.py (the traced pytest run of localization.py) and mutants.py (the
mutation analysis of mutation.py, run after it in the same process).

They run on whatever Python the sandbox has (3.9 to 3.13): the standard library and pytest only, no
syntax newer than 3.9, no import of the project, and nothing runs when they are imported (the host
imports them: localization.ochiai is spectrum.ochiai, and the tests call their pure functions).
`program` builds what the sandbox runs as `python -B -c PROGRAM ARGS_JSON` from their source text,
and `packed` makes it short enough for one argument.
"""
from __future__ import annotations

import base64
import functools
import zlib
from importlib import resources

# The name each shipped module has in the sandbox is this prefix and its own name (`ra_mutants`): a
# sibling imports it so there (operators.py imports `ra_statement_edits`).
SHIPPED_PREFIX = "ra_"
# Each module runs as a module of its own (its own globals) under one of these names, compiled
# under a file name in angle brackets, which the tracer never records.
_LOADER = '''import sys, types


def _ra_load(name, source):
    module = types.ModuleType(name)
    sys.modules[name] = module   # dataclasses look their module up there
    exec(compile(source, "<" + name + ">", "exec"), module.__dict__)
    return module


'''


def source(name: str) -> str:
    """The source text of one of this package's modules (`spectrum`, `mutants`)."""
    return resources.files(__package__).joinpath(f"{name}.py").read_text(encoding="utf-8")


def program(modules: tuple[str, ...], call: str) -> str:
    """Python source for `python -c`: each of `modules` loaded (as `ra_<name>`, bound to `<name>`),
    then the one-line `call`, e.g. `mutants.main(spectrum.main(sys.argv[1]))`."""
    loads = "".join(f"{name} = _ra_load({SHIPPED_PREFIX + name!r}, {source(name)!r})\n" for name in modules)
    return _LOADER + loads + call + "\n"


@functools.lru_cache(maxsize=None)
def packed(program_text: str) -> str:
    """`program_text` as the short `-c` text that runs it: compressed, since the kernel refuses one
    argument longer than 128 KiB (MAX_ARG_STRLEN) and the mutation analysis's modules together are
    longer. It runs as `-c` text does, under the file name `<string>`."""
    data = base64.b85encode(zlib.compress(program_text.encode("utf-8"), 9)).decode("ascii")
    return ("import base64, zlib; exec(compile(zlib.decompress(base64.b85decode(%r)).decode('utf-8'), "
            "'<string>', 'exec'))\n" % data)
