"""Mutant scenarios for tuning a chooser: the command line of repair_agent/importers/mutants.py
(`--help` there says what it generates and how it checks each mutant).

    .venv/bin/python bench/mutants.py --per-project 12 --seed 0 --out /tmp/mutants
    .venv/bin/python bench/mutants.py --projects iniconfig --per-project 4 --seed 1 --out /tmp/m
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repair_agent.importers.mutants import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
