//! Corruption injectors: pure functions from one page image to its damaged image.
//!
//! Nothing here touches a file. The caller (`pgsurgeon corrupt`) reads a block, passes it in with
//! its relation-wide block number and a list of [`DamageSpec`](crate::inject::DamageSpec)s, and gets back the byte runs that
//! changed ([`Change`](crate::inject::Change)) and one note per damage. Randomness comes from [`Rng`](crate::inject::Rng) (splitmix64) seeded
//! by the caller, so the same seed and stream always give the same bytes. File-level damage
//! (truncated or missing segments) is done by the caller; it needs no page logic.
//!
//! The injectors are grouped by what they damage: `page` (the header, line pointers, whole pages), `heap` (tuple
//! headers and data), `toast` (TOAST chunks), `btree`, `gin`, `gist` (also SP-GiST) and `hashbrin` (index pages),
//! over the byte-level helpers in `fields`.

use serde::{Deserialize, Serialize, Serializer};

use crate::error::{CoreError, Result};
use crate::format::bytes::{hex, u16_at};
use crate::format::checksum::{set_checksum, PD_CHECKSUM_OFFSET};
use crate::format::page::{PageHeaderData, SIZE_OF_PAGE_HEADER_DATA};

mod btree;
mod fields;
mod gin;
mod gist;
mod hashbrin;
mod heap;
mod maps;
mod page;
mod toast;

/// `MaxHeapTuplesPerPage` for 8 KB pages (htup_details.h): the largest plausible heap offset number.
pub const MAX_HEAP_TUPLES_PER_PAGE: u16 = 291;
/// Runs of changed bytes closer than this are reported as one [`Change`].
const MERGE_GAP: usize = 4;
/// Disk sector size: torn writes tear at multiples of it.
pub const SECTOR_SIZE: usize = 512;

/// A tiny deterministic PRNG (splitmix64). `stream` separates independent draws made with one
/// seed (one per damaged page or tuple), so adding a target does not shift the others' bytes.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = Rng { state: seed ^ stream.wrapping_add(1).wrapping_mul(0xD1B5_4A32_D192_ED03) };
        rng.next_u64();
        rng
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    /// A `bits`-wide value other than `current`.
    pub fn other_than(&mut self, bits: u32, current: u64) -> u64 {
        let mask = width_mask(bits);
        loop {
            let v = self.next_u64() & mask;
            if v != current & mask {
                return v;
            }
        }
    }

    /// A value in `lo..=hi` other than `current` (`hi > lo`).
    pub fn other_between(&mut self, lo: u64, hi: u64, current: u64) -> u64 {
        loop {
            let v = self.between(lo, hi);
            if v != current {
                return v;
            }
        }
    }
}

fn width_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

fn ser_hex<S: Serializer>(bytes: &[u8], s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&hex(bytes))
}

/// One run of changed bytes in a page: `offset` from the page start, the bytes before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub offset: usize,
    #[serde(serialize_with = "ser_hex")]
    pub old: Vec<u8>,
    #[serde(serialize_with = "ser_hex")]
    pub new: Vec<u8>,
}

/// The runs where `new` differs from `old` (equal lengths), runs closer than a few bytes merged.
pub fn diff(old: &[u8], new: &[u8]) -> Vec<Change> {
    let n = old.len().min(new.len());
    let mut out: Vec<Change> = Vec::new();
    let mut i = 0;
    while i < n {
        if old[i] == new[i] {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i + 1; // exclusive end of the run, extended while gaps stay small
        let mut j = end;
        while j < n {
            if old[j] != new[j] {
                end = j + 1;
            } else if j - end >= MERGE_GAP {
                break;
            }
            j += 1;
        }
        out.push(Change { offset: start, old: old[start..end].to_vec(), new: new[start..end].to_vec() });
        i = end;
    }
    out
}

/// Column layout for walking a heap tuple's data (`pg_attribute.attlen`, `attalign`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttrLayout {
    pub attlen: i16,
    /// `c`, `s`, `i` or `d`.
    pub attalign: char,
}

/// One damage to apply to a page; which fields matter depends on `mode` (see [`MODES`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DamageSpec {
    pub mode: String,
    /// The part of the structure to damage; each mode has a default.
    pub field: Option<String>,
    /// Line pointer (offset number, from 1) for item-level modes.
    pub item: Option<u16>,
    /// Exact value to write instead of a random one (field width checked).
    pub value: Option<u64>,
    /// Exact item pointer (block, offset) for TID fields.
    pub tid: Option<(u32, u16)>,
    /// Bytes of random data for the random-bytes fields.
    pub length: Option<usize>,
    /// Bits to flip (`tuple-data` field `bitflip`, mode `bitflips`).
    pub flips: Option<u32>,
    /// Where a torn page switches to the other copy (multiple of 512).
    pub tear_at: Option<usize>,
    /// The relation's columns, for `tuple-data` field `varlena`.
    pub attrs: Option<Vec<AttrLayout>>,
    /// The column (attnum, from 1) for `tuple-data` field `varlena`; random when absent.
    pub attnum: Option<u16>,
    /// Also clear the hint bits of the XID written (`t_xmin`, `t_xmax`).
    #[serde(default)]
    pub clear_hints: bool,
    /// Blocks in the relation random block numbers should point into (plausible but wrong). For a hash
    /// bitmap page: the overflow bits allocated (hashm_spares[hashm_ovflpoint]), the bits of pages in use.
    pub nblocks: Option<u32>,
    /// Stream of the seeded generator for this damage.
    #[serde(default)]
    pub stream: u64,
}

