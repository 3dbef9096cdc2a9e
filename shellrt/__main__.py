"""``python -m shellrt`` runs the same CLI as the ``shellrt`` console script."""

import sys

from shellrt.cli import main

if __name__ == "__main__":
    sys.exit(main())
