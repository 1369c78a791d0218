"""The code gate (verifier/gate.py) over every reference fix of every corpus: honest fixes should
produce no finding, and reading one should take milliseconds.

    python bench/gate_corpus.py [--corpus NAME ...] [--repeat 3]

For each `*.scenario.toml` with a `reference_fix` (the home corpus `sandbox_repos/*.scenario.toml`
and every directory below `sandbox_repos/` that holds manifests), the scenario is materialized as a
run would see it (`repair_agent.scenarios.scenario.load_manifest`: its repository, with its `bug_patch`
applied; a `[source] pypi` sdist fetched and sha256-verified into the cache), and the fix is
reviewed against that tree. Prints, per corpus, how many fixes have findings and each finding, then
the median and the slowest review in milliseconds (the pristine index built beforehand, as a run
holds it; each fix reviewed `--repeat` times, its fastest time counted).

Where PyPI's JSON API is out of reach (some mirrors serve only what pip asks for), a source is
fetched with `pip download --no-deps --no-binary :all:` and verified against the manifest's sha256
before it is unpacked the way the project unpacks sdists.
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repair_agent.scenarios import scenario as scenario_module  # noqa: E402
from repair_agent.resources import build_once  # noqa: E402
from repair_agent.scenarios.sources import SourceError, SourceSection, fetch_source, unpack_sdist  # noqa: E402
from verifier.gate import PristineIndex, review  # noqa: E402

CORPORA = ROOT / "sandbox_repos"


def fetch_with_pip(source: SourceSection, manifest_dir: Path, cache: Path) -> Path:
    """The project's fetch_source, and pip's download of the same pinned sdist when that fails."""
    try:
        return fetch_source(source, manifest_dir, cache)
    except SourceError:
        if not source.pypi:
            raise
    target = cache / "sources" / "pip" / (source.sha256 or "")[:16] / source.pypi.replace("==", "-")

    def fetch(tree: Path) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary",
                                   ":all:", "-d", tmp, source.pypi or ""], capture_output=True, text=True, timeout=600)
            archives = list(Path(tmp).iterdir())
            if proc.returncode or len(archives) != 1:
                raise SourceError(f"pip download {source.pypi}: {proc.stderr.strip()[-300:]}")
            digest = hashlib.sha256(archives[0].read_bytes()).hexdigest()
            if digest != source.sha256:
                raise SourceError(f"{archives[0].name}: sha256 {digest}, the manifest pins {source.sha256}")
            unpack_sdist(archives[0], tree)

    return build_once(target, fetch)


def corpora() -> dict[str, list[Path]]:
    found = {"home": sorted(CORPORA.glob("*.scenario.toml"))}
    for directory in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
        manifests = sorted(directory.glob("*.scenario.toml"))
        if manifests:
            found[directory.name] = manifests
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", help="only these corpora (home, real, dev, ...)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    scenario_module.fetch_source = fetch_with_pip  # type: ignore[attr-defined]
    times: list[float] = []
    total = flagged = 0
    for corpus, manifests in corpora().items():
        if args.corpus and corpus not in args.corpus:
            continue
        lines, with_findings, count = [], 0, 0
        for manifest in manifests:
            try:
                scenario = scenario_module.load_manifest(manifest)
            except scenario_module.ManifestError as exc:
                lines.append(f"  {manifest.name}: not loaded: {exc}")
                continue
            if scenario.reference_fix is None:
                continue
            count += 1
            # Bytes, not read_text(): universal newlines would turn a CRLF project's fix into LF lines.
            diff = scenario.reference_fix.read_bytes().decode("utf-8", errors="surrogateescape")
            index = PristineIndex.cached(scenario.repo, scenario.spec)
            best = float("inf")
            for _ in range(max(1, args.repeat)):
                start = time.perf_counter()
                verdict = review(diff, scenario.repo, scenario.spec, index=index)
                best = min(best, (time.perf_counter() - start) * 1000)
            times.append(best)
            if verdict.files_read == 0:
                lines.append(f"  {scenario.name}: the fix read no file (does it apply?)")
            if verdict.findings:
                with_findings += 1
                for f in verdict.findings:
                    lines.append(f"  {scenario.name}: {f.rule} {f.path}:{f.line} {f.construct}  |  {f.snippet}")
        total += count
        flagged += with_findings
        print(f"{corpus}: {with_findings} of {count} reference fixes with findings")
        for line in lines:
            print(line)
    if times:
        print(f"all: {flagged} of {total} reference fixes with findings; review median {statistics.median(times):.1f} ms, "
              f"slowest {max(times):.1f} ms")
    return 0 if flagged == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
