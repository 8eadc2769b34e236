//! Carving rows out of heap pages the server cannot read (or should not be asked to read): the tuples found in
//! the page ([`super::find`]), columns decoded by the table's types ([`crate::datum`]), TOAST values reassembled
//! ([`super::detoast`]), and visibility decided from hint bits and pg_xact ([`crate::visibility::xact`]) so
//! deleted and aborted rows stay dead. The rows go out through [`super::output`].

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::encode::{copy_csv_escape, copy_text_escape, csv_needs_quote, needs_text_escape, plain_ascii_text};
use crate::datum::{format_value, output_is_plain_ascii, OutputOptions, TypeDesc};
use crate::error::{CoreError, Result};
use crate::finding::Code;
use crate::format::bytes::u32_at;
use crate::format::heap::HeapTupleHeaderData;
use crate::format::page::Page;
use crate::format::tuple::{RelDesc, VarlenaKind};
use crate::sources::blocks::{default_blcksz, default_relseg, BlockReader, SegFile};
use crate::visibility::commit_ts::CommitTs;
use crate::visibility::service::Visibility;
use crate::visibility::transam::Horizons;
use crate::visibility::xact::{Clog, Judgement, Verdict, XidStatus};

use super::detoast::{assemble, Chunks, ToastFiles};
use super::find::{
    crosses_tear, find_tuples_into, foreign_region, max_heap_tuples, stale_copies, Found, Placement, Plausibility, Via,
};
use super::output::{
    account_lost, escape_invalid_utf8, write_plain_run, write_provenance, Batch, CarveCounts, CarveResult, CarvedRow,
    Certainty, RAW_NOTE_BYTES,
};
use super::undelete::{write_deleted_prefix, CommitRecord, Removal};

/// Output format of carved rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OutFormat {
    /// COPY text format.
    #[default]
    Text,
    Csv,
}

/// One output column.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnOut {
    pub attnum: i16,
    pub name: String,
    /// None: the type is not known to the carver (the row is kept apart with the reason).
    #[serde(default)]
    pub r#type: Option<TypeDesc>,
    /// attmissingval as text, for rows written before the column was added.
    #[serde(default)]
    pub missing: Option<String>,
}

/// One TOAST chunk handed in by the caller (fetched through SQL): its bytes are
/// `blob[start..start + len]`.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChunkRef {
    pub valueid: u32,
    pub seq: i32,
    pub start: usize,
    pub len: usize,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CarveConfig {
    #[serde(default = "default_blcksz")]
    pub blcksz: u32,
    #[serde(default = "default_relseg")]
    pub relseg_size: u32,
    pub nblocks: u64,
    /// The heap's segment files, when the data directory is at hand (else pages come from the caller).
    #[serde(default)]
    pub files: Vec<SegFile>,
    pub desc: RelDesc,
    /// The columns to output (the table's non-dropped columns, in attnum order).
    pub columns: Vec<ColumnOut>,
    #[serde(default)]
    pub format: OutFormat,
    #[serde(default = "default_version")]
    pub server_version_num: u32,
    /// server_encoding: with UTF8, a value whose bytes are not valid UTF-8 keeps its row apart (loading it would
    /// fail), its bad bytes written as `\xHH` text.
    #[serde(default)]
    pub encoding: String,
    /// Data checksums are on: rows of a page that fails its checksum are kept apart (their bytes may be altered).
    #[serde(default)]
    pub checksums: bool,
    /// Carving a base backup: backup_label's START WAL LOCATION. A page with a newer LSN was written while the backup
    /// copied it: failing its checksum, it is torn in the copy (WAL replay rewrites it), not damaged.
    #[serde(default)]
    pub backup_start_lsn: Option<u64>,
    #[serde(default)]
    pub horizons: Option<Horizons>,
    /// `<pgdata>/pg_xact`, when the data directory is at hand.
    #[serde(default)]
    pub xact_dir: Option<PathBuf>,
    /// The snapshot the SQL connections read with (`pg_current_snapshot()` text): transactions it sees running
    /// count as in progress, so carved rows show the table at the same moment.
    #[serde(default)]
    pub snapshot: Option<String>,
    /// Whether unknown XIDs and MultiXacts should be asked of the server (else judged uncertain).
    #[serde(default)]
    pub can_ask: bool,
    /// XID -> status word, from the server.
    #[serde(default)]
    pub xid_status: HashMap<String, String>,
    /// MultiXactId -> its updater XID (null: lockers only).
    #[serde(default)]
    pub multis: HashMap<String, Option<u32>>,
    /// The TOAST relation's files (local data directory).
    #[serde(default)]
    pub toast_files: Vec<SegFile>,
    #[serde(default)]
    pub toast_nblocks: u64,
    /// pg_class OID of the TOAST table (what pointers carry).
    #[serde(default)]
    pub toast_relid: u32,
    /// Chunks fetched through SQL, in the blob passed with the pages.
    #[serde(default)]
    pub toast_chunks: Vec<ChunkRef>,
    /// Whether missing TOAST values should be requested from the caller before judging.
    #[serde(default)]
    pub can_fetch_toast: bool,
    /// Block -> the only line pointers to output (tuple-level carving after SQL failed on them).
    #[serde(default)]
    pub only: HashMap<String, Vec<u16>>,
    /// Block -> rows to keep apart whatever else is known of them: (offset of the tuple, the reason). Salvage
    /// names here the carved rows whose key is readable in another row of the table.
    #[serde(default)]
    pub apart_rows: HashMap<String, Vec<(u16, String)>>,
    /// Output invisible tuples too (forensics).
    #[serde(default)]
    pub keep_invisible: bool,
    /// Undelete: output only the row versions a committed transaction deleted or updated (and VACUUM has not
    /// removed), each line starting with block, lp, xmin, xmin's commit time, the deleter, its commit time and
    /// `delete` or `update`.
    #[serde(default)]
    pub deleted: bool,
    /// With `deleted`: only what this transaction removed.
    #[serde(default)]
    pub deleted_by: Option<u32>,
}

