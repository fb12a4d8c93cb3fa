"""The run pipeline: the plan (cells and their order), the runner (every repeat, recorded in
run.json), one repeat of a workload (its JSON-lines protocol), stopping on a signal, and the
progress shown meanwhile."""
