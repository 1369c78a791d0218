"""Does pytest start with the packages pip chose? Run in the resolver's container after it installed
them. A plugin whose metadata admits a pytest it does not work with (pytest-cov 6.2 says
`pytest>=4.6` and needs pluggy 1.1) breaks every run; it is named with its version
(`ra-broken: pytest-cov==6.2.0`), so that the resolver can choose an older release.

Standard library only: it runs on whatever Python the environment has."""
from __future__ import annotations

import importlib.metadata as md
import re
import subprocess
import sys

PACKAGES = re.compile(r"/usr/local/lib/python3[.\d]*/(?:dist|site)-packages/([A-Za-z0-9_]+)")


def owner(top: str) -> md.Distribution | None:
    """The installed distribution a top-level module or package belongs to."""
    for dist in md.distributions():
        for f in dist.files or []:
            if str(f).split("/")[0].removesuffix(".py") == top:
                return dist
    return None


def main() -> int:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--version", "-p", "no:cacheprovider"], cwd="/tmp",
                          capture_output=True, text=True)
    if proc.returncode == 0:
        print("ra-step: pytest starts")
        return 0
    said = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    print("ra-error: pytest does not start with the environment's packages: " + (said[-1] if said else "no output"))
    for line in reversed(said):
        m = PACKAGES.search(line)
        dist = owner(m.group(1)) if m else None
        if dist is not None and dist.metadata["Name"]:
            print(f"ra-broken: {dist.metadata['Name']}=={dist.version}")
            break
    return 5


if __name__ == "__main__":
    sys.exit(main())