fn default_version() -> u32 {
    180000
}

/// Everything carving one relation needs that stays the same from page to page; shared by the threads that carve.
pub struct Carver {
    /// pg_commit_ts, for undelete's commit times.
    pub(super) commit_ts: Option<CommitTs>,
    /// Commit times the server gave for what pg_commit_ts on disk does not hold (None: it has none either);
    /// forgotten after each wave, like fetched TOAST chunks.
    pub(super) server_times: HashMap<u32, Option<i64>>,
    /// Undelete's `deleted_by`: its commit record's subtransactions, once read (kept for the whole run).
    pub(super) commit_record: CommitRecord,
    pub cfg: CarveConfig,
    /// The status files and the server's answers: what each tuple is to a new snapshot.
    pub(super) vis: Visibility,
    fetched: Chunks,
    toast: Option<ToastFiles>,
    only: HashMap<u64, HashSet<u16>>,
    apart_rows: HashMap<u64, Vec<(u16, String)>>,
    oopts: OutputOptions,
    max_chunk: usize,
    max_tuples: u16,
    utf8: bool,
    /// Per output column: its type's text never needs escaping, quoting or the UTF-8 check.
    plain_out: Vec<bool>,
}

impl Carver {
    // OutputOptions grows fields with the types it learns; the update keeps this call right when it does.
    #[allow(clippy::needless_update)]
    pub fn new(cfg: CarveConfig) -> Carver {
        let blcksz = cfg.blcksz as usize;
        let mut clog = Clog::new(cfg.xact_dir.as_deref(), cfg.blcksz);
        if let Some(snap) = cfg.snapshot.as_deref().and_then(crate::visibility::xact::Snapshot::parse) {
            clog = clog.with_snapshot(snap);
        }
        let server = cfg.xid_status.iter().filter_map(|(k, v)| Some((k.parse().ok()?, XidStatus::parse(v)?))).collect();
        let multis = cfg.multis.iter().filter_map(|(k, v)| Some((k.parse().ok()?, *v))).collect();
        let vis = Visibility::new(clog, server, multis, cfg.horizons);
        let only =
            cfg.only.iter().filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, v.iter().copied().collect()))).collect();
        let apart_rows = cfg.apart_rows.iter().filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, v.clone()))).collect();
        let toast = (!cfg.toast_files.is_empty())
            .then(|| ToastFiles::new(&cfg.toast_files, cfg.toast_nblocks, cfg.blcksz, cfg.relseg_size, cfg.checksums));
        let utf8 = cfg.encoding.eq_ignore_ascii_case("UTF8") || cfg.encoding.eq_ignore_ascii_case("UTF-8");
        let commit_ts = if cfg.deleted {
            cfg.xact_dir.as_deref().and_then(|d| d.parent()).and_then(|p| CommitTs::open(p, cfg.blcksz))
        } else {
            None
        };
        Carver {
            commit_ts,
            server_times: HashMap::new(),
            commit_record: CommitRecord::Unread,
            oopts: OutputOptions { server_version_num: cfg.server_version_num, ..Default::default() },
            max_chunk: crate::format::toast::TOAST_MAX_CHUNK_SIZE_8K as usize * blcksz / 8192,
            max_tuples: max_heap_tuples(blcksz),
            vis,
            fetched: HashMap::new(),
            toast,
            only,
            apart_rows,
            utf8,
            plain_out: cfg.columns.iter().map(|c| c.r#type.as_ref().is_some_and(output_is_plain_ascii)).collect(),
            cfg,
        }
    }

    /// The heap's files, when the configuration names them.
    pub fn heap_reader(&self) -> Option<BlockReader> {
        (!self.cfg.files.is_empty()).then(|| BlockReader::new(&self.cfg.files, self.cfg.blcksz, self.cfg.relseg_size))
    }

    pub fn add_xid_status(&mut self, xid: u32, status: XidStatus) {
        self.vis.add_xid_status(xid, status);
    }

    pub fn add_multi(&mut self, multi: u32, updater: Option<u32>) {
        self.vis.add_multi(multi, updater);
    }

    /// A TOAST chunk fetched by the caller (through SQL).
    pub fn add_chunk(&mut self, valueid: u32, seq: i32, bytes: Vec<u8>) {
        self.fetched.entry(valueid).or_default().push((seq, bytes));
    }

    /// The server's commit time of `xid` (None: it has none).
    pub fn add_commit_time(&mut self, xid: u32, time: Option<i64>) {
        self.server_times.insert(xid, time);
    }

    /// Forget fetched chunks and commit times (they were for the pages carved since the last call).
    pub fn clear_chunks(&mut self) {
        self.fetched.clear();
        self.server_times.clear();
    }

    /// The plain bytes of one stored attribute (detoasted, decompressed).
    fn attribute_value<'t>(
        &self,
        t: &'t [u8],
        header: &HeapTupleHeaderData,
        span: &crate::format::tuple::AttrSpan,
        attlen: i16,
        missing_toast: &mut Vec<u32>,
        suspect_toast: &mut bool,
    ) -> std::result::Result<Cow<'t, [u8]>, String> {
        let bytes = span.bytes(t).ok_or("attribute outside the tuple")?;
        match span.varlena {
            // cstring columns end in their NUL; fixed-length ones are the bytes themselves.
            None if attlen == -2 => Ok(Cow::Borrowed(bytes.strip_suffix(&[0]).unwrap_or(bytes))),
            None => Ok(Cow::Borrowed(bytes)),
            Some(VarlenaKind::Short) | Some(VarlenaKind::Plain) => {
                Ok(Cow::Borrowed(span.payload(t).ok_or("varlena outside the tuple")?))
            }
            Some(VarlenaKind::Compressed { rawsize, method }) => {
                let data = bytes.get(8..).ok_or("compressed value without data")?;
                crate::format::compress::decompress(method, data, rawsize as usize)
                    .map(Cow::Owned)
                    .map_err(|e| format!("inline compressed value: {e}"))
            }
            Some(VarlenaKind::External { .. }) => {
                let p = crate::format::tuple::ToastPointer::parse(t, span.offset, span.attnum, header)
                    .ok_or("TOAST pointer is not on-disk")?;
                let from_files;
                let chunks: &[(i32, Vec<u8>)] = match self.fetched.get(&p.va_valueid) {
                    Some(c) => c,
                    None => {
                        from_files = match &self.toast {
                            Some(tf) => {
                                let (chunks, suspect) = tf.value(p.va_valueid)?;
                                *suspect_toast |= suspect;
                                chunks
                            }
                            None => Vec::new(),
                        };
                        &from_files
                    }
                };
                // Only a value the files do not hold at all is asked of the server: reading a damaged one through
                // SQL could take the backend down.
                if chunks.is_empty() {
                    missing_toast.push(p.va_valueid);
                }
                let stored = assemble(chunks, p.va_valueid, p.extsize as usize, self.max_chunk)?;
                if p.is_compressed {
                    let tcinfo = u32_at(&stored, 0).ok_or("compressed TOAST value without its header")?;
                    let rawsize = (tcinfo & crate::format::tuple::VARLENA_EXTSIZE_MASK) as usize;
                    let method = (tcinfo >> crate::format::tuple::VARLENA_EXTSIZE_BITS) as u8;
                    crate::format::compress::decompress(method, &stored[4..], rawsize)
                        .map(Cow::Owned)
                        .map_err(|e| format!("TOAST value {}: {e}", p.va_valueid))
                } else {
                    Ok(Cow::Owned(stored))
                }
            }
        }
    }

    /// Carve every page of `data` (consecutive pages from block `first`, the last one possibly short) into `out`.
    pub fn carve_run(&self, data: &[u8], first: u64, can_ask: bool, out: &mut Batch) {
        let blcksz = self.cfg.blcksz as usize;
        for (i, page) in data.chunks_exact(blcksz).enumerate() {
            self.carve_page(page, first + i as u64, can_ask, out);
        }
    }

    /// Carve one page into `out`. `can_ask`: XIDs, MultiXacts and TOAST values the files do not settle are
    /// listed in `out.need_*` (the caller asks the server and carves the page again) instead of being judged.
    pub fn carve_page(&self, page: &[u8], block: u64, can_ask: bool, out: &mut Batch) {
        let cfg = &self.cfg;
        let p =
            Plausibility { nblocks: Some(cfg.nblocks), horizons: cfg.horizons.as_ref(), max_tuples: self.max_tuples };
        let mut found = std::mem::take(&mut out.found);
        let info = find_tuples_into(page, block, &cfg.desc, &p, &mut found, &mut out.walks);
        out.counts.pages += 1;
        let page_note = if cfg.checksums && !info.all_zero {
            checksum_note(page, block, cfg.backup_start_lsn, &mut out.counts)
        } else {
            None
        };
        let restrict = self.only.get(&block);
        let mut recovered_lps = vec![false; usize::from(self.max_tuples.max(info.line_pointers)) + 1];
        let mut plain_run = 0u64;
        let dup = if info.body_scanned { stale_copies(page, &found) } else { vec![false; found.len()] };
        let at = PageCarve {
            page,
            block,
            can_ask,
            ask_status: can_ask && cfg.can_ask,
            page_note: page_note.as_deref(),
            foreign: foreign_region(&found, block),
        };
        for (k, f) in found.iter().enumerate() {
            if dup[k] {
                out.counts.duplicates += 1;
                continue;
            }
            if let Some(r) = restrict {
                if !f.lp.is_some_and(|lp| r.contains(&lp)) {
                    continue;
                }
            }
            self.carve_tuple(&at, f, &mut recovered_lps, &mut plain_run, out);
        }
        write_plain_run(&mut out.prov, block, &mut plain_run, cfg.format == OutFormat::Csv);
        account_lost(block, &found, info, restrict, &recovered_lps, at.foreign, out);
        out.found = found;
    }

    /// Carve one tuple found in the page: judge it, note what makes it doubtful, format its columns, and write it
    /// to the main output or apart. Line pointers whose row is settled are marked in `recovered_lps`.
    fn carve_tuple(
        &self,
        at: &PageCarve<'_>,
        f: &Found,
        recovered_lps: &mut [bool],
        plain_run: &mut u64,
        out: &mut Batch,
    ) {
        let cfg = &self.cfg;
        out.counts.tuples_found += 1;
        let t = &at.page[f.off..f.off + f.len];
        let mut notes: Vec<String> = Vec::new();
        let mut certainty = if f.via == Via::LinePointer { Certainty::Sure } else { Certainty::Likely };
        let j = self.vis.judge(&f.header, at.ask_status);
        out.need_xids.extend(&j.need_xids);
        out.need_multis.extend(&j.need_multis);
        let Some((mut verdict, deleter)) = self.undelete_verdict(f, &j, at.ask_status, at.can_ask, out) else {
            return;
        };
        if verdict == Verdict::Invisible {
            out.counts.invisible += 1;
            if let Some(lp) = f.lp {
                recover(recovered_lps, lp);
            }
            if !cfg.keep_invisible {
                return;
            }
        }
        if verdict == Verdict::Uncertain {
            certainty = Certainty::Uncertain;
        }
        placement_notes(f, at.block, at.foreign, &mut certainty, &mut notes);
        // A row that so far goes to the main output is formatted straight into it (no copy of the line); should
        // a value or a later check keep it apart, write_row moves it out again.
        let in_main = (!out.collect
            && deleter.is_none()
            && verdict == Verdict::Live
            && certainty != Certainty::Uncertain
            && at.page_note.is_none())
        .then_some(out.main.len());
        if in_main.is_some() {
            std::mem::swap(&mut out.line, &mut out.main);
        }
        let (missing_toast, suspect_toast) =
            self.format_columns(t, f, in_main.unwrap_or(0), out, &mut certainty, &mut notes);
        if in_main.is_some() {
            std::mem::swap(&mut out.line, &mut out.main);
        }
        if suspect_toast {
            certainty = Certainty::Uncertain;
            notes.push(
                "a TOAST chunk of this row lies on a page that failed its checksum: the value may be altered".into(),
            );
        }
        let forced = self.apart_rows.get(&at.block).and_then(|v| v.iter().find(|(o, _)| usize::from(*o) == f.off));
        if let Some(why) = forced {
            certainty = Certainty::Uncertain;
            notes.push(why.1.clone());
        }
        let certainty_besides_checksum = certainty;
        if let Some(n) = at.page_note {
            certainty = Certainty::Uncertain;
            notes.push(n.to_string());
        }
        if cfg.can_fetch_toast && at.can_ask && !missing_toast.is_empty() {
            out.need_toast.extend(missing_toast);
        }
        if verdict == Verdict::Live && certainty == Certainty::Uncertain && f.placement == Placement::FreeSpace {
            verdict = Verdict::Uncertain;
        }
        match verdict {
            Verdict::Live => out.counts.live += 1,
            Verdict::Uncertain => out.counts.uncertain += 1,
            Verdict::Invisible => {}
        }
        if certainty != Certainty::Uncertain {
            if let Some(lp) = f.lp {
                recover(recovered_lps, lp);
            }
        }
        let row = RowOutcome {
            certainty,
            certainty_besides_checksum,
            verdict,
            deleter,
            notes,
            checksum_failed: at.page_note.is_some(),
        };
        self.write_row(at.block, f, row, j, plain_run, in_main, out);
    }

    /// Format the columns of tuple `t` into `out.line` after its first `base` bytes (one COPY text or CSV line).
    /// Returns the TOAST values the files do not hold, and whether a chunk of one lies on a page that failed its
    /// checksum.
    fn format_columns(
        &self,
        t: &[u8],
        f: &Found,
        base: usize,
        out: &mut Batch,
        certainty: &mut Certainty,
        notes: &mut Vec<String>,
    ) -> (Vec<u32>, bool) {
        let cfg = &self.cfg;
        let csv = cfg.format == OutFormat::Csv;
        let sep = if csv { b',' } else { b'\t' };
        out.line.truncate(base);
        let mut missing_toast = Vec::new();
        let mut suspect_toast = false;
        for (ci, col) in cfg.columns.iter().enumerate() {
            if ci > 0 {
                out.line.push(sep);
            }
            let idx = usize::from(col.attnum.max(1) as u16) - 1;
            let attlen = cfg.desc.attrs.get(idx).map_or(0, |a| a.attlen);
            // The value's text goes straight into the line; `finish_value` escapes it there when it must.
            let start = out.line.len();
            let value: std::result::Result<bool, String> = match f.walk.spans.get(idx) {
                None => Err("attribute not reached".into()),
                Some(s) if s.missing => match &col.missing {
                    Some(m) => {
                        out.line.extend_from_slice(m.as_bytes());
                        Ok(true)
                    }
                    None => Ok(false),
                },
                Some(s) if s.is_null => Ok(false),
                Some(s) => self
                    .attribute_value(t, &f.header, s, attlen, &mut missing_toast, &mut suspect_toast)
                    .and_then(|raw| match &col.r#type {
                        Some(ty) => format_value(&raw, ty, &self.oopts, &mut out.line).map(|()| true),
                        None => Err(format!("column {} has a type the carver does not know", col.name)),
                    }),
            };
            match value {
                Ok(false) => {
                    if !csv {
                        out.line.extend_from_slice(b"\\N");
                    }
                }
                // a value its type writes plainly (numbers) is left as it is; attmissingval's text is checked
                Ok(true) if self.plain_out[ci] && !f.walk.spans.get(idx).is_some_and(|s| s.missing) => {}
                Ok(true) => self.finish_value(start, csv, &col.name, out, certainty, notes),
                Err(e) => {
                    out.line.truncate(start);
                    // the stored bytes go with the reason, so nothing of the value is lost (a TOAST pointer's
                    // bytes name the value it points to)
                    let raw = f.walk.spans.get(idx).and_then(|sp| sp.bytes(t)).unwrap_or(&[]);
                    notes.push(undecodable_note(&col.name, &e, raw));
                    *certainty = Certainty::Uncertain;
                    if !csv {
                        out.line.extend_from_slice(b"\\N");
                    }
                }
            }
        }
        out.line.push(b'\n');
        (missing_toast, suspect_toast)
    }

    /// Escape the value's text at `out.line[start..]` as COPY does, and keep apart a value that is not valid UTF-8
    /// in a UTF8 database. Most values (numbers, plain text) need neither: they are checked where they lie, one
    /// scan, and left there.
    fn finish_value(
        &self,
        start: usize,
        csv: bool,
        column: &str,
        out: &mut Batch,
        certainty: &mut Certainty,
        notes: &mut Vec<String>,
    ) {
        let v = &out.line[start..];
        let single = self.cfg.columns.len() == 1;
        if !csv && plain_ascii_text(v) {
            return;
        }
        let plain = if csv { !csv_needs_quote(v, single) } else { !needs_text_escape(v) };
        let valid = !self.utf8 || v.is_ascii() || std::str::from_utf8(v).is_ok();
        if plain && valid {
            return;
        }
        out.text.clear();
        out.text.extend_from_slice(&out.line[start..]);
        out.line.truncate(start);
        if !valid {
            *certainty = Certainty::Uncertain;
            notes.push(format!("column {column}: bytes that are not valid UTF-8 (written as \\xHH text)"));
            let raw = std::mem::take(&mut out.text);
            escape_invalid_utf8(&raw, &mut out.text);
        }
        if csv {
            copy_csv_escape(&out.text, single, &mut out.line);
        } else {
            copy_text_escape(&out.text, &mut out.line);
        }
    }

    /// Write the formatted row in `out.line` (or already at `out.main[in_main..]`): with its description
    /// (collecting), to the main output (and its provenance), or apart with its provenance and the reason.
    #[allow(clippy::too_many_arguments)]
    fn write_row(
        &self,
        block: u64,
        f: &Found,
        row: RowOutcome,
        j: Judgement,
        plain_run: &mut u64,
        in_main: Option<usize>,
        out: &mut Batch,
    ) {
        let csv = self.cfg.format == OutFormat::Csv;
        let sep = if csv { b',' } else { b'\t' };
        let RowOutcome { certainty, certainty_besides_checksum, verdict, deleter, notes, checksum_failed } = row;
        let to_main = verdict == Verdict::Live && certainty != Certainty::Uncertain;
        if let Some(base) = in_main.filter(|_| !to_main) {
            // formatted into the main output, then found doubtful: out of it again
            out.line.clear();
            out.line.extend_from_slice(&out.main[base..]);
            out.main.truncate(base);
        }
        if out.collect {
            let start = out.main.len();
            out.main.extend_from_slice(&out.line);
            out.rows.push(CarvedRow {
                block,
                lp: f.lp,
                offset: f.off as u16,
                len: f.len as u16,
                via: f.via,
                placement: f.placement,
                certainty,
                verdict,
                reason: j.reason.into_owned(),
                notes,
                xmin: f.header.t_xmin,
                xmax: f.header.t_xmax,
                infomask: f.header.t_infomask,
                infomask2: f.header.t_infomask2,
                checksum_failed,
                certainty_besides_checksum,
                data_start: start,
                data_end: out.main.len(),
            });
        } else if to_main {
            out.counts.main_rows += 1;
            if let Some(r) = &deleter {
                write_deleted_prefix(&mut out.main, block, f, r, csv);
            }
            if in_main.is_none() {
                out.main.extend_from_slice(&out.line);
            }
            if out.provenance {
                if f.via == Via::LinePointer && certainty == Certainty::Sure && notes.is_empty() {
                    *plain_run += 1;
                } else {
                    write_plain_run(&mut out.prov, block, plain_run, csv);
                    write_provenance(&mut out.prov, block, f, certainty, &notes.join("; "), csv);
                    out.prov.extend_from_slice(if csv { b",1\n" } else { b"\t1\n" });
                }
            }
        } else {
            out.counts.apart_rows += 1;
            let note = if j.reason.is_empty() || verdict == Verdict::Live {
                notes.join("; ")
            } else {
                std::iter::once(j.reason.to_string()).chain(notes).collect::<Vec<_>>().join("; ")
            };
            write_provenance(&mut out.apart, block, f, certainty, &note, csv);
            out.apart.push(sep);
            out.apart.extend_from_slice(&out.line);
        }
    }
}

