"""The ground floor that the run pipeline, the probes and the reports stand on, importing
nothing of theirs: every file write (writes.py) and the stop flag that SIGINT/SIGTERM/SIGHUP
raise (stop.py)."""
