"""Rows whose xmax becomes a MultiXact, made with real concurrent sessions (for the bookkeeping tests)."""

from __future__ import annotations

from pgsurgeon.lab import LabCluster


def lock_from_two_sessions(lab: LabCluster, table: str) -> None:
    """Every row of ``table`` locked FOR SHARE by two open transactions at once: a lock-only MultiXact."""
    with lab.connect("postgres") as a, lab.connect("postgres") as b:
        a.execute("BEGIN")
        a.execute(f"SELECT * FROM {table} FOR SHARE").fetchall()
        b.execute("BEGIN")
        b.execute(f"SELECT * FROM {table} FOR SHARE").fetchall()
        a.execute("COMMIT")
        b.execute("COMMIT")


def update_under_key_share(lab: LabCluster, table: str, change: str) -> None:
    """Every row of ``table`` updated (``SET change``, no key column) while another transaction holds FOR KEY SHARE
    on it: the old versions' xmax becomes a MultiXact naming the updater, which every later reader looks up."""
    with lab.connect("postgres") as a, lab.connect("postgres") as b:
        a.execute("BEGIN")
        a.execute(f"SELECT * FROM {table} FOR KEY SHARE").fetchall()
        b.execute(f"UPDATE {table} SET {change}")
        a.execute("COMMIT")