/// What every tuple of the page being carved shares.
struct PageCarve<'a> {
    page: &'a [u8],
    block: u64,
    can_ask: bool,
    /// Whether transaction statuses the files do not settle are asked of the server (else judged uncertain).
    ask_status: bool,
    /// Why the page's values may be altered: it failed its checksum.
    page_note: Option<&'a str>,
    /// Copies of another block's rows on the page ([`foreign_region`]).
    foreign: Option<(bool, usize, u64)>,
}

/// What carving decided about one tuple, for writing it.
struct RowOutcome {
    certainty: Certainty,
    /// The certainty before the page's failed checksum was counted against it.
    certainty_besides_checksum: Certainty,
    verdict: Verdict,
    /// Undelete: the transaction that deleted the row, and when.
    deleter: Option<Removal>,
    notes: Vec<String>,
    checksum_failed: bool,
}

/// Mark line pointer `lp` as recovered: its row was carved, or judged invisible.
fn recover(recovered_lps: &mut [bool], lp: u16) {
    if let Some(x) = recovered_lps.get_mut(usize::from(lp)) {
        *x = true;
    }
}

/// A page that fails its checksum has bytes the server never wrote: its rows may carry altered values. The note
/// its rows get, counted in `counts`; `None` when the checksum matches (or cannot be computed). In a backup
/// (`backup_start`) a page with a sane header and a newer LSN was written while it was copied: torn in the copy,
/// counted apart from damage; its rows are kept apart all the same (the copy may mix two versions of them).
fn checksum_note(page: &[u8], block: u64, backup_start: Option<u64>, counts: &mut CarveCounts) -> Option<String> {
    let (Some(pg), Some(sum)) = (Page::new(page), crate::format::checksum::pg_checksum_page(page, block as u32)) else {
        return None;
    };
    if pg.header().pd_checksum == sum {
        return None;
    }
    let lsn = pg.header().pd_lsn.lsn();
    if let Some(start) = backup_start.filter(|&start| lsn > start && pg.header_is_sane(page.len())) {
        counts.torn_after_backup_start += 1;
        return Some(format!(
            "the page was written while the backup copied it (its LSN {} is after the backup's start {}): torn \
             in the copy, WAL replay rewrites it; its values may mix two versions",
            crate::format::page::format_lsn(lsn),
            crate::format::page::format_lsn(start)
        ));
    }
    counts.checksum_failures += 1;
    Some(format!(
        "the page failed its checksum (stored {:#06x}, computed {sum:#06x}): its values may be altered",
        pg.header().pd_checksum
    ))
}

