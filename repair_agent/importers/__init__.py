"""Importers: scenarios from standard task formats (SWE-bench-style JSONL) and from real fix commits."""
