"""The ground floor that the run pipeline, the probes and the reports stand on, importing
nothing of theirs: every file write (writes.py), the stop flag that SIGINT/SIGTERM/SIGHUP
raise (stop.py), and the harness process named so that a reused pid is not mistaken for it
(owner.py)."""