/// Notes (and doubt) a tuple gets from where it was found: in free space, naming another block in its t_ctid, on
/// a page holding another block's rows, or with problems in its attributes.
fn placement_notes(
    f: &Found,
    block: u64,
    foreign: Option<(bool, usize, u64)>,
    certainty: &mut Certainty,
    notes: &mut Vec<String>,
) {
    if f.placement == Placement::FreeSpace {
        *certainty = Certainty::Uncertain;
        notes.push("found in free space below the tuple area: possibly a stale copy".into());
    }
    let ctid = f.header.t_ctid;
    let special = ctid.offset == crate::checks::page::MOVED_PARTITIONS_OFFSET_NUMBER
        || ctid.offset == crate::checks::page::SPEC_TOKEN_OFFSET_NUMBER;
    // xmax 0 does not mean "never updated": VACUUM clears an aborted updater's xmax but leaves t_ctid at the
    // discarded new version (heap_prepare_freeze_tuple, access/heap/heapam.c), anywhere in the table. What
    // still marks a copy of another block's row: the page holds several (foreign_region), or the tuple names
    // its own item number in another block, as a never-updated row written to the wrong block does.
    let names_itself_elsewhere = f.lp.is_some_and(|lp| lp == ctid.offset) && f.header.t_xmax == 0;
    if !special && u64::from(ctid.block) != block && (names_itself_elsewhere || foreign.is_some()) {
        *certainty = Certainty::Uncertain;
        notes.push(format!(
            "t_ctid {ctid} names another block{}: a copy of another block's row (torn or misdirected write)",
            if foreign.is_some() { " on a page holding copies" } else { " at this tuple's own item number" }
        ));
    }
    if let Some((whole, first_foreign, _)) = foreign {
        if whole {
            *certainty = Certainty::Uncertain;
            notes.push("most tuples on this page belong to another block: the page is a misdirected copy".into());
        } else if crosses_tear(f.off, f.len, first_foreign) {
            *certainty = Certainty::Uncertain;
            notes.push(format!(
                "the tuple crosses a sector boundary just below where copied bytes start (offset \
{first_foreign}): part of it may come from the other copy (torn page)"
            ));
        }
    }
    for p in &f.walk.problems {
        if p.code != Code::TupleDataTrailingBytes {
            notes.push(format!("{}: {}", p.code, p.message));
            *certainty = Certainty::Uncertain;
        }
    }
}

