"""The search chooser without the mutation analysis: a plug-in for bench_mutation.py's pairs."""
from __future__ import annotations

from repair_agent.choosers.search import SearchChooser


class Search(SearchChooser):
    name = "search-no-mutation"
    mutation_analysis = False
