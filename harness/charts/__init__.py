"""The run's matplotlib charts, in one place (docs/charts.md: adding a chart).

- `workload.py`: the charts a workload's describe may ask for in `plots` (cdf,
  per_connection, series), drawn at the end of `harness run` under `<run>/plots/`;
- `report.py`: the charts report.html and summary.md open with (ratios, latency), drawn
  under `<run>/charts/` when the reports are written, and the list of them the reports read;
- `run.py`: both into a run directory, once each;
- `figures.py`: matplotlib itself, loaded on the first chart drawn.

The dashboard's charts are drawn in the browser (harness/dashboard/assets/), not here.
"""
