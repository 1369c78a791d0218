"""Sandbox costs: container start, one exec, pytest of the 48 tests in the container, each as a
ratio to the same pytest run directly on the host. Ratios, not seconds: these machines are noisy.

    .venv/bin/python bench/bench_sandbox.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.sandbox import DockerSandbox, create_workspace  # noqa: E402
from repair_agent.sandbox.image import ensure_sandbox_image  # noqa: E402

PYTEST = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    client = docker.from_env()
    image = ensure_sandbox_image(client)
    host_pytest, start, exec_one, in_container = [], [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "workspace"
            base = create_workspace(ROOT / "sandbox_repos/discount_shop", ws)
            host_pytest.append(timed(lambda: subprocess.run([sys.executable, *PYTEST[1:]], cwd=ws,
                                                            capture_output=True, env={"PYTHONDONTWRITEBYTECODE": "1"})))
            box = None

            def make():
                nonlocal box
                box = DockerSandbox(client, image, ws, base, run_id="bench", output_dir=Path(tmp) / "out")

            start.append(timed(make))
            try:
                exec_one.append(timed(lambda: box.run(["true"])))
                in_container.append(timed(lambda: box.run(PYTEST, timeout_s=120)))
            finally:
                box.close()
    host = statistics.median(host_pytest)
    rows = [("host pytest (48 tests)", host), ("container start", statistics.median(start)),
            ("one exec (true)", statistics.median(exec_one)),
            ("pytest (48 tests) in container", statistics.median(in_container))]
    print(f"median of {args.repeat}; ratios to host pytest of the same 48 tests")
    for name, value in rows:
        print(f"  {name:<32} {value:7.3f}s  {value / host:5.2f}x")


if __name__ == "__main__":
    main()
