//! Carving rows out of heap pages the server cannot read (or should not be asked to read): line
//! pointers recovered from the tuple headers found in the page body when the item-ID array or
//! the page header is destroyed, columns decoded by the table's types ([`crate::datum`]), TOAST
//! values reassembled from the TOAST relation, and visibility decided from hint bits and
//! pg_xact ([`crate::visibility::xact`]) so deleted and aborted rows stay dead.
//!
//! Also the block classifier salvage runs before it sends SQL: which blocks are safe to read
//! through the executor (a garbage item-ID array or tuple header can crash the backend), which
//! are all zeroes, which must be carved.
//!
//! Layout facts relied on (`storage/bufpage.c` PageAddItem, PageRepairFragmentation): tuples are
//! MAXALIGNed, stored from the end of the page downwards, and the tuple area [pd_upper,
//! pd_special) has no gaps: each tuple starts at the previous one's start minus
//! MAXALIGN(t_len). A tuple found below that run lies in free space: a stale copy left behind by
//! compaction, never a live row by itself.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::OnceLock;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::encode::{copy_csv_escape, copy_text_escape};
use crate::checks::page::{check_page_in, HeapContext};
use crate::datum::{format_value, OutputOptions, TypeDesc};
use crate::error::{CoreError, Result};
use crate::finding::{Code, Severity};
use crate::format::bytes::{maxalign, u32_at};
use crate::format::heap::{
    bitmaplen, HeapTupleHeaderData, HEAP_HASEXTERNAL, HEAP_HASOID_OLD, HEAP_HASVARWIDTH, HEAP_HOT_UPDATED, HEAP_MOVED,
    HEAP_NATTS_MASK, HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID, HEAP_XMIN_FROZEN, SIZEOF_HEAP_TUPLE_HEADER,
};
use crate::format::itemid::{ItemIdData, LP_DEAD, LP_NORMAL, LP_REDIRECT, LP_UNUSED, SIZE_OF_ITEM_ID_DATA};
use crate::format::page::{Page, PageKind, Verification, SIZE_OF_PAGE_HEADER_DATA};
use crate::format::tuple::{walk_attributes_with, RelDesc, VarlenaKind, Walk, WalkOptions};
use crate::sources::blocks::{default_blcksz, default_relseg, BlockReader, SegFile};
use crate::visibility::commit_ts::CommitTs;
use crate::visibility::transam::{Horizons, FIRST_NORMAL_TRANSACTION_ID};
use crate::visibility::xact::{judge, Clog, StatusSources, Verdict, XidStatus};

/// `MaxHeapTuplesPerPage` for a block size.
pub fn max_heap_tuples(blcksz: usize) -> u16 {
    ((blcksz - SIZE_OF_PAGE_HEADER_DATA) / (maxalign(SIZEOF_HEAP_TUPLE_HEADER) + SIZE_OF_ITEM_ID_DATA)) as u16
}

// =============================================================================================
// Classification
// =============================================================================================

#[derive(Debug, Clone, Deserialize)]
pub struct ClassifyConfig {
    #[serde(default)]
    pub files: Vec<SegFile>,
    /// Classify blocks `first..nblocks` (a region of the relation; 0: from its start).
    #[serde(default)]
    pub first: u64,
    pub nblocks: u64,
    /// The relation's length in blocks, which no t_ctid may reach (default: `nblocks`; a region ends before the
    /// table does). Read from files, the bound is also the files' length after each page was read: on a running
    /// server an update's new version may land in a block added since.
    #[serde(default)]
    pub rel_nblocks: Option<u64>,
    #[serde(default = "default_blcksz")]
    pub blcksz: u32,
    #[serde(default = "default_relseg")]
    pub relseg_size: u32,
    #[serde(default)]
    pub checksums: bool,
    #[serde(default)]
    pub desc: Option<RelDesc>,
    #[serde(default)]
    pub horizons: Option<Horizons>,
    #[serde(default)]
    pub jobs: Option<usize>,
    /// Blocks per work unit.
    #[serde(default = "default_unit")]
    pub unit_blocks: u64,
    /// The table's output columns with their types: values whose output functions read internal structure
    /// (jsonb, arrays, numeric, network and bit types) are decoded, because damage inside them can crash the
    /// backend that prints them.
    #[serde(default)]
    pub columns: Vec<ColumnOut>,
}

fn default_unit() -> u64 {
    256
}

/// A block that is not plainly healthy.
#[derive(Debug, Clone, Serialize)]
pub struct BlockClass {
    pub block: u64,
    /// `zero` (all zeroes: reads as empty), `damaged` (must be carved), `missing` (not in the
    /// files: beyond a short segment).
    pub state: &'static str,
    /// Finding codes, errors first.
    pub codes: Vec<Code>,
    /// The first error finding's message.
    pub message: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ClassifyResult {
    pub nblocks: u64,
    pub healthy: u64,
    pub zero: u64,
    pub damaged: u64,
    pub missing: u64,
    pub bytes_read: u64,
    /// Every block that is not healthy, by block number.
    pub blocks: Vec<BlockClass>,
}

/// Judge one heap page: None when it is safe to read through SQL.
pub fn classify_page(bytes: &[u8], block: u64, cfg: &ClassifyConfig) -> Option<BlockClass> {
    classify_page_within(bytes, block, cfg, cfg.rel_nblocks.unwrap_or(cfg.nblocks))
}

fn classify_page_within(bytes: &[u8], block: u64, cfg: &ClassifyConfig, rel_nblocks: u64) -> Option<BlockClass> {
    let blcksz = cfg.blcksz as usize;
    if bytes.len() < blcksz {
        return Some(BlockClass {
            block,
            state: "missing",
            codes: vec![Code::FilePartialPage],
            message: format!("only {} of {blcksz} bytes could be read", bytes.len()),
        });
    }
    let page = Page::new(bytes)?;
    if page.is_all_zero() {
        return Some(BlockClass { block, state: "zero", codes: vec![], message: "all-zero page".into() });
    }
    let ctx = HeapContext {
        nblocks: Some(rel_nblocks),
        horizons: cfg.horizons.as_ref(),
        relnatts: cfg.desc.as_ref().map(|d| d.natts),
    };
    let mut findings = check_page_in(&page, PageKind::Heap, Some(block), cfg.checksums, &ctx);
    let sane = page.header_is_sane(blcksz);
    if sane && !matches!(page.verify(block as u32, cfg.checksums), Verification::Invalid { .. }) {
        if let Some(desc) = &cfg.desc {
            for (off, id) in page.item_ids() {
                if id.lp_flags() != LP_NORMAL {
                    continue;
                }
                let Some(tuple) = page.item_bytes(id) else { continue };
                let Some(header) = HeapTupleHeaderData::parse(tuple) else { continue };
                let walk = walk_attributes_with(
                    tuple,
                    &header,
                    desc,
                    &WalkOptions { verify_compressed: true, ..WalkOptions::default() },
                );
                findings.extend(walk.problems.iter().map(|p| p.to_finding(Some(block), Some(off))));
                if !walk.stopped {
                    if let Some(bad) = check_values(tuple, &walk, cfg) {
                        findings.push(crate::finding::Finding::new(
                            Code::TupleDataValueBad,
                            Some(block),
                            Some(off),
                            bad,
                        ));
                    }
                }
            }
        }
    }
    let mut errors: Vec<_> = findings.iter().filter(|f| f.severity == Severity::Error).collect();
    if errors.is_empty() {
        if let Verification::Invalid { .. } = page.verify(block as u32, cfg.checksums) {
            return Some(BlockClass {
                block,
                state: "damaged",
                codes: vec![Code::PageHeaderInvalid],
                message: "the server rejects this page".into(),
            });
        }
        return None;
    }
    errors.sort_by_key(|f| f.code);
    let message = errors[0].message.clone();
    let mut codes: Vec<Code> = errors.iter().map(|f| f.code).collect();
    codes.dedup();
    Some(BlockClass { block, state: "damaged", codes, message })
}

/// Types whose text output only copies bytes (no internal structure to trust).
fn structured(t: &TypeDesc) -> bool {
    use crate::datum::oid;
    t.typlen == -1
        // the text-like types are copied as they are; numeric digits are checked (the server prints garbage)
        && !matches!(
            t.oid,
            oid::TEXT | oid::VARCHAR | oid::BPCHAR | oid::BYTEA | oid::JSON | oid::XML | oid::PG_NODE_TREE
        )
}

/// Decode the structured values of a tuple (inline ones; external values are checked when fetched): the first
/// that does not decode, described.
fn check_values(tuple: &[u8], walk: &Walk, cfg: &ClassifyConfig) -> Option<String> {
    let opts = OutputOptions::default();
    let mut scratch = Vec::new();
    for col in &cfg.columns {
        let Some(ty) = col.r#type.as_ref().filter(|t| structured(t)) else { continue };
        let Some(span) = walk.spans.get(usize::from(col.attnum.max(1) as u16) - 1) else { continue };
        if span.is_null || span.missing {
            continue;
        }
        let raw: std::borrow::Cow<'_, [u8]> = match span.varlena {
            Some(VarlenaKind::Short) | Some(VarlenaKind::Plain) => match span.payload(tuple) {
                Some(p) => std::borrow::Cow::Borrowed(p),
                None => continue,
            },
            Some(VarlenaKind::Compressed { rawsize, method }) => {
                let Some(b) = span.bytes(tuple).and_then(|b| b.get(8..)) else { continue };
                match crate::format::compress::decompress(method, b, rawsize as usize) {
                    Ok(v) => std::borrow::Cow::Owned(v),
                    Err(_) => continue, // reported by the walk
                }
            }
            _ => continue,
        };
        if let Err(e) = crate::datum::validate_value(&raw, ty, &opts, &mut scratch) {
            return Some(format!("column {} ({}): {e}", col.name, ty.name));
        }
    }
    None
}

