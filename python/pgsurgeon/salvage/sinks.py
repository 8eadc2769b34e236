"""Where salvaged rows go: files in a directory (COPY text or CSV) or a new table. Both are resumable: a range of
blocks is recorded as done in the same step that makes its rows durable (a part file renamed into place, or one
transaction inserting the rows and the progress row), so a rerun neither loses nor duplicates rows."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pgsurgeon import db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.errors import PgSurgeonError, UsageError
from pgsurgeon.paths import safe_name
from pgsurgeon.salvage.catalog import Table
from pgsurgeon.salvage.session import SharedSnapshot, connect
from pgsurgeon.session import BackendLost, Session, SqlFailed

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg.sql import Composable, Composed

PROVENANCE = ("salvage_block", "salvage_lp", "salvage_offset", "salvage_via", "salvage_certainty", "salvage_note")
_PROVENANCE_TYPES = ("bigint", "integer", "integer", "text", "text", "text")


def tid(block: int, lp: int) -> str:
    return f"({block},{lp})"


def range_query(table: Table, a: int, b: int) -> Composed:
    return db.sql.SQL("SELECT {} FROM {} WHERE ctid >= {}::tid AND ctid < {}::tid").format(
        table.select_list(), table.rel.ident(), db.sql.Literal(tid(a, 0)), db.sql.Literal(tid(b, 0))
    )


def tuple_query(table: Table, block: int, lp: int) -> Composed:
    return db.sql.SQL("SELECT {} FROM {} WHERE ctid = {}::tid").format(
        table.select_list(), table.rel.ident(), db.sql.Literal(tid(block, lp))
    )


@contextlib.contextmanager
def reading(conn: Connection[tuple[Any, ...]], snapshot: SharedSnapshot | None) -> Iterator[None]:
    """A read on ``conn`` inside a transaction with the salvage's shared snapshot (plain autocommit without one)."""
    if snapshot is None:
        yield
        return
    with conn.transaction():
        snapshot.begin(conn)
        yield


@dataclass
class TupleOutcome:
    rows: int
    failed: dict[int, str]
    """line pointer -> the error reading it."""
    crashed: list[int]
    """line pointers whose read crashed the backend."""


class Sink(Protocol):
    describe: str
    snapshot: SharedSnapshot | None

    def done_ranges(self) -> list[tuple[int, int]]: ...

    def copy_range(self, src: Session, dest: Session | None, a: int, b: int) -> int: ...

    def copy_tuples(self, src: Session, dest: Session | None, block: int, lps: list[int]) -> TupleOutcome: ...

    def carve_targets(self) -> contextlib.AbstractContextManager[dict[str, Any]]:
        """Where the row engine writes carved rows: ``{"main", "apart", "prov"}`` file paths or ``{"write"}``."""
        ...

    def finish(self) -> dict[str, Any]: ...

    def dest_session(self) -> Session | None: ...


def _csv_field(v: str | None) -> bytes:
    if v is None:
        return b""
    if v == "" or any(c in v for c in ',"\r\n'):
        return b'"' + v.replace('"', '""').encode("utf-8", "replace") + b'"'
    return v.encode("utf-8", "replace")


