"""One module per `harness` verb, each with its parser setup (`add_parser`) and its handler
(`handle`); harness/cli.py assembles them."""
