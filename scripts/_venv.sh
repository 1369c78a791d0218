# Sourced by scripts/demo, scripts/lint and scripts/test: install the project into .venv when it is
# missing or pyproject.toml changed since the last install (a fresh machine has nothing installed).
if [ ! -x .venv/bin/repair-agent ] || [ pyproject.toml -nt .venv/.installed ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  touch .venv/.installed
fi
# The test extras' hypothesis must not autoload its pytest plugin into the pytest processes the
# suite's local checks start from this interpreter (~0.6 s each): see the script's docstring.
# Once per install (a marker newer than the install says it is done), not a Python start per command.
if [ ! .venv/.no-hypothesis-plugin -nt .venv/.installed ]; then
  .venv/bin/python scripts/_no_hypothesis_plugin.py && touch .venv/.no-hypothesis-plugin
fi
