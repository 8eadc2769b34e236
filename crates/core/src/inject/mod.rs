//! Corruption injectors: pure functions from one page image to its damaged image.
//!
//! Nothing here touches a file. The caller (`pgsurgeon corrupt`) reads a block, passes it in with
//! its relation-wide block number and a list of [`DamageSpec`](crate::inject::DamageSpec)s, and gets back the byte runs that
//! changed ([`Change`](crate::inject::Change)) and one note per damage. Randomness comes from [`Rng`](crate::inject::Rng) (splitmix64) seeded
//! by the caller, so the same seed and stream always give the same bytes. File-level damage
//! (truncated or missing segments) is done by the caller; it needs no page logic.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize, Serializer};

use crate::error::{CoreError, Result};
use crate::format::btree::{IndexTupleData, BT_PIVOT_HEAP_TID_ATTR, BT_SPECIAL_SIZE, P_HIKEY, P_NONE};
use crate::format::bytes::{hex, u16_at, u32_at, u8_at};
use crate::format::checksum::{pg_checksum_page, set_checksum, PD_CHECKSUM_OFFSET};
use crate::format::heap::{
    bitmaplen, HeapTupleHeaderData, ItemPointerData, HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID, HEAP_XMIN_COMMITTED,
    HEAP_XMIN_INVALID, SIZEOF_HEAP_TUPLE_HEADER,
};
use crate::format::itemid::{ItemIdData, LP_NORMAL, SIZE_OF_ITEM_ID_DATA};
use crate::format::page::{format_lsn, PageHeaderData, SIZE_OF_PAGE_HEADER_DATA};

/// `MaxHeapTuplesPerPage` for 8 KB pages (htup_details.h): the largest plausible heap offset number.
pub const MAX_HEAP_TUPLES_PER_PAGE: u16 = 291;
/// Runs of changed bytes closer than this are reported as one [`Change`].
const MERGE_GAP: usize = 4;
/// Disk sector size: torn writes tear at multiples of it.
pub const SECTOR_SIZE: usize = 512;
/// `VARTAG_ONDISK` (varatt.h): the tag of an on-disk external TOAST pointer.
const VARTAG_ONDISK: u8 = 18;

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
    /// Blocks in the relation random block numbers should point into (plausible but wrong).
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
    ModeInfo { mode: "checksum", fields: &[], needs_item: false, needs_source: false },
    ModeInfo { mode: "zero", fields: &[], needs_item: false, needs_source: false },
    ModeInfo { mode: "torn", fields: &[], needs_item: false, needs_source: true },
    ModeInfo { mode: "misdirected", fields: &[], needs_item: false, needs_source: true },
    ModeInfo { mode: "bitflips", fields: &[], needs_item: false, needs_source: false },
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
    let item = if info.needs_item || (info.mode == "btree" && matches!(field, "item")) {
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
        "header" => header(page, field, spec, rng),
        "item-ids" => item_ids(page, rng),
        "item-id" => item_id(page, item.unwrap_or(0), field, spec, rng),
        "tuple-header" => tuple_header(page, item.unwrap_or(0), field, spec, rng),
        "tuple-data" => tuple_data(page, item.unwrap_or(0), field, spec, rng),
        "toast" => toast(page, item.unwrap_or(0), field, spec, rng),
        "btree" => btree(page, item, field, spec, rng),
        "checksum" => checksum(page, blkno, spec, rng),
        "zero" => {
            page.fill(0);
            Ok("page zeroed".to_string())
        }
        "torn" => torn(page, source.unwrap_or_default(), spec),
        "misdirected" => {
            page.copy_from_slice(source.unwrap_or_default());
            Ok("page replaced by the source page (misdirected write)".to_string())
        }
        "bitflips" => {
            let flips = spec.flips.unwrap_or(1);
            let all = page.len();
            let flipped = flip_bits(page, 0, all, flips, rng)?;
            Ok(format!("flipped {flipped}"))
        }
        other => Err(invalid(format!("unknown page damage mode {other:?}"))),
    }
}

// ------------------------------------------------------------------------------ scalar fields

