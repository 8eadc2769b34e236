"""``unload``: every table of a data directory to files, with no server: the catalog from the files, rows through
the row engine, and a schema.sql and restore.sql that rebuild the databases in a fresh cluster."""

from pgsurgeon.unload.run import TableResult, UnloadRequest, UnloadResult, run

__all__ = ["TableResult", "UnloadRequest", "UnloadResult", "run"]
