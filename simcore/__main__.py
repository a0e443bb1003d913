"""`python -m simcore`: the command line, as the `simcore` command runs it."""

import sys

from simcore.cli.main import entry

if __name__ == "__main__":  # not in a worker process started by spawning (`fidelity.fit`)
    sys.exit(entry())
