//! TOAST tables: an inventory of their chunks, built from every chunk tuple of the relation, and
//! the checks `heap_fetch_toast_slice` (`access/heap/heaptoast.c`) and amcheck's
//! `check_toasted_attribute` make when a value is fetched. Decompression is in compress.rs.

use std::collections::HashMap;

use serde::Serialize;

use crate::finding::{Code, Finding};
use crate::format::bytes::u32_at;
use crate::format::heap::{HeapTupleHeaderData, HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID};
use crate::format::tuple::{
    align_nominal, walk_attributes_with, xmax_is_live, AttrSpan, Referrer, RelDesc, ToastPointer, VarlenaKind, Walk,
    WalkOptions,
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
    /// Some pages of the TOAST relation were not read (changed while a live scan or a backup read them): an absent
    /// chunk may be on one of them.
    incomplete: bool,
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
            incomplete: false,
        }
    }

    /// Some pages of the relation were not fed in: absent chunks are not reported from now on (the ones present
    /// are still judged).
    pub fn mark_incomplete(&mut self) {
        self.incomplete = true;
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
        self.incomplete |= other.incomplete;
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
        let walk = walk_attributes_with(
            tuple,
            header,
            toast_desc(),
            &WalkOptions { verify_compressed: false, ..WalkOptions::default() },
        );
        let int = |n: usize| chunk_column(&walk, n).and_then(|s| u32_at(tuple, s.offset));
        let at = ChunkAt { valueid: int(0), seq: int(1).map(|v| v as i32), block, lp };
        // A 0x01 first byte counts as a short header of length 0 for the fetch code: the chunk
        // then fails the size check with size -1. The walk's pointer complaints do not apply.
        let data_1b_e = chunk_data_is_pointer(tuple, &walk);
        let mut out = Vec::new();
        forward_walk_problems(&at, &walk, data_1b_e, &mut out);
        let (Some(valueid), Some(seq)) = (at.valueid, at.seq) else {
            out.push(self.unidentified_chunk(&at));
            return out;
        };
        // Size as heap_fetch_toast_slice computes it (-1 for a 0x01 header).
        let (len, flags) = if data_1b_e {
            out.push(self.pointer_chunk_data(&at, valueid, seq));
            (-1, 0)
        } else {
            let (len, flags, problem) = self.chunk_data_len(&at, valueid, seq, tuple, &walk);
            out.extend(problem);
            if flags & (F_UNREADABLE | F_NULL_DATA) == 0 && i64::from(len) > i64::from(self.max_chunk_size) {
                out.push(self.oversized_chunk(&at, valueid, seq, len));
            }
            (len, flags)
        };
        let flags = flags | liveness_flags(header);
        self.values.entry(valueid).or_default().push(ChunkRec { chunk_seq: seq, len, block, lp, flags });
        self.chunks += 1;
        out
    }

    /// A chunk without a readable chunk_id or chunk_seq: the fetch cannot place it.
    fn unidentified_chunk(&self, at: &ChunkAt) -> ToastProblem {
        match at.valueid {
            None => at.problem(
                Code::ToastChunkHeader,
                "TOAST chunk tuple without a readable chunk_id (NULL or damaged)".into(),
                "none for this chunk (the index cannot find it), but its value misses a chunk".into(),
            ),
            Some(valueid) => at.problem(
                Code::ToastChunkHeader,
                format!("chunk of toast value {valueid} without a readable chunk_seq (NULL or damaged)"),
                format!(
                    "unexpected chunk number 0 (expected N) for toast value {valueid} in {}, or a crash",
                    self.name_for(0)
                ),
            ),
        }
    }

    /// The data length of chunk_data as the fetch computes it (-1 when unusable), the chunk's
    /// F_* flags, and the problem with a NULL or compressed chunk_data.
    fn chunk_data_len(
        &self,
        at: &ChunkAt,
        valueid: u32,
        seq: i32,
        tuple: &[u8],
        walk: &Walk,
    ) -> (i32, u8, Option<ToastProblem>) {
        let Some(s) = chunk_column(walk, 2) else {
            if walk.spans.get(2).is_some_and(|s| s.is_null || s.missing) {
                let problem = at.problem(
                    Code::ToastChunkHeader,
                    format!("chunk {seq} of toast value {valueid} has NULL chunk_data"),
                    "a crashed backend (the fetch code dereferences the NULL datum)".into(),
                );
                return (-1, F_NULL_DATA, Some(problem));
            }
            return (-1, F_UNREADABLE, None);
        };
        match s.varlena {
            Some(VarlenaKind::Plain) => (s.len as i32 - 4, 0, None),
            Some(VarlenaKind::Short) => (s.len as i32 - 1, 0, None),
            Some(VarlenaKind::Compressed { .. }) => {
                let problem = at.problem(
                    Code::ToastChunkHeader,
                    format!(
                        "chunk {seq} of toast value {valueid} has a compressed-inline \
chunk_data header (0x{:08x}); chunks are stored plain",
                        u32_at(tuple, s.offset).unwrap_or(0)
                    ),
                    format!("found toasted toast chunk for toast value {valueid} in {}", self.name_for(0)),
                );
                (s.len as i32 - 4, F_BAD_HEADER, Some(problem))
            }
            _ => (-1, F_UNREADABLE, None),
        }
    }

    /// A chunk holding `len` bytes, more than TOAST_MAX_CHUNK_SIZE.
    fn oversized_chunk(&self, at: &ChunkAt, valueid: u32, seq: i32, len: i32) -> ToastProblem {
        at.problem(
            Code::ToastChunkSize,
            format!(
                "chunk {seq} of toast value {valueid} holds {len} bytes, more than \
TOAST_MAX_CHUNK_SIZE {}",
                self.max_chunk_size
            ),
            format!(
                "unexpected chunk size {len} (expected at most {}) in chunk {seq} for toast \
value {valueid} in {}",
                self.max_chunk_size,
                self.name_for(0)
            ),
        )
    }

    /// A chunk_data starting with 0x01, which the fetch reads as a short varlena of size -1.
    fn pointer_chunk_data(&self, at: &ChunkAt, valueid: u32, seq: i32) -> ToastProblem {
        at.problem(
            Code::ToastChunkSize,
            format!(
                "chunk {seq} of toast value {valueid}: chunk_data starts with 0x01 (a TOAST \
pointer header), read as a short varlena of size -1"
            ),
            format!(
                "unexpected chunk size -1 (expected E) in chunk {seq} of N for toast value {valueid} in {}",
                self.name_for(0)
            ),
        )
    }

    /// Check one external pointer's value against the inventory, as fetching it would:
    /// value absent ("missing chunk number 0"), gaps, duplicates or chunks beyond the last
    /// ("unexpected chunk number"), wrong sizes ("unexpected chunk size") and unusable
    /// chunk_data. Pointers from rows whose inserter aborted are skipped; for rows that may be
    /// deleted (xmax set) absent chunks are not reported, since VACUUM may have removed them.
    /// Deleted copies of a chunk are ignored when a live copy exists.
    pub fn check_value(&self, ptr: &ToastPointer, max_chunk_size: u32) -> Vec<ToastProblem> {
        if ptr.referrer == Referrer::XminAborted || ptr.extsize == 0 {
            return Vec::new();
        }
        let mut check = ValueCheck::new(ptr, self.name_for(ptr.va_toastrelid), max_chunk_size);
        check.maybe_pruned |= self.incomplete;
        let Some(chosen) = check.fetched_chunks(self.values.get(&ptr.va_valueid)) else {
            return check.out;
        };
        for c in pick_copies(chosen) {
            check.chunk(c);
        }
        check.finish();
        check.out
    }
}

