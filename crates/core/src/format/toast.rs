//! TOAST tables: an inventory of their chunks, built from every chunk tuple of the relation, and
//! the checks `heap_fetch_toast_slice` (`access/heap/heaptoast.c`) and amcheck's
//! `check_toasted_attribute` make when a value is fetched. Decompression is in compress.rs.

use std::collections::HashMap;

use serde::Serialize;

use crate::finding::{Code, Finding};
use crate::format::bytes::u32_at;
use crate::format::heap::{HeapTupleHeaderData, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID};
use crate::format::tuple::{
    walk_attributes_with, xmax_is_live, Referrer, RelDesc, ToastPointer, VarlenaKind, WalkOptions,
};

/// `TOAST_MAX_CHUNK_SIZE` for 8 KB pages (heaptoast.h); pg_control records the cluster's value.
pub const TOAST_MAX_CHUNK_SIZE_8K: u32 = 1996;

// ---------------------------------------------------------------------------------------------
// Chunk inventory
// ---------------------------------------------------------------------------------------------

/// Something wrong with a TOAST chunk or value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToastProblem {
    /// A finding code (`toast.*`, or `tuple_data.*` for a damaged chunk tuple).
    pub code: Code,
    /// chunk_id / va_valueid (0 when the chunk_id itself is unreadable).
    pub valueid: u32,
    pub chunk_seq: Option<i32>,
    /// The chunk tuple's place in the TOAST relation, when the problem is about one chunk.
    pub block: Option<u32>,
    pub lp: Option<u16>,
    /// The referencing column, for problems found through a pointer.
    pub attnum: Option<i16>,
    pub message: String,
    /// What the server raises, with the values filled in.
    pub pg_error: String,
}

impl ToastProblem {
    /// As a finding at (`block`, `item`): the chunk's place for [`ChunkInventory::add_tuple`]
    /// problems, the referencing heap tuple's place for [`ChunkInventory::check_value`] ones.
    pub fn to_finding(&self, block: Option<u64>, item: Option<u16>) -> Finding {
        Finding::with_server_error(self.code, block, item, &self.message, &self.pg_error)
    }
}

/// chunk_data has a compressed-inline (or otherwise unusable) varlena header.
const F_BAD_HEADER: u8 = 1;
/// chunk_data is NULL.
const F_NULL_DATA: u8 = 2;
/// chunk_data could not be walked (runs past the tuple and so on).
const F_UNREADABLE: u8 = 4;
/// Invisible to SnapshotToast: HEAP_XMIN_INVALID without COMMITTED, or xmin 0.
const F_XMIN_INVALID: u8 = 8;
/// xmax set and not lock-only (deleted, or being deleted).
const F_XMAX_SET: u8 = 16;

/// One chunk tuple as the inventory remembers it (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChunkRec {
    pub chunk_seq: i32,
    /// Data bytes as the server computes them (VARSIZE - header; -1 for a 0x01 header).
    pub len: i32,
    pub block: u32,
    pub lp: u16,
    flags: u8,
}

impl ChunkRec {
    /// Visible to the TOAST snapshot (`HeapTupleSatisfiesToast` only rejects an invalid xmin).
    pub fn toast_visible(&self) -> bool {
        self.flags & F_XMIN_INVALID == 0
    }
    /// Not deleted: xmax invalid, zero or lock-only.
    pub fn live(&self) -> bool {
        self.flags & (F_XMIN_INVALID | F_XMAX_SET) == 0
    }
    pub fn bad_header(&self) -> bool {
        self.flags & F_BAD_HEADER != 0
    }
    pub fn null_data(&self) -> bool {
        self.flags & F_NULL_DATA != 0
    }
    pub fn unreadable(&self) -> bool {
        self.flags & F_UNREADABLE != 0
    }
}

/// Every chunk of one TOAST relation, by chunk_id: sequence number, data length, place and
/// liveness. Build one per TOAST relation (or one per worker and [`merge`](Self::merge) them),
/// feeding it every LP_NORMAL tuple; then check each external pointer of the main table.
#[derive(Debug, Clone, Default)]
pub struct ChunkInventory {
    relname: String,
    max_chunk_size: u32,
    values: HashMap<u32, Vec<ChunkRec>>,
    chunks: u64,
}

