"""Hints the target-test observation may carry for a chooser: spectrum-based fault localization
and mutation analysis (the programs they run in the sandbox are in_sandbox/)."""