/// A chunk tuple's place and what it says it is (either may be unreadable), for its problems.
struct ChunkAt {
    valueid: Option<u32>,
    seq: Option<i32>,
    block: u32,
    lp: u16,
}

impl ChunkAt {
    fn problem(&self, code: Code, message: String, pg_error: String) -> ToastProblem {
        ToastProblem {
            code,
            valueid: self.valueid.unwrap_or(0),
            chunk_seq: self.seq,
            block: Some(self.block),
            lp: Some(self.lp),
            attnum: None,
            message,
            pg_error,
        }
    }
}

/// Column `n` (0 chunk_id, 1 chunk_seq, 2 chunk_data) of a walked chunk tuple, when stored.
fn chunk_column(walk: &Walk, n: usize) -> Option<&AttrSpan> {
    walk.spans.get(n).filter(|s| !s.is_null && !s.missing)
}

/// chunk_data starts with 0x01, the first byte of a TOAST pointer, whether or not the walk could
/// read it as one.
fn chunk_data_is_pointer(tuple: &[u8], walk: &Walk) -> bool {
    walk.spans.get(2).is_some_and(|s| matches!(s.varlena, Some(VarlenaKind::External { .. })))
        || (walk.stopped
            && walk.spans.len() == 2
            && chunk_data_start(tuple, walk).is_some_and(|at| tuple.get(at) == Some(&0x01)))
}