impl ChunkInventory {
    /// `relname` is the TOAST table's name as errors print it (`pg_toast_16467`; may be empty);
    /// `max_chunk_size` is pg_control's toast_max_chunk_size ([`TOAST_MAX_CHUNK_SIZE_8K`]).
    pub fn new(relname: impl Into<String>, max_chunk_size: u32) -> Self {
        ChunkInventory {
            relname: relname.into(),
            max_chunk_size: max_chunk_size.max(1),
            values: HashMap::new(),
            chunks: 0,
        }
    }

    pub fn relname(&self) -> &str {
        &self.relname
    }

    /// Number of distinct chunk_ids.
    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    /// Number of chunk tuples recorded.
    pub fn chunk_count(&self) -> u64 {
        self.chunks
    }

    /// Fold another inventory of the same relation (from another worker) into this one.
    pub fn merge(&mut self, other: ChunkInventory) {
        self.chunks += other.chunks;
        for (k, mut v) in other.values {
            self.values.entry(k).or_default().append(&mut v);
        }
    }

    fn name_for(&self, toastrelid: u32) -> String {
        if self.relname.is_empty() && toastrelid == 0 {
            "the TOAST table".to_string()
        } else if self.relname.is_empty() {
            format!("pg_toast relation {toastrelid}")
        } else {
            self.relname.clone()
        }
    }