/// A mode the page injector knows, its fields (the first is the default) and whether it needs
/// an item (line pointer) or a source page.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ModeInfo {
    pub mode: &'static str,
    pub fields: &'static [&'static str],
    pub needs_item: bool,
    pub needs_source: bool,
}

pub const MODES: &[ModeInfo] = &[
    ModeInfo {
        mode: "header",
        fields: &[
            "random",
            "pd_lsn",
            "pd_flags",
            "pd_lower",
            "pd_upper",
            "pd_special",
            "pd_pagesize_version",
            "pd_prune_xid",
        ],
        needs_item: false,
        needs_source: false,
    },
    ModeInfo { mode: "item-ids", fields: &[], needs_item: false, needs_source: false },
    ModeInfo {
        mode: "item-id",
        fields: &["random", "lp_off", "lp_flags", "lp_len"],
        needs_item: true,
        needs_source: false,
    },
    ModeInfo {
        mode: "tuple-header",
        fields: &["random", "t_xmin", "t_xmax", "t_field3", "t_ctid", "t_infomask", "t_infomask2", "t_hoff", "t_bits"],
        needs_item: true,
        needs_source: false,
    },
    ModeInfo { mode: "tuple-data", fields: &["random", "bitflip", "varlena"], needs_item: true, needs_source: false },
    ModeInfo {
        mode: "toast",
        fields: &["chunk_seq", "chunk_id", "chunk_data", "chunk_size", "missing"],
        needs_item: true,
        needs_source: false,
    },
    ModeInfo {
        mode: "btree",
        fields: &["item", "high_key", "siblings", "btpo_prev", "btpo_next", "btpo_level", "btpo_flags", "special"],
        needs_item: false,
        needs_source: false,
    },
    // issue 30, hash and BRIN indexes
    ModeInfo {
        mode: "hash",
        fields: &["metapage", "bucket", "overflow", "bitmap", "hash_code", "heap_tid"],
        needs_item: false,
        needs_source: false,
    },
    ModeInfo { mode: "brin", fields: &["metapage", "revmap", "regular"], needs_item: false, needs_source: false },
    ModeInfo { mode: "gin", fields: gin::FIELDS, needs_item: false, needs_source: false },
    // Issue 30, GiST and SP-GiST part.
    ModeInfo {
        mode: "gist",
        fields: &["downlink", "leaf_tid", "rightlink", "nsn", "flags"],
        needs_item: false,
        needs_source: false,
    },
    ModeInfo { mode: "spgist", fields: &["inner", "leaf_chain", "meta"], needs_item: false, needs_source: false },
    ModeInfo { mode: "checksum", fields: &[], needs_item: false, needs_source: false },
    ModeInfo { mode: "zero", fields: &[], needs_item: false, needs_source: false },
    ModeInfo { mode: "torn", fields: &[], needs_item: false, needs_source: true },
    ModeInfo { mode: "misdirected", fields: &[], needs_item: false, needs_source: true },
    ModeInfo { mode: "bitflips", fields: &[], needs_item: false, needs_source: false },
    // issue 30, visibility map and free space map part: the page is the map fork's
    ModeInfo { mode: "vm", fields: &["all-visible", "all-frozen"], needs_item: false, needs_source: false },
    ModeInfo { mode: "fsm", fields: &["beyond-end", "upper-node"], needs_item: false, needs_source: false },
];

/// The outcome of [`inject_page`].
#[derive(Debug, Clone, Serialize)]
pub struct Injection {
    /// Changed byte runs, offsets from the page start, in ascending order.
    pub changes: Vec<Change>,
    /// What each damage did, in words (`pd_lower 1208 -> 40381`).
    pub notes: Vec<String>,
    pub checksum_before: u16,
    pub checksum_after: u16,
    /// Whether pd_checksum was recomputed after the damage.
    pub checksum_recomputed: bool,
}

fn invalid(msg: impl Into<String>) -> CoreError {
    CoreError::Invalid(msg.into())
}

