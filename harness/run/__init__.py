"""The run pipeline, above the probes (it imports them, they import nothing of it): the plan
(cells and their order) and its bounds, the runner (every repeat, recorded in run.json), one
repeat of a workload (its JSON-lines protocol) in its cgroup, the guardian and the clean-up
after a killed harness, and the progress shown meanwhile. The stop flag, the file writes and
the owner are below both, in harness/base/."""
