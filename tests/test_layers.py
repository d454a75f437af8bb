"""The package's one-way layers (.importlinter) and its private names kept to their package."""
import ast
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "viewlet"


def test_each_layer_imports_only_the_layers_below_it():
    lint = pathlib.Path(sys.executable).with_name("lint-imports")
    res = subprocess.run([str(lint), "--config", str(ROOT / ".importlinter")], cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT / "python"), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 kept, 0 broken" in res.stdout


def _package_of(module: str) -> str:
    return module.rsplit(".", 1)[0]


def _private_imports():
    """(importing module, imported module, name) for every `_name` imported from a module of
    another package."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                base = here[:len(here) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if not source.startswith("viewlet"):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and _package_of(source) != _package_of(module):
                    found.append((module, source, alias.name))
    return found


def test_no_module_imports_a_private_name_of_another_package():
    assert _private_imports() == []


def test_the_private_name_check_sees_relative_imports(tmp_path, monkeypatch):
    # The check itself must find a violation where there is one.
    pkg = tmp_path / "viewlet"
    (pkg / "a").mkdir(parents=True)
    (pkg / "b").mkdir()
    for d in (pkg, pkg / "a", pkg / "b"):
        (d / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("def _hidden():\n    pass\n")
    (pkg / "b" / "y.py").write_text("from ..a.x import _hidden\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert _private_imports() == [("viewlet.b.y", "viewlet.a.x", "_hidden")]
