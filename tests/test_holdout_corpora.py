"""The held-out corpora (sandbox_repos/holdout and sandbox_repos/holdout2): bugs injected into
PyPI projects no chooser was developed on, each built without reading the search chooser or the
other corpora's bugs, for judging a chooser. Both are held to the same checks
(tests/heldout_corpora.py)."""
from __future__ import annotations

import pytest
from heldout_corpora import (CORPORA, assert_goals_describe_symptoms_not_the_fix,
                             assert_kinds_mixed_and_some_fixes_add_lines, assert_no_shared_project_and_not_discovered,
                             assert_pinned_tagged_and_mirrored)

from repair_agent.scenarios.scenario import SCENARIO_PATH_ENV

HELD_OUT = ["holdout", "holdout2"]
each = pytest.mark.parametrize("name", HELD_OUT)


@each
def test_the_corpus_is_pinned_tagged_and_each_fix_mirrors_its_bug(name):
    assert_pinned_tagged_and_mirrored(CORPORA / name, f"corpus:{name}")


@each
def test_the_corpus_mixes_bug_kinds_and_needs_more_than_one_line_sometimes(name):
    assert_kinds_mixed_and_some_fixes_add_lines(CORPORA / name)


@each
def test_the_goals_describe_symptoms_not_the_fix(name):
    assert_goals_describe_symptoms_not_the_fix(CORPORA / name)


@each
def test_the_corpus_shares_no_project_with_the_others_and_is_not_discovered_by_default(name, monkeypatch):
    monkeypatch.delenv(SCENARIO_PATH_ENV, raising=False)
    others = [CORPORA / other for other in ["real", "dev", *HELD_OUT] if other != name]
    assert_no_shared_project_and_not_discovered(CORPORA / name, others)
