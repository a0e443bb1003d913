"""`python -m simcore`: the command line, as the `simcore` command runs it."""

import sys

from simcore.cli.main import entry

sys.exit(entry())
