"""How figures are written wherever a run is shown (the terminal tables, `harness compare`,
report.html, summary.md): numbers and units, metric labels and which metrics are shown, the
texts of intervals, ratios and p-values, and the notes on a run's gaps."""
