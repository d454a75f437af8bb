"""``python -m viewlet ...``: the same as the ``viewlet`` command (see viewlet.cli)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
