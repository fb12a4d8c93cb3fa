"""The sections of report.html, a module each, in the page's order: header, charts,
tables, probes, with_probes, and per cell flame and probes; html.py assembles them."""
