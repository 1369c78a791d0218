"""What comes from outside, handled in one place: text shown to a person (visible), secrets
taken out (redaction), values that cannot be trusted to read back (bounded), and host git
on repositories that are not ours (hostgit)."""
