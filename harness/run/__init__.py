"""The run pipeline: the plan (cells and their order) and its bounds, the runner (every repeat,
recorded in run.json), one repeat of a workload (its JSON-lines protocol) in its cgroup,
stopping on a signal, the guardian and the clean-up after a killed harness, and the progress
shown meanwhile."""
