"""`harness bisect` and `harness run --rev A --rev B`: builds of a suite at git revisions, each
in a worktree of its own, measured against each other interleaved and paired by round."""
