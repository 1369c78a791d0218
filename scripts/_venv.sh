# Sourced by scripts/demo and scripts/test: install the project into .venv when it is missing
# or pyproject.toml changed since the last install (a fresh machine has nothing installed).
if [ ! -x .venv/bin/repair-agent ] || [ pyproject.toml -nt .venv/.installed ]; then
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[test]'
  touch .venv/.installed
fi
