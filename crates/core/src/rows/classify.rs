//! The block classifier salvage runs before it sends SQL: which blocks are safe to read through the executor
//! (a garbage item-ID array or tuple header can crash the backend), which are all zeroes, which must be carved.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::checks::page::{check_page_in, HeapContext};
use crate::datum::{OutputOptions, TypeDesc};
use crate::error::{CoreError, Result};
use crate::finding::{Code, Severity};
use crate::format::heap::HeapTupleHeaderData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::{Page, PageKind, Verification};
use crate::format::tuple::{walk_attributes_with, RelDesc, VarlenaKind, Walk, WalkOptions};
use crate::sources::blocks::{default_blcksz, default_relseg, BlockReader, SegFile};
use crate::visibility::transam::Horizons;

use super::carve::ColumnOut;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
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
        gin_key: None,
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