    /// Record one chunk tuple (an LP_NORMAL item of the TOAST relation at `block`, `lp`) and
    /// return what is wrong with the chunk itself: a damaged tuple, NULL columns, a
    /// compressed chunk_data ("found toasted toast chunk"), or more data than a chunk holds.
    pub fn add_tuple(&mut self, block: u32, lp: u16, tuple: &[u8], header: &HeapTupleHeaderData) -> Vec<ToastProblem> {
        let rel = toast_desc();
        let walk = walk_attributes_with(
            tuple,
            header,
            rel,
            &WalkOptions { verify_compressed: false, ..WalkOptions::default() },
        );
        let mut out = Vec::new();
        let span = |n: usize| walk.spans.get(n).filter(|s| !s.is_null && !s.missing);
        let int = |n: usize| span(n).and_then(|s| u32_at(tuple, s.offset));
        let valueid = int(0);
        let seq = int(1).map(|v| v as i32);
        let data = span(2);
        // A 0x01 first byte counts as a short header of length 0 for the fetch code: the chunk
        // then fails the size check with size -1. The walk's pointer complaints do not apply.
        let data_1b_e = walk.spans.get(2).is_some_and(|s| matches!(s.varlena, Some(VarlenaKind::External { .. })))
            || (walk.stopped
                && walk.spans.len() == 2
                && chunk_data_start(tuple, &walk).is_some_and(|at| tuple.get(at) == Some(&0x01)));
        let problem = |code: Code, message: String, pg_error: String| ToastProblem {
            code,
            valueid: valueid.unwrap_or(0),
            chunk_seq: seq,
            block: Some(block),
            lp: Some(lp),
            attnum: None,
            message,
            pg_error,
        };
        for p in &walk.problems {
            // A 0x01 chunk_data is judged by its size below; a compressed one by its header (the
            // fetch refuses it before looking at va_tcinfo).
            if data_1b_e && p.attnum >= 3
                || data_1b_e && p.attnum == 0 && walk.stopped
                || p.attnum == 3 && p.code == Code::TupleDataCompressedBad
            {
                continue;
            }
            let mut tp = problem(p.code, p.message.clone(), p.pg_error.clone());
            tp.message = format!("TOAST chunk: {}", tp.message);
            out.push(tp);
        }
        let name = self.name_for(0);
        let Some(valueid) = valueid else {
            out.push(problem(
                Code::ToastChunkHeader,
                "TOAST chunk tuple without a readable chunk_id (NULL or damaged)".into(),
                "none for this chunk (the index cannot find it), but its value misses a chunk".into(),
            ));
            return out;
        };
        let Some(seq) = seq else {
            out.push(problem(
                Code::ToastChunkHeader,
                format!("chunk of toast value {valueid} without a readable chunk_seq (NULL or damaged)"),
                format!("unexpected chunk number 0 (expected N) for toast value {valueid} in {name}, or a crash"),
            ));
            return out;
        };
        let mut flags = 0u8;
        // Size as heap_fetch_toast_slice computes it (-1 for a 0x01 header).
        let mut len: i32 = -1;
        if data_1b_e {
            // reported below as a size of -1
        } else if let Some(s) = data {
            match s.varlena {
                Some(VarlenaKind::Plain) => len = s.len as i32 - 4,
                Some(VarlenaKind::Short) => len = s.len as i32 - 1,
                Some(VarlenaKind::Compressed { .. }) => {
                    len = s.len as i32 - 4;
                    flags |= F_BAD_HEADER;
                    out.push(problem(
                        Code::ToastChunkHeader,
                        format!(
                            "chunk {seq} of toast value {valueid} has a compressed-inline \
chunk_data header (0x{:08x}); chunks are stored plain",
                            u32_at(tuple, s.offset).unwrap_or(0)
                        ),
                        format!("found toasted toast chunk for toast value {valueid} in {name}"),
                    ));
                }
                _ => flags |= F_UNREADABLE,
            }
        } else if walk.spans.get(2).is_some_and(|s| s.is_null || s.missing) {
            flags |= F_NULL_DATA;
            out.push(problem(
                Code::ToastChunkHeader,
                format!("chunk {seq} of toast value {valueid} has NULL chunk_data"),
                "a crashed backend (the fetch code dereferences the NULL datum)".into(),
            ));
        } else {
            flags |= F_UNREADABLE;
        }
        if !data_1b_e && flags & (F_UNREADABLE | F_NULL_DATA) == 0 && i64::from(len) > i64::from(self.max_chunk_size) {
            out.push(problem(
                Code::ToastChunkSize,
                format!(
                    "chunk {seq} of toast value {valueid} holds {len} bytes, more than \
TOAST_MAX_CHUNK_SIZE {}",
                    self.max_chunk_size
                ),
                format!(
                    "unexpected chunk size {len} (expected at most {}) in chunk {seq} for toast \
value {valueid} in {name}",
                    self.max_chunk_size
                ),
            ));
        }
        if data_1b_e {
            out.push(problem(
                Code::ToastChunkSize,
                format!(
                    "chunk {seq} of toast value {valueid}: chunk_data starts with 0x01 (a TOAST \
pointer header), read as a short varlena of size -1"
                ),
                format!(
                    "unexpected chunk size -1 (expected E) in chunk {seq} of N for toast value {valueid} in {name}"
                ),
            ));
        }
        let m = header.t_infomask;
        if (m & HEAP_XMIN_INVALID != 0 && m & HEAP_XMIN_COMMITTED == 0) || header.t_xmin == 0 {
            flags |= F_XMIN_INVALID;
        }
        if !xmax_is_live(header) {
            flags |= F_XMAX_SET;
        }
        self.values.entry(valueid).or_default().push(ChunkRec { chunk_seq: seq, len, block, lp, flags });
        self.chunks += 1;
        out
    }

