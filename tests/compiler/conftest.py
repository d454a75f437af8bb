"""Compiler tests: pure Python (no Spark). Puts the source tree on sys.path and provides a
fake table resolver plus helpers to translate and compile views."""
import os
import sys

_PY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python"))
if _PY not in sys.path:
    sys.path.insert(0, _PY)
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