/// Classify every block of a relation read from its files, in parallel.
pub fn classify_relation(cfg: &ClassifyConfig) -> Result<ClassifyResult> {
    let reader = BlockReader::new(&cfg.files, cfg.blcksz, cfg.relseg_size);
    let unit = cfg.unit_blocks.max(1);
    let start = cfg.first.min(cfg.nblocks);
    let units: Vec<u64> = (0..(cfg.nblocks - start).div_ceil(unit)).collect();
    let run = || -> Vec<std::io::Result<(u64, Vec<BlockClass>)>> {
        units
            .par_iter()
            .map(|u| {
                let first = start + u * unit;
                let count = unit.min(cfg.nblocks - first);
                let data = reader.read(first, count)?;
                // after the read: a block a row's t_ctid names was added before that row was written out
                let bound = reader.nblocks_now().max(cfg.rel_nblocks.unwrap_or(cfg.nblocks));
                Ok((data.len() as u64, classify_buffer_within(&data, first, count, cfg, bound)))
            })
            .collect()
    };
    let parts = match cfg.jobs {
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| CoreError::Invalid(format!("cannot start {n} threads: {e}")))?
            .install(run),
        None => run(),
    };
    let mut res = ClassifyResult { nblocks: cfg.nblocks - start, ..Default::default() };
    for p in parts {
        let (bytes, blocks) = p.map_err(|e| CoreError::Invalid(format!("cannot read the relation: {e}")))?;
        res.bytes_read += bytes;
        res.blocks.extend(blocks);
    }
    res.blocks.sort_by_key(|b| b.block);
    tally(&mut res);
    Ok(res)
}

/// Classify `count` consecutive blocks from `first` held in `data` (which may be short).
pub fn classify_buffer(data: &[u8], first: u64, count: u64, cfg: &ClassifyConfig) -> Vec<BlockClass> {
    classify_buffer_within(data, first, count, cfg, cfg.rel_nblocks.unwrap_or(cfg.nblocks))
}

/// [`classify_buffer`] with `rel_nblocks` as the relation's length (the bound of t_ctid).
fn classify_buffer_within(
    data: &[u8],
    first: u64,
    count: u64,
    cfg: &ClassifyConfig,
    rel_nblocks: u64,
) -> Vec<BlockClass> {
    let blcksz = cfg.blcksz as usize;
    let mut out = Vec::new();
    for i in 0..count {
        let start = i as usize * blcksz;
        let bytes = data.get(start..(start + blcksz).min(data.len())).unwrap_or(&[]);
        if let Some(c) = classify_page_within(bytes, first + i, cfg, rel_nblocks) {
            out.push(c);
        }
    }
    out
}

/// Fill in the counts from the block list.
pub fn tally(res: &mut ClassifyResult) {
    res.zero = res.blocks.iter().filter(|b| b.state == "zero").count() as u64;
    res.damaged = res.blocks.iter().filter(|b| b.state == "damaged").count() as u64;
    res.missing = res.blocks.iter().filter(|b| b.state == "missing").count() as u64;
    res.healthy = res.nblocks - res.zero - res.damaged - res.missing;
}

// =============================================================================================
// Finding tuples in a page
// =============================================================================================

/// How a tuple was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// Through a line pointer that points exactly at a well-formed tuple.
    LinePointer,
    /// By recognising a tuple header in the page body.
    PageBody,
}

/// Where a found tuple lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// In the tuple area (pd_upper..pd_special, or the contiguous run of tuples ending there).
    TupleArea,
    /// Below it, in free space: possibly a stale copy left behind by compaction.
    FreeSpace,
}

/// A tuple found in a page.
#[derive(Debug, Clone)]
pub struct Found {
    pub off: usize,
    pub len: usize,
    pub lp: Option<u16>,
    pub via: Via,
    pub placement: Placement,
    pub header: HeapTupleHeaderData,
    pub walk: Walk,
}

/// What finding tuples learned about the page itself.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PageInfo {
    pub block: u64,
    pub all_zero: bool,
    pub header_sane: bool,
    /// Line pointers read (from pd_lower, or counted while they look plausible).
    pub line_pointers: u16,
    /// Whether the line pointer count came from a sane pd_lower.
    pub lp_count_trusted: bool,
    /// LP_NORMAL pointers that point at a well-formed tuple.
    pub lp_valid: u16,
    /// LP_NORMAL pointers that do not.
    pub lp_bad: Vec<u16>,
    /// LP_REDIRECT / LP_DEAD / LP_UNUSED counts.
    pub lp_redirect: u16,
    pub lp_dead: u16,
    pub lp_unused: u16,
    /// Whether the page body was searched for tuple headers.
    pub body_scanned: bool,
    pub found_in_body: u16,
    /// So many line pointers are damaged that the array tells nothing: which rows were here must come from
    /// elsewhere (index entries).
    pub lp_array_destroyed: bool,
    /// Line pointer numbers of every tuple found (dead ones too).
    pub claimed_lps: Vec<u16>,
    /// Tuples found whose line pointer number is unknown.
    pub unnumbered: u16,
    /// The page holds copies of another block's tuples: that block (the most named one).
    pub copies_from: Option<u64>,
    /// Where the copied bytes start (a torn page), or 0 when the whole page is a copy (misdirected write).
    pub copies_at: Option<usize>,
}

/// Limits a tuple header must respect to be believed.
#[derive(Debug, Clone, Copy)]
pub struct Plausibility<'a> {
    pub nblocks: Option<u64>,
    pub horizons: Option<&'a Horizons>,
    pub max_tuples: u16,
}

fn header_plausible(
    h: &HeapTupleHeaderData,
    t: &[u8],
    desc: &RelDesc,
    p: &Plausibility<'_>,
    strict: bool,
) -> std::result::Result<(), &'static str> {
    let natts = h.natts();
    if natts > desc.natts || (natts == 0 && desc.natts > 0) {
        return Err("attribute count");
    }
    if h.t_infomask2 & !(HEAP_NATTS_MASK | 0xE000) != 0 {
        return Err("unused t_infomask2 bits");
    }
    if h.t_infomask & HEAP_HASOID_OLD != 0 {
        return Err("pre-12 OID column");
    }
    if usize::from(h.t_hoff) != h.expected_hoff() {
        return Err("t_hoff");
    }
    let hoff = usize::from(h.t_hoff);
    if t.len() < hoff {
        return Err("shorter than its header");
    }
    // Padding between the null bitmap and t_hoff is zero, and so are the bitmap bits past natts.
    let bm_end = SIZEOF_HEAP_TUPLE_HEADER + if h.has_nulls() { bitmaplen(natts) } else { 0 };
    if t[bm_end..hoff].iter().any(|b| *b != 0) {
        return Err("header padding");
    }
    if h.has_nulls() {
        let bits = &t[SIZEOF_HEAP_TUPLE_HEADER..bm_end];
        let n = usize::from(natts);
        if n % 8 != 0 && bits[bits.len() - 1] >> (n % 8) != 0 {
            return Err("null bitmap bits past natts");
        }
        if strict && (0..n).all(|i| bits[i / 8] & (1 << (i % 8)) != 0) {
            return Err("HEAP_HASNULL without a null");
        }
    }
    if !strict {
        return Ok(());
    }
    let m = h.t_infomask;
    if m & HEAP_MOVED != 0 {
        return Err("HEAP_MOVED");
    }
    if m & HEAP_XMAX_COMMITTED != 0 && m & HEAP_XMAX_INVALID != 0 {
        return Err("xmax both committed and invalid");
    }
    let frozen = m & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN;
    if !frozen {
        if h.t_xmin == 0 {
            return Err("xmin 0");
        }
        if let Some(hz) = p.horizons {
            if h.t_xmin >= FIRST_NORMAL_TRANSACTION_ID
                && !crate::visibility::transam::xid_precedes(h.t_xmin, hz.next_xid)
            {
                return Err("xmin in the future");
            }
        }
    }
    let ctid = h.t_ctid;
    let special = ctid.offset == crate::checks::page::MOVED_PARTITIONS_OFFSET_NUMBER
        || ctid.offset == crate::checks::page::SPEC_TOKEN_OFFSET_NUMBER;
    if !special {
        if ctid.offset == 0 || ctid.offset > p.max_tuples {
            return Err("t_ctid offset");
        }
        if p.nblocks.is_some_and(|n| u64::from(ctid.block) >= n) {
            return Err("t_ctid block");
        }
    }
    Ok(())
}

/// Whether a walk shows a well-formed tuple: `exact` when the tuple's length is known (a line
/// pointer's lp_len) and must match the data's end.
fn walk_clean(w: &Walk, h: &HeapTupleHeaderData, exact: bool, strict: bool) -> bool {
    if w.stopped {
        return false;
    }
    let bad = w.problems.iter().any(|p| exact || p.code != Code::TupleDataTrailingBytes);
    if bad {
        return false;
    }
    if strict {
        let has_ext = !w.toast_pointers.is_empty();
        if has_ext != (h.t_infomask & HEAP_HASEXTERNAL != 0) {
            return false;
        }
        let has_var = w.spans.iter().any(|s| s.varlena.is_some() && !s.is_null && !s.missing);
        if has_var && h.t_infomask & HEAP_HASVARWIDTH == 0 {
            return false;
        }
    }
    true
}

/// A line pointer that may be real (used to count entries when pd_lower is lost).
fn lp_plausible(id: ItemIdData, blcksz: usize, max_tuples: u16) -> bool {
    let (off, len) = (usize::from(id.lp_off()), usize::from(id.lp_len()));
    match id.lp_flags() {
        LP_UNUSED => off == 0 && len == 0,
        LP_REDIRECT => len == 0 && off >= 1 && off <= usize::from(max_tuples),
        LP_DEAD => len == 0 && off == 0 || (off % 8 == 0 && len >= SIZEOF_HEAP_TUPLE_HEADER && off + len <= blcksz),
        _ => {
            off % 8 == 0
                && off >= SIZE_OF_PAGE_HEADER_DATA + 4
                && len >= SIZEOF_HEAP_TUPLE_HEADER
                && off + len <= blcksz
        }
    }
}

