"""What a run and a study say at the end. Public: `summary.finish_run` (summary.json and the printed summary),
`verdict.verdict` / `describe`, `plots.plot_runs` (and `make plot`), `stats` (paired and crossed intervals)."""
