"""Importers: scenarios from standard task formats (SWE-bench-style JSONL), from real fix commits, and
generated one-token bugs in the corpora's projects (mutants.py, for tuning)."""
