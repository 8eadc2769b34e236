"""The layering: library packages never import the command line.

``commands/`` turns argv into requests and renders results; ``cli.py`` (and ``__main__.py``) hold the parser. Every
other module is library code that the commands, the lab and repair call through request APIs, so none of them may
import ``pgsurgeon.commands`` or ``pgsurgeon.cli`` — at module level or inside a function. The test reads the
imports with ast, without importing anything."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "pgsurgeon"
FRONT = ("commands", "cli")
"""The command-line layer: pgsurgeon.commands.* and pgsurgeon.cli."""
ENTRY_POINTS = {"cli.py", "__main__.py"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path, source: str | None = None) -> set[str]:
    """Every module ``path`` (or ``source`` as if it were in ``path``) imports, absolute, including
    ``from X import name`` as ``X.name`` (it may be a submodule) and relative imports resolved against the
    module's package."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    text = source if source is not None else path.read_text(encoding="utf-8")
    names: set[str] = set()
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
    return names


def is_front(name: str) -> bool:
    return any(name == f"pgsurgeon.{f}" or name.startswith(f"pgsurgeon.{f}.") for f in FRONT)


def library_modules() -> list[Path]:
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if p.relative_to(PACKAGE).parts[0] != "commands" and p.relative_to(PACKAGE).as_posix() not in ENTRY_POINTS
    ]


def test_library_modules_do_not_import_the_command_line() -> None:
    modules = library_modules()
    assert len(modules) > 40 and any(p.name == "planner.py" for p in modules)  # the walk found the package
    found = {module_name(p): sorted(n for n in imported(p) if is_front(n)) for p in modules}
    offenders = {module: names for module, names in found.items() if names}
    assert not offenders, f"library modules import the command line: {offenders}"


def test_the_walk_sees_every_form_of_import() -> None:
    """The checker itself: top-level, function-level, from-imports and relative imports are all caught."""
    probe = PACKAGE / "repair" / "probe.py"  # never written: the source is passed in
    cases = {
        "import pgsurgeon.cli": True,
        "def f():\n    from pgsurgeon.commands.corrupt import run": True,
        "from pgsurgeon import commands": True,
        "from .. import cli": True,
        "from ..commands import scan": True,
        "from pgsurgeon import simulate": False,
        "from ..simulate import run": False,
    }
    for source, front in cases.items():
        assert any(map(is_front, imported(probe, source))) == front, source


def _imports_of_package(package: str) -> dict[str, set[str]]:
    return {module_name(p): imported(p) for p in sorted((PACKAGE / package).rglob("*.py"))}


def _within(name: str, package: str) -> bool:
    return name == f"pgsurgeon.{package}" or name.startswith(f"pgsurgeon.{package}.")


def test_repair_and_the_simulator_share_the_journal_not_each_other() -> None:
    """Repair writes through the byte-undo journal (pgsurgeon.journal) as the simulator does; it never reaches into
    the simulator for it, and the journal depends on neither."""
    rules = {"repair": ("simulate",), "simulate": ("repair",), "journal": ("simulate", "repair")}
    offenders = {
        module: sorted(n for n in names if any(_within(n, f) for f in forbidden))
        for package, forbidden in rules.items()
        for module, names in _imports_of_package(package).items()
    }
    assert _imports_of_package("repair") and _imports_of_package("journal")  # the walk found them
    assert not {m: n for m, n in offenders.items() if n}, "forbidden imports"
    assert any(_within(n, "journal") for names in _imports_of_package("repair").values() for n in names)


CATALOG_TABLES = re.compile(r"\b(FROM|JOIN)\s+(pg_catalog\.)?pg_(class|attribute|index|namespace|type)\b", re.I)
"""A query that reads the catalog's relation, column, index, schema or type rows."""
TEXT_FOR_PEOPLE = ("explain", "render")
"""Packages whose SQL is printed for the DBA to run (next steps, recipes), never run by pgsurgeon."""


def test_only_the_catalog_layer_queries_the_catalog() -> None:
    """One catalog layer under every command: a module outside catalog/ neither names a .sql file that reads
    pg_class, pg_attribute, pg_index, pg_namespace or pg_type nor holds such a query in its own text (the text
    printed for people in explain/ and render/ is not run)."""
    sql_dir = PACKAGE / "sql"
    reads_catalog = {p.stem for p in sql_dir.glob("*.sql") if CATALOG_TABLES.search(p.read_text(encoding="utf-8"))}
    assert {"catalog_relatives", "catalog_columns"} <= reads_catalog  # the pattern finds what it must
    offenders: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        package = path.relative_to(PACKAGE).parts[0]
        if package == "catalog":
            continue
        text = path.read_text(encoding="utf-8")
        found = sorted(name for name in reads_catalog if f'"{name}"' in text)
        if package not in TEXT_FOR_PEOPLE:
            found += [f"inline: {m.group(0)}" for m in CATALOG_TABLES.finditer(text)]
        if found:
            offenders[module_name(path)] = found
    assert not offenders, f"catalog queries outside catalog/: {offenders}"


def _classes_with_fields(path: Path) -> dict[str, set[str]]:
    """Each class of ``path`` and the names it annotates in its body (a dataclass's fields)."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            out[node.name] = {
                s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
            }
    return out


def test_one_relation_model_one_resolver_one_relatives_query() -> None:
    """A class that describes a relation by its identity (an oid with a relkind, or a schema and a name with a
    relkind) is the catalog's Relation; a ``--table`` argument is resolved by catalog.sql's lookup_relation; the
    relatives (TOAST table and index, indexes) are one query, catalog_relatives.sql."""
    models = {
        f"{module_name(p)}.{cls}"
        for p in sorted(PACKAGE.rglob("*.py"))
        for cls, fields in _classes_with_fields(p).items()
        if "relkind" in fields and ({"oid", "schema"} & fields)
    }
    assert models == {"pgsurgeon.catalog.relation.Relation"}
    resolvers = {module_name(p) for p in PACKAGE.rglob("*.py") if "def lookup_relation(" in p.read_text("utf-8")}
    assert resolvers == {"pgsurgeon.catalog.sql"}
    sql_dir = PACKAGE / "sql"
    relatives = {p.name for p in sql_dir.glob("*.sql") if "toast-index" in p.read_text(encoding="utf-8")}
    assert relatives == {"catalog_relatives.sql"}
    regclass_lookups = {p.name for p in sql_dir.glob("*.sql") if "to_regclass" in p.read_text(encoding="utf-8")}
    assert regclass_lookups == {"catalog_regclass.sql"}, "a --table argument is resolved in one place"