/// The walk's problems with a chunk tuple, as chunk problems.
fn forward_walk_problems(at: &ChunkAt, walk: &Walk, data_1b_e: bool, out: &mut Vec<ToastProblem>) {
    for p in &walk.problems {
        // A 0x01 chunk_data is judged by its size below; a compressed one by its header (the
        // fetch refuses it before looking at va_tcinfo).
        if data_1b_e && p.attnum >= 3
            || data_1b_e && p.attnum == 0 && walk.stopped
            || p.attnum == 3 && p.code == Code::TupleDataCompressedBad
        {
            continue;
        }
        out.push(at.problem(p.code, format!("TOAST chunk: {}", p.message), p.pg_error.clone()));
    }
}

/// F_XMIN_INVALID and F_XMAX_SET from a chunk tuple's header.
fn liveness_flags(header: &HeapTupleHeaderData) -> u8 {
    let mut flags = 0;
    let m = header.t_infomask;
    if (m & HEAP_XMIN_INVALID != 0 && m & HEAP_XMIN_COMMITTED == 0) || header.t_xmin == 0 {
        flags |= F_XMIN_INVALID;
    }
    if !xmax_is_live(header) {
        flags |= F_XMAX_SET;
    }
    flags
}

// ---------------------------------------------------------------------------------------------
// Checking a value
// ---------------------------------------------------------------------------------------------

/// One external value fetched from the inventory ([`ChunkInventory::check_value`]): what the
/// pointer promises, where the fetch stands in the chunk sequence, and the problems so far.
struct ValueCheck<'a> {
    ptr: &'a ToastPointer,
    /// The TOAST table's name as errors print it.
    name: String,
    /// Data bytes per chunk.
    max: u32,
    /// Chunks the value is stored in, and the number of the last one.
    n: i64,
    last: i64,
    /// The row may be deleted and its chunks vacuumed: absent chunks prove nothing.
    maybe_pruned: bool,
    /// The chunk number the fetch expects next.
    expected: i64,
    /// Data bytes of the chunks met in sequence.
    total: i64,
    /// (first, last missing seq, index in out) and (seq, index in out) of surplus chunks.
    missing: Vec<(i64, i64, usize)>,
    extras: Vec<(i64, usize)>,
    out: Vec<ToastProblem>,
}

impl<'a> ValueCheck<'a> {
    fn new(ptr: &'a ToastPointer, name: String, max_chunk_size: u32) -> Self {
        let max = max_chunk_size.max(1);
        let n = i64::from(ptr.chunk_count(max));
        ValueCheck {
            ptr,
            name,
            max,
            n,
            last: n - 1,
            maybe_pruned: ptr.referrer == Referrer::MaybeDeleted,
            expected: 0,
            total: 0,
            missing: Vec::new(),
            extras: Vec::new(),
            out: Vec::new(),
        }
    }

    fn problem(&self, code: Code, c: Option<&ChunkRec>, message: String, pg_error: String) -> ToastProblem {
        ToastProblem {
            code,
            valueid: self.ptr.va_valueid,
            chunk_seq: c.map(|c| c.chunk_seq),
            block: c.map(|c| c.block),
            lp: c.map(|c| c.lp),
            attnum: Some(self.ptr.attnum),
            message,
            pg_error,
        }
    }

