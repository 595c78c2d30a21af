"""Outcomes and scores added after the import: a results file keyed by external id (SWE-bench's run report
or per-instance report.json, or a CSV/JSONL of `external_id, outcome, score, ...`) sets the outcome, score and
metadata of a project's traces, all or nothing. `parse` is pure (bytes in, records out); `service` applies
them; `views`, `api` and the `import_outcomes` command are its three doors."""