/// Every tuple that can be found in `page`: through line pointers that point at well-formed
/// tuples, and (when line pointers are missing, damaged or untrustworthy) by their headers in
/// the page body.
pub fn find_tuples(page: &[u8], block: u64, desc: &RelDesc, p: &Plausibility<'_>) -> (Vec<Found>, PageInfo) {
    let blcksz = page.len();
    let mut info = PageInfo { block, ..Default::default() };
    let Some(pg) = Page::new(page) else { return (vec![], info) };
    if pg.is_all_zero() {
        info.all_zero = true;
        return (vec![], info);
    }
    let h = *pg.header();
    info.header_sane = pg.header_is_sane(blcksz) && h.pd_lower >= SIZE_OF_PAGE_HEADER_DATA as u16;
    // Line pointer count: pd_lower when sane; otherwise as many as look plausible.
    let fit = ((blcksz - SIZE_OF_PAGE_HEADER_DATA) / SIZE_OF_ITEM_ID_DATA).min(usize::from(p.max_tuples)) as u16;
    let n = if info.header_sane {
        info.lp_count_trusted = true;
        h.max_offset_number().min(fit)
    } else {
        let mut n = 0u16;
        let mut lowest_tuple = blcksz;
        for i in 1..=fit {
            let at = SIZE_OF_PAGE_HEADER_DATA + usize::from(i - 1) * SIZE_OF_ITEM_ID_DATA;
            if at + SIZE_OF_ITEM_ID_DATA > lowest_tuple {
                break;
            }
            let Some(id) = ItemIdData::parse(page, at) else { break };
            if !lp_plausible(id, blcksz, p.max_tuples) {
                break;
            }
            if id.lp_len() > 0 {
                lowest_tuple = lowest_tuple.min(usize::from(id.lp_off()));
            }
            n = i;
        }
        // Trailing unused entries are free space that happens to be zero.
        while n > 0 && pg.item_id(n).is_some_and(|id| id.0 == 0) {
            n -= 1;
        }
        n
    };
    info.line_pointers = n;
    let opts = WalkOptions { verify_compressed: true, ..WalkOptions::default() };
    let mut found: Vec<Found> = Vec::new();
    for off in 1..=n {
        let Some(id) = pg.item_id(off) else { break };
        if id.lp_flags() != LP_NORMAL && !lp_plausible(id, blcksz, p.max_tuples) {
            info.lp_bad.push(off);
            continue;
        }
        match id.lp_flags() {
            LP_UNUSED => info.lp_unused += 1,
            LP_REDIRECT => info.lp_redirect += 1,
            LP_DEAD => info.lp_dead += 1,
            _ => {
                let start = usize::from(id.lp_off());
                let len = usize::from(id.lp_len());
                let ok = (|| {
                    if start % 8 != 0 || start < SIZE_OF_PAGE_HEADER_DATA || len < SIZEOF_HEAP_TUPLE_HEADER {
                        return None;
                    }
                    let t = page.get(start..start.checked_add(len)?)?;
                    let hdr = HeapTupleHeaderData::parse(t)?;
                    header_plausible(&hdr, t, desc, p, false).ok()?;
                    let walk = walk_attributes_with(t, &hdr, desc, &opts);
                    if walk.stopped {
                        return None;
                    }
                    Some(Found {
                        off: start,
                        len,
                        lp: Some(off),
                        via: Via::LinePointer,
                        placement: Placement::TupleArea,
                        header: hdr,
                        walk,
                    })
                })();
                match ok {
                    // Two pointers at one tuple: a stale pointer; keep the one the tuple names.
                    Some(f) if found.iter().any(|g| g.off == f.off) => {
                        if f.header.t_ctid.offset == off && u64::from(f.header.t_ctid.block) == block {
                            found.retain(|g| g.off != f.off);
                            found.push(f);
                        }
                        info.lp_bad.push(off);
                    }
                    Some(f) => found.push(f),
                    None => info.lp_bad.push(off),
                }
            }
        }
    }
    info.lp_valid = found.len() as u16;
    // Tuple bytes no line pointer covers (a pointer set unused or overwritten) are rows the server no longer sees.
    let orphans = info.header_sane && {
        let mut items: Vec<(usize, usize)> = found.iter().map(|f| (f.off, f.len)).collect();
        !crate::checks::page::unreferenced_tuples(
            page,
            block,
            usize::from(h.pd_upper),
            usize::from(h.pd_special),
            &mut items,
        )
        .is_empty()
    };
    let need_body = orphans || !info.lp_bad.is_empty() || (found.is_empty() && n == 0) || !info.header_sane && n == 0;
    if need_body {
        info.body_scanned = true;
        let body = scan_body(page, block, desc, p, &found, n);
        info.found_in_body = body.len() as u16;
        found.extend(body);
        // Which tuples lie in the tuple area?
        let area_start = if info.header_sane { usize::from(h.pd_upper) } else { contiguous_area_start(&found, blcksz) };
        for f in found.iter_mut() {
            if f.via == Via::PageBody && f.off < area_start {
                f.placement = Placement::FreeSpace;
            }
        }
        assign_line_pointers(&mut found, block);
        // With a sound line pointer array, a body tuple whose own slot is dead was removed on purpose (pg_surgery's
        // heap_force_kill leaves the bytes until the next pruning): it is not a row to bring back.
        if info.header_sane && info.lp_bad.is_empty() {
            let killed = |f: &Found| {
                f.via == Via::PageBody && f.lp.and_then(|l| pg.item_id(l)).is_some_and(|id| id.lp_flags() == LP_DEAD)
            };
            found.retain(|f| !killed(f));
        }
        let n_entries = usize::from(n.max(1));
        info.lp_array_destroyed = n == 0 || info.lp_bad.len() * 4 > n_entries && info.lp_bad.len() > 2;
    }
    info.claimed_lps = found.iter().filter_map(|f| f.lp).collect();
    info.claimed_lps.sort_unstable();
    info.claimed_lps.dedup();
    info.unnumbered = found.iter().filter(|f| f.lp.is_none()).count() as u16;
    found.sort_by_key(|f| (f.lp.unwrap_or(u16::MAX), f.off));
    (found, info)
}

/// Body tuples take the line pointer number their own t_ctid names, unless that number belongs to another
/// tuple: a line pointer's tuple, or a newer version of the row (an updated tuple's t_ctid names its successor,
/// whose xmin is the updated tuple's xmax).
fn assign_line_pointers(found: &mut [Found], block: u64) {
    let taken: HashSet<u16> = found.iter().filter(|f| f.via == Via::LinePointer).filter_map(|f| f.lp).collect();
    let claims: Vec<(usize, u16, u32, u32)> = found
        .iter()
        .enumerate()
        .filter(|(_, f)| f.via == Via::PageBody)
        .filter_map(|(i, f)| f.lp.map(|lp| (i, lp, f.header.t_xmin, f.header.t_xmax)))
        .collect();
    for &(i, lp, _xmin, xmax) in &claims {
        let superseded = taken.contains(&lp)
            || (xmax != 0 && claims.iter().any(|&(j, l2, xmin2, _)| j != i && l2 == lp && xmin2 == xmax))
            || found[i].header.t_infomask2 & HEAP_HOT_UPDATED != 0
            || u64::from(found[i].header.t_ctid.block) != block;
        if superseded {
            found[i].lp = None;
        }
    }
}

/// Search the page body (outside the tuples already found) for well-formed tuples, at every
/// MAXALIGNed offset past the line pointer array.
fn scan_body(page: &[u8], block: u64, desc: &RelDesc, p: &Plausibility<'_>, known: &[Found], n_lp: u16) -> Vec<Found> {
    let blcksz = page.len();
    let opts = WalkOptions { verify_compressed: true, ..WalkOptions::default() };
    let covered = |o: usize| known.iter().any(|f| o >= f.off && o < f.off + f.len);
    let first = maxalign(SIZE_OF_PAGE_HEADER_DATA + SIZE_OF_ITEM_ID_DATA * usize::from(n_lp.max(1)));
    let mut cands: Vec<Found> = Vec::new();
    let mut o = first;
    while o + SIZEOF_HEAP_TUPLE_HEADER < blcksz {
        if covered(o) {
            o += 8;
            continue;
        }
        // The data may run until the next known tuple or the page end.
        let limit = known.iter().filter(|f| f.off > o).map(|f| f.off).min().unwrap_or(blcksz);
        let t = &page[o..limit];
        if let Some(hdr) = HeapTupleHeaderData::parse(t) {
            if header_plausible(&hdr, t, desc, p, true).is_ok() {
                let mut walk = walk_attributes_with(t, &hdr, desc, &opts);
                if walk_clean(&walk, &hdr, false, true) && walk.data_end > usize::from(hdr.t_hoff) {
                    walk.problems.clear();
                    let len = walk.data_end;
                    let lp = (u64::from(hdr.t_ctid.block) == block).then_some(hdr.t_ctid.offset);
                    cands.push(Found {
                        off: o,
                        len,
                        lp,
                        via: Via::PageBody,
                        placement: Placement::TupleArea,
                        header: hdr,
                        walk,
                    });
                }
            }
        }
        o += 8;
    }
    // Candidates may overlap (a header-like pattern inside another tuple's data): keep the
    // contiguous chains first, then whatever does not overlap them.
    resolve_overlaps(cands, blcksz)
}

/// Pick non-overlapping candidates: those on the run that ends at the page end first (walking
/// down tuple by tuple), then the others from the top, skipping overlaps.
fn resolve_overlaps(mut cands: Vec<Found>, blcksz: usize) -> Vec<Found> {
    if cands.len() < 2 {
        return cands;
    }
    cands.sort_by_key(|f| std::cmp::Reverse(f.off));
    let mut chosen: Vec<Found> = Vec::new();
    let mut used = vec![false; cands.len()];
    let mut top = blcksz;
    while let Some(i) = (0..cands.len()).find(|&i| !used[i] && maxalign(cands[i].off + cands[i].len) == top) {
        used[i] = true;
        top = cands[i].off;
        chosen.push(cands[i].clone());
    }
    for i in 0..cands.len() {
        if used[i] {
            continue;
        }
        let c = &cands[i];
        let overlaps = chosen.iter().any(|f| c.off < f.off + f.len && f.off < c.off + c.len);
        if !overlaps {
            chosen.push(c.clone());
        }
    }
    chosen
}