fn get_uint(buf: &[u8], at: usize, width: usize) -> Option<u64> {
    let b = buf.get(at..at + width)?;
    let mut a = [0u8; 8];
    a[..width].copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

fn set_uint(buf: &mut [u8], at: usize, width: usize, value: u64) {
    buf[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
}

/// The value to write into a `bits`-wide field now holding `current`: `--value` (checked) or a
/// random different one.
fn pick(spec: &DamageSpec, name: &str, bits: u32, current: u64, rng: &mut Rng) -> Result<u64> {
    match spec.value {
        Some(v) if v > width_mask(bits) => Err(invalid(format!("value {v} does not fit {name} ({bits} bits)"))),
        Some(v) => Ok(v),
        None => Ok(rng.other_than(bits, current)),
    }
}

/// Damage the little-endian field of `width` bytes at `at` (offsets absolute in `buf`).
fn scalar(buf: &mut [u8], at: usize, width: usize, name: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let cur = get_uint(buf, at, width).ok_or_else(|| invalid(format!("{name} lies outside the page")))?;
    let v = pick(spec, name, (width * 8) as u32, cur, rng)?;
    set_uint(buf, at, width, v);
    Ok(format!("{name} {cur} -> {v}"))
}

fn no_value(spec: &DamageSpec, what: &str) -> Result<()> {
    if spec.value.is_some() || spec.tid.is_some() {
        return Err(invalid(format!("{what} takes no value")));
    }
    Ok(())
}

fn random_bytes(buf: &mut [u8], rng: &mut Rng) {
    let before = buf.to_vec();
    loop {
        rng.fill(buf);
        if buf != before.as_slice() {
            return;
        }
    }
}

/// Flip `flips` distinct random bits in `buf[start..end]`; returns a description.
fn flip_bits(buf: &mut [u8], start: usize, end: usize, flips: u32, rng: &mut Rng) -> Result<String> {
    let bits = ((end - start) * 8) as u64;
    if flips == 0 || u64::from(flips) > bits {
        return Err(invalid(format!("cannot flip {flips} bits in {} bytes", end - start)));
    }
    let mut chosen = BTreeSet::new();
    while chosen.len() < flips as usize {
        chosen.insert(rng.below(bits));
    }
    for bit in &chosen {
        buf[start + (bit / 8) as usize] ^= 1 << (bit % 8);
    }
    let shown: Vec<String> = chosen.iter().take(8).map(|b| format!("{}.{}", start as u64 + b / 8, b % 8)).collect();
    let more = if chosen.len() > 8 { ", …" } else { "" };
    Ok(format!("{} bit(s) at byte.bit {}{more}", chosen.len(), shown.join(", ")))
}

// ------------------------------------------------------------------------------ page header

fn header(page: &mut [u8], field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (at, width) = match field {
        "random" => {
            no_value(spec, "a random header")?;
            random_bytes(&mut page[..SIZE_OF_PAGE_HEADER_DATA], rng);
            return Ok("all 24 header bytes random".to_string());
        }
        "pd_lsn" => {
            let old = PageHeaderData::parse(page).unwrap_or_default().pd_lsn.lsn();
            let v = pick(spec, field, 64, old, rng)?;
            set_uint(page, 0, 4, v >> 32);
            set_uint(page, 4, 4, v & 0xFFFF_FFFF);
            return Ok(format!("pd_lsn {} -> {}", format_lsn(old), format_lsn(v)));
        }
        "pd_flags" => (10, 2),
        "pd_lower" => (12, 2),
        "pd_upper" => (14, 2),
        "pd_special" => (16, 2),
        "pd_pagesize_version" => (18, 2),
        "pd_prune_xid" => (20, 4),
        _ => return Err(invalid(format!("unknown header field {field}"))),
    };
    scalar(page, at, width, field, spec, rng)
}

// ------------------------------------------------------------------------------ line pointers

fn item_ids(page: &mut [u8], rng: &mut Rng) -> Result<String> {
    let h = PageHeaderData::parse(page).unwrap_or_default();
    let n = usize::from(h.max_offset_number());
    let end = (SIZE_OF_PAGE_HEADER_DATA + n * SIZE_OF_ITEM_ID_DATA).min(page.len());
    if end <= SIZE_OF_PAGE_HEADER_DATA {
        return Err(invalid(format!("the page has no line pointers (pd_lower {})", h.pd_lower)));
    }
    random_bytes(&mut page[SIZE_OF_PAGE_HEADER_DATA..end], rng);
    Ok(format!("all {n} line pointers (bytes {SIZE_OF_PAGE_HEADER_DATA}..{end}) random"))
}

/// Offset of line pointer `item` in the page.
fn lp_at(page: &[u8], item: u16) -> Result<usize> {
    let h = PageHeaderData::parse(page).unwrap_or_default();
    let max = h.max_offset_number();
    let at = SIZE_OF_PAGE_HEADER_DATA + usize::from(item.saturating_sub(1)) * SIZE_OF_ITEM_ID_DATA;
    if item == 0 || item > max || at + SIZE_OF_ITEM_ID_DATA > page.len() {
        return Err(invalid(format!("item {item} does not exist: the page has {max} line pointers")));
    }
    Ok(at)
}

/// Start and length of the storage of normal item `item`, checked to lie inside the page and to
/// hold at least `min_len` bytes.
fn normal_item(page: &[u8], item: u16, min_len: usize) -> Result<(usize, usize)> {
    let at = lp_at(page, item)?;
    let id = ItemIdData::parse(page, at).unwrap_or(ItemIdData(0));
    let (off, len) = (usize::from(id.lp_off()), usize::from(id.lp_len()));
    if id.lp_flags() != LP_NORMAL {
        return Err(invalid(format!("item {item} is {}, not a tuple", id.flags_name())));
    }
    if len < min_len || off < SIZE_OF_PAGE_HEADER_DATA || off + len > page.len() {
        return Err(invalid(format!("item {item} (lp_off {off}, lp_len {len}) is not a usable tuple")));
    }
    Ok((off, len))
}

fn item_id(page: &mut [u8], item: u16, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let at = lp_at(page, item)?;
    let old = ItemIdData::parse(page, at).unwrap_or(ItemIdData(0));
    let new = match field {
        "random" => ItemIdData(pick(spec, "the line pointer", 32, u64::from(old.0), rng)? as u32),
        "lp_off" => {
            let v = pick(spec, field, 15, u64::from(old.lp_off()), rng)? as u16;
            ItemIdData::new(v, old.lp_flags(), old.lp_len())
        }
        "lp_flags" => {
            let v = pick(spec, field, 2, u64::from(old.lp_flags()), rng)? as u8;
            ItemIdData::new(old.lp_off(), v, old.lp_len())
        }
        "lp_len" => {
            let v = pick(spec, field, 15, u64::from(old.lp_len()), rng)? as u16;
            ItemIdData::new(old.lp_off(), old.lp_flags(), v)
        }
        _ => return Err(invalid(format!("unknown line pointer field {field}"))),
    };
    set_uint(page, at, 4, u64::from(new.0));
    let show = |id: ItemIdData| format!("({}, {}, {})", id.lp_off(), id.flags_name(), id.lp_len());
    Ok(format!("item {item} line pointer {} -> {}", show(old), show(new)))
}

// ------------------------------------------------------------------------------ heap tuples

fn random_tid(spec: &DamageSpec, current: ItemPointerData, rng: &mut Rng) -> ItemPointerData {
    if let Some((block, offset)) = spec.tid {
        return ItemPointerData { block, offset };
    }
    loop {
        let block = match spec.nblocks {
            Some(n) if n > 0 => rng.below(u64::from(n)) as u32,
            _ => rng.next_u64() as u32,
        };
        let offset = rng.between(1, u64::from(MAX_HEAP_TUPLES_PER_PAGE)) as u16;
        let tid = ItemPointerData { block, offset };
        if tid != current {
            return tid;
        }
    }
}

fn tuple_header(page: &mut [u8], item: u16, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (off, len) = normal_item(page, item, SIZEOF_HEAP_TUPLE_HEADER)?;
    let prefix = format!("item {item} ");
    let note = match field {
        "random" => {
            no_value(spec, "a random tuple header")?;
            random_bytes(&mut page[off..off + SIZEOF_HEAP_TUPLE_HEADER], rng);
            "all 23 tuple header bytes random".to_string()
        }
        "t_xmin" | "t_xmax" => {
            let at = off + if field == "t_xmin" { 0 } else { 4 };
            let mut note = scalar(page, at, 4, field, spec, rng)?;
            if spec.clear_hints {
                let hints = if field == "t_xmin" {
                    HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID
                } else {
                    HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID
                };
                let mask = u16_at(page, off + 20).unwrap_or(0);
                set_uint(page, off + 20, 2, u64::from(mask & !hints));
                note.push_str(&format!(", hint bits cleared (t_infomask 0x{mask:04x} -> 0x{:04x})", mask & !hints));
            }
            note
        }
        "t_field3" => scalar(page, off + 8, 4, field, spec, rng)?,
        "t_ctid" => {
            let cur = ItemPointerData::parse(page, off + 12).unwrap_or(ItemPointerData { block: 0, offset: 0 });
            if spec.value.is_some() {
                return Err(invalid("t_ctid takes a tid (block,offset), not a number"));
            }
            let tid = random_tid(spec, cur, rng);
            tid.write(page, off + 12);
            format!("t_ctid {cur} -> {tid}")
        }
        "t_infomask2" => scalar(page, off + 18, 2, field, spec, rng)?,
        "t_infomask" => scalar(page, off + 20, 2, field, spec, rng)?,
        "t_hoff" => scalar(page, off + 22, 1, field, spec, rng)?,
        "t_bits" => {
            no_value(spec, "t_bits")?;
            let h = HeapTupleHeaderData::parse(&page[off..off + len])
                .ok_or_else(|| invalid(format!("item {item} is too short for a tuple header")))?;
            let hoff = usize::from(h.t_hoff);
            if !h.has_nulls() {
                return Err(invalid(format!("item {item} has no null bitmap (HEAP_HASNULL is not set)")));
            }
            let end = (SIZEOF_HEAP_TUPLE_HEADER + bitmaplen(h.natts())).min(hoff).min(len);
            if end <= SIZEOF_HEAP_TUPLE_HEADER {
                return Err(invalid(format!("item {item} has no room for a null bitmap (t_hoff {hoff})")));
            }
            let bits = &mut page[off + SIZEOF_HEAP_TUPLE_HEADER..off + end];
            let before = crate::format::heap::bits_to_text(bits);
            random_bytes(bits, rng);
            format!(
                "t_bits {before} -> {}",
                crate::format::heap::bits_to_text(&page[off + SIZEOF_HEAP_TUPLE_HEADER..off + end])
            )
        }
        _ => return Err(invalid(format!("unknown tuple header field {field}"))),
    };
    Ok(prefix + &note)
}

/// The data area of a heap tuple: (start, end) absolute in the page.
fn tuple_data_area(page: &[u8], item: u16) -> Result<(usize, usize, usize)> {
    let (off, len) = normal_item(page, item, SIZEOF_HEAP_TUPLE_HEADER)?;
    let hoff = usize::from(u8_at(page, off + 22).unwrap_or(0));
    if hoff < SIZEOF_HEAP_TUPLE_HEADER || hoff >= len {
        return Err(invalid(format!("item {item} has no data area (t_hoff {hoff}, lp_len {len})")));
    }
    Ok((off, off + hoff, off + len))
}

fn tuple_data(page: &mut [u8], item: u16, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (off, start, end) = tuple_data_area(page, item)?;
    let note = match field {
        "random" => {
            no_value(spec, "random tuple data")?;
            let n = spec.length.unwrap_or(8).clamp(1, end - start);
            let at = start + rng.below((end - start - n + 1) as u64) as usize;
            random_bytes(&mut page[at..at + n], rng);
            format!("{n} random byte(s) at page offset {at} (tuple data {}..{})", start - off, end - off)
        }
        "bitflip" => {
            no_value(spec, "bitflip")?;
            let flips = spec.flips.unwrap_or(1);
            format!("flipped {}", flip_bits(page, start, end, flips, rng)?)
        }
        "varlena" => varlena(page, off, end, spec, rng)?,
        _ => return Err(invalid(format!("unknown tuple data field {field}"))),
    };
    Ok(format!("item {item} {note}"))
}

/// A varlena datum found in a tuple: column number, offset in the page, its header kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Varlena {
    attnum: u16,
    at: usize,
    kind: VarlenaKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VarlenaKind {
    /// 1-byte header, short inline.
    Short,
    /// 4-byte header (uncompressed or compressed inline).
    Long,
    /// 1-byte header, external TOAST pointer with tag `VARTAG_ONDISK`.
    External,
    /// 1-byte header, another external tag (never on disk).
    OtherExternal,
}

fn align_to(off: usize, attalign: char) -> usize {
    let a = match attalign {
        's' => 2,
        'i' => 4,
        'd' => 8,
        _ => 1,
    };
    off.div_ceil(a) * a
}

/// Walk the tuple at `tuple_off..tuple_end` the way heap_deform_tuple does and list its
/// non-null varlena columns. Stops quietly where the data stops making sense.
fn varlena_columns(page: &[u8], tuple_off: usize, tuple_end: usize, attrs: &[AttrLayout]) -> Vec<Varlena> {
    let mut out = Vec::new();
    let tuple = &page[tuple_off..tuple_end];
    let Some(h) = HeapTupleHeaderData::parse(tuple) else {
        return out;
    };
    let natts = usize::from(h.natts()).min(attrs.len());
    let mut off = usize::from(h.t_hoff);
    for (i, a) in attrs.iter().enumerate().take(natts) {
        if h.has_nulls() {
            let byte = u8_at(tuple, SIZEOF_HEAP_TUPLE_HEADER + i / 8).unwrap_or(0);
            if byte & (1 << (i % 8)) == 0 {
                continue;
            }
        }
        if a.attlen == -1 {
            // att_align_pointer: a non-zero byte here starts a short varlena, which is not aligned.
            if u8_at(tuple, off).unwrap_or(0) == 0 {
                off = align_to(off, a.attalign);
            }
            let Some(b0) = u8_at(tuple, off) else { break };
            let (kind, size) = if b0 == 0x01 {
                let tag = u8_at(tuple, off + 1).unwrap_or(0);
                let payload = match tag {
                    VARTAG_ONDISK => 16,
                    _ => 8,
                };
                let kind = if tag == VARTAG_ONDISK { VarlenaKind::External } else { VarlenaKind::OtherExternal };
                (kind, 2 + payload)
            } else if b0 & 0x01 == 1 {
                (VarlenaKind::Short, usize::from(b0 >> 1))
            } else {
                let Some(h4) = u32_at(tuple, off) else { break };
                (VarlenaKind::Long, ((h4 >> 2) & 0x3FFF_FFFF) as usize)
            };
            if size == 0 || off + size > tuple.len() {
                break;
            }
            if kind != VarlenaKind::OtherExternal {
                out.push(Varlena { attnum: (i + 1) as u16, at: tuple_off + off, kind });
            }
            off += size;
        } else if a.attlen == -2 {
            let Some(nul) = tuple[off.min(tuple.len())..].iter().position(|b| *b == 0) else {
                break;
            };
            off += nul + 1;
        } else if a.attlen > 0 {
            off = align_to(off, a.attalign) + a.attlen as usize;
        } else {
            break;
        }
        if off > tuple.len() {
            break;
        }
    }
    out
}

fn varlena(page: &mut [u8], off: usize, end: usize, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let attrs = spec.attrs.as_deref().ok_or_else(|| invalid("the varlena field needs the relation's column layout"))?;
    let cols = varlena_columns(page, off, end, attrs);
    let col = match spec.attnum {
        Some(n) => *cols
            .iter()
            .find(|c| c.attnum == n)
            .ok_or_else(|| invalid(format!("column {n} is not a non-null varlena in this tuple")))?,
        None if cols.is_empty() => {
            return Err(invalid("the tuple has no non-null varlena column"));
        }
        None => cols[rng.below(cols.len() as u64) as usize],
    };
    let at = col.at;
    let n = col.attnum;
    match col.kind {
        VarlenaKind::Short => {
            let cur = u64::from(page[at] >> 1);
            let v = match spec.value {
                Some(v) if !(2..=127).contains(&v) => {
                    return Err(invalid(format!(
                        "column {n} has a 1-byte varlena header: its length must be 2..127, got {v}"
                    )))
                }
                Some(v) => v,
                None => rng.other_between(2, 127, cur),
            };
            page[at] = ((v as u8) << 1) | 1;
            Ok(format!("column {n} short varlena length {cur} -> {v}"))
        }
        VarlenaKind::Long => {
            let h = u32_at(page, at).unwrap_or(0);
            let cur = u64::from((h >> 2) & 0x3FFF_FFFF);
            let v = pick(spec, "a 4-byte varlena length", 30, cur, rng)?;
            set_uint(page, at, 4, (v << 2) | u64::from(h & 3));
            let what = if h & 3 == 2 { "compressed" } else { "plain" };
            Ok(format!("column {n} {what} varlena length {cur} -> {v}"))
        }
        VarlenaKind::External | VarlenaKind::OtherExternal => {
            let ext = at + 6;
            let h = u32_at(page, ext).unwrap_or(0);
            let cur = u64::from(h & 0x3FFF_FFFF);
            let v = pick(spec, "a TOAST pointer's size", 30, cur, rng)?;
            set_uint(page, ext, 4, v | u64::from(h & 0xC000_0000));
            Ok(format!("column {n} TOAST pointer va_extinfo size {cur} -> {v}"))
        }
    }
}

// ------------------------------------------------------------------------------ TOAST chunks

fn toast(page: &mut [u8], item: u16, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    if field == "missing" {
        no_value(spec, "a missing chunk")?;
        let at = lp_at(page, item)?;
        normal_item(page, item, SIZEOF_HEAP_TUPLE_HEADER)?;
        set_uint(page, at, 4, 0);
        return Ok(format!("item {item} line pointer set LP_UNUSED (chunk gone)"));
    }
    let (_, start, end) = tuple_data_area(page, item)?;
    // chunk_id oid, chunk_seq int4, chunk_data bytea (heaptoast.h); never null.
    if end < start + 9 {
        return Err(invalid(format!("item {item} is too short for a TOAST chunk")));
    }
    let note = match field {
        "chunk_id" => scalar(page, start, 4, field, spec, rng)?,
        "chunk_seq" => {
            let cur = u64::from(u32_at(page, start + 4).unwrap_or(0));
            let v = pick(spec, field, 32, cur, rng)?;
            set_uint(page, start + 4, 4, v);
            format!("chunk_seq {} -> {}", cur as u32 as i32, v as u32 as i32)
        }
        "chunk_data" | "chunk_size" => {
            let d = start + 8;
            let b0 = page[d];
            if b0 & 0x01 == 0 && d + 4 > end {
                return Err(invalid(format!("item {item}: its chunk_data header lies outside the tuple")));
            }
            let (hdr, size) = if b0 & 0x01 == 1 {
                (1usize, usize::from(b0 >> 1))
            } else {
                (4usize, ((u32_at(page, d).unwrap_or(0) >> 2) & 0x3FFF_FFFF) as usize)
            };
            if field == "chunk_size" {
                if hdr == 1 {
                    let v = match spec.value {
                        Some(v) if !(1..=127).contains(&v) => {
                            return Err(invalid("a short chunk header holds sizes 1..127"))
                        }
                        Some(v) => v,
                        None => rng.other_between(1, 127, size as u64),
                    };
                    page[d] = ((v as u8) << 1) | 1;
                    format!("chunk_data length {size} -> {v}")
                } else {
                    let h = u32_at(page, d).unwrap_or(0);
                    let v = pick(spec, field, 30, size as u64, rng)?;
                    set_uint(page, d, 4, (v << 2) | u64::from(h & 3));
                    format!("chunk_data length {size} -> {v}")
                }
            } else {
                no_value(spec, "chunk_data")?;
                let payload_end = (d + size).min(end);
                let payload = d + hdr;
                if payload_end <= payload {
                    return Err(invalid(format!("item {item} has an empty chunk")));
                }
                let n = spec.length.unwrap_or(16).clamp(1, payload_end - payload);
                let at = payload + rng.below((payload_end - payload - n + 1) as u64) as usize;
                random_bytes(&mut page[at..at + n], rng);
                format!("{n} random byte(s) in chunk_data at chunk byte {}", at - payload)
            }
        }
        _ => return Err(invalid(format!("unknown TOAST field {field}"))),
    };
    Ok(format!("item {item} {note}"))
}

// ------------------------------------------------------------------------------ btree pages

fn btree(page: &mut [u8], item: Option<u16>, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let h = PageHeaderData::parse(page).unwrap_or_default();
    let special = usize::from(h.pd_special);
    if special + BT_SPECIAL_SIZE != page.len() {
        return Err(invalid(format!(
            "not a btree page: special space is {} bytes, not {BT_SPECIAL_SIZE}",
            page.len().saturating_sub(special)
        )));
    }
    let random_link = |rng: &mut Rng, cur: u64| -> u64 {
        match spec.nblocks {
            Some(n) if n > 2 => rng.other_between(1, u64::from(n - 1), cur),
            _ => rng.other_than(32, cur),
        }
    };
    let link = |page: &mut [u8], at: usize, name: &str, rng: &mut Rng| -> Result<String> {
        let cur = u64::from(u32_at(page, at).unwrap_or(0));
        let v = match spec.value {
            Some(v) if v > u64::from(u32::MAX) => {
                return Err(invalid(format!("value {v} does not fit {name} (32 bits)")))
            }
            Some(v) => v,
            None => random_link(rng, cur),
        };
        set_uint(page, at, 4, v);
        Ok(format!("{name} {cur} -> {v}"))
    };
    match field {
        "special" => {
            no_value(spec, "a random special space")?;
            random_bytes(&mut page[special..], rng);
            Ok("all 16 bytes of BTPageOpaqueData random".to_string())
        }
        "btpo_prev" => link(page, special, field, rng),
        "btpo_next" => link(page, special + 4, field, rng),
        "siblings" => {
            let a = link(page, special, "btpo_prev", rng)?;
            let b = link(page, special + 4, "btpo_next", rng)?;
            Ok(format!("{a}, {b}"))
        }
        "btpo_level" => scalar(page, special + 8, 4, field, spec, rng),
        "btpo_flags" => scalar(page, special + 12, 2, field, spec, rng),
        "item" => btree_item(page, item.unwrap_or(0), spec, rng),
        "high_key" => {
            no_value(spec, "a high key")?;
            if u32_at(page, special + 4) == Some(P_NONE) {
                return Err(invalid("the page is rightmost on its level: it has no high key"));
            }
            let (off, len) = normal_item(page, P_HIKEY, 8)?;
            let it =
                IndexTupleData::parse(&page[off..off + len]).ok_or_else(|| invalid("the high key is too short"))?;
            let size = it.size().min(len);
            let doff = it.data_offset();
            let tail = if it.is_pivot() && it.t_tid.offset & BT_PIVOT_HEAP_TID_ATTR != 0 { 8 } else { 0 };
            if size < doff + tail + 1 {
                return Err(invalid("the high key holds no key data"));
            }
            let (start, end) = (off + doff, off + size - tail);
            let n = spec.length.unwrap_or(end - start).clamp(1, end - start);
            let at = start + rng.below((end - start - n + 1) as u64) as usize;
            random_bytes(&mut page[at..at + n], rng);
            Ok(format!("high key: {n} random byte(s) of its {} key bytes", end - start))
        }
        _ => Err(invalid(format!("unknown btree field {field}"))),
    }
}

fn btree_item(page: &mut [u8], item: u16, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let (off, len) = normal_item(page, item, 8)?;
    let it = IndexTupleData::parse(&page[off..off + len])
        .ok_or_else(|| invalid(format!("item {item} is too short for an index tuple")))?;
    if spec.value.is_some() {
        return Err(invalid("the btree item field takes a tid (block,offset), not a number"));
    }
    let (at, what) = if it.is_posting() {
        let n = u64::from(it.alt_count().max(1));
        let k = rng.below(n) as usize;
        (off + it.posting_offset() + 6 * k, format!("posting list TID {k}"))
    } else if it.is_pivot() {
        (off, "downlink".to_string())
    } else {
        (off, "heap TID".to_string())
    };
    if at + 6 > off + len {
        return Err(invalid(format!("item {item}: its TID lies outside the tuple")));
    }
    let cur = ItemPointerData::parse(page, at).unwrap_or(ItemPointerData { block: 0, offset: 0 });
    let mut tid = random_tid(spec, cur, rng);
    if it.is_pivot() && spec.tid.is_none() {
        // A pivot's offset field holds its attribute count: change only the downlink.
        tid.offset = cur.offset;
        if tid.block == cur.block {
            tid.block = rng.other_than(32, u64::from(cur.block)) as u32;
        }
    }
    tid.write(page, at);
    Ok(format!("item {item} {what} {cur} -> {tid}"))
}

// ------------------------------------------------------------------------------ whole pages

fn checksum(page: &mut [u8], blkno: u32, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let cur = u16_at(page, PD_CHECKSUM_OFFSET).unwrap_or(0);
    let right = pg_checksum_page(page, blkno);
    let v = match spec.value {
        Some(v) if v > 0xFFFF => return Err(invalid(format!("value {v} does not fit pd_checksum (16 bits)"))),
        Some(v) => v as u16,
        None => loop {
            let v = rng.other_than(16, u64::from(cur)) as u16;
            if Some(v) != right {
                break v;
            }
        },
    };
    set_uint(page, PD_CHECKSUM_OFFSET, 2, u64::from(v));
    let right = right.map_or("none".to_string(), |c| c.to_string());
    Ok(format!("pd_checksum {cur} -> {v} (right for block {blkno}: {right})"))
}

fn torn(page: &mut [u8], source: &[u8], spec: &DamageSpec) -> Result<String> {
    let len = page.len();
    let at = spec.tear_at.unwrap_or(len / 2);
    if at == 0 || at >= len || !at.is_multiple_of(SECTOR_SIZE) {
        return Err(invalid(format!(
            "a page tears at a multiple of {SECTOR_SIZE} bytes inside it (1..{}), got {at}",
            len - 1
        )));
    }
    page[at..].copy_from_slice(&source[at..]);
    Ok(format!("torn at byte {at}: bytes 0..{at} kept, {at}..{len} from the source page"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::checksum::pg_checksum_page;
    use crate::format::page::{Page, Verification, BLCKSZ, PG_PAGE_LAYOUT_VERSION};

    /// A heap page with `n` 40-byte tuples (3 int4 columns, t_hoff 24), checksummed as block 7.
    fn heap_page(n: u16) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        let mut upper = BLCKSZ;
        for i in 0..n {
            upper -= 40;
            let h = HeapTupleHeaderData {
                t_xmin: 700 + u32::from(i),
                t_xmax: 0,
                t_field3: 0,
                t_ctid: ItemPointerData { block: 7, offset: i + 1 },
                t_infomask2: 3,
                t_infomask: HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID,
                t_hoff: 24,
            };
            h.write(&mut p[upper..]);
            for c in 0..3u32 {
                let at = upper + 24 + 4 * c as usize;
                p[at..at + 4].copy_from_slice(&(u32::from(i) * 10 + c).to_le_bytes());
            }
            let lp = ItemIdData::new(upper as u16, LP_NORMAL, 36);
            let at = 24 + usize::from(i) * 4;
            p[at..at + 4].copy_from_slice(&lp.0.to_le_bytes());
        }
        let h = PageHeaderData {
            pd_lower: 24 + 4 * n,
            pd_upper: upper as u16,
            pd_special: BLCKSZ as u16,
            pd_pagesize_version: BLCKSZ as u16 | u16::from(PG_PAGE_LAYOUT_VERSION),
            ..Default::default()
        };
        h.write(&mut p);
        set_checksum(&mut p, 7);
        p
    }

    fn spec(mode: &str, field: Option<&str>) -> DamageSpec {
        DamageSpec { mode: mode.to_string(), field: field.map(str::to_string), ..Default::default() }
    }

    fn apply_changes(page: &[u8], inj: &Injection) -> Vec<u8> {
        let mut out = page.to_vec();
        for c in &inj.changes {
            assert_eq!(&out[c.offset..c.offset + c.old.len()], c.old.as_slice());
            out[c.offset..c.offset + c.new.len()].copy_from_slice(&c.new);
        }
        out
    }

    #[test]
    fn rng_is_deterministic_and_streams_differ() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(42, 0).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::new(42, 0).next_u64(), Rng::new(42, 1).next_u64());
        assert_ne!(Rng::new(42, 0).next_u64(), Rng::new(43, 0).next_u64());
        let mut r = Rng::new(1, 2);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
            assert!((5..=9).contains(&r.between(5, 9)));
            assert_ne!(r.other_than(2, 3), 3);
        }
    }

    #[test]
    fn diff_merges_close_runs() {
        let old = vec![0u8; 32];
        let mut new = old.clone();
        new[3] = 1;
        new[6] = 1; // gap of 2: merged
        new[20] = 1; // far: separate
        let d = diff(&old, &new);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].offset, d[0].new.len()), (3, 4));
        assert_eq!((d[1].offset, d[1].new.as_slice()), (20, &[1u8][..]));
        assert!(diff(&old, &old).is_empty());
    }

    #[test]
    fn same_seed_same_bytes_and_changes_round_trip() {
        let page = heap_page(5);
        for (mode, field, item) in [
            ("header", Some("random"), None),
            ("header", Some("pd_lower"), None),
            ("item-ids", None, None),
            ("item-id", Some("lp_off"), Some(2)),
            ("tuple-header", Some("random"), Some(3)),
            ("tuple-header", Some("t_ctid"), Some(3)),
            ("tuple-data", Some("random"), Some(1)),
            ("tuple-data", Some("bitflip"), Some(1)),
            ("checksum", None, None),
            ("bitflips", None, None),
            ("zero", None, None),
        ] {
            let mut s = spec(mode, field);
            s.item = item;
            let a = inject_page(&page, 7, &[s.clone()], 99, false, None).unwrap();
            let b = inject_page(&page, 7, &[s.clone()], 99, false, None).unwrap();
            assert_eq!(a.changes, b.changes, "{mode} {field:?}");
            assert!(!a.changes.is_empty(), "{mode} {field:?} changed nothing");
            let c = inject_page(&page, 7, &[s], 100, false, None).unwrap();
            if mode != "zero" {
                assert_ne!(a.changes, c.changes, "{mode} {field:?}: seed ignored");
            }
            assert_ne!(apply_changes(&page, &a), page);
        }
    }

    #[test]
    fn header_fields_and_values() {
        let page = heap_page(3);
        let mut s = spec("header", Some("pd_special"));
        s.value = Some(8080); // still >= pd_upper (8072) and aligned: a sane header
        let inj = inject_page(&page, 7, &[s.clone()], 1, false, None).unwrap();
        let out = apply_changes(&page, &inj);
        assert_eq!(u16_at(&out, 16), Some(8080));
        assert_eq!(inj.notes, vec!["pd_special 8192 -> 8080"]);
        // the stored checksum no longer matches: the server refuses the page when checksums are on
        assert!(matches!(
            Page::new(&out).unwrap().verify(7, true),
            Verification::Invalid { checksum_failure: true, header_sane: true }
        ));
        // with the checksum recomputed only the header rules decide, and 8000 is sane
        let inj = inject_page(&page, 7, &[s.clone()], 1, true, None).unwrap();
        let out = apply_changes(&page, &inj);
        assert_eq!(Page::new(&out).unwrap().verify(7, true), Verification::Valid);
        s.value = Some(70000);
        assert!(inject_page(&page, 7, &[s], 1, false, None).is_err());
        let mut s = spec("header", Some("pd_lsn"));
        s.value = Some(0x1_0000_0002);
        let out = apply_changes(&page, &inject_page(&page, 7, &[s], 1, false, None).unwrap());
        assert_eq!(&out[0..8], &[1, 0, 0, 0, 2, 0, 0, 0]);
    }

    #[test]
    fn tuple_header_clear_hints() {
        let page = heap_page(2);
        let mut s = spec("tuple-header", Some("t_xmin"));
        s.item = Some(1);
        s.value = Some(3_000_000_000);
        s.clear_hints = true;
        let out = apply_changes(&page, &inject_page(&page, 7, &[s], 1, false, None).unwrap());
        let off = usize::from(ItemIdData::parse(&out, 24).unwrap().lp_off());
        let h = HeapTupleHeaderData::parse(&out[off..]).unwrap();
        assert_eq!(h.t_xmin, 3_000_000_000);
        assert_eq!(h.t_infomask & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID), 0);
        assert_eq!(h.t_infomask & HEAP_XMAX_INVALID, HEAP_XMAX_INVALID);
        let mut bad = spec("tuple-header", Some("t_hoff"));
        bad.item = Some(1);
        bad.clear_hints = true;
        assert!(inject_page(&page, 7, &[bad], 1, false, None).is_err());
    }

    #[test]
    fn items_must_exist_and_be_tuples() {
        let page = heap_page(2);
        let mut s = spec("tuple-header", Some("t_xmax"));
        s.item = Some(3);
        assert!(inject_page(&page, 7, &[s.clone()], 1, false, None).is_err());
        s.item = None;
        assert!(inject_page(&page, 7, &[s], 1, false, None).is_err());
        let mut t = spec("tuple-header", Some("t_bits"));
        t.item = Some(1);
        assert!(inject_page(&page, 7, &[t], 1, false, None).is_err()); // no HEAP_HASNULL
    }

    #[test]
    fn varlena_walk_finds_columns() {
        // int4, text (short varlena), int8 (aligned), text (4-byte header)
        let mut page = heap_page(1);
        // replace the one tuple by a hand-made one at the page end
        let start = BLCKSZ - 64;
        let mut t = [0u8; 64];
        let h = HeapTupleHeaderData {
            t_xmin: 2,
            t_xmax: 0,
            t_field3: 0,
            t_ctid: ItemPointerData { block: 0, offset: 1 },
            t_infomask2: 4,
            t_infomask: HEAP_XMAX_INVALID,
            t_hoff: 24,
        };
        h.write(&mut t);
        t[24..28].copy_from_slice(&5u32.to_le_bytes()); // int4
        t[28] = (4 << 1) | 1; // short varlena "abc"
        t[29..32].copy_from_slice(b"abc");
        t[32..40].copy_from_slice(&9u64.to_le_bytes()); // int8 at 32 (aligned)
        t[40..44].copy_from_slice(&((10u32) << 2).to_le_bytes()); // 4-byte header, 10 bytes
        t[44..50].copy_from_slice(b"hello!");
        page[start..].copy_from_slice(&t);
        let lp = ItemIdData::new(start as u16, LP_NORMAL, 50);
        page[24..28].copy_from_slice(&lp.0.to_le_bytes());
        let attrs = [
            AttrLayout { attlen: 4, attalign: 'i' },
            AttrLayout { attlen: -1, attalign: 'i' },
            AttrLayout { attlen: 8, attalign: 'd' },
            AttrLayout { attlen: -1, attalign: 'i' },
        ];
        let cols = varlena_columns(&page, start, start + 50, &attrs);
        assert_eq!(
            cols,
            vec![
                Varlena { attnum: 2, at: start + 28, kind: VarlenaKind::Short },
                Varlena { attnum: 4, at: start + 40, kind: VarlenaKind::Long },
            ]
        );
        let mut s = spec("tuple-data", Some("varlena"));
        s.item = Some(1);
        s.attrs = Some(attrs.to_vec());
        s.attnum = Some(4);
        s.value = Some(0x3FFF_FFFF);
        let out = apply_changes(&page, &inject_page(&page, 0, &[s.clone()], 1, false, None).unwrap());
        assert_eq!(u32_at(&out, start + 40), Some(0x3FFF_FFFF << 2));
        s.attnum = Some(2);
        assert!(inject_page(&page, 0, &[s], 1, false, None).is_err()); // 0x3FFFFFFF > 127
    }

    #[test]
    fn checksum_damage_never_matches_and_keep_checksum_refused() {
        let page = heap_page(2);
        for seed in 0..50 {
            let out =
                apply_changes(&page, &inject_page(&page, 7, &[spec("checksum", None)], seed, false, None).unwrap());
            assert_ne!(pg_checksum_page(&out, 7), u16_at(&out, 8));
        }
        assert!(inject_page(&page, 7, &[spec("checksum", None)], 1, true, None).is_err());
    }

    #[test]
    fn keep_checksum_valid_recomputes_except_new_pages() {
        let page = heap_page(2);
        let mut s = spec("tuple-header", Some("t_infomask"));
        s.item = Some(2);
        let inj = inject_page(&page, 7, &[s], 5, true, None).unwrap();
        assert!(inj.checksum_recomputed);
        let out = apply_changes(&page, &inj);
        assert_eq!(pg_checksum_page(&out, 7), u16_at(&out, 8));
        let inj = inject_page(&page, 7, &[spec("zero", None)], 5, true, None).unwrap();
        assert!(!inj.checksum_recomputed);
        assert!(apply_changes(&page, &inj).iter().all(|b| *b == 0));
    }

    #[test]
    fn torn_and_misdirected_use_the_source() {
        let page = heap_page(2);
        let other = heap_page(9);
        let mut s = spec("torn", None);
        s.tear_at = Some(4096);
        let out = apply_changes(&page, &inject_page(&page, 7, &[s.clone()], 1, false, Some(&other)).unwrap());
        assert_eq!(&out[..4096], &page[..4096]);
        assert_eq!(&out[4096..], &other[4096..]);
        s.tear_at = Some(100);
        assert!(inject_page(&page, 7, &[s], 1, false, Some(&other)).is_err());
        assert!(inject_page(&page, 7, &[spec("torn", None)], 1, false, None).is_err());
        let out =
            apply_changes(&page, &inject_page(&page, 7, &[spec("misdirected", None)], 1, false, Some(&other)).unwrap());
        assert_eq!(out, other);
    }

    #[test]
    fn bitflips_flip_exactly_n_bits() {
        let page = heap_page(2);
        let mut s = spec("bitflips", None);
        s.flips = Some(5);
        let out = apply_changes(&page, &inject_page(&page, 7, &[s], 3, false, None).unwrap());
        let flipped: u32 = page.iter().zip(&out).map(|(a, b)| (a ^ b).count_ones()).sum();
        assert_eq!(flipped, 5);
    }

    #[test]
    fn toast_missing_and_unknown_fields() {
        let page = heap_page(2);
        let mut s = spec("toast", Some("missing"));
        s.item = Some(2);
        let out = apply_changes(&page, &inject_page(&page, 7, &[s], 1, false, None).unwrap());
        assert_eq!(u32_at(&out, 28), Some(0));
        let mut s = spec("toast", Some("bogus"));
        s.item = Some(1);
        let err = inject_page(&page, 7, &[s], 1, false, None).unwrap_err().to_string();
        assert!(err.contains("fields: chunk_seq"), "{err}");
        assert!(inject_page(&page, 7, &[spec("nope", None)], 1, false, None).is_err());
        // a heap page is no btree page
        assert!(inject_page(&page, 7, &[spec("btree", Some("special"))], 1, false, None).is_err());
    }

    #[test]
    fn garbage_pages_never_panic() {
        let mut rng = Rng::new(7, 7);
        let base = heap_page(6);
        let attrs = vec![
            AttrLayout { attlen: 4, attalign: 'i' },
            AttrLayout { attlen: -1, attalign: 'i' },
            AttrLayout { attlen: -2, attalign: 'c' },
        ];
        for round in 0..600u64 {
            let mut page = base.clone();
            // damage a growing share of the page, sometimes all of it
            let n = (round as usize * 13) % BLCKSZ;
            let at = rng.below((BLCKSZ - n + 1) as u64) as usize;
            rng.fill(&mut page[at..at + n]);
            if round % 7 == 0 {
                rng.fill(&mut page);
            }
            if round % 3 == 1 {
                // a btree-shaped special space, so the btree paths get past their first check
                page[16..18].copy_from_slice(&((BLCKSZ - BT_SPECIAL_SIZE) as u16).to_le_bytes());
            }
            let other = heap_page(2);
            for info in MODES {
                let fields: Vec<Option<&str>> =
                    if info.fields.is_empty() { vec![None] } else { info.fields.iter().map(|f| Some(*f)).collect() };
                for field in fields {
                    let mut s = spec(info.mode, field);
                    s.item = Some((round % 8) as u16);
                    s.attrs = Some(attrs.clone());
                    s.stream = round;
                    s.length = Some((round % 40) as usize + 1);
                    s.flips = Some((round % 5) as u32 + 1);
                    s.tear_at = Some(512 * ((round % 15) as usize + 1));
                    let _ = inject_page(&page, round as u32, &[s], round, round % 2 == 0, Some(&other));
                }
            }
        }
    }
}