/// The note of a value that does not decode: the reason and the stored bytes (up to `RAW_NOTE_BYTES`, in hex), so
/// nothing of the value is lost (a TOAST pointer's bytes name the value it points to).
fn undecodable_note(column: &str, e: &str, raw: &[u8]) -> String {
    let mut hex = String::with_capacity(2 * raw.len().min(RAW_NOTE_BYTES));
    for b in raw.iter().take(RAW_NOTE_BYTES) {
        let _ = std::fmt::Write::write_fmt(&mut hex, format_args!("{b:02x}"));
    }
    let more = if raw.len() > RAW_NOTE_BYTES { "…" } else { "" };
    format!("column {column}: {e}; stored bytes \\x{hex}{more} ({} bytes)", raw.len())
}

/// Carve the pages `data` (consecutive `blcksz`-byte images of `blocks`) in memory, every row kept with its
/// provenance: for small page sets (repair). `blob` holds the bytes of `cfg.toast_chunks`. Returns the rows
/// (formatted lines in the returned data buffer), what was lost, and what to ask the server before carving again.
pub fn carve_pages(data: &[u8], blocks: &[u64], blob: &[u8], cfg: &CarveConfig) -> Result<(CarveResult, Vec<u8>)> {
    let blcksz = cfg.blcksz as usize;
    if data.len() < blocks.len() * blcksz {
        return Err(CoreError::Invalid(format!(
            "{} pages need {} bytes, got {}",
            blocks.len(),
            blocks.len() * blcksz,
            data.len()
        )));
    }
    let mut carver = Carver::new(cfg.clone());
    for c in &cfg.toast_chunks {
        if let Some(bytes) = blob.get(c.start..c.start + c.len) {
            carver.add_chunk(c.valueid, c.seq, bytes.to_vec());
        }
    }
    let parts: Vec<Batch> = blocks
        .par_iter()
        .enumerate()
        .map(|(i, &b)| {
            let mut out = Batch::collecting();
            carver.carve_page(&data[i * blcksz..(i + 1) * blcksz], b, true, &mut out);
            out
        })
        .collect();
    let mut all = Batch::collecting();
    for p in parts {
        all.append(p);
    }
    let sorted = |mut v: Vec<u32>| {
        v.sort_unstable();
        v.dedup();
        v
    };
    let res = CarveResult {
        rows: all.rows,
        pages: all.pages,
        lost: all.lost,
        counts: all.counts,
        need_xids: sorted(all.need_xids),
        need_multis: sorted(all.need_multis),
        need_toast: sorted(all.need_toast),
    };
    Ok((res, all.main))
}
