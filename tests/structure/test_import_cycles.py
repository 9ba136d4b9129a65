"""The packages import each other without cycles (read from the source, nothing is imported).

Cycles make import order matter, hide layering mistakes (the scenario layer reaching up into the
envs) and break as soon as a lazy import becomes eager. Both the imports that run at import time
and the lazy ones inside functions must form an acyclic graph; type-only imports (under
``TYPE_CHECKING``) may only close the cycles listed in :data:`KNOWN_TYPE_ONLY_CYCLES`.
"""

from __future__ import annotations

from import_graph import cycles, import_graph, module_files

#: Type-only cycles still to be removed, each with why it is allowed today.
KNOWN_TYPE_ONLY_CYCLES: dict[frozenset[str], str] = {
    # PathBank.from_paths annotates its argument with ReferencePath (which wraps a bank).
    frozenset({"gym_s3.tracks.bank", "gym_s3.tracks.path"}): "annotation only",
}


def test_no_cycles_among_imports_that_run() -> None:
    """Module-level and lazy (function-level) imports form an acyclic graph."""
    modules = module_files()
    assert len(modules) > 100  # the scan found the packages
    assert cycles(import_graph(modules)) == []
    assert cycles(import_graph(modules, lazy=True)) == []


def test_type_only_cycles_are_the_known_ones() -> None:
    """Imports under ``TYPE_CHECKING`` close no cycle beyond the listed exceptions."""
    found = {frozenset(c) for c in cycles(import_graph(module_files(), lazy=True, type_only=True))}
    assert found <= set(KNOWN_TYPE_ONLY_CYCLES), sorted(map(sorted, found))


def test_the_scan_sees_a_cycle(tmp_path) -> None:
    """A two-module cycle through a lazy import is found (the checker can fail)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n")
    modules = module_files(tmp_path, ("pkg",))
    assert cycles(import_graph(modules)) == []
    assert cycles(import_graph(modules, lazy=True)) == [["pkg.a", "pkg.b"]]


#: Which top-level package may import which: the library imports no application, and the two
#: applications do not import each other (architecture.md, "Layout").
ALLOWED_LAYERS: dict[str, frozenset[str]] = {
    "gym_s3": frozenset({"gym_s3"}),
    "policies": frozenset({"gym_s3", "policies"}),
    "wheel_collector": frozenset({"gym_s3", "wheel_collector"}),
}


def test_imports_point_from_the_applications_to_the_library_only() -> None:
    """No edge (eager, lazy or type-only) from the library up, or between the applications."""
    graph = import_graph(module_files(), lazy=True, type_only=True)
    wrong = sorted(
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if b.partition(".")[0] not in ALLOWED_LAYERS[a.partition(".")[0]]
    )
    assert wrong == []
