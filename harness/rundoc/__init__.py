"""run.json: its model, its JSON Schema, and the one way to read and write it."""
