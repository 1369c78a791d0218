"""A run's lifecycle: a fresh run, its session (engine, sandbox, verifier), what it leaves in its
directory, its seal, resuming it, and the release a person decides."""
