"""The loop: the controller, the actions a chooser may propose, the state and the View it
reads, the executor's tools, the journal the loop writes and what it ends with. It imports
nothing of a run's lifecycle (lifecycle/) or of the reports (tests/test_structure.py)."""
