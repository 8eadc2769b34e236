"""Values derived from a message's own: the database, filenode, fork and segment of a relation path, the block
of a pg_checksums report, the pg_xact file of an XID, the amcheck finding's family, an index's access method, a
name as SQL text. Each ``derive_*`` is a pattern's ``derive``: it adds to the values a match captured."""

from __future__ import annotations

import re

from pgsurgeon import db
from pgsurgeon.datadir import DEFAULT_RELSEG_SIZE, XIDS_PER_XACT_FILE
from pgsurgeon.diagnose import amcheck as amcheck_map

# A message carries no block or segment size: the defaults of a standard build (1 GB segments of 8 KB blocks).


_RELPATH = re.compile(
    r"(?:^|/)(?P<rel>(?:base/(?P<dboid>\d+)|global|pg_tblspc/(?P<spc>\d+)/[^/]+/(?P<spcdb>\d+))/(?:t\d+_)?(?P<filenode>\d+)"
    r"(?:_(?P<fork>fsm|vm|init))?(?:\.(?P<segment>\d+))?)$"
)


def relpath(values: dict[str, str], key: str = "relpath") -> None:
    """From a relation path (base/5/16384, global/1262, pg_tblspc/…, with _vm or .1): database OID, filenode,
    fork, segment, and the segment-0 file to give ``pgsurgeon inspect``."""
    m = _RELPATH.search(values.get(key, "").strip('"'))
    if not m:
        return
    path = m.group("rel")  # pg_checksums prints absolute paths
    dboid = m.group("dboid") or m.group("spcdb")
    values["filenode"] = m.group("filenode")
    values["fork"] = m.group("fork") or "main"
    if m.group("fork") in ("vm", "fsm"):
        values["fork_note"] = (
            f"The page is in the {m.group('fork')} fork, a map the server can rebuild (VACUUM rebuilds the free space "
            "map; pg_visibility's pg_truncate_visibility_map() clears the visibility map): the table's rows are not "
            "in it."
        )
    values["relfile"] = path.rsplit(".", 1)[0] if m.group("segment") else path
    if m.group("segment"):
        values["segment"] = m.group("segment")
    if dboid:
        values["dboid"] = dboid
        values["where_db"] = f"in the database with OID {dboid} (SELECT datname FROM pg_database WHERE oid = {dboid})"
        values["scan_db"] = f" --database {dboid}"
    else:
        values["dboid"] = "0"
        values["where_db"] = "in any database (global/ holds the shared catalogs)"
        values["scan_db"] = ""


def derive_relpath(values: dict[str, str]) -> None:
    relpath(values)


def derive_file(values: dict[str, str]) -> None:
    values["relpath"] = values.get("file", "")
    relpath(values)


def derive_pg_checksums(values: dict[str, str]) -> None:
    derive_file(values)
    seg = int(values.get("segment") or 0)
    values["block"] = str(seg * DEFAULT_RELSEG_SIZE + int(values["segblock"]))


def derive_xid(values: dict[str, str]) -> None:
    xid = int(values["xid"])
    values["xact_file"] = f"pg_xact/{xid // XIDS_PER_XACT_FILE:04X}"


def derive_checksum(values: dict[str, str]) -> None:
    diff = abs(int(values["calc"]) - int(values["stored"]))
    if 0 < diff < 64:
        values["close"] = str(diff)


def derive_amcheck(values: dict[str, str]) -> None:
    if values.get("table", "").count(".") >= 2:  # pg_amcheck prints database.schema.table
        values["table"] = values["table"].split(".", 1)[1]
    code, _area = amcheck_map.classify_heap(values["msg"])
    values["code"] = code
    values["family"] = _AMCHECK_FAMILY.get(code.split(".")[0], "")
    if values.get("table") and values.get("block"):
        where = f"block {values['block']}" + (f", line pointer {values['offset']}" if values.get("offset") else "")
        values["where"] = where


def derive_am(values: dict[str, str]) -> None:
    """The access method a message is about, from its words, when it names no index."""
    if "index" in values:
        return
    msg = values.get("msg", "").lower()
    for word, am in (("brin", "brin"), ("spgist", "spgist"), ("gin", "gin"), ("gist", "gist"), ("hash", "hash")):
        if word in msg.replace("-", "").replace(" ", ""):
            values["am"] = values["ams"] = am
            return
    values["am"] = values["ams"] = "gist"  # 'failed to re-find parent of a page' without a name: GiST's wording


def derive_gin(values: dict[str, str]) -> None:
    """GIN's messages name no index (ginentrypage.c, ginget.c, ginfast.c): the candidates are the GIN indexes."""
    values.setdefault("ams", "gin")


def derive_bitmap_tid(values: dict[str, str]) -> None:
    """tidbitmap.c names no index either: a bitmap scan's TIDs come from a GIN or a btree index."""
    values.setdefault("ams", "gin,btree")


_AMCHECK_FAMILY = {
    "line_pointer": "the page's line pointer (item ID) array holds values that cannot be right: the array is "
    "overwritten, so the rows on this page are read from wrong places (garbage values, allocation errors or a "
    "crashed backend when a query reads them)",
    "tuple_header": "a tuple header (xmin/xmax, infomask bits, t_hoff) is inconsistent: the row's visibility or "
    "layout is wrong, queries may hide it, fail on it (could not access status of transaction, MultiXactId errors) "
    "or crash",
    "tuple_data": "a column value's length or the attribute count does not fit the tuple: reading the row returns "
    "wrong values, fails with invalid memory alloc request size, or crashes the backend",
    "toast": "a TOAST pointer or the TOAST chunks of a value are wrong: reading that column fails (missing chunk "
    "number, unexpected chunk number/size, invalid compression method)",
    "amcheck": "amcheck found the tuple inconsistent",
}


_IDENT = re.compile(r"^[a-z_][a-z0-9_$]*$")


def sql_ident(name: str) -> str:
    """An index or table name from a message as SQL text (messages print names unquoted and unqualified)."""
    return name if _IDENT.match(name) or "." in name else db.quote_ident(name)
