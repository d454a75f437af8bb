"""Calculus unit tests: pure Python. The source tree and the compiler tests' helpers (to
compile views for the round-trip tests) on sys.path."""
import os
import sys

_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
for _path in (os.path.join(_ROOT, "python"), os.path.join(_ROOT, "tests", "compiler"), _ROOT):
    if _path not in sys.path:
        sys.path.insert(0, _path)
