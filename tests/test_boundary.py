"""The binding's boundary: one schema on both sides, unknown keys refused, and a stub that matches the module."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from pgsurgeon import _pgsurgeon, boundary, core

STUB = Path(boundary.__file__).with_name("_pgsurgeon.pyi")


@pytest.mark.parametrize("name", sorted(boundary.CONFIGS))
def test_each_config_has_the_keys_its_rust_struct_accepts(name: str) -> None:
    typed = set(boundary.CONFIGS[name].__annotations__)
    rust = set(_pgsurgeon.config_fields(name))
    assert typed == rust, f"{name}: only in Python {sorted(typed - rust)}, only in Rust {sorted(rust - typed)}"


def test_an_unknown_struct_name_is_refused() -> None:
    with pytest.raises(ValueError, match="no config struct named Nope"):
        _pgsurgeon.config_fields("Nope")


def _page() -> bytes:
    """An empty heap page: header only, pd_lower 24, pd_upper = pd_special = 8192, layout version 4."""
    page = bytearray(8192)
    page[12:14] = (24).to_bytes(2, "little")
    page[14:16] = (8192).to_bytes(2, "little")
    page[16:18] = (8192).to_bytes(2, "little")
    page[18:20] = (8192 | 4).to_bytes(2, "little")
    return bytes(page)


def test_a_misspelled_classify_key_fails_with_the_expected_keys() -> None:
    bad: dict[str, object] = {"nblock": 1}
    with pytest.raises(ValueError, match=r"bad classify configuration: unknown field `nblock`, expected one of") as e:
        core.classify_pages(_page(), 0, bad)  # type: ignore[arg-type]
    assert "`nblocks`" in str(e.value)


def test_a_misspelled_carve_key_fails_instead_of_taking_its_default() -> None:
    cfg: dict[str, object] = {
        "nblocks": 1,
        "desc": {"natts": 0, "attrs": []},
        "columns": [],
        "keep_invisble": True,  # the typo: with a silent default, dead rows would not come back
    }
    with pytest.raises(ValueError, match="bad carve configuration: unknown field `keep_invisble`"):
        core.carve_pages(_page(), [0], cfg)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown field `keep_invisble`"):
        core.RowCarver(cfg)  # type: ignore[arg-type]


def test_a_misspelled_nested_key_is_refused_too(tmp_path: Path) -> None:
    options = {"checksums": False, "blcksz": 8192, "relseg_size": 131072, "chunk_blocks": 256, "jobz": 2}
    with pytest.raises(ValueError, match="bad scan configuration: unknown field `jobz`"):
        core.Scanner(str(tmp_path), {"options": options})  # type: ignore[typeddict-unknown-key]


def test_a_good_config_gives_typed_results() -> None:
    res = core.classify_pages(_page(), 7, {"nblocks": 8})
    assert res["nblocks"] == 1 and res["healthy"] == 1 and res["blocks"] == []
    carved, rows = core.carve_pages(_page(), [0], {"nblocks": 1, "desc": {"natts": 0, "attrs": []}, "columns": []})
    assert carved["rows"] == [] and rows == b"" and carved["counts"]["pages"] == 1


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def _params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs] if p.arg != "self"]


def test_the_stub_names_every_public_object_of_the_module_and_nothing_else() -> None:
    stubbed = {n.name for n in _stub().body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    stubbed |= {
        t.id for n in _stub().body if isinstance(n, ast.AnnAssign) for t in [n.target] if isinstance(t, ast.Name)
    }
    public = {n for n in dir(_pgsurgeon) if not n.startswith("_")}
    assert public - stubbed == set(), "in the module, not in _pgsurgeon.pyi"
    assert {n for n in stubbed if not n.startswith("_")} - public - {"FindingCode"} == set(), "stubbed, not in module"


def test_the_stub_gives_each_function_the_parameters_the_binding_takes() -> None:
    for node in _stub().body:
        if isinstance(node, ast.FunctionDef):
            real = inspect.signature(getattr(_pgsurgeon, node.name))
            assert _params(node) == list(real.parameters), node.name
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_pgsurgeon, node.name)
            for m in node.body:
                if not isinstance(m, ast.FunctionDef):
                    continue
                assert hasattr(cls, m.name), f"{node.name}.{m.name}"
                if m.name == "__init__" or any(
                    isinstance(d, ast.Name) and d.id == "property" for d in m.decorator_list
                ):
                    continue
                real = inspect.signature(getattr(cls, m.name))
                assert _params(m) == [p for p in real.parameters if p != "self"], f"{node.name}.{m.name}"