    /// The chunks the fetch can see: those visible to the TOAST snapshot, or all of them when the
    /// row is most likely the aborted insert itself. `None` (with the problem reported) when the
    /// value is missing.
    fn fetched_chunks<'c>(&mut self, all: Option<&'c Vec<ChunkRec>>) -> Option<Vec<&'c ChunkRec>> {
        let (v, n, extsize, attnum) = (self.ptr.va_valueid, self.n, self.ptr.extsize, self.ptr.attnum);
        let missing0 = format!("missing chunk number 0 for toast value {v} in {}", self.name);
        let Some(all) = all else {
            if !self.maybe_pruned {
                let message = format!(
                    "attribute {attnum}: toast value {v} ({extsize} bytes in {n} chunks) has no \
chunks in {}",
                    self.name
                );
                self.out.push(self.problem(Code::ToastValueMissing, None, message, missing0));
            }
            return None;
        };
        let chosen: Vec<&ChunkRec> = all.iter().filter(|c| c.toast_visible()).collect();
        if !chosen.is_empty() {
            return Some(chosen);
        }
        // Only chunks of an aborted insert: missing for a committed row; otherwise the row is
        // most likely the aborted insert itself, so judge the chunks as they are.
        if self.ptr.referrer_xmin_committed && !self.maybe_pruned {
            let message = format!(
                "attribute {attnum}: all {} chunks of toast value {v} were inserted by an \
aborted transaction (HEAP_XMIN_INVALID) and are invisible to the TOAST snapshot",
                all.len()
            );
            self.out.push(self.problem(Code::ToastValueMissing, None, message, missing0));
            return None;
        }
        Some(all.iter().collect())
    }

    /// The next chunk in index order, as the fetch meets it.
    fn chunk(&mut self, c: &ChunkRec) {
        let seq = i64::from(c.chunk_seq);
        self.unusable_data(c, seq);
        if seq < self.expected {
            self.surplus(c, seq);
            return;
        }
        if seq > self.expected && self.expected <= self.last && !self.maybe_pruned {
            self.gap(seq);
        }
        if seq > self.last {
            self.beyond_last(c, seq);
            self.expected = seq + 1;
            return;
        }
        let want = if seq < self.last {
            i64::from(self.max)
        } else {
            i64::from(self.ptr.extsize) - self.last * i64::from(self.max)
        };
        if !c.bad_header() && !c.null_data() && !c.unreadable() && i64::from(c.len) != want {
            self.wrong_size(c, seq, want);
        }
        self.total += i64::from(c.len.max(0));
        self.expected = seq + 1;
    }

    /// A compressed, NULL or unreadable chunk_data.
    fn unusable_data(&mut self, c: &ChunkRec, seq: i64) {
        let (v, attnum) = (self.ptr.va_valueid, self.ptr.attnum);
        if c.bad_header() {
            let message = format!(
                "attribute {attnum}: chunk {seq} of toast value {v} (block {}, lp {}) has a \
compressed-inline chunk_data header",
                c.block, c.lp
            );
            let pg = format!("found toasted toast chunk for toast value {v} in {}", self.name);
            self.out.push(self.problem(Code::ToastChunkHeader, Some(c), message, pg));
        } else if c.null_data() || c.unreadable() {
            let message = format!(
                "attribute {attnum}: chunk {seq} of toast value {v} (block {}, lp {}) has {} \
chunk_data",
                c.block,
                c.lp,
                if c.null_data() { "NULL" } else { "unreadable" }
            );
            self.out.push(self.problem(
                Code::ToastChunkHeader,
                Some(c),
                message,
                "wrong values or a crashed backend".into(),
            ));
        }
    }

    /// A chunk numbered below the one expected: a duplicate or out of order.
    fn surplus(&mut self, c: &ChunkRec, seq: i64) {
        let (v, attnum, expected) = (self.ptr.va_valueid, self.ptr.attnum, self.expected);
        let message = format!(
            "attribute {attnum}: toast value {v} has chunk {seq} (block {}, lp {}) where \
chunk {expected} is expected ({})",
            c.block,
            c.lp,
            if seq >= 0 && seq == expected - 1 { "a duplicate" } else { "out of order" }
        );
        let pg = format!(
            "unexpected chunk number {seq} (expected {expected}) for toast value {v} \
in {}",
            self.name
        );
        self.extras.push((seq, self.out.len()));
        self.out.push(self.problem(Code::ToastChunkUnexpected, Some(c), message, pg));
    }

    /// Chunk `seq` comes where an earlier one is expected: the ones between are missing.
    fn gap(&mut self, seq: i64) {
        let (v, attnum, expected, n, extsize) =
            (self.ptr.va_valueid, self.ptr.attnum, self.expected, self.n, self.ptr.extsize);
        let upto = seq.min(n) - 1;
        let message = format!(
            "attribute {attnum}: toast value {v} ({extsize} bytes in {n} chunks) lacks {}",
            chunk_range(expected, upto)
        );
        let pg = format!(
            "unexpected chunk number {seq} (expected {expected}) for toast value {v} \
in {}",
            self.name
        );
        self.missing.push((expected, upto, self.out.len()));
        self.out.push(self.problem(Code::ToastChunkMissing, None, message, pg));
    }

    /// A chunk numbered beyond the value's last.
    fn beyond_last(&mut self, c: &ChunkRec, seq: i64) {
        let (v, attnum, expected, n, last, name) =
            (self.ptr.va_valueid, self.ptr.attnum, self.expected, self.n, self.last, &self.name);
        let pg = if seq == expected || self.maybe_pruned {
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
        let message = format!(
            "attribute {attnum}: toast value {v} has {n} chunks (0..{last}) but also chunk \
{seq} (block {}, lp {}), {} bytes",
            c.block, c.lp, c.len
        );
        self.extras.push((seq, self.out.len()));
        self.out.push(self.problem(Code::ToastChunkUnexpected, Some(c), message, pg));
    }

    /// A chunk whose data length is not the `want` bytes its place in the value calls for.
    fn wrong_size(&mut self, c: &ChunkRec, seq: i64, want: i64) {
        let (v, attnum, n, extsize, max) = (self.ptr.va_valueid, self.ptr.attnum, self.n, self.ptr.extsize, self.max);
        let message = format!(
            "attribute {attnum}: chunk {seq} of {n} of toast value {v} (block {}, lp {}) \
holds {} bytes, expected {want} (extsize {extsize}, {max} per chunk)",
            c.block, c.lp, c.len
        );
        let pg = format!(
            "unexpected chunk size {} (expected {want}) in chunk {seq} of {n} for \
toast value {v} in {}",
            c.len, self.name
        );
        self.out.push(self.problem(Code::ToastChunkSize, Some(c), message, pg));
    }

    /// After the last chunk: the chunks never met are missing. One chunk missing and one surplus
    /// most likely means that chunk's chunk_seq was damaged.
    fn finish(&mut self) {
        let (v, attnum, expected, n, last, extsize, total) =
            (self.ptr.va_valueid, self.ptr.attnum, self.expected, self.n, self.last, self.ptr.extsize, self.total);
        if expected <= last && !self.maybe_pruned {
            let message = format!(
                "attribute {attnum}: toast value {v} ({extsize} bytes in {n} chunks) lacks {} \
({total} of {extsize} bytes present)",
                chunk_range(expected, last)
            );
            let pg = format!("missing chunk number {expected} for toast value {v} in {}", self.name);
            self.missing.push((expected, last, self.out.len()));
            self.out.push(self.problem(Code::ToastChunkMissing, None, message, pg));
        }
        // The TOAST index still files the damaged chunk under its old number, so the fetch meets
        // it where the missing one belongs.
        if let ([(k, k2, mi)], [(s, xi)]) = (self.missing.as_slice(), self.extras.as_slice()) {
            if k == k2 {
                let pg = format!("unexpected chunk number {s} (expected {k}) for toast value {v} in {}", self.name);
                self.out[*mi].pg_error = pg.clone();
                self.out[*mi].message.push_str(&format!(" (chunk {s} is probably chunk {k} with a damaged chunk_seq)"));
                self.out[*xi].pg_error = pg;
            }
        }
    }
}

