"""Tools above the library: seed-study analogues, the menu search, benchmarks and probes."""
