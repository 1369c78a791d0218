"""Every relative link in README.md and docs/ leads somewhere: the file exists and, when the link
names a heading (`page.md#anchor`), the page has that heading, spelled as GitHub spells anchors."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def outside_fences(text: str) -> list[str]:
    """The lines outside fenced code blocks (CommonMark: a backtick fence's info string holds no
    backtick, so a line opening with inline code such as ```` ```json ```` opens no fence)."""
    lines: list[str] = []
    fence = ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not match.group(2).strip():
                fence = ""
        elif match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            fence = match.group(1)
        else:
            lines.append(line)
    return lines


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, inline code spans blanked."""
    return [INLINE_CODE.sub("", line) for line in outside_fences(text)]


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"[^\w\- ]", "", text.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in outside_fences(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if match:
            base = github_anchor(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def doc_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def broken_links(page: Path) -> list[str]:
    broken = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            if not dest.exists():
                broken.append(f"{target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                shown = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest
                broken.append(f"{target}: no heading with that anchor in {shown}")
    return broken


def test_the_anchor_of_a_heading_is_spelled_as_github_spells_it() -> None:
    assert github_anchor("`run --repo`: repair your own repository") == "run---repo-repair-your-own-repository"
    assert github_anchor("6. Behaviour checks decide `correct`, and a chooser never sees them (`heldout.py`)") \
        == "6-behaviour-checks-decide-correct-and-a-chooser-never-sees-them-heldoutpy"
    assert github_anchor("Tokens and `--max-tokens`") == "tokens-and---max-tokens"


def test_a_missing_file_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# Title\n\n## A part\n\n```\n# not a heading\n```\n"
                                       "```` ```json ```` opens no fence\n\n## After it\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-part) [ok too](there.md#after-it) [gone](missing.md) [no](there.md#not-a-heading)\n"
                    "`[code](missing.md)`\n\n```\n[fenced](missing.md)\n```\n[web](https://example.com/x)\n")
    assert broken_links(page) == ["missing.md: no such file",
                                  f"there.md#not-a-heading: no heading with that anchor in {tmp_path / 'there.md'}"]


def test_every_relative_link_in_the_docs_leads_somewhere() -> None:
    problems = {str(page.relative_to(ROOT)): broken for page in doc_pages() if (broken := broken_links(page))}
    assert problems == {}