/// Lowest offset of the gap-free run of tuples that ends at the page end (the tuple area when
/// pd_upper cannot be trusted).
fn contiguous_area_start(found: &[Found], blcksz: usize) -> usize {
    let mut top = blcksz;
    loop {
        match found.iter().find(|f| maxalign(f.off + f.len) == top && f.off < top) {
            Some(f) => top = f.off,
            None => return top,
        }
    }
}

// =============================================================================================
// Carving
// =============================================================================================

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
pub struct ChunkRef {
    pub valueid: u32,
    pub seq: i32,
    pub start: usize,
    pub len: usize,
}

#[derive(Debug, Clone, Default, Deserialize)]
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

/// How sure the carver is that a row is a live row of the table with these values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Certainty {
    /// Found through its line pointer, well formed, visibility decided, every value decoded.
    Sure,
    /// Found by its header in the page body (line pointers lost), otherwise like `sure`.
    Likely,
    /// Something does not add up: visibility undecidable, a value missing, a stale or misplaced
    /// copy, a page that failed its checksum. Kept apart.
    Uncertain,
}

impl Certainty {
    fn as_str(self) -> &'static str {
        match self {
            Certainty::Sure => "sure",
            Certainty::Likely => "likely",
            Certainty::Uncertain => "uncertain",
        }
    }
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Via::LinePointer => "line_pointer",
            Via::PageBody => "page_body",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CarvedRow {
    pub block: u64,
    /// The line pointer: the one that pointed at it, or (found in the body) the one its own
    /// t_ctid names.
    pub lp: Option<u16>,
    /// Byte offset of the tuple in the page.
    pub offset: u16,
    pub len: u16,
    pub via: Via,
    pub placement: Placement,
    pub certainty: Certainty,
    pub verdict: Verdict,
    pub reason: String,
    pub notes: Vec<String>,
    pub xmin: u32,
    pub xmax: u32,
    pub infomask: u16,
    pub infomask2: u16,
    /// The page failed its checksum (the row is uncertain for that reason).
    pub checksum_failed: bool,
    /// The certainty the row would have if its page had passed its checksum.
    pub certainty_besides_checksum: Certainty,
    /// The formatted line in the data blob.
    pub data_start: usize,
    pub data_end: usize,
}

/// A row known to have been there that could not be carved.
#[derive(Debug, Clone, Serialize)]
pub struct LostItem {
    pub block: u64,
    pub lp: Option<u16>,
    pub reason: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CarveCounts {
    pub pages: u64,
    pub tuples_found: u64,
    pub live: u64,
    pub invisible: u64,
    pub uncertain: u64,
    pub duplicates: u64,
    /// Rows written to the main output / kept apart.
    pub main_rows: u64,
    pub apart_rows: u64,
    /// Pages that failed their checksum.
    pub checksum_failures: u64,
}

impl CarveCounts {
    pub fn add(&mut self, o: &CarveCounts) {
        self.pages += o.pages;
        self.tuples_found += o.tuples_found;
        self.live += o.live;
        self.invisible += o.invisible;
        self.uncertain += o.uncertain;
        self.duplicates += o.duplicates;
        self.main_rows += o.main_rows;
        self.apart_rows += o.apart_rows;
        self.checksum_failures += o.checksum_failures;
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CarveResult {
    pub rows: Vec<CarvedRow>,
    pub pages: Vec<PageInfo>,
    pub lost: Vec<LostItem>,
    pub counts: CarveCounts,
    /// Ask the server for these and carve again.
    pub need_xids: Vec<u32>,
    pub need_multis: Vec<u32>,
    pub need_toast: Vec<u32>,
}

/// Whether the page holds copies of another block's tuples (tuples with xmax 0 whose t_ctid names their own item
/// number in another block): `(true, _)` when most of them do (a misdirected write), `(false, offset)` when some do, from `offset`
/// up (a torn page whose upper part came from another block).
fn foreign_region(found: &[Found], block: u64) -> Option<(bool, usize, u64)> {
    // A copied never-updated row names its own item number in the block it was written for. One that names another
    // item number there is a row VACUUM froze after its update aborted (xmax cleared, t_ctid left at the discarded
    // new version), which proves nothing about the page.
    let is_foreign = |f: &Found| {
        let c = f.header.t_ctid;
        f.header.t_xmax == 0
            && u64::from(c.block) != block
            && c.offset < crate::checks::page::MOVED_PARTITIONS_OFFSET_NUMBER
            && f.lp.is_none_or(|lp| lp == c.offset)
    };
    let n_foreign = found.iter().filter(|f| is_foreign(f)).count();
    // One such tuple is more likely a damaged t_ctid than a copied page.
    if n_foreign < 2 {
        return None;
    }
    let first = found.iter().filter(|f| is_foreign(f)).map(|f| f.off).min().unwrap_or(0);
    let mut votes: HashMap<u32, usize> = HashMap::new();
    for f in found.iter().filter(|f| is_foreign(f)) {
        *votes.entry(f.header.t_ctid.block).or_default() += 1;
    }
    let from = votes.into_iter().max_by_key(|(b, n)| (*n, std::cmp::Reverse(*b))).map_or(0, |(b, _)| u64::from(b));
    Some((n_foreign * 2 > found.len(), first, from))
}

/// A tuple below the first copied tuple that crosses a 512-byte sector boundary within a tuple's length of it: the
/// tear may lie inside it.
fn crosses_tear(off: usize, len: usize, first_foreign: usize) -> bool {
    const SECTOR: usize = 512;
    if off >= first_foreign {
        return false;
    }
    let end = off + len;
    // The copied bytes may begin with the tail of a copied tuple: look up to a quarter page below.
    let window_lo = first_foreign.saturating_sub(2048);
    let mut s = (off / SECTOR + 1) * SECTOR;
    while s < end {
        if s <= first_foreign && s >= window_lo {
            return true;
        }
        s += SECTOR;
    }
    false
}

/// The chunks of one TOAST value: (chunk_seq, bytes).
pub type ValueChunks = Vec<(i32, Vec<u8>)>;

/// TOAST chunks by value id.
pub type Chunks = HashMap<u32, ValueChunks>;

/// The chunk tuples of a TOAST page: (valueid, seq, data) of each tuple not inserted by an aborted transaction.
fn toast_page_chunks(page: &[u8], block: u64, p: &Plausibility<'_>, mut each: impl FnMut(u32, i32, &[u8])) {
    let desc = RelDesc::toast_table();
    let (found, _) = find_tuples(page, block, &desc, p);
    for f in found {
        if f.header.t_infomask & crate::format::heap::HEAP_XMIN_INVALID != 0
            && f.header.t_infomask & HEAP_XMIN_FROZEN != HEAP_XMIN_FROZEN
        {
            continue; // inserted by an aborted transaction
        }
        let t = &page[f.off..f.off + f.len];
        let span = |n: usize| f.walk.spans.get(n).filter(|s| !s.is_null && !s.missing);
        let (Some(id), Some(seq), Some(data)) = (span(0), span(1), span(2)) else { continue };
        let (Some(valueid), Some(seq), Some(bytes)) = (u32_at(t, id.offset), u32_at(t, seq.offset), data.payload(t))
        else {
            continue;
        };
        each(valueid, seq as i32, bytes);
    }
}

/// The TOAST relation's files, with a locator (value id -> blocks holding its chunks) built by one pass over
/// the relation the first time a value is needed: 8 bytes per chunk page entry, instead of a pass per batch.
struct ToastFiles {
    reader: BlockReader,
    nblocks: u64,
    blcksz: usize,
    /// Data checksums are on: a chunk from a page that fails its checksum makes its value suspect.
    checksums: bool,
    locator: OnceLock<std::result::Result<Vec<(u32, u32)>, String>>,
}

impl ToastFiles {
    fn plausibility(&self) -> Plausibility<'static> {
        Plausibility { nblocks: Some(self.nblocks), horizons: None, max_tuples: max_heap_tuples(self.blcksz) }
    }

    fn locator(&self) -> std::result::Result<&[(u32, u32)], String> {
        let built = self.locator.get_or_init(|| {
            let p = self.plausibility();
            let step = 256u64;
            let starts: Vec<u64> = (0..self.nblocks).step_by(step as usize).collect();
            let parts: std::result::Result<Vec<Vec<(u32, u32)>>, String> = starts
                .par_iter()
                .map(|&first| {
                    let count = step.min(self.nblocks - first);
                    let data = self.reader.read(first, count).map_err(|e| format!("cannot read TOAST: {e}"))?;
                    let mut v = Vec::new();
                    for (i, page) in data.chunks_exact(self.blcksz).enumerate() {
                        let block = (first + i as u64) as u32;
                        toast_page_chunks(page, u64::from(block), &p, |valueid, _, _| v.push((valueid, block)));
                    }
                    v.sort_unstable();
                    v.dedup();
                    Ok(v)
                })
                .collect();
            let mut all: Vec<(u32, u32)> = parts?.into_iter().flatten().collect();
            all.sort_unstable();
            all.dedup();
            Ok(all)
        });
        built.as_deref().map_err(Clone::clone)
    }

    /// The chunks of one value found in the files (empty when there are none), and whether one of them lies on a
    /// page that fails its checksum.
    fn value(&self, valueid: u32) -> std::result::Result<(ValueChunks, bool), String> {
        let loc = self.locator()?;
        let lo = loc.partition_point(|&(v, _)| v < valueid);
        let hi = loc.partition_point(|&(v, _)| v <= valueid);
        let p = self.plausibility();
        let mut out = Vec::new();
        let mut suspect = false;
        for &(_, block) in &loc[lo..hi] {
            let page = self.reader.read(u64::from(block), 1).map_err(|e| format!("cannot read TOAST: {e}"))?;
            if page.len() < self.blcksz {
                continue;
            }
            let before = out.len();
            toast_page_chunks(&page, u64::from(block), &p, |v, seq, bytes| {
                if v == valueid {
                    out.push((seq, bytes.to_vec()));
                }
            });
            if self.checksums && out.len() > before {
                let stored = Page::new(&page).map(|pg| pg.header().pd_checksum);
                suspect |= stored != crate::format::checksum::pg_checksum_page(&page, block);
            }
        }
        Ok((out, suspect))
    }
}

/// Assemble one external value's stored bytes from its chunks (sequence 0.., sizes summing to
/// extsize); an error names what is wrong.
fn assemble(
    list: &[(i32, Vec<u8>)],
    valueid: u32,
    extsize: usize,
    max_chunk: usize,
) -> std::result::Result<Vec<u8>, String> {
    if list.is_empty() {
        return Err(format!("TOAST value {valueid} not found"));
    }
    let n = if extsize == 0 { 0 } else { (extsize - 1) / max_chunk.max(1) + 1 };
    let mut out = Vec::with_capacity(extsize);
    for seq in 0..n as i32 {
        let Some((_, bytes)) = list.iter().find(|(s, _)| *s == seq) else {
            return Err(format!("chunk {seq} of TOAST value {valueid} is missing"));
        };
        out.extend_from_slice(bytes);
    }
    if out.len() != extsize {
        return Err(format!("TOAST value {valueid}: chunks hold {} bytes, the pointer says {extsize}", out.len()));
    }
    Ok(out)
}

/// Append `v` to `out` with every byte sequence that is not valid UTF-8 written as `\xHH` text, so the value
/// loads and still shows what was there.
fn escape_invalid_utf8(mut v: &[u8], out: &mut Vec<u8>) {
    loop {
        match std::str::from_utf8(v) {
            Ok(s) => {
                out.extend_from_slice(s.as_bytes());
                return;
            }
            Err(e) => {
                let good = e.valid_up_to();
                out.extend_from_slice(&v[..good]);
                let bad = e.error_len().unwrap_or(v.len() - good);
                for b in &v[good..good + bad] {
                    let _ = write!(out, "\\x{b:02x}");
                }
                v = &v[good + bad..];
            }
        }
    }
}

/// What carving a run of pages produced: the formatted rows and the account of the pages.
#[derive(Debug, Default)]
pub struct Batch {
    /// Rows for the main output (COPY text or CSV lines). In collecting mode: every carved row, each
    /// described by an entry of `rows`.
    pub main: Vec<u8>,
    /// Rows kept apart, each line starting with the provenance columns.
    pub apart: Vec<u8>,
    /// Provenance of the rows of `main`, when asked for: (block, lp, offset, via, certainty, note, rows) lines in
    /// output order; a page's rows read plainly through their line pointers share one line (lp and offset NULL,
    /// `rows` their count), every other row has its own.
    pub prov: Vec<u8>,
    pub rows: Vec<CarvedRow>,
    pub lost: Vec<LostItem>,
    /// Pages that need accounting (all-zero, line pointer array destroyed, copies of another block, body
    /// searched); in collecting mode every page.
    pub pages: Vec<PageInfo>,
    pub counts: CarveCounts,
    pub need_xids: Vec<u32>,
    pub need_multis: Vec<u32>,
    pub need_toast: Vec<u32>,
    /// Keep every row in `main` with a `rows` entry (small page sets: repair), instead of splitting main/apart.
    pub collect: bool,
    /// Write `prov`.
    pub provenance: bool,
    line: Vec<u8>,
    text: Vec<u8>,
}

impl Batch {
    pub fn collecting() -> Batch {
        Batch { collect: true, ..Default::default() }
    }