/// Index order: (chunk_seq); for a sequence number that has a live copy, drop the deleted ones.
fn pick_copies(mut chosen: Vec<&ChunkRec>) -> Vec<&ChunkRec> {
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
    picked
}

fn chunk_range(from: i64, to: i64) -> String {
    if from == to {
        format!("chunk {from}")
    } else {
        format!("chunks {from}..{to}")
    }
}

/// Where chunk_data would start after chunk_seq (att_align_pointer for an 'i' varlena).
fn chunk_data_start(tuple: &[u8], walk: &Walk) -> Option<usize> {
    let s = walk.spans.get(1)?;
    let off = s.offset + s.len;
    match tuple.get(off) {
        Some(0) => Some(align_nominal(off, b'i')),
        Some(_) => Some(off),
        None => None,
    }
}

fn toast_desc() -> &'static RelDesc {
    static DESC: std::sync::OnceLock<RelDesc> = std::sync::OnceLock::new();
    DESC.get_or_init(RelDesc::toast_table)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::tuple::{Referrer, ToastPointer};

    fn live_pointer(valueid: u32) -> ToastPointer {
        ToastPointer {
            attnum: 2,
            offset: 0,
            va_rawsize: 4004,
            va_extinfo: 4000,
            extsize: 4000,
            compression_method: 0,
            is_compressed: false,
            va_valueid: valueid,
            va_toastrelid: 99,
            referrer: Referrer::Live,
            referrer_xmin_committed: true,
        }
    }

    #[test]
    fn an_absent_value_is_damage_unless_pages_of_the_toast_table_were_not_read() {
        let mut inv = ChunkInventory::new("pg_toast_99", TOAST_MAX_CHUNK_SIZE_8K);
        let codes = |inv: &ChunkInventory| {
            inv.check_value(&live_pointer(7), TOAST_MAX_CHUNK_SIZE_8K).iter().map(|p| p.code).collect::<Vec<_>>()
        };
        assert_eq!(codes(&inv), [Code::ToastValueMissing]);
        inv.mark_incomplete();
        assert_eq!(codes(&inv), []);
        let mut merged = ChunkInventory::new("pg_toast_99", TOAST_MAX_CHUNK_SIZE_8K);
        merged.merge(inv);
        assert_eq!(codes(&merged), []);
    }
}
