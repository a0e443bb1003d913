"""The `simcore` command line."""