class DirSink:
    """``DIR/<schema.table>.<fmt>`` with every saved row, ``….carved.<fmt>`` with the carved rows kept apart (their
    provenance first), ``….provenance.<fmt>`` with the provenance of the carved rows of the main file (in their
    order; one line stands for ``salvage_rows`` rows: a page's rows read plainly through their line pointers share
    one), and a parts directory that makes a rerun resume."""

    def __init__(
        self, out_dir: Path, table: Table, fmt: str, *, restart: bool = False, keep_parts: bool = False
    ) -> None:
        self.out_dir = out_dir
        self.table = table
        self.fmt = fmt
        self.ext = "csv" if fmt == "csv" else "copy"
        self.base = safe_name(table.rel.qualified)
        self.parts = out_dir / f".{self.base}.parts"
        self.describe = str(out_dir / f"{self.base}.{self.ext}")
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PgSurgeonError(f"cannot create {out_dir}: {exc.strerror or exc}") from exc
        self.ident = {"oid": table.rel.oid, "filepath": table.rel.filepath, "nblocks": table.rel.nblocks, "format": fmt}
        self.state_file = self.parts / "state.json"
        if self.parts.exists() and restart:
            self._remove_stage(self._old_state())
            shutil.rmtree(self.parts)
            (out_dir / f"{self.base}.{self.ext}.partial").unlink(missing_ok=True)
        old = self._old_state()
        if old is not None and {k: old.get(k) for k in self.ident} != self.ident:
            raise UsageError(
                f"{self.parts} holds an interrupted salvage of another table, file or format",
                hint="pass --restart to start over, or another --out directory",
            )
        self.stage: Path | None = None
        if old is not None and old.get("stage") and Path(old["stage"]).is_dir():
            self.stage = Path(old["stage"])
        self.parts.mkdir(exist_ok=True)
        self._save_state()
        self.server_side = False
        self.snapshot: SharedSnapshot | None = None
        self.keep_parts = keep_parts
        self._lock = threading.Lock()
        self._out: Any = None
        self._log: Any = None
        self._done: list[tuple[int, int]] = []

    def _old_state(self) -> dict[str, Any] | None:
        try:
            doc = json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def _save_state(self) -> None:
        self.state_file.write_text(json.dumps({**self.ident, "stage": str(self.stage) if self.stage else None}))

    @staticmethod
    def _remove_stage(state: dict[str, Any] | None) -> None:
        if state and state.get("stage"):
            shutil.rmtree(state["stage"], ignore_errors=True)

    def try_server_side(self, session: Session, pgdata: Path) -> bool:
        """Let the server write the part files itself (COPY … TO 'file'): no rows cross the connection, so the
        client costs nothing per row. Needs a local server that may write files (superuser or
        pg_write_server_files) and a directory it can reach and write: the parts directory, else a staging
        directory under the system's temporary directory (owned by the server's user when we are root)."""
        try:
            owner = pgdata.stat()
        except OSError:
            return False
        if os.geteuid() not in (0, owner.st_uid):
            return False
        candidates: list[Path] = [d for d in (self.stage, self.parts) if d is not None]
        for d in candidates:
            if self._probe(session, d, owner):
                self.stage = d
                self._save_state()
                self.server_side = True
                return True
        try:
            staging = Path(tempfile.mkdtemp(prefix=f"pgsurgeon-salvage-{self.base[:40]}-"))
        except OSError:
            return False
        if self._probe(session, staging, owner):
            self.stage = staging
            self._save_state()
            self.server_side = True
            return True
        shutil.rmtree(staging, ignore_errors=True)
        return False

    def _probe(self, session: Session, d: Path, owner: os.stat_result) -> bool:
        try:
            if os.geteuid() == 0:
                os.chown(d, owner.st_uid, owner.st_gid)
            probe = (d / "probe.tmp").resolve()
            session.run(lambda c: c.execute(db.sql.SQL("COPY (SELECT 1) TO {}").format(db.sql.Literal(str(probe)))))
            probe.unlink()
            return True
        except (OSError, SqlFailed, BackendLost):
            return False

    def _part_dirs(self) -> list[Path]:
        return [self.parts] + ([self.stage] if self.stage is not None and self.stage != self.parts else [])

    @property
    def main_path(self) -> Path:
        return self.out_dir / f"{self.base}.{self.ext}"

    @property
    def carved_path(self) -> Path:
        return self.out_dir / f"{self.base}.carved.{self.ext}"

    def dest_session(self) -> Session | None:
        return None

    # Progress: every finished part is appended to the growing output file at once and then logged as
    # "first end size" in done.log; a rerun truncates the output to the logged size (dropping a half-appended part)
    # and skips the logged ranges.

    @property
    def _log_path(self) -> Path:
        return self.parts / "done.log"

    @property
    def _partial_path(self) -> Path:
        return self.out_dir / f"{self.base}.{self.ext}.partial"

    def _begin(self) -> None:
        if self._out is not None:
            return
        entries: list[tuple[int, int, int]] = []
        with contextlib.suppress(FileNotFoundError):
            for line in self._log_path.read_text().splitlines():
                a, b, size = (int(x) for x in line.split())
                entries.append((a, b, size))
        logged = sum(size for _, _, size in entries)
        partial = self._partial_path
        if not entries or not partial.exists() or partial.stat().st_size < logged:
            entries, logged = [], 0
            # a new file, not one truncated to nothing: ext4 (auto_da_alloc) writes out a file truncated to zero
            # when it is closed, half a second for a gigabyte here
            partial.unlink(missing_ok=True)
            partial.touch()
            self._log_path.write_text("")
        self._out = partial.open("r+b")
        if partial.stat().st_size != logged:
            self._out.truncate(logged)
        self._out.seek(logged)
        self._log = self._log_path.open("a")
        if not entries and self.fmt == "csv":
            header = b",".join(_csv_field(c.name) for c in self.table.live_columns) + b"\n"
            self._out.write(header)
            self._out.flush()
            self._log.write(f"-1 -1 {len(header)}\n")
            self._log.flush()
        self._done = [(a, b) for a, b, _ in entries if a >= 0]

    def done_ranges(self) -> list[tuple[int, int]]:
        self._begin()
        return list(self._done)

    def _commit(self, part: Path, a: int, b: int) -> None:
        """Append a finished part to the output and log it (one at a time)."""
        with self._lock:
            self._begin()
            assert self._out is not None and self._log is not None
            size = part.stat().st_size
            _append(part, self._out)
            self._out.flush()
            self._log.write(f"{a} {b} {size}\n")
            self._log.flush()
            self._done.append((a, b))
        if not self.keep_parts:
            part.unlink(missing_ok=True)

    def _copy_sql(self, query: Composable) -> Composed:
        opts = db.sql.SQL(" WITH (FORMAT csv)") if self.fmt == "csv" else db.sql.SQL("")
        return db.sql.SQL("COPY ({}) TO STDOUT{}").format(query, opts)

    def _commit_part(self, name: str, data_writer: Any, a: int, b: int) -> int:
        tmp = self.parts / (name + ".tmp")
        with tmp.open("wb") as fh:
            rows: int = data_writer(fh)
        os.replace(tmp, self.parts / name)
        self._commit(self.parts / name, a, b)
        return rows

    def copy_range(self, src: Session, dest: Session | None, a: int, b: int) -> int:
        if self.server_side:
            return self._copy_range_server(src, a, b)
        statement = self._copy_sql(range_query(self.table, a, b))

        def work(fh: Any) -> int:
            def fn(conn: Connection[tuple[Any, ...]]) -> int:
                n = 0
                fh.seek(0)
                fh.truncate()
                with reading(conn, self.snapshot), conn.cursor().copy(statement) as cp:
                    for data in cp:
                        fh.write(data)
                        n += 1
                return n

            return src.run(fn)

        try:
            return self._commit_part(f"sql_{a:010d}_{b:010d}.{self.ext}", work, a, b)
        finally:
            with contextlib.suppress(FileNotFoundError):
                (self.parts / f"sql_{a:010d}_{b:010d}.{self.ext}.tmp").unlink()

    def _copy_range_server(self, src: Session, a: int, b: int) -> int:
        name = f"sql_{a:010d}_{b:010d}.{self.ext}"
        stage = self.stage or self.parts
        tmp = (stage / (name + ".tmp")).resolve()
        opts = db.sql.SQL(" WITH (FORMAT csv)") if self.fmt == "csv" else db.sql.SQL("")
        statement = db.sql.SQL("COPY ({}) TO {}{}").format(
            range_query(self.table, a, b), db.sql.Literal(str(tmp)), opts
        )
        try:

            def fn(c: Connection[tuple[Any, ...]]) -> int:
                with reading(c, self.snapshot):
                    return c.execute(statement).rowcount

            rows = src.run(fn)
            os.replace(tmp, stage / name)
            self._commit(stage / name, a, b)
            return int(rows)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()

    def copy_tuples(self, src: Session, dest: Session | None, block: int, lps: list[int]) -> TupleOutcome:
        chunks: list[bytes] = []
        failed: dict[int, str] = {}
        crashed: list[int] = []
        for lp in lps:
            statement = self._copy_sql(tuple_query(self.table, block, lp))

            def fn(conn: Connection[tuple[Any, ...]], statement: Composed = statement) -> list[bytes]:
                with reading(conn, self.snapshot), conn.cursor().copy(statement) as cp:
                    return [bytes(d) for d in cp]

            try:
                chunks.extend(src.run(fn))
            except SqlFailed as exc:
                failed[lp] = exc.message
            except BackendLost as exc:
                failed[lp] = f"backend crashed: {exc}"
                crashed.append(lp)

        def write(fh: Any) -> int:
            for c in chunks:
                fh.write(c)
            return len(chunks)

        rows = self._commit_part(f"tup_{block:010d}_{block + 1:010d}.{self.ext}", write, block, block + 1)
        return TupleOutcome(rows, failed, crashed)

    @property
    def provenance_path(self) -> Path:
        return self.out_dir / f"{self.base}.provenance.{self.ext}"

    @contextlib.contextmanager
    def carve_targets(self) -> Iterator[dict[str, Any]]:
        """The carve appends its rows to the growing output (after the SQL parts; a rerun truncates the output to
        the logged parts and carves again), and writes the kept-apart rows and the provenance afresh."""
        self._begin()
        assert self._out is not None
        self._out.flush()
        names = [*PROVENANCE, *(c.name for c in self.table.live_columns)]
        for path, header in ((self.carved_path, names), (self.provenance_path, [*PROVENANCE, "salvage_rows"])):
            path.write_bytes(b",".join(_csv_field(n) for n in header) + b"\n" if self.fmt == "csv" else b"")
        yield {"main": str(self._partial_path), "apart": str(self.carved_path), "prov": str(self.provenance_path)}
        self._out.seek(0, os.SEEK_END)

    def finish(self) -> dict[str, Any]:
        self._begin()
        assert self._out is not None and self._log is not None
        self._out.close()
        self._log.close()
        self._out = self._log = None
        os.replace(self._partial_path, self.main_path)
        self._log_path.unlink(missing_ok=True)
        return {
            "rows_file": str(self.main_path),
            "carved_file": str(self.carved_path),
            "provenance_file": str(self.provenance_path),
            "parts": str(self.parts),
        }

    def cleanup(self) -> None:
        for d in self._part_dirs():
            shutil.rmtree(d, ignore_errors=True)


