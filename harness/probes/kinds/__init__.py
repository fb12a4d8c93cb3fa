"""One module per probe kind, each declaring a `KIND` (see harness/probes/kind.py); the
registry lists them."""
