"""`pgsurgeon inspect` on real relation files: healthy pages, and a page whose header is destroyed, which the
server refuses with only "invalid page in block N" while inspect still decodes what is there."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fix_pg import MakeLab
from pgsurgeon import db
from pgsurgeon.cli import main
from pgsurgeon.lab import LabCluster


def make_table(cluster: LabCluster) -> Path:
    with cluster.connect() as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, label text)")
        conn.execute("INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, 500) g")
        conn.execute("CHECKPOINT")
        (path,) = conn.execute("SELECT pg_relation_filepath('t')").fetchone() or ("",)
    return cluster.pgdata / str(path)


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object]]:
    code = main(["inspect", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("version", ["15", "18"])
def test_destroyed_header_is_decoded_where_the_server_refuses(
    version: str, make_lab: MakeLab, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = make_lab(version)
    path = make_table(cluster)
    with cluster.connect() as conn:
        healthy_rows = conn.execute("SELECT count(*) FROM heap_page_items(get_raw_page('t', 0))").fetchone()
    code, healthy = run_json(capsys, str(path), "--block", "0")
    assert code == 0 and healthy["findings"] == []
    assert healthy["checksums_enabled"] == cluster.checksums

    cluster.stop()
    with path.open("r+b") as fh:  # pd_flags garbage, pd_upper beyond pd_special; line pointers untouched
        fh.seek(10)
        fh.write((0xABCD).to_bytes(2, "little"))
        fh.seek(14)
        fh.write((9000).to_bytes(2, "little"))
    cluster.start()
    with (
        cluster.connect() as conn,
        pytest.raises(db.DataCorrupted, match="invalid page in block 0 of relation"),
    ):
        conn.execute("SELECT * FROM t").fetchall()

    code, report = run_json(capsys, str(path), "--block", "0")
    assert code == 2
    codes = {f["code"] for f in report["findings"]}  # type: ignore[attr-defined]
    assert {"page_header.bad_flags", "page_header.upper_gt_special"} <= codes
    for finding in report["findings"]:  # type: ignore[attr-defined]
        assert finding["block"] == 0 and finding["pg_error"] and finding["remedy"]
    assert report["verification"]["result"] == "invalid"  # type: ignore[index]
    # what is there is still shown: every line pointer and tuple header
    assert healthy_rows is not None and len(report["items"]) == healthy_rows[0]  # type: ignore[arg-type]
    assert all(item["heap"] and item["heap"]["t_xmin"] > 2 for item in report["items"])  # type: ignore[attr-defined]
    if cluster.checksums:  # the stored checksum no longer matches either
        assert "checksum.mismatch" in codes

    assert main(["inspect", str(path), "--block", "0", "--raw"]) == 2
    text = capsys.readouterr().out
    assert "the server refuses it" in text and "page_header.upper_gt_special" in text
    assert "0000     0" in text and "page header" in text  # the hex dump, labelled


def test_dsn_and_table_find_the_file_and_decode_btree(make_lab: MakeLab, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = make_lab("18")
    make_table(cluster)
    code, report = run_json(capsys, "--dsn", cluster.dsn(), "--table", "t", "--block", "1")
    assert code == 0 and report["kind"] == "heap" and not report["kind_guessed"]
    code, report = run_json(capsys, "--dsn", cluster.dsn(), "--table", "t_pkey", "--block", "1")
    assert code == 0 and report["kind"] == "btree"
    items = report["items"]
    assert items and all(i["btree"] is not None for i in items)  # type: ignore[attr-defined]
    code, report = run_json(capsys, "--dsn", cluster.dsn(), "--table", "t_pkey", "--block", "0")
    assert report["btree"]["meta"]["btm_magic"] == 0x053162  # type: ignore[index]


def test_clear_errors(make_lab: MakeLab, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cluster = make_lab("15")
    path = make_table(cluster)
    assert main(["inspect", str(path), "--block", "999"]) == 1
    err = capsys.readouterr().err
    assert "beyond the end" in err and "hint:" in err
    assert main(["inspect", str(tmp_path / "nope"), "--block", "0"]) == 1
    assert "no such relation file" in capsys.readouterr().err
    # the path an old error named, after VACUUM FULL gave the table a new file
    with cluster.connect() as conn:
        conn.execute("VACUUM FULL t")
    assert main(["inspect", str(path), "--block", "0"]) == 1  # left empty until the next checkpoint
    err = capsys.readouterr().err
    assert "is empty (0 bytes)" in err and "rewritten" in err and "pg_relation_filepath" in err, err
    with cluster.connect() as conn:
        conn.execute("CHECKPOINT")
    assert main(["inspect", str(path), "--block", "0"]) == 1
    err = capsys.readouterr().err
    assert "no such relation file" in err and "rewritten" in err and "pg_relation_filepath" in err, err
    # segment 0 there, the segment holding the block missing: those blocks are lost
    single = tmp_path / "16999"
    single.write_bytes(bytes(8192))
    assert main(["inspect", str(single), "--block", "131072", "--checksums", "off"]) == 1
    assert "segment 0 (16999) is there but not segment 1" in capsys.readouterr().err
    assert main(["inspect", "--dsn", cluster.dsn(), "--table", "missing", "--block", "0"]) == 1
    assert "does not exist" in capsys.readouterr().err
    garbage = tmp_path / "16384"
    garbage.write_bytes(b"\xff" * 100)
    assert main(["inspect", str(garbage), "--block", "0", "--checksums", "off"]) == 2
    assert "the file ends inside this block" in capsys.readouterr().out


def test_piped_tables_keep_each_row_on_one_line(make_lab: MakeLab) -> None:
    """Piped, rich would assume 80 columns and cut the line-pointer table into `81… LP…` columns."""
    path = make_table(make_lab("15"))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run(
        [sys.executable, "-m", "pgsurgeon.cli", "inspect", str(path), "--block", "0"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    assert "…" not in out
    rows = [line for line in out.splitlines() if re.match(r"│\s+\d+ │", line)]
    assert len(rows) == len(set(rows)) and len(rows) > 50  # every line pointer on its own line, none wrapped
    assert all("LP_NORMAL" in r and "HASVARWIDTH" in r for r in rows)


def test_an_all_zero_page_is_not_called_a_checksum_mismatch(
    make_lab: MakeLab, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server accepts an all-zero page without computing its checksum (bufpage.c's PageIsVerified)."""
    cluster = make_lab("18", checksums=True)
    path = make_table(cluster)
    with cluster.connect() as conn:
        (on_page,) = conn.execute("SELECT count(*) FROM t WHERE (ctid::text::point)[0] = 1").fetchone() or (0,)
    cluster.stop()
    with path.open("r+b") as fh:
        fh.seek(8192)
        fh.write(bytes(8192))
    # the rows the primary key names on the page are the loss, as scan reports it: exit 2
    assert main(["inspect", str(path), "--block", "1"]) == 2
    out = capsys.readouterr().out
    assert "MISMATCH" not in out and "the server does not check an all-zero page" in out, out
    assert "reads it as an empty page" in out
    # in the loss account's words, which scan and salvage use too: the rows, named by their key
    assert "page_header.zeroed_referenced" in out and re.search(rf"{on_page} row\(s\) (certainly|possibly) gone", out)
    assert "t_pkey" in out and re.search(r": id \d+\.\.\d+", out), out
    assert on_page > 50
    # a page past the rows, all zeroes, that no index names: nothing to report
    with path.open("ab") as fh:
        fh.write(bytes(8192))
    blocks = path.stat().st_size // 8192
    assert main(["inspect", str(path), "--block", str(blocks - 1)]) == 0
    assert "zeroed_referenced" not in capsys.readouterr().out