/// Apply `damages` in order to a copy of `page` (block `blkno` of its fork, counted across
/// segments). With `keep_checksum`, pd_checksum is recomputed afterwards (not for new pages,
/// which the server never checksums). `source` is the other page for `torn` and `misdirected`.
pub fn inject_page(
    page: &[u8],
    blkno: u32,
    damages: &[DamageSpec],
    seed: u64,
    keep_checksum: bool,
    source: Option<&[u8]>,
) -> Result<Injection> {
    if page.len() < SIZE_OF_PAGE_HEADER_DATA || !page.len().is_multiple_of(SECTOR_SIZE) {
        return Err(invalid(format!("a page must be a multiple of {SECTOR_SIZE} bytes, got {}", page.len())));
    }
    if keep_checksum && damages.iter().any(|d| d.mode == "checksum") {
        return Err(invalid("damaging the checksum and recomputing it would change nothing"));
    }
    let mut buf = page.to_vec();
    let mut notes = Vec::new();
    for spec in damages {
        let mut rng = Rng::new(seed, spec.stream);
        notes.push(apply(&mut buf, blkno, spec, &mut rng, source)?);
    }
    let checksum_before = u16_at(page, PD_CHECKSUM_OFFSET).unwrap_or(0);
    let mut checksum_recomputed = false;
    if keep_checksum {
        let h = PageHeaderData::parse(&buf).unwrap_or_default();
        if h.is_new() {
            notes.push("pd_upper is 0: the server never checksums such a page, checksum left as is".to_string());
        } else if let Some(c) = set_checksum(&mut buf, blkno) {
            checksum_recomputed = true;
            notes.push(format!("checksum recomputed for block {blkno}: {c}"));
        }
    }
    Ok(Injection {
        changes: diff(page, &buf),
        notes,
        checksum_before,
        checksum_after: u16_at(&buf, PD_CHECKSUM_OFFSET).unwrap_or(0),
        checksum_recomputed,
    })
}

fn field_of<'a>(spec: &'a DamageSpec, info: &ModeInfo) -> Result<&'a str> {
    match spec.field.as_deref() {
        None => Ok(info.fields.first().copied().unwrap_or("")),
        Some(f) if info.fields.contains(&f) => Ok(f),
        Some(f) if info.fields.is_empty() => Err(invalid(format!("mode {} has no fields, got --field {f}", info.mode))),
        Some(f) => Err(invalid(format!("mode {} has no field {f}; fields: {}", info.mode, info.fields.join(", ")))),
    }
}

fn apply(page: &mut [u8], blkno: u32, spec: &DamageSpec, rng: &mut Rng, source: Option<&[u8]>) -> Result<String> {
    let info = MODES
        .iter()
        .find(|m| m.mode == spec.mode)
        .ok_or_else(|| invalid(format!("unknown page damage mode {:?}", spec.mode)))?;
    let field = field_of(spec, info)?;
    if spec.clear_hints && !(info.mode == "tuple-header" && matches!(field, "t_xmin" | "t_xmax")) {
        return Err(invalid("clearing hint bits only goes with tuple-header fields t_xmin and t_xmax"));
    }
    let item_field = matches!((info.mode, field), ("btree", "item") | ("hash", "hash_code" | "heap_tid"));
    let item = if info.needs_item || item_field {
        Some(spec.item.ok_or_else(|| invalid(format!("mode {} needs an item", info.mode)))?)
    } else {
        None
    };
    let source = if info.needs_source {
        let s = source.ok_or_else(|| invalid(format!("mode {} needs a source page", info.mode)))?;
        if s.len() != page.len() {
            return Err(invalid(format!("the source page has {} bytes, the target {}", s.len(), page.len())));
        }
        Some(s)
    } else {
        None
    };
    match info.mode {
        "header" => page::header(page, field, spec, rng),
        "item-ids" => page::item_ids(page, rng),
        "item-id" => page::item_id(page, item.unwrap_or(0), field, spec, rng),
        "tuple-header" => heap::tuple_header(page, item.unwrap_or(0), field, spec, rng),
        "tuple-data" => heap::tuple_data(page, item.unwrap_or(0), field, spec, rng),
        "toast" => toast::toast(page, item.unwrap_or(0), field, spec, rng),
        "btree" => btree::btree(page, item, field, spec, rng),
        "hash" => hashbrin::hash(page, item, field, spec, rng),
        "brin" => hashbrin::brin(page, field, spec, rng),
        "gin" => gin::gin(page, field, spec, rng),
        "gist" => gist::gist(page, field, spec, rng),
        "spgist" => gist::spgist(page, blkno, field, spec, rng),
        "checksum" => page::checksum(page, blkno, spec, rng),
        "zero" => {
            page.fill(0);
            Ok("page zeroed".to_string())
        }
        "torn" => page::torn(page, source.unwrap_or_default(), spec),
        "misdirected" => {
            page.copy_from_slice(source.unwrap_or_default());
            Ok("page replaced by the source page (misdirected write)".to_string())
        }
        "bitflips" => {
            let flips = spec.flips.unwrap_or(1);
            let all = page.len();
            let flipped = fields::flip_bits(page, 0, all, flips, rng)?;
            Ok(format!("flipped {flipped}"))
        }
        "vm" => maps::vm(page, blkno, field, spec),
        "fsm" => maps::fsm(page, blkno, field, spec, rng),
        other => Err(invalid(format!("unknown page damage mode {other:?}"))),
    }
}

#[cfg(test)]
mod tests;
