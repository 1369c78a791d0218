"""The verifier's guard as a cost: the 48 tests of discount_shop under the guard (`ra_boot.py`, as a
check runs them) against plain pytest, in one hardened container, in interleaved pairs. With
`--against REF`, the guard of this tree against the guard of git REF instead. Ratios, not seconds.

    .venv/bin/python bench/bench_guard.py [--repeat 10] [--against REF]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_run import HARDENING  # noqa: E402

BOOT = {"root": "/workspace", "junit": "/tmp/junit.xml", "out_dir": "/tmp", "verifier_dir": "/verifier",
        "protected": [], "per_test_timeout_s": 60}
ARGS = ["-p", "no:cacheprovider", "-q", "--junitxml=/tmp/junit.xml", "tests"]
ENV = ["-e", "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1", "-e", "PYTHONDONTWRITEBYTECODE=1", "-e", "HOME=/tmp"]


def timed(box: str, argv: list[str], env: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(["docker", "exec", *ENV, *env, box, *argv], capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--against", metavar="REF", help="compare with the guard of git REF instead of plain pytest")
    args = parser.parse_args()
    import docker

    from repair_agent.sandbox.image import ensure_sandbox_image

    image = ensure_sandbox_image(docker.from_env())
    with tempfile.TemporaryDirectory() as tmp:
        ws, guards = Path(tmp) / "ws", Path(tmp) / "guards"
        shutil.copytree(ROOT / "sandbox_repos/discount_shop", ws)
        guards.mkdir()
        shutil.copyfile(ROOT / "verifier/boot.py", guards / "ra_boot.py")
        if args.against:
            (guards / "ra_boot_ref.py").write_bytes(subprocess.run(
                ["git", "show", f"{args.against}:verifier/boot.py"], cwd=ROOT, capture_output=True, check=True).stdout)
        subprocess.run(["chown", "-R", "10001:10001", str(ws)], check=False)
        box = subprocess.run(["docker", "run", "-d", *HARDENING, "-v", f"{ws}:/workspace", "-w", "/workspace",
                              "-v", f"{guards}:/verifier/guard:ro", image, "sleep", "infinity"],
                             capture_output=True, text=True, check=True).stdout.strip()
        boot_env = ["-e", f"RA_BOOT={json.dumps(BOOT)}"]
        guarded = ["python3", "-I", "/verifier/guard/ra_boot.py", *ARGS]
        other, other_env = ((["python3", "-I", "/verifier/guard/ra_boot_ref.py", *ARGS], boot_env) if args.against
                            else (["python3", "-I", "-m", "pytest", *ARGS], []))
        try:
            timed(box, guarded, boot_env)  # warm the page cache for both
            pairs = []
            for i in range(args.repeat):
                first, second = (timed(box, guarded, boot_env), timed(box, other, other_env)) if i % 2 == 0 else \
                    tuple(reversed((timed(box, other, other_env), timed(box, guarded, boot_env))))
                pairs.append((first, second))
        finally:
            subprocess.run(["docker", "rm", "-f", box], capture_output=True, check=False)
    name = f"the guard of {args.against}" if args.against else "plain pytest"
    print(f"48 tests, {args.repeat} interleaved pairs (this tree's guard / {name}), s:")
    print("  " + "  ".join(f"{a:.2f}/{b:.2f}" for a, b in pairs))
    print(f"  median ratio {statistics.median(a / b for a, b in pairs):.3f}x, "
          f"median difference {statistics.median(a - b for a, b in pairs):+.3f} s")


if __name__ == "__main__":
    main()
