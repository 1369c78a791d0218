"""Programs run inside an environment's build or resolver container (copied to /ra-build), kept as
real modules so that linters, type checkers and tests see them."""
