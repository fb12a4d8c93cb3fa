"""The static dashboard of the results history (`harness dashboard`)."""