    /// Check one external pointer's value against the inventory, as fetching it would:
    /// value absent ("missing chunk number 0"), gaps, duplicates or chunks beyond the last
    /// ("unexpected chunk number"), wrong sizes ("unexpected chunk size") and unusable
    /// chunk_data. Pointers from rows whose inserter aborted are skipped; for rows that may be
    /// deleted (xmax set) absent chunks are not reported, since VACUUM may have removed them.
    /// Deleted copies of a chunk are ignored when a live copy exists.
    pub fn check_value(&self, ptr: &ToastPointer, max_chunk_size: u32) -> Vec<ToastProblem> {
        let mut out = Vec::new();
        if ptr.referrer == Referrer::XminAborted || ptr.extsize == 0 {
            return out;
        }
        let maybe_pruned = ptr.referrer == Referrer::MaybeDeleted;
        let max = max_chunk_size.max(1);
        let extsize = ptr.extsize;
        let n = i64::from(ptr.chunk_count(max));
        let last = n - 1;
        let v = ptr.va_valueid;
        let name = self.name_for(ptr.va_toastrelid);
        let problem = |code: Code, c: Option<&ChunkRec>, message: String, pg: String| ToastProblem {
            code,
            valueid: v,
            chunk_seq: c.map(|c| c.chunk_seq),
            block: c.map(|c| c.block),
            lp: c.map(|c| c.lp),
            attnum: Some(ptr.attnum),
            message,
            pg_error: pg,
        };
        let missing0 = format!("missing chunk number 0 for toast value {v} in {name}");
        let Some(all) = self.values.get(&v) else {
            if !maybe_pruned {
                out.push(problem(
                    Code::ToastValueMissing,
                    None,
                    format!(
                        "attribute {}: toast value {v} ({extsize} bytes in {n} chunks) has no \
chunks in {name}",
                        ptr.attnum
                    ),
                    missing0,
                ));
            }
            return out;
        };
        let mut chosen: Vec<&ChunkRec> = all.iter().filter(|c| c.toast_visible()).collect();
        if chosen.is_empty() {
            // Only chunks of an aborted insert: missing for a committed row; otherwise the row is
            // most likely the aborted insert itself, so judge the chunks as they are.
            if ptr.referrer_xmin_committed && !maybe_pruned {
                out.push(problem(
                    Code::ToastValueMissing,
                    None,
                    format!(
                        "attribute {}: all {} chunks of toast value {v} were inserted by an \
aborted transaction (HEAP_XMIN_INVALID) and are invisible to the TOAST snapshot",
                        ptr.attnum,
                        all.len()
                    ),
                    missing0,
                ));
                return out;
            }
            chosen = all.iter().collect();
        }
        // Index order: (chunk_seq); for a sequence number that has a live copy, drop the deleted
        // ones.
        chosen.sort_by_key(|c| (c.chunk_seq, !c.live(), c.block, c.lp));
        let mut picked: Vec<&ChunkRec> = Vec::with_capacity(chosen.len());
        let mut i = 0;
        while i < chosen.len() {
            let seq = chosen[i].chunk_seq;
            let mut j = i;
            while j < chosen.len() && chosen[j].chunk_seq == seq {
                j += 1;
            }
            let group = &chosen[i..j];
            if group[0].live() {
                picked.extend(group.iter().filter(|c| c.live()));
            } else {
                picked.extend(group.iter());
            }
            i = j;
        }

        let mut expected: i64 = 0;
        let mut total: i64 = 0;
        // (first, last missing seq, index in out) and (seq, index in out) of surplus chunks.
        let mut missing: Vec<(i64, i64, usize)> = Vec::new();
        let mut extras: Vec<(i64, usize)> = Vec::new();
        for c in &picked {
            let seq = i64::from(c.chunk_seq);
            if c.bad_header() {
                out.push(problem(
                    Code::ToastChunkHeader,
                    Some(c),
                    format!(
                        "attribute {}: chunk {seq} of toast value {v} (block {}, lp {}) has a \
compressed-inline chunk_data header",
                        ptr.attnum, c.block, c.lp
                    ),
                    format!("found toasted toast chunk for toast value {v} in {name}"),
                ));
            } else if c.null_data() || c.unreadable() {
                out.push(problem(
                    Code::ToastChunkHeader,
                    Some(c),
                    format!(
                        "attribute {}: chunk {seq} of toast value {v} (block {}, lp {}) has {} \
chunk_data",
                        ptr.attnum,
                        c.block,
                        c.lp,
                        if c.null_data() { "NULL" } else { "unreadable" }
                    ),
                    "wrong values or a crashed backend".into(),
                ));
            }
            if seq < expected {
                extras.push((seq, out.len()));
                out.push(problem(
                    Code::ToastChunkUnexpected,
                    Some(c),
                    format!(
                        "attribute {}: toast value {v} has chunk {seq} (block {}, lp {}) where \
chunk {expected} is expected ({})",
                        ptr.attnum,
                        c.block,
                        c.lp,
                        if seq >= 0 && seq == expected - 1 { "a duplicate" } else { "out of order" }
                    ),
                    format!(
                        "unexpected chunk number {seq} (expected {expected}) for toast value {v} \
in {name}"
                    ),
                ));
                continue;
            }
            if seq > expected && expected <= last && !maybe_pruned {
                let upto = seq.min(n) - 1;
                missing.push((expected, upto, out.len()));
                out.push(problem(
                    Code::ToastChunkMissing,
                    None,
                    format!(
                        "attribute {}: toast value {v} ({extsize} bytes in {n} chunks) lacks {}",
                        ptr.attnum,
                        chunk_range(expected, upto)
                    ),
                    format!(
                        "unexpected chunk number {seq} (expected {expected}) for toast value {v} \
in {name}"
                    ),
                ));
            }
            if seq > last {
                let pg = if seq == expected || maybe_pruned {
                    format!(
                        "unexpected chunk number {seq} (out of range 0..{last}) for toast value \
{v} in {name}"
                    )
                } else {
                    format!(
                        "unexpected chunk number {seq} (expected {expected}) for toast value {v} \
in {name}"
                    )
                };
                extras.push((seq, out.len()));
                out.push(problem(
                    Code::ToastChunkUnexpected,
                    Some(c),
                    format!(
                        "attribute {}: toast value {v} has {n} chunks (0..{last}) but also chunk \
{seq} (block {}, lp {}), {} bytes",
                        ptr.attnum, c.block, c.lp, c.len
                    ),
                    pg,
                ));
                expected = seq + 1;
                continue;
            }
            let want = if seq < last { i64::from(max) } else { i64::from(extsize) - last * i64::from(max) };
            if !c.bad_header() && !c.null_data() && !c.unreadable() && i64::from(c.len) != want {
                out.push(problem(
                    Code::ToastChunkSize,
                    Some(c),
                    format!(
                        "attribute {}: chunk {seq} of {n} of toast value {v} (block {}, lp {}) \
holds {} bytes, expected {want} (extsize {extsize}, {max} per chunk)",
                        ptr.attnum, c.block, c.lp, c.len
                    ),
                    format!(
                        "unexpected chunk size {} (expected {want}) in chunk {seq} of {n} for \
toast value {v} in {name}",
                        c.len
                    ),
                ));
            }
            total += i64::from(c.len.max(0));
            expected = seq + 1;
        }
        if expected <= last && !maybe_pruned {
            missing.push((expected, last, out.len()));
            out.push(problem(
                Code::ToastChunkMissing,
                None,
                format!(
                    "attribute {}: toast value {v} ({extsize} bytes in {n} chunks) lacks {} \
({total} of {extsize} bytes present)",
                    ptr.attnum,
                    chunk_range(expected, last)
                ),
                format!("missing chunk number {expected} for toast value {v} in {name}"),
            ));
        }
        // One chunk missing and one surplus: most likely that chunk's chunk_seq was damaged. The
        // TOAST index still files it under its old number, so the fetch meets it where the
        // missing one belongs.
        if let ([(k, k2, mi)], [(s, xi)]) = (missing.as_slice(), extras.as_slice()) {
            if k == k2 {
                let pg = format!("unexpected chunk number {s} (expected {k}) for toast value {v} in {name}");
                out[*mi].pg_error = pg.clone();
                out[*mi].message.push_str(&format!(" (chunk {s} is probably chunk {k} with a damaged chunk_seq)"));
                out[*xi].pg_error = pg;
            }
        }
        out
    }
}

fn chunk_range(from: i64, to: i64) -> String {
    if from == to {
        format!("chunk {from}")
    } else {
        format!("chunks {from}..{to}")
    }
}

/// Where chunk_data would start after chunk_seq (att_align_pointer for an 'i' varlena).
fn chunk_data_start(tuple: &[u8], walk: &crate::format::tuple::Walk) -> Option<usize> {
    let s = walk.spans.get(1)?;
    let off = s.offset + s.len;
    match tuple.get(off) {
        Some(0) => Some(crate::format::tuple::align_nominal(off, b'i')),
        Some(_) => Some(off),
        None => None,
    }
}

fn toast_desc() -> &'static RelDesc {
    static DESC: std::sync::OnceLock<RelDesc> = std::sync::OnceLock::new();
    DESC.get_or_init(RelDesc::toast_table)
}
