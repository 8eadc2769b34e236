"""Executing a repair plan, step by step, as it was printed.

Nothing destructive runs before the salvage and the saved pages are on disk. SQL steps run in the planning session
(autocommit: each statement is its own transaction). File steps stop a lab cluster (or wait for the DBA to stop any
other server), write the pages through the simulator's manifest, so ``pgsurgeon undo`` restores them, and start it
again. The last step diagnoses the table again.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pgsurgeon import core, db
from pgsurgeon.catalog import sql as catalog
from pgsurgeon.catalog.relation import Relation
from pgsurgeon.errors import PgSurgeonError
from pgsurgeon.lab.marker import is_lab_cluster, read_lab_marker, utc_now
from pgsurgeon.repair import facts, ledger, pages
from pgsurgeon.repair.ledger import APART_FILE, CARVED_FILE, KEPT_APART
from pgsurgeon.repair.maps import FSM_REMOVE, VM_CLEAR, VM_HEADER, fsm_removals, vm_heap_blocks_per_page
from pgsurgeon.repair.model import (
    CARVE,
    CHECK,
    CLEAR_LPS,
    FREEZE,
    KILL,
    REINDEX,
    REINSERT,
    RESTORE_FILE,
    REWRITE_SQL,
    SALVAGE,
    SAVE_PAGES,
    VACUUM,
    VERIFY,
    VM_FILE,
    ZERO_FILE,
    PageWrite,
    Plan,
    Step,
    Tid,
    tid_text,
)
from pgsurgeon.repair.planner import Context, diagnose
from pgsurgeon.repair.steps import write_words
from pgsurgeon.salvage.engine import SalvageOptions, salvage

Say = Callable[[str], None]
WAIT_STOP_S = 1800.0
WAIT_START_S = 1800.0


class Executor:
    def __init__(self, plan: Plan, ctx: Context, run_dir: Path, say: Say) -> None:
        self.plan = plan
        self.ctx = ctx
        self.run_dir = run_dir
        self.say = say
        self.notices: list[str] = []
        self.digests: dict[str, int] = {}
        """Key digests the execution learns: of the frozen rows, of the rows inserted back."""
        self.report: dict[str, Any] = {
            "started_at": utc_now(),
            "run_dir": str(run_dir),
            "steps": [],
            "notices": self.notices,
            "reinserted": [],
            "reinsert_skipped": [],
            "manifest": None,
            "salvage": None,
        }
        self._watch(ctx.conn)
        ctx.conn.execute(db.load_sql("session_setting"), {"name": "default_transaction_read_only", "value": "off"})

    # ------------------------------------------------------------------ plumbing

    def _watch(self, conn: Any) -> None:
        def on_notice(diag: Any) -> None:
            self.notices.append(f"{diag.severity}: {diag.message_primary}")

        conn.add_notice_handler(on_notice)

    def reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self.ctx.conn.close()
        deadline = time.monotonic() + 120
        while True:
            try:
                conn = facts.connect(self.ctx.req.dsn)
                break
            except db.ConnectError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self.ctx.conn = conn
        self.ctx.reader.conn = conn
        self._watch(conn)

    def sql(self, statement: str, hint: str | None = None) -> int:
        """Run one statement exactly as the plan printed it; its row count."""
        try:
            cur = self.ctx.conn.execute(statement.encode())
        except db.Error as exc:
            diag = getattr(exc, "diag", None)
            first = (str(exc).strip().splitlines() or ["error"])[0]
            detail = getattr(diag, "message_detail", None)
            raise PgSurgeonError(
                f"{first}{' (' + detail + ')' if detail else ''} in: {statement[:200]}",
                hint=(hint + "; " if hint else "")
                + f"the steps before this one are done (see {self.run_dir / 'report.json'}); fix the cause and run "
                "repair again: it plans from the table as it is now",
            ) from None
        return int(cur.rowcount or 0)

    # ------------------------------------------------------------------ run

    def run(self) -> dict[str, Any]:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "plan.json").write_text(json.dumps(self.plan.to_json(), indent=2) + "\n", encoding="utf-8")
        handlers: dict[str, Callable[[Step], dict[str, Any]]] = {
            SALVAGE: self.salvage,
            SAVE_PAGES: self.save_pages,
            CARVE: self.save_carved,
            FREEZE: self.surgery,
            KILL: self.surgery,
            ZERO_FILE: self.write_pages,
            CLEAR_LPS: self.write_pages,
            RESTORE_FILE: self.write_pages,
            VM_FILE: self.write_pages,
            REWRITE_SQL: self.plain_sql,
            REINDEX: self.reindex,
            VACUUM: self.plain_sql,
            REINSERT: self.reinsert,
            VERIFY: self.verify,
            CHECK: self.check_ledger,
        }
        try:
            for step in self.plan.steps:
                self.say(f"step {step.id}: {step.title}")
                started = time.monotonic()
                detail = handlers[step.kind](step)
                self.report["steps"].append(
                    {"id": step.id, "kind": step.kind, "seconds": round(time.monotonic() - started, 3), **detail}
                )
        finally:
            self.report["finished_at"] = utc_now()
            (self.run_dir / "report.json").write_text(
                json.dumps({"plan": self.plan.to_json(), "execution": self.report}, indent=2, default=str) + "\n",
                encoding="utf-8",
            )
        return self.report

    # ------------------------------------------------------------------ backups

    def salvage(self, step: Step) -> dict[str, Any]:
        req = self.ctx.req
        out = None if req.salvage_into else (req.salvage_out or self.run_dir / "salvage")
        opts = SalvageOptions(
            dsn=req.dsn, table=self.ctx.table.regclass, into=req.salvage_into, out=out, pgdata=req.pgdata
        )
        try:
            result = salvage(opts)
        except PgSurgeonError as exc:
            raise PgSurgeonError(
                f"salvage failed, nothing was changed: {exc.message}",
                hint=exc.hint or "--skip-salvage goes ahead without the full copy of the table",
            ) from None
        except Exception as exc:  # any failure of the copy stops the repair before it changes anything
            raise PgSurgeonError(
                f"salvage failed, nothing was changed: {type(exc).__name__}: {exc}",
                hint="--skip-salvage goes ahead without the full copy of the table (pages and carved rows are saved)",
            ) from None
        summary = {
            "output": result.get("output") or result.get("outputs"),
            "rows": result.get("rows"),
            "lost_count": result.get("lost_count"),
            "complete": result.get("complete"),
        }
        self.report["salvage"] = summary
        rows = (result.get("rows") or {}).get("saved")
        self.say(f"  salvaged {rows if rows is not None else '?'} row(s) into {summary['output']}")
        return summary

    def save_pages(self, step: Step) -> dict[str, Any]:
        """Every page the repair changes, as the server has it and as the file has it, before anything changes."""
        out = self.run_dir / "pages"
        out.mkdir(parents=True, exist_ok=True)
        index: list[dict[str, Any]] = []
        by_name = {r.regclass: r for r in self.ctx.rels}
        from pgsurgeon.journal.manifest import sha256, write_durably

        for relname, blocks in self.plan.touched.items():
            rel = by_name[relname]
            for blk in blocks:
                for source in ("server", "file"):
                    data: bytes | None
                    if source == "server":
                        got = next(iter(self.ctx.reader.server_pages(rel, blk, blk)), None)
                        data = got[1] if got is not None and isinstance(got[1], bytes) else None
                    else:
                        data = self.ctx.reader.file_page(rel, blk)
                    if data is None:
                        continue
                    name = f"{rel.oid}-{blk}.{source}.bin"
                    write_durably(out / name, data)
                    index.append(
                        {
                            "relation": relname,
                            "file": rel.filepath,
                            "block": blk,
                            "source": source,
                            "saved": name,
                            "sha256": sha256(data),
                        }
                    )
        (out / "index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
        pages = len({(e["file"], e["block"]) for e in index})
        self.say(
            f"  saved {pages} page(s) in {out}: {len(index)} image(s), the server's and the file's copy of each "
            "where they could be read"
        )
        return {"saved": len(index), "dir": str(out)}

    def save_carved(self, step: Step) -> dict[str, Any]:
        """carved.copy holds the rows as COPY text of the columns an INSERT takes: generated columns are left out,
        so that the file loads as it is (and the server computes them again)."""
        rows = sorted(self.plan.carved_rows.items())
        path = self.run_dir / CARVED_FILE
        live = [c for c in self.ctx.cols if not c.dropped]
        keep = [i for i, c in enumerate(live) if not c.generated]
        with path.open("wb") as fh:
            for _, line in rows:
                fields = line.rstrip(b"\n").split(b"\t")  # COPY text escapes a tab inside a value as \t
                fh.write(b"\t".join(fields[i] for i in keep) + b"\n")
        columns = [live[i].name for i in keep]
        (self.run_dir / "carved.json").write_text(
            json.dumps({"columns": columns, "ctids": [tid_text(t) for t, _ in rows]}, indent=2) + "\n",
            encoding="utf-8",
        )
        apart = [(tid, line, why) for tid, got in sorted(self.plan.apart_rows.items()) for line, why in got]
        self.keep_apart(apart)
        return {"rows": len(rows), "file": str(path), "kept_apart": len(apart)}

    def keep_apart(self, rows: list[tuple[Tid, bytes, str]]) -> None:
        """Append rows to ``kept-apart.copy``: COPY text lines of the ctid, why, then the row's columns (values the
        carver could not decode as \\N, bytes not valid in the encoding escaped as \\xHH text)."""
        path = self.run_dir / APART_FILE
        with path.open("ab") as fh:
            for tid, line, why in rows:
                reason = why.replace("\\", "\\\\").replace("\t", " ").replace("\n", " ").encode()
                fh.write(tid_text(tid).encode() + b"\t" + reason + b"\t" + line.rstrip(b"\n") + b"\n")
        (self.run_dir / "kept-apart.json").write_text(
            json.dumps({"columns": ["ctid", "why", *self.live_columns()], "file": str(path)}, indent=2) + "\n",
            encoding="utf-8",
        )

    def live_columns(self) -> list[str]:
        return [c.name for c in self.ctx.cols if not c.dropped]

    # ------------------------------------------------------------------ SQL steps

    def surgery(self, step: Step) -> dict[str, Any]:
        before = len(self.notices)
        for statement in step.sql:
            self.sql(statement)
        skipped = [n for n in self.notices[before:] if "skipping" in n]
        for n in skipped:
            self.say(f"  {n}")
        if step.kind == FREEZE and step.relation == self.ctx.table.regclass:
            # frozen tuples stay where they are: their keys join the ledger's digest now (a rewrite moves them)
            rows, digest = ledger.count_tids(self.ctx.conn, self.ctx.table, self.plan.ledger.key, step.tids)
            self.digests["frozen"] = digest
            self.say(f"  {rows} of the {len(step.tids)} frozen tuple(s) are visible rows now")
        return {"tuples": len(step.tids), "skipped": skipped}

    def plain_sql(self, step: Step, hint: str | None = None) -> dict[str, Any]:
        before = len(self.notices)
        for statement in step.sql:
            self.sql(statement, hint)
        said = self.notices[before:]
        for n in said:
            self.say(f"  {n}")
        return {"notices": said}

    def reindex(self, step: Step) -> dict[str, Any]:
        """REINDEX; a failed CONCURRENTLY build leaves an invalid new index behind, which is dropped again."""
        conn = self.ctx.conn
        oids = [r.oid for r in self.ctx.rels if r.role in ("table", "toast")]

        def indexes() -> list[Relation]:
            rels = catalog.relatives(conn, oids, database="", block_size=self.ctx.server.block_size)
            return [r for r in rels if r.role in ("index", "toast-index")]

        before = {r.oid for r in indexes()}
        try:
            return self.plain_sql(
                step,
                hint="a unique index that cannot be built means two rows carry the same key: a value damaged in a way "
                "no structural check sees; find them (SELECT ctid, * FROM the table WHERE key = …), delete the wrong "
                "one with heap_force_kill",
            )
        except PgSurgeonError:
            for index in indexes():
                if index.oid not in before and not index.valid:
                    with contextlib.suppress(db.Error):
                        conn.execute(db.sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(index.ident()))
                        self.say(f"  dropped the invalid index {index.qualified} the failed build left behind")
            raise

    # ------------------------------------------------------------------ file steps

    def write_pages(self, step: Step) -> dict[str, Any]:
        from pgsurgeon.journal import apply as applying
        from pgsurgeon.journal.manifest import Manifest
        from pgsurgeon.journal.server import postmaster_pid, server_stopped

        pgdata = self.ctx.server.pgdata
        assert pgdata is not None
        path = (self.run_dir / "undo-manifest.json").absolute()

        # the page work alone, apart from stopping and starting the server: fetching and checking the good copies,
        # then the manifest (old pages read, recorded, fsynced) and the writes
        timings: dict[str, Any] = {}

        def build() -> Manifest:
            copies = self.fetch_copies(step, pgdata, timings)
            changes, records = self.page_changes(step.writes, pgdata, copies)
            return Manifest(path, self.manifest_header(pgdata, step), changes, records)

        def write(manifest: Manifest) -> None:
            started = time.monotonic()
            applying.apply(manifest, self.say)
            timings["write_seconds"] = round(time.monotonic() - started, 3)

        self.standby_streaming(step)
        self.ctx.conn.close()
        if self.ctx.lab is not None:
            with server_stopped(pgdata, self.say):
                manifest = build()
                write(manifest)
        else:
            if postmaster_pid(pgdata) is not None:
                self.say(f"  stop the server now (pg_ctl stop -D {pgdata}); repair waits for it to be down")
                deadline = time.monotonic() + WAIT_STOP_S
                while postmaster_pid(pgdata) is not None:
                    if time.monotonic() > deadline:
                        raise PgSurgeonError(
                            f"the server on {pgdata} did not stop within {WAIT_STOP_S:.0f}s; no page was written",
                            hint="stop it and run repair again",
                        )
                    time.sleep(1)
            manifest = build()
            write(manifest)
            self.say(f"  pages written; start the server again (pg_ctl start -D {pgdata}); repair waits for it")
        self.wait_for_server()
        self.reconnect()
        self.report["manifest"] = str(path)
        self.say(f"  undo manifest: {path} (pgsurgeon undo {path} puts the old pages back)")
        restored = self.count_restored()
        return {"manifest": str(path), "pages": len(manifest.pages), **timings, **restored}

    def standby_streaming(self, step: Step) -> None:
        """Before the primary stops: the standby streams from it and has replayed all it wrote, so that it receives
        the shutdown checkpoint too (WAL written while no WAL receiver is connected reaches it only once the primary
        runs again)."""
        source = self.ctx.source
        if source is None or not source.follows_primary or not any(w.action == "restore" for w in step.writes):
            return
        from pgsurgeon.repair.copies import parse_lsn

        row = self.ctx.conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        target = parse_lsn(row[0] if row else None) or 0
        source.wait(target, "current WAL position", self.ctx.req.standby_timeout, self.say, streaming=True)

    def fetch_copies(
        self, step: Step, pgdata: Path, timings: dict[str, Any] | None = None
    ) -> dict[tuple[str, int], bytes]:
        """The good copies for the step's restore writes, fetched again now that the primary is stopped."""
        source = self.ctx.source
        if source is None or not any(w.action == "restore" for w in step.writes):
            return {}
        from pgsurgeon.repair.restore import fetch_again

        rels = {r.regclass: r for r in self.ctx.rels}
        server = self.ctx.server
        return fetch_again(source, step.writes, rels, pgdata, server, self.ctx.req.standby_timeout, self.say, timings)

    def count_restored(self) -> dict[str, Any]:
        """The rows on the restored pages of the table as the primary reads them now, and their key digest (the
        ledger's check adds it to the digest of the rows in place)."""
        led = self.plan.ledger
        if not led.restored_blocks:
            return {}
        runs = ledger.block_runs(set(led.restored_blocks))
        rows, digest = ledger.count_ranges(self.ctx.conn, self.ctx.table, led.key, runs)
        self.digests["restored"] = digest
        planned = [c.rows for c in self.plan.copies if c.accepted and c.role == "table" and c.fork == "main"]
        if any(r is None for r in planned):
            led.restored = rows  # not counted on the copies beforehand (the carver could not run)
        self.say(f"  {rows} row(s) on the {len(led.restored_blocks)} restored page(s) of {self.plan.table}")
        return {"restored_rows": rows, "restored_rows_planned": led.restored}

    def wait_for_server(self) -> None:
        deadline = time.monotonic() + (120 if self.ctx.lab is not None else WAIT_START_S)
        while True:
            try:
                with db.connect(self.ctx.req.dsn) as conn:
                    conn.execute("SELECT 1")
                return
            except (db.ConnectError, db.OperationalError):
                if time.monotonic() > deadline:
                    raise PgSurgeonError(
                        "the server did not accept connections after the page writes",
                        hint="start it, then run repair again: it plans from the table as it is now",
                    ) from None
                time.sleep(0.5)

    def manifest_header(self, pgdata: Path, step: Step) -> dict[str, Any]:
        lab = None
        if is_lab_cluster(pgdata):
            marker = read_lab_marker(pgdata)
            lab = {"name": marker.get("name"), "id": marker.get("id")}
        try:
            major = (pgdata / "PG_VERSION").read_text(encoding="utf-8").strip()
        except OSError:
            major = None
        return {
            "created_at": utc_now(),
            "tool": "repair",
            "pgdata": str(pgdata),
            "lab": lab,
            "force_non_lab": lab is None,
            "postgresql_major": major,
            "checksums": self.ctx.server.checksums,
            "blcksz": self.ctx.server.block_size,
            "relseg_size": self.ctx.server.segment_blocks,
            "mode": "repair",
            "field": None,
            "seed": None,
            "relation": {"name": self.plan.table, "role": "table", "kind": "heap", "file": self.ctx.table.filepath},
            "notes": [f"{w.relation} block {w.block}: {write_words(w)}" for w in step.writes],
            "warnings": [],
        }

    def page_changes(
        self, writes: list[PageWrite], pgdata: Path, copies: dict[tuple[str, int], bytes]
    ) -> tuple[list[Any], list[Any]]:
        from pgsurgeon.journal.manifest import FileChange, PageRecord, sha256

        bs = self.ctx.server.block_size
        checksums = self.ctx.server.checksums
        changes: list[Any] = []
        records: list[Any] = []

        # the new image of each page written, by (file, offset): a restored map page may still get bits cleared
        pending: dict[tuple[str, int], tuple[int, bytes, bytes, str]] = {}

        def add(file: str, block: int, offset: int, old: bytes, new: bytes, note: str) -> None:
            pending[(file, offset)] = (block, old, new, note)

        vm_clear: dict[str, set[int]] = {}
        for w in writes:
            if w.action == VM_CLEAR:
                vm_clear.setdefault(w.file, set()).add(w.block)
                continue
            if w.action == FSM_REMOVE:
                changes.extend(fsm_removals(pgdata, w.file))
                continue
            old = _read(pgdata / w.file, w.offset, bs)
            if old is None or len(old) != bs:
                raise PgSurgeonError(f"{w.file} block {w.block} cannot be read for the page write; nothing written")
            if w.action == "zero":
                new = bytes(bs)
                note = "repair: page zeroed"
                rel = next(r for r in self.ctx.rels if r.regclass == w.relation)
                if rel.filepath:
                    vm_clear.setdefault(rel.filepath, set()).add(w.block)
            elif w.action == "restore":
                new = copies[(w.file, w.block)]
                note = f"repair: page restored from the {w.copy.source if w.copy is not None else 'copy'}"
            else:
                new = clear_line_pointers(old, w.lps, w.block, checksums)
                note = f"repair: line pointers {w.lps} cleared"
            add(w.file, w.block, w.offset, old, new, note)
        # visibility map bits of zeroed blocks: an all-zero page is not all-visible
        per_vm = vm_heap_blocks_per_page(bs)
        for filepath, blocks in vm_clear.items():
            by_vm: dict[int, list[int]] = {}
            for b in blocks:
                by_vm.setdefault(b // per_vm, []).append(b)
            for vm_blk, heap_blocks in sorted(by_vm.items()):
                segno, in_seg = divmod(vm_blk, self.ctx.server.segment_blocks)
                vm_file = f"{filepath}_vm" if segno == 0 else f"{filepath}_vm.{segno}"
                restored = pending.get((vm_file, in_seg * bs))
                old = _read(pgdata / vm_file, in_seg * bs, bs) if restored is None else restored[1]
                base = old if restored is None else restored[2]
                if old is None or len(old) != bs or base is None or not any(base):
                    continue
                page = bytearray(base)
                for b in heap_blocks:
                    i = VM_HEADER + (b % per_vm) // 4
                    page[i] &= ~(0x3 << ((b % 4) * 2)) & 0xFF
                if checksums:
                    _set_checksum(page, vm_blk)
                note = "repair: visibility map bits cleared"
                add(vm_file, vm_blk, in_seg * bs, old, bytes(page), note if restored is None else restored[3])
        for (file, offset), (block, old, new, note) in pending.items():
            if new != old:
                changes.append(FileChange.replace_bytes(file, offset, old, new, block=block, note=note))
                records.append(PageRecord(file, block, offset, bs, sha256(old), sha256(new), original=old))
        return changes, records

    # ------------------------------------------------------------------ reinsert and verify

    def reinsert(self, step: Step) -> dict[str, Any]:
        rows = sorted(self.plan.carved_rows.items())
        if not rows:
            return {"inserted": 0}
        conn = self.ctx.conn
        from pgsurgeon.salvage.session import OUTPUT_SETTINGS

        for name, value in OUTPUT_SETTINGS.items():
            if name != "client_encoding":
                conn.execute(db.load_sql("session_setting"), {"name": name, "value": value})
        sq = db.sql
        tmp = sq.Identifier("pgsurgeon_reinsert")
        src = sq.Identifier("pgsurgeon repair ctid")
        table = self.ctx.table.ident()
        live = [c for c in self.ctx.cols if not c.dropped]
        ins = [c for c in live if not c.generated]
        identity_always = any(c.identity == "a" for c in ins)
        ins_cols = sq.SQL(", ").join(sq.Identifier(c.name) for c in ins)
        conn.execute(sq.SQL("DROP TABLE IF EXISTS pg_temp.{}").format(tmp))
        conn.execute(sq.SQL("CREATE TEMP TABLE {} (LIKE {})").format(tmp, table))
        conn.execute(sq.SQL("ALTER TABLE pg_temp.{} ADD COLUMN {} text").format(tmp, src))
        # carved lines hold the stored columns only (generated ones are computed again on insert)
        with conn.cursor().copy(sq.SQL("COPY pg_temp.{} ({}, {}) FROM STDIN").format(tmp, ins_cols, src)) as cp:
            for tid, line in rows:
                cp.write(line.rstrip(b"\n") + b"\t" + tid_text(tid).encode() + b"\n")
        led = self.plan.ledger
        insert = sq.SQL(
            "INSERT INTO {} ({}) {}SELECT {} FROM pg_temp.{} WHERE {} = %s ON CONFLICT DO NOTHING RETURNING {}::text"
        ).format(
            table,
            ins_cols,
            sq.SQL("OVERRIDING SYSTEM VALUE ") if identity_always else sq.SQL(""),
            ins_cols,
            tmp,
            src,
            ledger.key_hash(led.key),
        )
        inserted: list[str] = []
        skipped: list[dict[str, str]] = []
        digest = 0
        for tid, _ in rows:
            try:
                got = conn.execute(insert, (tid_text(tid),)).fetchall()
            except db.Error as exc:
                skipped.append({"ctid": tid_text(tid), "why": (str(exc).strip().splitlines() or ["error"])[0]})
                continue
            if got:
                inserted.append(tid_text(tid))
                digest += int(got[0][0])
            else:
                skipped.append({"ctid": tid_text(tid), "why": "a row with the same key is in the table"})
        conn.execute(sq.SQL("DROP TABLE pg_temp.{}").format(tmp))
        # a row the table refused is kept apart, not dropped: the ledger moves it
        lines = dict(rows)
        moved: list[tuple[Tid, bytes, str]] = []
        for sk in skipped:
            tid = _parse_tid(sk["ctid"])
            why = f"carved with certainty, but the table refused it: {sk['why']}"
            moved.append((tid, lines[tid], why))
            if tid in led.reinsert:
                led.reinsert.remove(tid)
            led.apart[tid] = f"{why}; saved in {APART_FILE}"
            for loss in self.plan.lost:
                if loss.tid == tid:
                    loss.place = KEPT_APART
        if moved:
            self.keep_apart(moved)
        self.digests["reinserted"] = digest
        self.report["reinserted"] = inserted
        self.report["reinsert_skipped"] = skipped
        self.say(f"  {len(inserted)} row(s) inserted back, {len(skipped)} not")
        return {"inserted": len(inserted), "skipped": skipped}

    def check_ledger(self, step: Step) -> dict[str, Any]:
        """The table against the ledger: every row in place or reinserted is there, no other; keys by digest."""
        led = self.plan.ledger
        try:
            rows, digest = ledger.table_counts(self.ctx.conn, self.ctx.table, led.key)
        except db.Error as exc:
            raise ledger.LedgerMismatch(
                f"{self.plan.table} cannot be read to the end after the repair: "
                + (str(exc).strip().splitlines() or ["error"])[0],
                hint=f"the ledger is in {self.run_dir / 'report.json'}; run 'pgsurgeon diagnose' on the table, then "
                "repair again",
            ) from None
        if led.deferred is not None:  # the plan changes no row: what the table holds once its index is rebuilt
            led.untouched, led.digest, led.counted = rows, digest, True
        expected_digest = led.digest + sum(self.digests.get(k, 0) for k in ("frozen", "reinserted", "restored"))
        self.report["ledger"] = led.to_json()
        try:
            result = ledger.check(led, rows, digest, expected_digest, self.plan.table, str(self.run_dir))
        except ledger.LedgerMismatch:
            self.report["ledger_check"] = {
                "match": False,
                "rows": rows,
                "expected_rows": led.expected_after,
            }
            self.say(f"  the table does NOT match the ledger: {rows} row(s), {led.expected_after} planned")
            raise
        self.report["ledger_check"] = result
        self.say(f"  the table matches the ledger: {led.summary()}")
        return result

    def verify(self, step: Step) -> dict[str, Any]:
        if self.ctx.server.pgdata is not None:
            # diagnose reads the relation files when they are here: a checkpoint first, so they hold what the
            # server holds (right after REINDEX and the inserts they may not, and stale files read as damage)
            with contextlib.suppress(db.Error):
                self.ctx.conn.execute("CHECKPOINT")
        outcome = diagnose(self.ctx)
        # A tuple whose line pointer is gone keeps its bytes on the page until the page is pruned: one this repair
        # killed (heap_force_kill), or a row the plan already accounts for (lost, or reinserted from carving). Those
        # are no new damage; any other such tuple is.
        # In the TOAST table such a chunk is garbage once no row points to its value (the value check after the
        # repair would name a row that still did).
        accounted = {tid for s in self.plan.steps if s.kind == KILL for tid in s.tids}
        accounted |= {loss.tid for loss in self.plan.lost}

        def known(f: dict[str, Any]) -> bool:
            if f["code"] != "line_pointer.unreferenced_tuple":
                return False
            return (f["block"], f["item"]) in accounted or str(f.get("relation") or "").startswith("pg_toast.")

        errors = [f for f in outcome.findings if f["severity"] == "error" and not known(f)]
        readable = True
        read_error = None
        try:
            with db.connect(self.ctx.req.dsn) as conn:
                conn.execute(db.sql.SQL("SELECT count(*) FROM {}").format(self.ctx.table.ident())).fetchone()
        except db.Error as exc:
            readable = False
            read_error = (str(exc).strip().splitlines() or ["error"])[0]
        clean = not errors and readable
        after = {
            "clean": clean,
            "errors": len(errors),
            "warnings": sum(1 for f in outcome.findings if f["severity"] == "warning"),
            "readable": readable,
            "read_error": read_error,
            "findings": errors[:200],
        }
        self.report["after"] = after
        if clean:
            self.say(f"  {self.plan.table} is clean: amcheck (heap, TOAST, indexes with heapallindexed) finds nothing")
        else:
            self.say(
                f"  {self.plan.table} is NOT clean: {len(errors)} error finding(s)"
                + (f"; {read_error}" if read_error else "")
            )
            for f in errors[:10]:
                self.say(f"    {f['relation']} block {f['block']} lp {f['item']}: {f['code']}: {f['message'][:120]}")
        return {"clean": clean, "errors": len(errors)}


def _parse_tid(text: str) -> Tid:
    b, lp = text.strip("()").split(",")
    return int(b), int(lp)


def _read(path: Path, offset: int, length: int) -> bytes | None:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            return fh.read(length)
    except FileNotFoundError:
        return None


def _set_checksum(page: bytearray, block: int) -> None:
    page[8:10] = b"\0\0"
    value = core.page_checksum(bytes(page), block)
    if value is not None:
        page[8:10] = int(value).to_bytes(2, "little")


def clear_line_pointers(page: bytes, lps: list[int], block: int, checksums: bool) -> bytes:
    """The page with these line pointers set LP_UNUSED (off 0, len 0) and, with checksums, a fresh checksum."""
    out = bytearray(page)
    maxoff = pages.max_offset(page)
    for lp in lps:
        if 1 <= lp <= maxoff:
            at = 24 + (lp - 1) * 4
            out[at : at + 4] = b"\0\0\0\0"
    if checksums:
        _set_checksum(out, block)
    return bytes(out)


def execute(plan: Plan, ctx: Context, run_dir: Path, say: Say | None = None) -> dict[str, Any]:
    """Run every step of ``plan``; the execution report (also in ``run_dir/report.json``)."""
    speak: Say = say or (lambda text: print(text, file=sys.stderr))
    return Executor(plan, ctx, run_dir, speak).run()


def carved_load_command(ctx: Context, run_dir: Path, conn_words: str) -> str:
    """The psql command that loads carved.copy into the table, as printed after a repair that kept the rows out:
    the settings the rows were written under, the file's encoding and its columns (no generated ones)."""
    import shlex

    from pgsurgeon.salvage.session import OUTPUT_SETTINGS

    columns = json.loads((run_dir / "carved.json").read_text(encoding="utf-8"))["columns"]
    cols = ", ".join(db.sql.Identifier(c).as_string(None) for c in columns)
    path = str((run_dir / CARVED_FILE).resolve()).replace("'", "''")
    copy = f"\\copy {ctx.table.ident().as_string(None)} ({cols}) FROM '{path}' WITH (ENCODING '{ctx.server.encoding}')"
    settings = " ".join(f"-c {k}={OUTPUT_SETTINGS[k].replace(' ', '')}" for k in ("DateStyle", "lc_monetary"))
    words = [f"PGOPTIONS={shlex.quote(settings)}", "psql", conn_words, "-X -v ON_ERROR_STOP=1", "-c", shlex.quote(copy)]
    return " ".join(w for w in words if w)