def _append(src: Path, out: Any) -> None:
    """Append a file to an open file, in the kernel when it can (copy_file_range)."""
    with src.open("rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        copy = getattr(os, "copy_file_range", None)
        if copy is not None:
            out.flush()
            done = 0
            try:
                while done < size:
                    n = copy(fh.fileno(), out.fileno(), size - done)
                    if n == 0:
                        break
                    done += n
                out.seek(0, os.SEEK_END)
                if done == size:
                    return
            except OSError:
                pass
            fh.seek(done)
        shutil.copyfileobj(fh, out, 4 << 20)


def psycopg_conninfo(dsn: str) -> dict[str, Any]:
    from psycopg.conninfo import conninfo_to_dict

    return dict(conninfo_to_dict(dsn))


def make_conninfo(params: dict[str, Any]) -> str:
    from psycopg.conninfo import make_conninfo as make

    return make("", **params)


_PSQL: list[tuple[Path, dict[str, str]] | None] = []


def _psql() -> tuple[Path, dict[str, str]] | None:
    """psql and the environment it needs (library path): PostgreSQL's installation pgsurgeon uses, else PATH."""
    if not _PSQL:
        from pgsurgeon.pgbin import find_install

        found: tuple[Path, dict[str, str]] | None = None
        with contextlib.suppress(Exception):
            install = find_install()
            env = install.env()
            found = (install.tool("psql"), {k: v for k, v in env.items() if k == "LD_LIBRARY_PATH"})
        if found is None and (path := shutil.which("psql")):
            found = (Path(path), {})
        _PSQL.append(found)
    return _PSQL[0]


def parse_qualified(text: str) -> tuple[str | None, str]:
    """``schema.name`` as SQL text: quoted parts kept exactly, unquoted ones folded to lower case."""
    parts: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            buf = []
            while j < n:
                if text[j] == '"':
                    if j + 1 < n and text[j + 1] == '"':
                        buf.append('"')
                        j += 2
                        continue
                    break
                buf.append(text[j])
                j += 1
            if j >= n:
                raise UsageError(f"unterminated quoted name in {text!r}")
            parts.append("".join(buf))
            i = j + 1
        else:
            j = text.find(".", i)
            j = n if j < 0 else j
            parts.append(text[i:j].strip().lower())
            i = j
        if i < n:
            if text[i] != ".":
                raise UsageError(f"cannot read {text!r} as [schema.]table")
            i += 1
    if len(parts) == 1:
        return None, parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise UsageError(f"cannot read {text!r} as [schema.]table")


def _suffixed(name: str, suffix: str) -> str:
    """name + suffix within NAMEDATALEN - 1 bytes."""
    raw = name.encode()
    room = 63 - len(suffix.encode())
    while len(raw) > room:
        name = name[:-1]
        raw = name.encode()
    return name + suffix


class TableSink:
    """Rows into a new table (no constraints, no indexes, so nothing is refused), carved rows also into
    ``<new>_carved`` with their provenance, progress in ``<new>_salvage`` for resuming."""

    def __init__(
        self, dest_dsn: str, into: str, table: Table, src_conn: Connection[tuple[Any, ...]], *, same_db: bool
    ) -> None:
        self.dsn = dest_dsn
        self.table = table
        self.same_db = same_db
        schema, name = parse_qualified(into)
        with db.connect(dest_dsn) as conn:
            if schema is None:
                schema = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
        self.schema: str = str(schema)
        self.name = name
        self.progress_name = _suffixed(name, "_salvage")
        self.carved_name = _suffixed(name, "_carved")
        self.describe = f"{self.schema}.{self.name}"
        self.snapshot: SharedSnapshot | None = None
        self._setup(src_conn)

    def ident(self, name: str) -> Composed:
        return db.sql.SQL("{}.{}").format(db.sql.Identifier(self.schema), db.sql.Identifier(name))

    def _column_defs(self, src_conn: Connection[tuple[Any, ...]]) -> list[tuple[str, str]]:
        cols = catalog.columns(src_conn, self.table.rel.oid)
        return [(c.name, c.type_sql) for c in cols if not c.dropped and not c.generated]

    def _setup(self, src_conn: Connection[tuple[Any, ...]]) -> None:
        cols = self._column_defs(src_conn)
        col_sql = db.sql.SQL(", ").join(
            db.sql.SQL("{} {}").format(db.sql.Identifier(a), db.sql.SQL(t)) for a, t in cols
        )
        prov_sql = db.sql.SQL(", ").join(
            db.sql.SQL("{} {}").format(db.sql.Identifier(a), db.sql.SQL(t))
            for a, t in zip(PROVENANCE, _PROVENANCE_TYPES, strict=True)
        )
        meta = json.dumps(
            {"oid": self.table.rel.oid, "filepath": self.table.rel.filepath, "table": self.table.rel.qualified}
        )
        with db.connect(self.dsn) as conn:
            exists = conn.execute(
                "SELECT to_regclass(%s) IS NOT NULL", (db.quote_ident(self.schema, self.progress_name),)
            ).fetchone()
            main_exists = conn.execute(
                "SELECT to_regclass(%s) IS NOT NULL", (db.quote_ident(self.schema, self.name),)
            ).fetchone()
            if exists and exists[0]:
                row = conn.execute(
                    db.sql.SQL("SELECT note FROM {} WHERE kind = 'meta'").format(self.ident(self.progress_name))
                ).fetchone()
                if not row or row[0] != meta:
                    raise UsageError(
                        f"{self.describe} holds a salvage of another table",
                        hint="pick another --into name, or drop the tables of the old salvage",
                    )
                gone = [
                    n
                    for n in (self.name, self.carved_name)
                    if not (
                        conn.execute("SELECT to_regclass(%s) IS NOT NULL", (db.quote_ident(self.schema, n),)).fetchone()
                        or (False,)
                    )[0]
                ]
                if gone:
                    # resuming would count the rows the progress table lists as saved, in a table that is gone
                    raise UsageError(
                        f"the salvage into {self.describe} cannot be resumed: "
                        f"{' and '.join(db.quote_ident(self.schema, n) for n in gone)} "
                        f"{'is' if len(gone) == 1 else 'are'} gone, "
                        f"but {db.quote_ident(self.schema, self.progress_name)} lists rows as saved there",
                        hint=f"drop {db.quote_ident(self.schema, self.progress_name)} (and what is left of the old "
                        "salvage) to start again, or pick another --into name",
                    )
                return
            if main_exists and main_exists[0]:
                raise UsageError(
                    f"table {self.describe} already exists", hint="salvage creates the table itself: pick a new name"
                )
            with conn.transaction():
                conn.execute(db.sql.SQL("CREATE TABLE {} ({})").format(self.ident(self.name), col_sql))
                conn.execute(
                    db.sql.SQL("CREATE TABLE {} ({}, {})").format(self.ident(self.carved_name), prov_sql, col_sql)
                )
                conn.execute(
                    db.sql.SQL(
                        "CREATE TABLE {} (first_block bigint, end_block bigint, kind text NOT NULL, rows bigint, "
                        "note text, at timestamptz DEFAULT now())"
                    ).format(self.ident(self.progress_name))
                )
                conn.execute(
                    db.sql.SQL("INSERT INTO {} (kind, note) VALUES ('meta', %s)").format(
                        self.ident(self.progress_name)
                    ),
                    (meta,),
                )

    def dest_session(self) -> Session | None:
        return connect(self.dsn, read_only=False)

    def done_ranges(self) -> list[tuple[int, int]]:
        with db.connect(self.dsn) as conn:
            rows = conn.execute(
                db.sql.SQL("SELECT first_block, end_block FROM {} WHERE kind IN ('sql', 'tuples')").format(
                    self.ident(self.progress_name)
                )
            ).fetchall()
        return sorted((int(a), int(b)) for a, b in rows)

    def _progress(self, conn: Connection[tuple[Any, ...]], a: int, b: int, kind: str, rows: int) -> None:
        conn.execute(
            db.sql.SQL("INSERT INTO {} (first_block, end_block, kind, rows) VALUES (%s, %s, %s, %s)").format(
                self.ident(self.progress_name)
            ),
            (a, b, kind, rows),
        )

    def copy_all(self, dest: Session, ranges: list[tuple[int, int]]) -> int | None:
        """Every range in one transaction inside the server, as CREATE TABLE AS copies a table: the new (empty)
        table is created again by CREATE TABLE AS over the first TID range (a table created in the transaction is
        filled with bulk inserts, and with wal_level=minimal not WAL-logged), INSERT … SELECT adds the others, the
        progress rows go in the same commit. One TID range scan per statement: ranges OR-ed in one statement become
        a sequential scan, which reads the damaged blocks between them (and may set hint bits in their garbage).
        Only for a new table of the same database that holds nothing yet (a resumed salvage copies range by range);
        None when it does not apply. Raises what the server raises: the caller then copies range by range (nothing
        was committed)."""
        if not self.same_db or not ranges or self.done_ranges():
            return None

        def fn(conn: Connection[tuple[Any, ...]]) -> int:
            n = 0
            with conn.transaction():
                if self.snapshot is not None:
                    self.snapshot.begin(conn)
                conn.execute(db.sql.SQL("DROP TABLE {}").format(self.ident(self.name)))
                for i, (a, b) in enumerate(ranges):
                    verb = "CREATE TABLE {} AS {}" if i == 0 else "INSERT INTO {} {}"
                    query = db.sql.SQL(verb).format(self.ident(self.name), range_query(self.table, a, b))
                    rows = conn.execute(query).rowcount
                    self._progress(conn, a, b, "sql", rows)
                    n += rows
            return n

        rows: int = dest.run(fn)
        return rows

    def copy_range(self, src: Session, dest: Session | None, a: int, b: int) -> int:
        assert dest is not None
        if self.same_db:
            insert = db.sql.SQL("INSERT INTO {} {}").format(self.ident(self.name), range_query(self.table, a, b))

            def fn(conn: Connection[tuple[Any, ...]]) -> int:
                with conn.transaction():
                    if self.snapshot is not None:
                        self.snapshot.begin(conn)
                    n = conn.execute(insert).rowcount
                    self._progress(conn, a, b, "sql", n)
                return n

            return dest.run(fn)
        out_sql = db.sql.SQL("COPY ({}) TO STDOUT").format(range_query(self.table, a, b))
        in_sql = db.sql.SQL("COPY {} FROM STDIN").format(self.ident(self.name))

        def fn2(dconn: Connection[tuple[Any, ...]]) -> int:
            with dconn.transaction():
                with dconn.cursor().copy(in_sql) as cin:
                    n = self._pipe(src, out_sql.as_string(dconn), cin.write)
                self._progress(dconn, a, b, "sql", n)
            return n

        return dest.run(fn2)

    def _pipe(self, src: Session, copy_out: str, write: Any) -> int:
        """The rows of ``copy_out`` (a COPY … TO STDOUT) handed to ``write`` a megabyte at a time, read by psql
        under the salvage's snapshot: no row passes through Python on its own. Returns the rows (COPY text has one
        line per row: newlines inside values are escaped)."""
        psql = _psql()
        if psql is None:
            raise PgSurgeonError(
                "copying into another server needs psql (the rows are piped from one COPY into the other)",
                hint="install PostgreSQL's client programs, or salvage into the same database (--into without "
                "--into-dsn) or into files (--out)",
            )
        params = psycopg_conninfo(src.dsn)
        password = params.pop("password", None)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        env.update(psql[1])
        env.update({"PGOPTIONS": src.options, "PGCLIENTENCODING": "UTF8", "PGAPPNAME": "pgsurgeon salvage"})
        if password is not None:
            env["PGPASSWORD"] = password  # never on a command line (ps shows it to every local user)
        cmds = ["-c", copy_out]
        if self.snapshot is not None:
            begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            cmds = ["-c", begin, "-c", f"SET TRANSACTION SNAPSHOT '{self.snapshot.current()}'", *cmds, "-c", "COMMIT"]
        args = [str(psql[0]), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", make_conninfo(params), *cmds]
        rows = 0
        with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            while chunk := proc.stdout.read(1 << 20):
                write(chunk)
                rows += chunk.count(b"\n")
            err = proc.stderr.read().decode(errors="replace")
        if proc.returncode == 0:
            return rows
        message = next((line for line in err.splitlines() if line.strip()), f"psql exited with {proc.returncode}")
        message = message.removeprefix("psql:").split("ERROR:", 1)[-1].strip()
        if proc.returncode == 2:  # the connection to the server was lost
            raise BackendLost(message)
        raise SqlFailed(None, message)

    def copy_tuples(self, src: Session, dest: Session | None, block: int, lps: list[int]) -> TupleOutcome:
        assert dest is not None
        failed: dict[int, str] = {}
        crashed: list[int] = []
        lines: list[bytes] = []
        for lp in lps:
            q = db.sql.SQL("COPY ({}) TO STDOUT").format(tuple_query(self.table, block, lp))

            def fn(conn: Connection[tuple[Any, ...]], q: Composed = q) -> list[bytes]:
                with reading(conn, self.snapshot), conn.cursor().copy(q) as cp:
                    return [bytes(d) for d in cp]

            try:
                lines.extend(src.run(fn))
            except SqlFailed as exc:
                failed[lp] = exc.message
            except BackendLost as exc:
                failed[lp] = f"backend crashed: {exc}"
                crashed.append(lp)
        in_sql = db.sql.SQL("COPY {} FROM STDIN").format(self.ident(self.name))

        def store(conn: Connection[tuple[Any, ...]]) -> None:
            with conn.transaction():
                with conn.cursor().copy(in_sql) as cin:
                    for line in lines:
                        cin.write(line)
                self._progress(conn, block, block + 1, "tuples", len(lines))

        dest.run(store)
        return TupleOutcome(len(lines), failed, crashed)

    @contextlib.contextmanager
    def carve_targets(self) -> Iterator[dict[str, Any]]:
        """Carved rows stream into the new table and the kept-apart ones into ``<new>_carved``, through COPY on two
        connections, committed together with the progress row once the carve is done."""
        rows = [0]
        with (
            db.connect(self.dsn) as conn,
            db.connect(self.dsn) as aconn,
            conn.transaction(),
            aconn.transaction(),
        ):
            conn.execute(db.sql.SQL("DELETE FROM {} WHERE kind = 'carved'").format(self.ident(self.progress_name)))
            aconn.execute(db.sql.SQL("TRUNCATE {}").format(self.ident(self.carved_name)))
            main_sql = db.sql.SQL("COPY {} FROM STDIN").format(self.ident(self.name))
            apart_sql = db.sql.SQL("COPY {} FROM STDIN").format(self.ident(self.carved_name))
            with conn.cursor().copy(main_sql) as cin, aconn.cursor().copy(apart_sql) as ain:

                def write(main: bytes, apart: bytes, prov: bytes) -> None:
                    if main:
                        cin.write(main)
                        rows[0] += main.count(b"\n")
                    if apart:
                        ain.write(apart)

                yield {"write": write}
            self._progress(conn, -1, -1, "carved", rows[0])

    def carved_done(self) -> bool:
        with db.connect(self.dsn) as conn:
            row = conn.execute(
                db.sql.SQL("SELECT count(*) FROM {} WHERE kind = 'carved'").format(self.ident(self.progress_name))
            ).fetchone()
        return bool(row and row[0])

    def finish(self) -> dict[str, Any]:
        return {
            "table": self.describe,
            "carved_table": f"{self.schema}.{self.carved_name}",
            "progress_table": f"{self.schema}.{self.progress_name}",
        }
