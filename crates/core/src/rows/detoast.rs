//! TOAST values for carved rows, as `detoast.c` would assemble them: chunks read from the TOAST relation's files
//! (located once per relation) or fetched by the caller through SQL, checked and put together in sequence.

use crate::error::io_reason;
use std::collections::HashMap;
use std::sync::OnceLock;

use rayon::prelude::*;

use crate::format::bytes::u32_at;
use crate::format::heap::HEAP_XMIN_FROZEN;
use crate::format::page::Page;
use crate::format::tuple::RelDesc;
use crate::sources::blocks::{BlockReader, SegFile};

use super::find::{find_tuples, max_heap_tuples, Plausibility};

/// The chunks of one TOAST value: (chunk_seq, bytes).
pub type ValueChunks = Vec<(i32, Vec<u8>)>;

/// TOAST chunks by value id.
pub type Chunks = HashMap<u32, ValueChunks>;

/// The chunk tuples of a TOAST page: (valueid, seq, data) of each tuple not inserted by an aborted transaction.
pub(super) fn toast_page_chunks(page: &[u8], block: u64, p: &Plausibility<'_>, mut each: impl FnMut(u32, i32, &[u8])) {
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
pub(super) struct ToastFiles {
    reader: BlockReader,
    nblocks: u64,
    blcksz: usize,
    /// Data checksums are on: a chunk from a page that fails its checksum makes its value suspect.
    checksums: bool,
    locator: OnceLock<std::result::Result<Vec<(u32, u32)>, String>>,
}

impl ToastFiles {
    pub(super) fn new(files: &[SegFile], nblocks: u64, blcksz: u32, relseg_size: u32, checksums: bool) -> ToastFiles {
        ToastFiles {
            reader: BlockReader::new(files, blcksz, relseg_size),
            nblocks,
            blcksz: blcksz as usize,
            checksums,
            locator: OnceLock::new(),
        }
    }

    pub(super) fn plausibility(&self) -> Plausibility<'static> {
        Plausibility { nblocks: Some(self.nblocks), horizons: None, max_tuples: max_heap_tuples(self.blcksz) }
    }

    pub(super) fn locator(&self) -> std::result::Result<&[(u32, u32)], String> {
        let built = self.locator.get_or_init(|| {
            let p = self.plausibility();
            let step = 256u64;
            let starts: Vec<u64> = (0..self.nblocks).step_by(step as usize).collect();
            let parts: std::result::Result<Vec<Vec<(u32, u32)>>, String> = starts
                .par_iter()
                .map(|&first| {
                    let count = step.min(self.nblocks - first);
                    let data =
                        self.reader.read(first, count).map_err(|e| format!("cannot read TOAST: {}", io_reason(&e)))?;
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
    pub(super) fn value(&self, valueid: u32) -> std::result::Result<(ValueChunks, bool), String> {
        let loc = self.locator()?;
        let lo = loc.partition_point(|&(v, _)| v < valueid);
        let hi = loc.partition_point(|&(v, _)| v <= valueid);
        let p = self.plausibility();
        let mut out = Vec::new();
        let mut suspect = false;
        for &(_, block) in &loc[lo..hi] {
            let page =
                self.reader.read(u64::from(block), 1).map_err(|e| format!("cannot read TOAST: {}", io_reason(&e)))?;
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
pub(super) fn assemble(
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