    pub fn streaming(provenance: bool) -> Batch {
        Batch { provenance, ..Default::default() }
    }

    /// Whether the carve asked for something the caller may answer (then carve the pages again).
    pub fn needs(&self) -> bool {
        !self.need_xids.is_empty() || !self.need_multis.is_empty() || !self.need_toast.is_empty()
    }

    /// Append `other` (carved after `self`).
    pub fn append(&mut self, mut other: Batch) {
        let base = self.main.len();
        for r in &mut other.rows {
            r.data_start += base;
            r.data_end += base;
        }
        self.main.extend_from_slice(&other.main);
        self.apart.extend_from_slice(&other.apart);
        self.prov.extend_from_slice(&other.prov);
        self.rows.append(&mut other.rows);
        self.lost.append(&mut other.lost);
        self.pages.append(&mut other.pages);
        self.counts.add(&other.counts);
        self.need_xids.append(&mut other.need_xids);
        self.need_multis.append(&mut other.need_multis);
        self.need_toast.append(&mut other.need_toast);
    }
}

/// Everything carving one relation needs that stays the same from page to page; shared by the threads that carve.
pub struct Carver {
    /// pg_commit_ts, for undelete's commit times.
    commit_ts: Option<CommitTs>,
    pub cfg: CarveConfig,
    clog: Clog,
    server: HashMap<u32, XidStatus>,
    multis: HashMap<u32, Option<u32>>,
    fetched: Chunks,
    toast: Option<ToastFiles>,
    only: HashMap<u64, HashSet<u16>>,
    apart_rows: HashMap<u64, Vec<(u16, String)>>,
    oopts: OutputOptions,
    max_chunk: usize,
    max_tuples: u16,
    utf8: bool,
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
        let only =
            cfg.only.iter().filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, v.iter().copied().collect()))).collect();
        let apart_rows = cfg.apart_rows.iter().filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, v.clone()))).collect();
        let toast = (!cfg.toast_files.is_empty()).then(|| ToastFiles {
            reader: BlockReader::new(&cfg.toast_files, cfg.blcksz, cfg.relseg_size),
            nblocks: cfg.toast_nblocks,
            blcksz,
            checksums: cfg.checksums,
            locator: OnceLock::new(),
        });
        let utf8 = cfg.encoding.eq_ignore_ascii_case("UTF8") || cfg.encoding.eq_ignore_ascii_case("UTF-8");
        let commit_ts = if cfg.deleted {
            cfg.xact_dir.as_deref().and_then(|d| d.parent()).and_then(|p| CommitTs::open(p, cfg.blcksz))
        } else {
            None
        };
        Carver {
            commit_ts,
            oopts: OutputOptions { server_version_num: cfg.server_version_num, ..Default::default() },
            max_chunk: crate::format::toast::TOAST_MAX_CHUNK_SIZE_8K as usize * blcksz / 8192,
            max_tuples: max_heap_tuples(blcksz),
            clog,
            server,
            multis,
            fetched: HashMap::new(),
            toast,
            only,
            apart_rows,
            utf8,
            cfg,
        }
    }

    /// The heap's files, when the configuration names them.
    pub fn heap_reader(&self) -> Option<BlockReader> {
        (!self.cfg.files.is_empty()).then(|| BlockReader::new(&self.cfg.files, self.cfg.blcksz, self.cfg.relseg_size))
    }

    pub fn add_xid_status(&mut self, xid: u32, status: XidStatus) {
        self.server.insert(xid, status);
    }

    pub fn add_multi(&mut self, multi: u32, updater: Option<u32>) {
        self.multis.insert(multi, updater);
    }

    /// A TOAST chunk fetched by the caller (through SQL).
    pub fn add_chunk(&mut self, valueid: u32, seq: i32, bytes: Vec<u8>) {
        self.fetched.entry(valueid).or_default().push((seq, bytes));
    }

    /// Forget fetched chunks (they were for the pages carved since the last call).
    pub fn clear_chunks(&mut self) {
        self.fetched.clear();
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
    /// Undelete's leading columns: block, lp, xmin, its commit time, the deleter, its commit time, and whether
    /// the version was deleted or replaced by an update (its t_ctid names another tuple).
    fn write_deleted_prefix(&self, out: &mut Vec<u8>, block: u64, f: &Found, deleter: u32, csv: bool) {
        let sep = if csv { b',' } else { b'\t' };
        let null: &[u8] = if csv { b"" } else { b"\\N" };
        let time = |out: &mut Vec<u8>, xid: u32| match self.commit_ts.as_ref().and_then(|c| c.time(xid)) {
            Some(t) => crate::datum::format_timestamp(t, true, out),
            None => out.extend_from_slice(null),
        };
        let _ = write!(out, "{block}");
        out.push(sep);
        match f.lp {
            Some(lp) => {
                let _ = write!(out, "{lp}");
            }
            None => out.extend_from_slice(null),
        }
        out.push(sep);
        let _ = write!(out, "{}", f.header.t_xmin);
        out.push(sep);
        time(out, f.header.t_xmin);
        out.push(sep);
        let _ = write!(out, "{deleter}");
        out.push(sep);
        time(out, deleter);
        out.push(sep);
        let ctid = f.header.t_ctid;
        let moved = u64::from(ctid.block) != block || Some(ctid.offset) != f.lp;
        out.extend_from_slice(if moved { b"update" } else { b"delete" });
        out.push(sep);
    }

    pub fn carve_page(&self, page: &[u8], block: u64, can_ask: bool, out: &mut Batch) {
        let cfg = &self.cfg;
        let p =
            Plausibility { nblocks: Some(cfg.nblocks), horizons: cfg.horizons.as_ref(), max_tuples: self.max_tuples };
        let src = StatusSources {
            clog: &self.clog,
            server: &self.server,
            can_ask: can_ask && cfg.can_ask,
            multis: &self.multis,
            horizons: cfg.horizons.as_ref(),
        };
        let (found, info) = find_tuples(page, block, &cfg.desc, &p);
        out.counts.pages += 1;
        // A page that fails its checksum has bytes the server never wrote: its rows may carry altered values.
        let mut page_note: Option<String> = None;
        if cfg.checksums && !info.all_zero {
            if let (Some(pg), Some(sum)) =
                (Page::new(page), crate::format::checksum::pg_checksum_page(page, block as u32))
            {
                if pg.header().pd_checksum != sum {
                    out.counts.checksum_failures += 1;
                    page_note = Some(format!(
                        "the page failed its checksum (stored {:#06x}, computed {sum:#06x}): its values may be altered",
                        pg.header().pd_checksum
                    ));
                }
            }
        }
        let restrict = self.only.get(&block);
        let mut recovered_lps = vec![false; usize::from(self.max_tuples.max(info.line_pointers)) + 1];
        let mut recover = |lp: u16| {
            if let Some(x) = recovered_lps.get_mut(usize::from(lp)) {
                *x = true;
            }
        };
        let mut plain_run = 0u64;
        // A tuple found in the page body may be a stale copy of one found elsewhere (compaction leaves copies in
        // free space): the same version has the same xmin, cmin/xvac, t_ctid and data. Tuples found through line
        // pointers are distinct rows even when their bytes are identical (one statement inserting equal rows).
        let mut dup = vec![false; found.len()];
        if info.body_scanned {
            let key = |f: &Found| {
                let h = &f.header;
                (
                    h.t_xmin,
                    h.t_field3,
                    h.t_ctid.block,
                    h.t_ctid.offset,
                    &page[f.off + usize::from(h.t_hoff)..f.off + f.len],
                )
            };
            let rank = |g: &Found| (g.placement != Placement::TupleArea, g.via != Via::LinePointer, g.off);
            let mut best: HashMap<_, usize> = HashMap::new();
            for (k, f) in found.iter().enumerate() {
                if f.via == Via::LinePointer && f.placement == Placement::TupleArea {
                    continue;
                }
                best.entry(key(f))
                    .and_modify(|cur: &mut usize| {
                        if rank(f) < rank(&found[*cur]) {
                            *cur = k;
                        }
                    })
                    .or_insert(k);
            }
            for (k, f) in found.iter().enumerate() {
                if f.via == Via::LinePointer && f.placement == Placement::TupleArea {
                    continue;
                }
                let shadowed = found.iter().any(|g| {
                    g.via == Via::LinePointer
                        && g.placement == Placement::TupleArea
                        && g.off != f.off
                        && key(g) == key(f)
                });
                if shadowed || best.get(&key(f)) != Some(&k) {
                    dup[k] = true;
                }
            }
        }
        let foreign = foreign_region(&found, block);
        let csv = cfg.format == OutFormat::Csv;
        let sep = if csv { b',' } else { b'\t' };
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
            out.counts.tuples_found += 1;
            let t = &page[f.off..f.off + f.len];
            let mut notes: Vec<String> = Vec::new();
            let mut certainty = if f.via == Via::LinePointer { Certainty::Sure } else { Certainty::Likely };
            let j = judge(&f.header, &src);
            out.need_xids.extend(&j.need_xids);
            out.need_multis.extend(&j.need_multis);
            let mut verdict = j.verdict;
            let mut deleter = None;
            if cfg.deleted {
                match j.deleted_by {
                    Some(x) if !matches!(cfg.deleted_by, Some(w) if w != x) => {
                        deleter = Some(x);
                        verdict = Verdict::Live;
                    }
                    // a removed version whose deleter cannot be decided stays in the kept-apart output
                    None if verdict == Verdict::Uncertain
                        && cfg.deleted_by.is_none()
                        && f.header.t_xmax != 0
                        && f.header.t_infomask & HEAP_XMAX_INVALID == 0
                        && !crate::visibility::xact::xmax_locked_only(f.header.t_infomask) => {}
                    _ => continue,
                }
            }
            if verdict == Verdict::Invisible {
                out.counts.invisible += 1;
                if let Some(lp) = f.lp {
                    recover(lp);
                }
                if !cfg.keep_invisible {
                    continue;
                }
            }
            if verdict == Verdict::Uncertain {
                certainty = Certainty::Uncertain;
            }
            if f.placement == Placement::FreeSpace {
                certainty = Certainty::Uncertain;
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
                certainty = Certainty::Uncertain;
                notes.push(format!(
                    "t_ctid {ctid} names another block{}: a copy of another block's row (torn or misdirected write)",
                    if foreign.is_some() { " on a page holding copies" } else { " at this tuple's own item number" }
                ));
            }
            if let Some((whole, first_foreign, _)) = foreign {
                if whole {
                    certainty = Certainty::Uncertain;
                    notes.push(
                        "most tuples on this page belong to another block: the page is a misdirected copy".into(),
                    );
                } else if crosses_tear(f.off, f.len, first_foreign) {
                    certainty = Certainty::Uncertain;
                    notes.push(format!(
                        "the tuple crosses a sector boundary just below where copied bytes start (offset \
{first_foreign}): part of it may come from the other copy (torn page)"
                    ));
                }
            }
            for p in &f.walk.problems {
                if p.code != Code::TupleDataTrailingBytes {
                    notes.push(format!("{}: {}", p.code, p.message));
                    certainty = Certainty::Uncertain;
                }
            }
            // Format the line.
            out.line.clear();
            let mut missing_toast = Vec::new();
            let mut suspect_toast = false;
            for (ci, col) in cfg.columns.iter().enumerate() {
                if ci > 0 {
                    out.line.push(sep);
                }
                let idx = usize::from(col.attnum.max(1) as u16) - 1;
                let attlen = cfg.desc.attrs.get(idx).map_or(0, |a| a.attlen);
                out.text.clear();
                let value: std::result::Result<bool, String> = match f.walk.spans.get(idx) {
                    None => Err("attribute not reached".into()),
                    Some(s) if s.missing => match &col.missing {
                        Some(m) => {
                            out.text.extend_from_slice(m.as_bytes());
                            Ok(true)
                        }
                        None => Ok(false),
                    },
                    Some(s) if s.is_null => Ok(false),
                    Some(s) => self
                        .attribute_value(t, &f.header, s, attlen, &mut missing_toast, &mut suspect_toast)
                        .and_then(|raw| match &col.r#type {
                            Some(ty) => format_value(&raw, ty, &self.oopts, &mut out.text).map(|()| true),
                            None => Err(format!("column {} has a type the carver does not know", col.name)),
                        }),
                };
                match value {
                    Ok(false) => {
                        if !csv {
                            out.line.extend_from_slice(b"\\N");
                        }
                    }
                    Ok(true) => {
                        if self.utf8 && std::str::from_utf8(&out.text).is_err() {
                            certainty = Certainty::Uncertain;
                            notes.push(format!(
                                "column {}: bytes that are not valid UTF-8 (written as \\xHH text)",
                                col.name
                            ));
                            let raw = std::mem::take(&mut out.text);
                            escape_invalid_utf8(&raw, &mut out.text);
                        }
                        if csv {
                            copy_csv_escape(&out.text, cfg.columns.len() == 1, &mut out.line);
                        } else {
                            copy_text_escape(&out.text, &mut out.line);
                        }
                    }
                    Err(e) => {
                        // the stored bytes go with the reason, so nothing of the value is lost (a TOAST pointer's
                        // bytes name the value it points to)
                        let raw = f.walk.spans.get(idx).and_then(|sp| sp.bytes(t)).unwrap_or(&[]);
                        let mut hex = String::with_capacity(2 * raw.len().min(RAW_NOTE_BYTES));
                        for b in raw.iter().take(RAW_NOTE_BYTES) {
                            let _ = std::fmt::Write::write_fmt(&mut hex, format_args!("{b:02x}"));
                        }
                        let more = if raw.len() > RAW_NOTE_BYTES { "…" } else { "" };
                        notes.push(format!(
                            "column {}: {e}; stored bytes \\x{hex}{more} ({} bytes)",
                            col.name,
                            raw.len()
                        ));
                        certainty = Certainty::Uncertain;
                        if !csv {
                            out.line.extend_from_slice(b"\\N");
                        }
                    }
                }
            }
            out.line.push(b'\n');
            if suspect_toast {
                certainty = Certainty::Uncertain;
                notes.push(
                    "a TOAST chunk of this row lies on a page that failed its checksum: the value may be altered"
                        .into(),
                );
            }
            let forced = self.apart_rows.get(&block).and_then(|v| v.iter().find(|(o, _)| usize::from(*o) == f.off));
            if let Some(why) = forced {
                certainty = Certainty::Uncertain;
                notes.push(why.1.clone());
            }
            let certainty_besides_checksum = certainty;
            if let Some(n) = &page_note {
                certainty = Certainty::Uncertain;
                notes.push(n.clone());
            }
            if cfg.can_fetch_toast && can_ask && !missing_toast.is_empty() {
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
                    recover(lp);
                }
            }
            let to_main = verdict == Verdict::Live && certainty != Certainty::Uncertain;
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
                    checksum_failed: page_note.is_some(),
                    certainty_besides_checksum,
                    data_start: start,
                    data_end: out.main.len(),
                });
            } else if to_main {
                out.counts.main_rows += 1;
                if let Some(x) = deleter {
                    self.write_deleted_prefix(&mut out.main, block, f, x, csv);
                }
                out.main.extend_from_slice(&out.line);
                if out.provenance {
                    if f.via == Via::LinePointer && certainty == Certainty::Sure && notes.is_empty() {
                        plain_run += 1;
                    } else {
                        write_plain_run(&mut out.prov, block, &mut plain_run, csv);
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
        write_plain_run(&mut out.prov, block, &mut plain_run, csv);
        let recovered = |lp: u16| recovered_lps.get(usize::from(lp)).copied().unwrap_or(false);
        // Line pointers to tuples that could not be read (and were not found in the body).
        for lp in &info.lp_bad {
            if info.lp_array_destroyed
                || recovered(*lp)
                || info.claimed_lps.contains(lp)
                || restrict.is_some_and(|r| !r.contains(lp))
            {
                continue;
            }
            out.lost.push(LostItem {
                block,
                lp: Some(*lp),
                reason: "its line pointer points at bytes that are not a readable tuple, and no tuple naming it was \
found in the page"
                    .into(),
            });
        }
        if let Some(r) = restrict {
            let mut r: Vec<u16> = r.iter().copied().collect();
            r.sort_unstable();
            for lp in r {
                if !recovered(lp) && !info.lp_bad.contains(&lp) && !found.iter().any(|f| f.lp == Some(lp)) {
                    out.lost.push(LostItem {
                        block,
                        lp: Some(lp),
                        reason: "no readable tuple at this line pointer".into(),
                    });
                }
            }
        }
        // An all-zero page is not a loss by itself (relation extension leaves them): the caller decides with the
        // evidence that rows were there (index entries).
        let mut info = info;
        if let Some((whole, first, from)) = foreign {
            info.copies_from = Some(from);
            info.copies_at = Some(if whole { 0 } else { first });
            out.lost.push(LostItem {
                block,
                lp: None,
                reason: if whole {
                    format!(
                        "the page holds a copy of block {from} (a misdirected write): this block's own rows are gone"
                    )
                } else {
                    format!(
                        "from offset {first} up the page holds bytes of block {from} (a torn page): this block's rows \
stored there are gone"
                    )
                },
            });
        }
        if out.collect || info.all_zero || info.body_scanned || info.copies_from.is_some() {
            out.pages.push(info);
        }
    }
}

/// One provenance line for the `run` rows of `block` read plainly through their line pointers (if any).
fn write_plain_run(out: &mut Vec<u8>, block: u64, run: &mut u64, csv: bool) {
    if *run == 0 {
        return;
    }
    if csv {
        let _ = writeln!(out, "{block},,,line_pointer,sure,,{run}");
    } else {
        let _ = writeln!(out, "{block}\t\\N\t\\N\tline_pointer\tsure\t\t{run}");
    }
    *run = 0;
}

/// How many of an undecodable value's stored bytes its row's note shows (hex).
const RAW_NOTE_BYTES: usize = 4096;

/// The provenance columns of a carved row: block, line pointer, offset, how found, certainty, note.
fn write_provenance(out: &mut Vec<u8>, block: u64, f: &Found, certainty: Certainty, note: &str, csv: bool) {
    let sep = if csv { ',' } else { '\t' };
    let _ = write!(out, "{block}{sep}");
    match f.lp {
        Some(lp) => {
            let _ = write!(out, "{lp}");
        }
        None if !csv => out.extend_from_slice(b"\\N"),
        None => {}
    }
    let _ = write!(out, "{sep}{}{sep}{}{sep}{}{sep}", f.off, f.via.as_str(), certainty.as_str());
    if csv {
        copy_csv_escape(note.as_bytes(), false, out);
    } else {
        copy_text_escape(note.as_bytes(), out);
    }
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

// =============================================================================================
// Index evidence: which rows were on a block
// =============================================================================================

#[derive(Debug, Clone, Deserialize)]
pub struct IndexFiles {
    pub name: String,
    pub files: Vec<SegFile>,
    pub nblocks: u64,
}

#[derive(Debug, Clone, Deserialize)]
pub struct IndexEvidenceConfig {
    pub indexes: Vec<IndexFiles>,
    pub blocks: Vec<u64>,
    /// Also every TID at or past this block (the heap's end: rows a truncated file lost).
    #[serde(default)]
    pub beyond: Option<u64>,
    #[serde(default = "default_blcksz")]
    pub blcksz: u32,
    #[serde(default = "default_relseg")]
    pub relseg_size: u32,
}

/// A heap TID an index entry points to.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexTid {
    pub block: u64,
    pub lp: u16,
    pub index: String,
}

/// Every heap TID in `blocks` that a leaf entry of the given btree indexes points to.
pub fn index_evidence(cfg: &IndexEvidenceConfig) -> Result<Vec<IndexTid>> {
    use crate::format::btree::{leaf_heap_tids, BTPageOpaqueData, BTP_DELETED, BTP_HALF_DEAD};
    let want: HashSet<u64> = cfg.blocks.iter().copied().collect();
    let blcksz = cfg.blcksz as usize;
    let mut out: HashSet<IndexTid> = HashSet::new();
    for ix in &cfg.indexes {
        let reader = BlockReader::new(&ix.files, cfg.blcksz, cfg.relseg_size);
        let mut first = 1u64; // block 0 is the metapage
        let mut tids = Vec::new();
        while first < ix.nblocks {
            let count = 256u64.min(ix.nblocks - first);
            let data =
                reader.read(first, count).map_err(|e| CoreError::Invalid(format!("cannot read {}: {e}", ix.name)))?;
            for bytes in data.chunks_exact(blcksz) {
                let Some(page) = Page::new(bytes) else { continue };
                if !page.header_is_sane(blcksz) {
                    continue;
                }
                let Some(o) = BTPageOpaqueData::from_page(&page) else { continue };
                if !o.is_leaf() || o.btpo_flags & (BTP_DELETED | BTP_HALF_DEAD) != 0 {
                    continue;
                }
                let first_item = if o.is_rightmost() { 1 } else { 2 };
                for (off, id) in page.item_ids() {
                    if off < first_item || id.lp_flags() != LP_NORMAL {
                        continue;
                    }
                    let Some(t) = page.item_bytes(id) else { continue };
                    if !leaf_heap_tids(t, &mut tids) {
                        continue;
                    }
                    for tid in &tids {
                        let hb = u64::from(tid.block);
                        if want.contains(&hb) || cfg.beyond.is_some_and(|e| hb >= e) {
                            out.insert(IndexTid {
                                block: u64::from(tid.block),
                                lp: tid.offset,
                                index: ix.name.clone(),
                            });
                        }
                    }
                }
            }
            first += count;
        }
    }
    let mut v: Vec<IndexTid> = out.into_iter().collect();
    v.sort();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::heap::{ItemPointerData, HEAP_XMIN_COMMITTED};
    use crate::format::tuple::AttrDesc;
    use std::path::Path;

    fn desc() -> RelDesc {
        let a = |attnum, attlen, attalign, typname: &str| AttrDesc {
            attnum,
            attlen,
            attalign,
            attbyval: attlen > 0,
            attisdropped: false,
            typname: typname.into(),
            attstorage: if attlen > 0 { b'p' } else { b'x' },
        };
        RelDesc {
            natts: 2,
            attrs: vec![a(1, 4, b'i', "int4"), a(2, -1, b'i', "text")],
            has_toast: false,
            toast_relid: 0,
        }
    }

    fn tuple(block: u32, lp: u16, id: i32, text: &str) -> Vec<u8> {
        let mut t = vec![0u8; 24];
        HeapTupleHeaderData {
            t_xmin: 700,
            t_xmax: 0,
            t_field3: 0,
            t_ctid: ItemPointerData { block, offset: lp },
            t_infomask2: 2,
            t_infomask: HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID | HEAP_HASVARWIDTH,
            t_hoff: 24,
        }
        .write(&mut t);
        t.extend_from_slice(&id.to_le_bytes());
        t.push(((text.len() + 1) << 1 | 1) as u8);
        t.extend_from_slice(text.as_bytes());
        t
    }

    fn page(block: u32, rows: &[(i32, &str)]) -> Vec<u8> {
        let tuples: Vec<Vec<u8>> =
            rows.iter().enumerate().map(|(i, (id, text))| tuple(block, (i + 1) as u16, *id, text)).collect();
        let refs: Vec<&[u8]> = tuples.iter().map(|t| t.as_slice()).collect();
        crate::format::page::assemble_heap_page(&refs, 8192).expect("test rows fit on a page")
    }

    fn cfg() -> CarveConfig {
        let ty = |oid: u32, name: &str| Some(TypeDesc { oid, name: name.into(), typtype: b'b', ..Default::default() });
        CarveConfig {
            blcksz: 8192,
            relseg_size: 131072,
            nblocks: 10,
            files: vec![],
            checksums: false,
            encoding: "UTF8".into(),
            desc: desc(),
            columns: vec![
                ColumnOut { attnum: 1, name: "id".into(), r#type: ty(23, "int4"), missing: None },
                ColumnOut { attnum: 2, name: "t".into(), r#type: ty(25, "text"), missing: None },
            ],
            format: OutFormat::Text,
            server_version_num: 180000,
            horizons: None,
            xact_dir: None,
            snapshot: None,
            can_ask: false,
            xid_status: HashMap::new(),
            multis: HashMap::new(),
            toast_files: vec![],
            toast_nblocks: 0,
            toast_relid: 0,
            toast_chunks: vec![],
            can_fetch_toast: false,
            only: HashMap::new(),
            apart_rows: HashMap::new(),
            keep_invisible: false,
            deleted: false,
            deleted_by: None,
        }
    }

    fn lines(out: &[u8]) -> Vec<String> {
        String::from_utf8(out.to_vec()).unwrap().lines().map(str::to_string).collect()
    }

    #[test]
    fn healthy_page_through_line_pointers() {
        let p = page(3, &[(1, "one"), (2, "two\ttab")]);
        let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        assert_eq!(lines(&out), vec!["1\tone", "2\ttwo\\ttab"]);
        assert!(res.rows.iter().all(|r| r.certainty == Certainty::Sure && r.via == Via::LinePointer));
        assert!(!res.pages[0].body_scanned);
    }

    #[test]
    fn destroyed_item_ids_and_header() {
        let mut p = page(3, &[(1, "one"), (2, "two"), (3, "three")]);
        for b in &mut p[0..36] {
            *b = 0xA5;
        }
        let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        let mut l = lines(&out);
        l.sort();
        assert_eq!(l, vec!["1\tone", "2\ttwo", "3\tthree"]);
        assert!(res.rows.iter().all(|r| r.certainty == Certainty::Likely && r.via == Via::PageBody));
        let mut lps: Vec<_> = res.rows.iter().map(|r| r.lp).collect();
        lps.sort();
        assert_eq!(lps, vec![Some(1), Some(2), Some(3)]);
    }

    #[test]
    fn identical_rows_are_distinct_rows() {
        // one statement inserting equal rows: same xmin, cmin and data; only their line pointers (and t_ctid)
        // differ. Each is a row of its own, found through line pointers or, the array destroyed, in the body.
        let rows: Vec<(i32, &str)> = (0..40).map(|_| (7, "same")).collect();
        let p = page(3, &rows);
        let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        assert_eq!(lines(&out).len(), 40);
        assert_eq!(res.counts.duplicates, 0);
        let mut p = p;
        for b in &mut p[0..24 + 4 * 40] {
            *b = 0x5A;
        }
        let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        assert_eq!(lines(&out).len(), 40);
        assert!(res.rows.iter().all(|r| r.certainty == Certainty::Likely), "{:?}", res.rows[0]);
    }

    #[test]
    fn failed_checksum_keeps_rows_apart() {
        let mut p = page(3, &[(1, "one")]);
        let sum = crate::format::checksum::pg_checksum_page(&p, 3).unwrap();
        p[8..10].copy_from_slice(&sum.to_le_bytes());
        let mut c = cfg();
        c.checksums = true;
        let (res, _) = carve_pages(&p, &[3], &[], &c).unwrap();
        assert_eq!((res.rows[0].certainty, res.rows[0].checksum_failed), (Certainty::Sure, false));
        p[8] ^= 1;
        let (res, _) = carve_pages(&p, &[3], &[], &c).unwrap();
        let r = &res.rows[0];
        assert_eq!(
            (r.certainty, r.checksum_failed, r.certainty_besides_checksum),
            (Certainty::Uncertain, true, Certainty::Sure)
        );
    }

    #[test]
    fn rows_named_apart_are_kept_apart_with_the_reason() {
        let p = page(3, &[(1, "one"), (2, "two")]);
        let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        let second = res.rows.iter().find(|r| r.lp == Some(2)).unwrap().offset;
        let mut c = cfg();
        c.apart_rows.insert("3".into(), vec![(second, "key (id)=(2) is readable at (9,4)".into())]);
        c.apart_rows.insert("4".into(), vec![(res.rows[0].offset, "another block".into())]);
        let (res, _) = carve_pages(&p, &[3], &[], &c).unwrap();
        let kept: Vec<_> = res.rows.iter().map(|r| (r.lp, r.certainty, r.certainty_besides_checksum)).collect();
        assert_eq!(
            kept,
            vec![(Some(1), Certainty::Sure, Certainty::Sure), (Some(2), Certainty::Uncertain, Certainty::Uncertain)]
        );
        assert!(res.rows[1].notes.iter().any(|n| n.contains("readable at (9,4)")), "{:?}", res.rows[1].notes);
    }

    #[test]
    fn invalid_utf8_is_kept_apart_escaped() {
        let p = page(3, &[(1, "ok\u{e9}"), (2, "bad")]);
        let mut p = p;
        let at = p.windows(3).rposition(|w| w == b"bad").unwrap();
        p[at] = 0xdb;
        let (res, out) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        let l = lines(&out);
        assert!(l.iter().any(|x| x.ends_with("\\\\xdbad")), "{l:?}");
        assert_eq!(res.rows.iter().filter(|r| r.certainty == Certainty::Uncertain).count(), 1);
    }

    #[test]
    fn an_undecodable_value_keeps_its_row_apart_with_its_bytes() {
        let p = page(3, &[(1, "abc")]);
        let mut c = cfg();
        c.columns[1].r#type = None;
        let mut carver = Carver::new(c);
        carver.add_chunk(0, 0, vec![]);
        let mut out = Batch::streaming(false);
        carver.carve_page(&p, 3, false, &mut out);
        assert!(out.main.is_empty());
        let apart = String::from_utf8(out.apart).unwrap();
        // the note (6th provenance column) names the column and shows its stored bytes: a 1-byte header and "abc"
        assert!(apart.contains("column t:") && apart.contains("stored bytes \\\\x09616263 (4 bytes)"), "{apart}");
        assert!(apart.ends_with("\t1\t\\N\n"), "{apart}");
    }

    #[test]
    fn stale_copy_in_free_space_is_kept_apart() {
        let mut p = page(3, &[(1, "one"), (2, "two")]);
        // an old copy of a third row left in free space, far below the tuple area
        let t = tuple(3, 3, 9, "nine");
        p[4000..4000 + t.len()].copy_from_slice(&t);
        for b in &mut p[24..32] {
            *b = 0xFF; // damage the line pointers so the body is searched
        }
        let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        let stale: Vec<_> = res.rows.iter().filter(|r| r.offset == 4000).collect();
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].certainty, Certainty::Uncertain);
        assert_eq!(res.rows.iter().filter(|r| r.certainty == Certainty::Likely).count(), 2);
    }

    #[test]
    fn misplaced_tuple_is_uncertain() {
        let p = page(5, &[(1, "one")]);
        let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
        assert_eq!(res.rows[0].certainty, Certainty::Uncertain);
    }

    #[test]
    fn frozen_row_of_an_aborted_update_is_sure() {
        // VACUUM cleared the aborted updater's xmax; t_ctid still names the discarded new version: on this page
        // (item 7), or in another block at another item number (block 9, item 4)
        for (blk, item) in [(3u16, 7u16), (9, 4)] {
            let mut p = page(3, &[(1, "one")]);
            let off = (u32::from_le_bytes([p[24], p[25], p[26], p[27]]) & 0x7fff) as usize;
            p[off + 12..off + 14].copy_from_slice(&0u16.to_le_bytes());
            p[off + 14..off + 16].copy_from_slice(&blk.to_le_bytes());
            p[off + 16..off + 18].copy_from_slice(&item.to_le_bytes());
            let (res, _) = carve_pages(&p, &[3], &[], &cfg()).unwrap();
            assert_eq!(res.rows.len(), 1);
            assert_eq!(res.rows[0].certainty, Certainty::Sure, "t_ctid ({blk},{item})");
        }
    }

    /// A classification of one segment file (or of pages handed over, without one), one block per unit.
    fn classify_cfg(file: Option<&Path>, first: u64, nblocks: u64, rel_nblocks: Option<u64>) -> ClassifyConfig {
        ClassifyConfig {
            files: file.map(|p| vec![SegFile { segno: 0, path: p.to_path_buf() }]).unwrap_or_default(),
            first,
            nblocks,
            blcksz: 8192,
            relseg_size: 131072,
            checksums: false,
            desc: Some(desc()),
            horizons: None,
            jobs: Some(1),
            unit_blocks: 1,
            columns: vec![],
            rel_nblocks,
        }
    }

    #[test]
    fn classify_zero_and_damaged() {
        let c = classify_cfg(None, 0, 10, None);
        assert!(classify_page(&page(1, &[(1, "x")]), 1, &c).is_none());
        assert_eq!(classify_page(&[0u8; 8192], 2, &c).unwrap().state, "zero");
        let mut p = page(1, &[(1, "x")]);
        p[14] = 0x10; // pd_upper below pd_lower
        p[15] = 0;
        assert_eq!(classify_page(&p, 1, &c).unwrap().state, "damaged");
    }

    #[test]
    fn classify_a_region() {
        let dir = std::env::temp_dir().join(format!("pgs-classify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("16384");
        let mut file = Vec::new();
        for b in 0..4u32 {
            if b == 2 {
                file.extend_from_slice(&[0u8; 8192]);
            } else {
                file.extend_from_slice(&page(b, &[(1, "x")]));
            }
        }
        file[14] = 0x10; // block 0: pd_upper below pd_lower
        file[15] = 0;
        std::fs::write(&path, &file).unwrap();
        let cfg = |first: u64| classify_cfg(Some(&path), first, 4, None);
        let whole = classify_relation(&cfg(0)).unwrap();
        let states: Vec<_> = whole.blocks.iter().map(|b| (b.block, b.state)).collect();
        assert_eq!(states, vec![(0, "damaged"), (2, "zero")]);
        let region = classify_relation(&cfg(1)).unwrap();
        let states: Vec<_> = region.blocks.iter().map(|b| (b.block, b.state)).collect();
        assert_eq!((states, region.nblocks, region.healthy), (vec![(2, "zero")], 3, 2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// An updated row's t_ctid names its new version's block. Classified region by region, that block lies past
    /// the region but inside the table; on a running server it may lie in a block added after the table's length
    /// was read, and the file holds it by the time the row is read. Neither is damage; past the file's end is.
    #[test]
    fn a_ctid_past_the_region_or_into_a_block_added_since_is_no_damage() {
        let dir = std::env::temp_dir().join(format!("pgs-classify-ctid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("16384");
        let updated = |b: u32, to: u32| {
            let mut p = page(b, &[(1, "x")]);
            let lp = u32::from_le_bytes(p[24..28].try_into().unwrap());
            let t = (lp & 0x7FFF) as usize;
            p[t + 4..t + 8].copy_from_slice(&900u32.to_le_bytes()); // t_xmax: the updater
            p[t + 12..t + 14].copy_from_slice(&((to >> 16) as u16).to_le_bytes()); // t_ctid: (to, 1)
            p[t + 14..t + 16].copy_from_slice(&(to as u16).to_le_bytes());
            p[t + 16..t + 18].copy_from_slice(&1u16.to_le_bytes());
            p
        };
        let mut file = Vec::new();
        for b in 0..4u32 {
            file.extend_from_slice(&if b == 0 {
                updated(0, 3)
            } else if b == 1 {
                updated(1, 5)
            } else {
                page(b, &[(1, "x")])
            });
        }
        std::fs::write(&path, &file).unwrap();
        let cfg = |nblocks: u64, rel_nblocks: Option<u64>| classify_cfg(Some(&path), 0, nblocks, rel_nblocks);
        let damaged = |cfg: &ClassifyConfig| -> Vec<u64> {
            classify_relation(cfg).unwrap().blocks.iter().filter(|b| b.state == "damaged").map(|b| b.block).collect()
        };
        // the first region, blocks 0..2, of a 4-block table: block 0's row points into block 3
        assert_eq!(damaged(&cfg(2, Some(4))), vec![1], "block 1's row points past the file's end");
        // the table grows while it is read: block 5 exists by the time block 1 is read
        file.extend(std::iter::repeat_n(0u8, 2 * 8192));
        std::fs::write(&path, &file).unwrap();
        assert_eq!(damaged(&cfg(2, Some(4))), Vec::<u64>::new());
        // a page handed over on its own (no files) is judged against the length given
        assert_eq!(classify_page(&updated(1, 5), 1, &cfg(4, None)).map(|c| c.state), Some("damaged"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
