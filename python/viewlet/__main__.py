"""``python -m viewlet ...``: the same as the ``viewlet`` command (see viewlet.tools.cli)."""
import sys

from .tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
