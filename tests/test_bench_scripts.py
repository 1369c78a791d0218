"""Every benchmark script still imports and reads its command line (`--help`): a rename in the
package otherwise breaks a script nobody runs until the next measurement. What the scripts
measure is run by hand (bench/README.md), not here."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("*.py") if "ArgumentParser(" in p.read_text())


def test_the_scripts_are_found():
    assert len(SCRIPTS) >= 12 and ROOT / "bench" / "bench_run.py" in SCRIPTS, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_script_imports_and_reads_its_arguments(script):
    proc = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("usage:"), proc.stdout[-1000:] + proc.stderr[-2000:]
