"""Results history: every run's figures in one database (SQLite or PostgreSQL), change-point
detection over them, events to triage and their acknowledgements."""
