"""The import graph of the project's packages, read from the source with :mod:`ast`.

A node is a module (``gym_s3.tracks.path``; a package is its ``__init__``); an edge ``a -> b``
means ``a`` imports ``b``. Three kinds of import statements can be counted: *eager* ones, which
run when ``a`` is imported (module level, also inside ``try``/``if``/``with``), *lazy* ones
inside functions and methods, which run when they are called, and *type-only* ones under
``if TYPE_CHECKING:``, which never run. ``from pkg import name`` is an edge to ``pkg.name`` when
that is a module, else to ``pkg``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gym_s3", "policies", "wheel_collector")


def module_files(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module of ``packages`` under ``root``: dotted name -> file."""
    out = {}
    for pkg in packages:
        for file in sorted((root / pkg).rglob("*.py")):
            parts = list(file.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = file
    return out


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(
    body: list[ast.stmt], *, lazy: bool, type_only: bool, nested: bool = False
) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` of the kinds asked for (eager ones always)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if lazy:
                yield from _imports(node.body, lazy=lazy, type_only=type_only, nested=True)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            if type_only:
                yield from _imports(node.body, lazy=lazy, type_only=type_only, nested=nested)
            yield from _imports(node.orelse, lazy=lazy, type_only=type_only, nested=nested)
        else:
            for block in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, block, None)
                if isinstance(inner, list):
                    yield from _imports(inner, lazy=lazy, type_only=type_only, nested=nested)


def import_graph(
    modules: dict[str, Path], *, lazy: bool = False, type_only: bool = False
) -> dict[str, set[str]]:
    """Edges between the modules of ``modules`` (imports of other modules are dropped).

    Args:
        modules: :func:`module_files`.
        lazy: count imports inside functions too.
        type_only: count imports under ``if TYPE_CHECKING:`` too.
    """
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, file in modules.items():
        is_pkg = file.name == "__init__.py"
        tree = ast.parse(file.read_text(), filename=str(file))
        for node in _imports(tree.body, lazy=lazy, type_only=type_only):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative import
                    anchor = name.split(".")
                    anchor = anchor if is_pkg else anchor[:-1]
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)
