"""The `simcore` command line: `main` assembles the parser from one module per command
group (`traces`, `simulation`, `sweep`, `inspection`, `machines`, `studies`), each adding
its commands and thin handlers; `common` holds what they share."""
