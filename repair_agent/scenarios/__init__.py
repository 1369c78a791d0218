"""Scenarios: manifests, where they live, their fetched sources, and the corpus check."""
