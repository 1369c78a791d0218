"""What a run's records say and how a person reads them: run.json and the Report model, the
faults the journal shows, the Markdown and HTML renderings and their templates."""
