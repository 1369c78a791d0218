"""report.html and summary.html, opened in a real headless Chromium.

The DOM Chromium hands back (`--dump-dom`, serialised after the page's scripts would have run) is
what the checks read: the Uₜ plot has one linked point per step, the diff is there with line
numbers, and nothing a run wrote executed or became an element. A screenshot must not be blank.
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

import hostile_choosers as h
from helpers import import_required, skip_unless_present
from repair_agent.choosers import load_chooser
from repair_agent.reports import html_page
from repair_agent.reports.html_report import render_run_html
from repair_agent.sweep.html import render_sweep_html
from repair_agent.sweep import SweepSummary
from repair_agent.reports.records import Report
from repair_agent.lifecycle.run import execute_run
from repair_agent.scenarios.scenario import resolve
from repair_agent.loop.state import StopReason

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = Path(html_page.__file__).parent / "templates"


# -- Chromium --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a chromium binary; installed with scripts/_browser.sh when missing."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        setup = subprocess.run([str(ROOT / "scripts" / "_browser.sh")], capture_output=True, text=True)
        found = setup.stdout.strip().splitlines()[-1] if setup.returncode == 0 and setup.stdout.strip() else None
        if not found:
            reason = f"no chromium and scripts/_browser.sh could not install it: {setup.stderr.strip()[-800:]}"
            skip_unless_present(reason)
    return found


def _chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    # A profile per call: parallel test sessions on one machine must not share Chromium's lock.
    return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--no-first-run", f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def dump_dom(binary: str, page: Path, tmp: Path) -> str:
    done = _chromium(binary, tmp / f"profile-dom-{page.stem}", "--dump-dom", page.as_uri())
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def screenshot(binary: str, page: Path, out: Path, size: str = "1000,700") -> Path:
    done = _chromium(binary, out.parent / f"profile-shot-{out.stem}", f"--screenshot={out}",
                     f"--window-size={size}", page.as_uri())
    assert done.returncode == 0 and out.is_file(), done.stderr[-2000:]
    return out


def png_colours(path: Path) -> int:
    """Distinct pixel colours of an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes), stdlib only."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour_type in (2, 6) and interlace == 0, (depth, colour_type, interlace)
            bpp = 3 if colour_type == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * bpp
    previous, colours = bytearray(stride), set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + previous[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a, b = (line[i - bpp] if i >= bpp else 0), previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colours.update(bytes(line[i:i + bpp]) for i in range(0, stride, bpp))
        previous = line
    return len(colours)


class Dom(HTMLParser):
    """Every element with its attributes, the title, and the page's text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.title, self.text, self._in_title = "", [], False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict((k, v or "") for k, v in attrs)))
        # The document's title is the first <title>; the SVG's tooltips are <title>s too.
        self._in_title = tag == "title" and sum(t == "title" for t, _ in self.elements) == 1

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        self.text.append(data)

    def find(self, tag: str, cls: str | None = None) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and (cls is None or cls in a.get("class", "").split())]

    @property
    def all_text(self) -> str:
        return "".join(self.text)


def assert_nothing_from_the_run_ran(dom: Dom, run_id: str) -> None:
    assert dom.title == f"repair-agent run {run_id}", dom.title  # a payload would have set it
    assert not dom.find("script"), "a <script> element is in the page"
    assert not dom.find("img"), "an <img> element is in the page"
    handlers = [(t, k) for t, a in dom.elements for k in a if k.startswith("on")]
    assert not handlers, f"event handler attributes in the page: {handlers}"
    assert not [t for t, _ in dom.elements if t == "svg"][1:], "an <svg> beyond the Uₜ plot"


def assert_plot_matches_steps(dom: Dom, report: Report) -> None:
    points = dom.find("circle", "u-point")
    rows = dom.find("tr", "step-row")
    assert len(points) == len(rows) == report.steps_used == len(report.steps) > 0
    assert [int(p["data-u"]) for p in points] == report.u_trajectory[1:]
    links = [a["href"] for a in dom.find("a", "u-link")]
    assert links == [f"#step-{s.step}" for s in report.steps]
    assert {f"#{r['id']}" for r in rows} == set(links)  # every point lands on its row


# -- a real run, baseline chooser -------------------------------------------------------------------

@pytest.fixture(scope="module")
def baseline_run(docker_client, sandbox_image, tmp_path_factory):
    scenario = resolve("discount-bug")
    record = execute_run(scenario, load_chooser("baseline", scenario), backend="docker",
                         runs_dir=tmp_path_factory.mktemp("html") / "runs", client=docker_client)
    assert record.status is StopReason.AWAITING_RELEASE_CONFIRMATION, record.detail
    return record


@pytest.mark.docker
@pytest.mark.browser
def test_report_of_a_real_run_in_chromium(baseline_run, chromium, tmp_path):
    run_dir = Path(baseline_run.run_dir)
    page = run_dir / "report.html"
    report = Report.model_validate_json((run_dir / "report.json").read_text())
    dom = Dom(dump_dom(chromium, page, tmp_path))

    assert_nothing_from_the_run_ran(dom, baseline_run.run_id)
    assert_plot_matches_steps(dom, report)
    assert dom.find("circle", "u-start")  # U₀, drawn apart from the steps
    # The diff: the removed and the added line, each with its line number.
    text = dom.all_text
    assert "-    discounted = price * (1 - discount)" in text and "+    discounted = price * (1 - discount / 100)" in text
    assert len(dom.find("tr", "add")) == len(dom.find("tr", "del")) == 1
    html = dump_dom(chromium, page, tmp_path)
    assert re.search(r'<tr class="del"><td class="ln">37</td><td class="ln"></td><td class="code">-\s+discounted', html)
    assert re.search(r'<tr class="add"><td class="ln"></td><td class="ln">37</td><td class="code">\+\s+discounted', html)
    # Syntax colour from pygments tokens (the fix's `/` and `100`), each piece still plain escaped text.
    assert re.search(r'<tr class="add">.*?<span class="tk-o">/</span> <span class="tk-m">100</span>\)</td>', html)
    assert {a.get("class") for t, a in dom.elements if t == "span" and a.get("class", "").startswith("tk-")} <= {
        "tk-c", "tk-s", "tk-m", "tk-k", "tk-nf", "tk-nb", "tk-o"}
    # Every verdict with its diff hash; every protected file with its hash.
    assert len(dom.find("tr", "verdict")) == len(report.verdicts) == 3
    assert report.diff_sha256 in text and report.protected_manifest_sha256 in text
    assert all(path in text and digest in text for path, digest in report.protected_files_sha256.items())
    # The exact commands a person runs to decide.
    assert f"repair-agent release {run_dir} --confirm" in text
    assert f"repair-agent release {run_dir} --reject --reason" in text

    shot = screenshot(chromium, page, tmp_path / "report.png")
    colours = png_colours(shot)
    print(f"report.html screenshot: {colours} distinct colours")
    assert colours > 50, f"the screenshot looks blank ({colours} colours)"


@pytest.mark.docker
def test_rendering_costs_little_next_to_a_run(baseline_run):
    """How long rendering report.html takes relative to the run it reports."""
    run_dir = Path(baseline_run.run_dir)
    report = Report.model_validate_json((run_dir / "report.json").read_text())
    timings = []
    for _ in range(5):
        t0 = time.perf_counter()
        render_run_html(report)
        timings.append(time.perf_counter() - t0)
    ratio = statistics.median(timings) / baseline_run.wall_s
    print(f"render report.html: median {statistics.median(timings) * 1000:.1f} ms; run {baseline_run.wall_s:.2f} s; "
          f"ratio {ratio:.4f}")
    assert ratio < 0.1


@pytest.mark.docker
def test_show_html_prints_the_path_and_open_uses_the_system_browser(baseline_run, tmp_path):
    run_dir = Path(baseline_run.run_dir)
    (run_dir / "report.html").unlink()  # rendered again from report.json
    cli = [sys.executable, "-m", "repair_agent.cli", "show", str(run_dir)]
    shown = subprocess.run([*cli, "--html"], capture_output=True, text=True, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip() == str(run_dir / "report.html") and (run_dir / "report.html").is_file()

    # A "system browser" that records what it was asked to open (webbrowser honours $BROWSER).
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\necho \"$1\" > {opened}\n")
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": f"{browser} %s"}
    done = subprocess.run([*cli, "--open"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    assert opened.read_text().strip() == (run_dir / "report.html").as_uri()

    # No display, no $BROWSER, no console browser on PATH: it says so (and still printed the path).
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "git").symlink_to(shutil.which("git"))  # gitpython needs git at import time
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    done = subprocess.run([*cli, "--open"], capture_output=True, text=True, cwd=ROOT, env={**env, "PATH": str(bare)})
    assert done.returncode == 1 and done.stdout.strip() == str(run_dir / "report.html")
    assert "no system browser found" in done.stderr


def test_a_run_that_never_started_still_gets_a_page(tmp_path, runs_dir):
    """No engine: the run ends dependency_failure before any step; the page says so and has no step point."""
    import docker

    dead = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41", timeout=2)
    scenario = resolve("discount-bug")
    record = execute_run(scenario, load_chooser("baseline", scenario), runs_dir=runs_dir, client=dead)
    assert record.status is StopReason.DEPENDENCY_FAILURE
    html = (Path(record.run_dir) / "report.html").read_text()
    assert "No step was taken" in html and 'class="u-point"' not in html and 'class="u-start"' in html
    assert "dependency_failure" in html and "no-engine.sock" in html and "No changes." in html


# -- a hostile chooser's run -----------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.browser
def test_hostile_run_report_shows_markup_as_text(docker_client, sandbox_image, runs_dir, chromium, tmp_path):
    record = execute_run(resolve("discount-bug"), h.HtmlInjection(), backend="docker", runs_dir=runs_dir,
                         client=docker_client)
    assert record.status is h.HtmlInjection.expected, record.detail
    run_dir = Path(record.run_dir)
    report = Report.model_validate_json((run_dir / "report.json").read_text())
    raw_html = (run_dir / "report.html").read_text()
    assert "<script>document.title" not in raw_html and "&lt;script&gt;document.title=" in raw_html

    dom = Dom(dump_dom(chromium, run_dir / "report.html", tmp_path))
    assert_nothing_from_the_run_ran(dom, record.run_id)
    assert_plot_matches_steps(dom, report)
    text = dom.all_text
    for payload in h.HTML_PAYLOADS:  # shown verbatim, as text: in the diff and in what read_file returned
        assert text.count(payload) >= 2, payload
    assert len(dom.find("tr", "add")) == 5  # the diff is still there: four comment lines and the fix
    assert f"+    # {h.HTML_PAYLOADS[0]}" in text
    assert any(f.kind == "pseudo_completion" for f in report.faults) and dom.find("li", "fault")

    colours = png_colours(screenshot(chromium, run_dir / "report.html", tmp_path / "hostile.png"))
    assert colours > 50, f"the screenshot looks blank ({colours} colours)"


@pytest.mark.browser
def test_the_payloads_would_run_if_they_were_not_escaped(chromium, tmp_path):
    """The control for the check above: the same payloads written raw do run and do inject."""
    page = tmp_path / "raw.html"
    page.write_text("<!DOCTYPE html><html><head><title>repair-agent run control</title></head><body><pre>"
                    + "\n".join(h.HTML_PAYLOADS) + "</pre></body></html>")
    dom = Dom(dump_dom(chromium, page, tmp_path))
    assert dom.title.startswith("pwned")
    assert dom.find("script") and dom.find("img")


# -- the sweep summary -----------------------------------------------------------------------------

def sweep_summary(tmp_path: Path) -> tuple[SweepSummary, Path]:
    out_dir = tmp_path / "sweep"
    runs = []
    for i, (chooser, budget, status) in enumerate([("baseline", 4, "step_budget"),
                                                    ("baseline", 8, "awaiting_release_confirmation"),
                                                    ("model", 8, "handoff_requested")]):
        run_dir = out_dir / "runs" / f"run-{i}"
        run_dir.mkdir(parents=True)
        (run_dir / "report.html").write_text(f"<!DOCTYPE html><title>run {i}</title><p>run {i}</p>")
        runs.append({"scenario": "discount-bug", "chooser": chooser, "budget": budget, "seed": i, "status": status,
                     "run_dir": str(run_dir)})
    runs.append({"scenario": "discount-bug", "chooser": "<script>document.title='pwned'</script>", "budget": 8,
                 "seed": 9, "status": "deadline", "run_dir": "javascript:document.title='pwned'"})
    cell = {"scenario_group": "pricing", "n": 5, "median_steps": 6.0, "median_tokens": 0, "median_wall_s": 4.2}
    cells = [{**cell, "chooser": "baseline", "budget": 4, "success_rate": 0.0, "band": 0.3,
              "exits": {"step_budget": 5}},
             {**cell, "chooser": "baseline", "budget": 8, "success_rate": 1.0, "band": 0.3,
              "exits": {"awaiting_release_confirmation": 5}},
             {**cell, "chooser": "model", "budget": 8, "success_rate": 0.8, "band": 0.35,
              "exits": {"awaiting_release_confirmation": 4, "handoff_requested": 1}}]
    comparisons = [{"scenario_group": "pricing", "a": "baseline@8", "b": "model@8", "metric": "success_rate",
                    "difference": 0.2, "band": 0.46, "verdict": "unmeasured"},
                   {"scenario_group": "pricing", "a": "baseline@8", "b": "baseline@4", "metric": "success_rate",
                    "difference": 1.0, "band": 0.42, "verdict": "a better"}]
    # As an older sweep wrote summary.json (cells without seeds or intervals), read through the same shape.
    return SweepSummary.model_validate({"cells": cells, "comparisons": comparisons, "runs": runs}), out_dir


@pytest.mark.browser
def test_sweep_summary_in_chromium(chromium, tmp_path):
    summary, out_dir = sweep_summary(tmp_path)
    page = render_sweep_html(summary, out_dir)
    assert page == out_dir / "summary.html"
    dom = Dom(dump_dom(chromium, page, tmp_path))

    assert dom.title == "repair-agent sweep summary" and not dom.find("script")
    assert len(dom.find("circle", "cell-point")) == 3
    # Both cells of the unmeasured comparison are marked, in the plot and in the table; the other is not.
    assert len(dom.find("circle", "unmeasured-point")) == 2
    assert len(dom.find("tr", "unmeasured")) == 2 + 1  # two cells and the comparison
    assert len(dom.find("line", "band")) == 3
    assert not dom.find("img")  # the chart is the inline SVG, the one chart a sweep draws
    links = [a["href"] for a in dom.find("a", "run-link")]
    assert len(links) == 4
    for href in links[:3]:  # relative links that land on each run's report.html
        assert (out_dir / href).resolve().is_file(), href
    assert ":" not in links[3] and "<script>document.title='pwned'</script>" in dom.all_text  # no scheme, as text

    colours = png_colours(screenshot(chromium, page, tmp_path / "sweep.png"))
    assert colours > 30, f"the screenshot looks blank ({colours} colours)"


@pytest.mark.browser
def test_sweep_summary_shows_intervals_resolution_and_paired_verdicts_in_chromium(chromium, tmp_path):
    """A summary the sweep's own code computed from results lines: 28 scenarios, 3 seeds, two choosers."""
    from repair_agent.sweep import summarize
    from helpers import SCENARIOS, cell_lines

    summary = summarize(cell_lines("a", set(SCENARIOS[:21])) + cell_lines("b", set(SCENARIOS[:22])))
    # The explanation's **term** markup is the only markup honoured; anything else in it stays text.
    summary.explanation += " **<script>document.title='pwned'</script>** <img src=x>"
    page = render_sweep_html(summary, tmp_path)
    dom = Dom(dump_dom(chromium, page, tmp_path))
    assert dom.title == "repair-agent sweep summary" and not dom.find("script") and not dom.find("img")
    assert "<script>document.title='pwned'</script>" in dom.all_text
    assert len(dom.find("b")) >= 8  # the terms of the explanation, bolded
    assert len(dom.find("line", "interval")) == 2 and len(dom.find("line", "interval-cap")) == 4
    assert [td for td in dom.find("td", "resolution")] and "1/28 = 0.036" in dom.all_text
    assert "0.57–0.87" in dom.all_text and "0.60–0.90" in dom.all_text  # 21 and 22 of 28
    assert "1 higher, 0 lower of 28; p = 1.000" in dom.all_text and "not clear of sampling" in dom.all_text
    assert "66 green: 66 correct, 0 plausible only, 0 unchecked" in dom.all_text
    assert not dom.find("p", "note")  # three seeds: a band exists


def test_sweep_summary_tolerates_missing_keys(tmp_path):
    """A summary.json from an older sweep reads through the same shape and loses sections, not the page."""
    empty = render_sweep_html(SweepSummary.model_validate({}), tmp_path).read_text()
    assert "no cells, comparisons or runs" in empty
    partial = render_sweep_html(SweepSummary.model_validate({"cells": [{"chooser": "baseline", "budget": 8}]}),
                                tmp_path)
    html = partial.read_text()
    assert 'id="cell-table"' in html and 'id="sweep-plot"' not in html
    assert 'id="run-table"' not in html and 'id="comparison-table"' not in html


def test_templates_never_mark_text_safe():
    """Autoescaping is the only defence the templates need, so nothing may switch it off."""
    for template in TEMPLATES.glob("*.j2"):
        text = template.read_text()
        for forbidden in ("|safe", "| safe", "autoescape false", "Markup"):
            assert forbidden not in text, f"{template.name} uses {forbidden}"
    source = Path(html_page.__file__).read_text()
    assert "autoescape=True" in source and "Markup" not in source


def test_templates_ship_with_the_package(tmp_path):
    """An installed (non-editable) package has no source tree: the templates must be package data."""
    import_required("setuptools")
    done = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py",
                           "--build-lib", str(tmp_path / "lib")], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shipped = {p.name for p in (tmp_path / "lib" / "repair_agent" / "reports" / "templates").glob("*.j2")}
    assert shipped == {p.name for p in TEMPLATES.glob("*.j2")} and "report.html.j2" in shipped
