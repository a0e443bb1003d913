"""The test suite: a package, so that no installed `tests` package can stand in for it."""
