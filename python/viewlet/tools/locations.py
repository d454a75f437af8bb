"""Where a source checkout's files are, and the copies an installed package ships."""
from pathlib import Path

#: python/viewlet (in a checkout) or site-packages/viewlet (installed)
PACKAGE_DIR = Path(__file__).resolve().parents[1]
#: the repository root when the package runs from a checkout (else a directory without sql/)
CHECKOUT_DIR = PACKAGE_DIR.parents[1]
#: the view definitions setup.py ships with an installed package (sql/ of the checkout)
EXAMPLES_DIR = PACKAGE_DIR / "examples"
