# Sourced by scripts/demo, scripts/lint and scripts/test: install the project into .venv when it is
# missing or pyproject.toml changed since the last install (a fresh machine has nothing installed).
# uv installs the same packages in under half of pip's time (docs/results.md); where uv cannot be
# had, or its install fails (an index only pip is configured for: uv does not read pip's
# configuration), pip installs them as before.
# The interpreter: $REPAIR_AGENT_PYTHON when set; else the system's /usr/bin/python3 when it is 3.11 or
# newer and can make a venv (a distribution's build, optimized with profiles and at link time: the
# suite's thousand Python processes cost about a fifth less CPU on it than on a plain source build such
# as pyenv's, docs/results.md); else python3.
venv_python() {
  if [ -n "${REPAIR_AGENT_PYTHON:-}" ]; then echo "$REPAIR_AGENT_PYTHON"; return; fi
  if /usr/bin/python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo /usr/bin/python3
  else
    echo python3
  fi
}
if [ ! -x .venv/bin/repair-agent ] || [ pyproject.toml -nt .venv/.installed ]; then
  "$(venv_python)" -m venv .venv
  if ! { .venv/bin/python -m pip install -q --disable-pip-version-check 'uv>=0.4' \
         && .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python -e '.[test]'; }; then
    echo "_venv.sh: no install with uv; installing with pip" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  fi
  touch .venv/.installed
fi
# The plugins of hypothesis (the test extras) and anyio (openai's HTTP client) must not autoload into the
# pytest processes the suite's local checks start from this interpreter: see the script's docstring.
# Once per install (a marker newer than the install says it is done), not a Python start per command.
if [ ! .venv/.no-unused-pytest-plugins -nt .venv/.installed ]; then
  .venv/bin/python scripts/_no_unused_pytest_plugins.py && touch .venv/.no-unused-pytest-plugins
fi
