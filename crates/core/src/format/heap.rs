//! Heap tuple headers (`src/include/access/htup_details.h`, `src/include/storage/itemptr.h`).

use serde::Serialize;

use crate::format::bytes::{maxalign, u16_at, u32_at, u8_at};

/// `SizeofHeapTupleHeader` = offsetof(HeapTupleHeaderData, t_bits) (htup_details.h).
pub const SIZEOF_HEAP_TUPLE_HEADER: usize = 23;
/// `MinHeapTupleSize` = MAXALIGN(SizeofHeapTupleHeader) (htup_details.h).
pub const MIN_HEAP_TUPLE_SIZE: usize = maxalign(SIZEOF_HEAP_TUPLE_HEADER);
/// `MaxHeapAttributeNumber` (htup_details.h).
pub const MAX_HEAP_ATTRIBUTE_NUMBER: u16 = 1600;

// t_infomask bits (htup_details.h).
pub const HEAP_HASNULL: u16 = 0x0001;
pub const HEAP_HASVARWIDTH: u16 = 0x0002;
pub const HEAP_HASEXTERNAL: u16 = 0x0004;
pub const HEAP_HASOID_OLD: u16 = 0x0008;
pub const HEAP_XMAX_KEYSHR_LOCK: u16 = 0x0010;
pub const HEAP_COMBOCID: u16 = 0x0020;
pub const HEAP_XMAX_EXCL_LOCK: u16 = 0x0040;
pub const HEAP_XMAX_LOCK_ONLY: u16 = 0x0080;
pub const HEAP_XMIN_COMMITTED: u16 = 0x0100;
pub const HEAP_XMIN_INVALID: u16 = 0x0200;
pub const HEAP_XMIN_FROZEN: u16 = HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID;
pub const HEAP_XMAX_COMMITTED: u16 = 0x0400;
pub const HEAP_XMAX_INVALID: u16 = 0x0800;
pub const HEAP_XMAX_IS_MULTI: u16 = 0x1000;
pub const HEAP_UPDATED: u16 = 0x2000;
pub const HEAP_MOVED_OFF: u16 = 0x4000;
pub const HEAP_MOVED_IN: u16 = 0x8000;
pub const HEAP_XMAX_SHR_LOCK: u16 = HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK;
pub const HEAP_MOVED: u16 = HEAP_MOVED_OFF | HEAP_MOVED_IN;

// t_infomask2 bits (htup_details.h).
pub const HEAP_NATTS_MASK: u16 = 0x07FF;
pub const HEAP_KEYS_UPDATED: u16 = 0x2000;
pub const HEAP_HOT_UPDATED: u16 = 0x4000;
pub const HEAP_ONLY_TUPLE: u16 = 0x8000;

const INFOMASK_NAMES: [(u16, &str); 16] = [
    (HEAP_HASNULL, "HEAP_HASNULL"),
    (HEAP_HASVARWIDTH, "HEAP_HASVARWIDTH"),
    (HEAP_HASEXTERNAL, "HEAP_HASEXTERNAL"),
    (HEAP_HASOID_OLD, "HEAP_HASOID_OLD"),
    (HEAP_XMAX_KEYSHR_LOCK, "HEAP_XMAX_KEYSHR_LOCK"),
    (HEAP_COMBOCID, "HEAP_COMBOCID"),
    (HEAP_XMAX_EXCL_LOCK, "HEAP_XMAX_EXCL_LOCK"),
    (HEAP_XMAX_LOCK_ONLY, "HEAP_XMAX_LOCK_ONLY"),
    (HEAP_XMIN_COMMITTED, "HEAP_XMIN_COMMITTED"),
    (HEAP_XMIN_INVALID, "HEAP_XMIN_INVALID"),
    (HEAP_XMAX_COMMITTED, "HEAP_XMAX_COMMITTED"),
    (HEAP_XMAX_INVALID, "HEAP_XMAX_INVALID"),
    (HEAP_XMAX_IS_MULTI, "HEAP_XMAX_IS_MULTI"),
    (HEAP_UPDATED, "HEAP_UPDATED"),
    (HEAP_MOVED_OFF, "HEAP_MOVED_OFF"),
    (HEAP_MOVED_IN, "HEAP_MOVED_IN"),
];
const INFOMASK2_NAMES: [(u16, &str); 3] = [
    (HEAP_KEYS_UPDATED, "HEAP_KEYS_UPDATED"),
    (HEAP_HOT_UPDATED, "HEAP_HOT_UPDATED"),
    (HEAP_ONLY_TUPLE, "HEAP_ONLY_TUPLE"),
];

/// Raw flag names for t_infomask and t_infomask2, in pageinspect's order
/// (`heap_tuple_infomask_flags`), followed by the combined ones it reports separately.
pub fn infomask_flags(t_infomask: u16, t_infomask2: u16) -> (Vec<&'static str>, Vec<&'static str>) {
    let mut raw: Vec<&'static str> =
        INFOMASK_NAMES.iter().filter(|(b, _)| t_infomask & b != 0).map(|(_, n)| *n).collect();
    raw.extend(INFOMASK2_NAMES.iter().filter(|(b, _)| t_infomask2 & b != 0).map(|(_, n)| *n));
    let mut combined = Vec::new();
    if t_infomask & HEAP_XMAX_SHR_LOCK == HEAP_XMAX_SHR_LOCK {
        combined.push("HEAP_XMAX_SHR_LOCK");
    }
    if t_infomask & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN {
        combined.push("HEAP_XMIN_FROZEN");
    }
    if t_infomask & HEAP_MOVED == HEAP_MOVED {
        combined.push("HEAP_MOVED");
    }
    (raw, combined)
}

/// `ItemPointerData` (itemptr.h): block number as two u16 halves (high first), then the offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct ItemPointerData {
    pub block: u32,
    pub offset: u16,
}

impl ItemPointerData {
    pub fn parse(buf: &[u8], at: usize) -> Option<Self> {
        let hi = u16_at(buf, at)?;
        let lo = u16_at(buf, at + 2)?;
        Some(ItemPointerData { block: (u32::from(hi) << 16) | u32::from(lo), offset: u16_at(buf, at + 4)? })
    }

    pub fn write(&self, buf: &mut [u8], at: usize) {
        buf[at..at + 2].copy_from_slice(&((self.block >> 16) as u16).to_le_bytes());
        buf[at + 2..at + 4].copy_from_slice(&(self.block as u16).to_le_bytes());
        buf[at + 4..at + 6].copy_from_slice(&self.offset.to_le_bytes());
    }
}

impl std::fmt::Display for ItemPointerData {
    /// The tid text form, `(block,offset)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "({},{})", self.block, self.offset)
    }
}

/// `HeapTupleHeaderData` (htup_details.h): the 23 fixed bytes of a heap tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HeapTupleHeaderData {
    /// `t_xmin`: inserting transaction.
    pub t_xmin: u32,
    /// `t_xmax`: deleting or locking transaction, or a MultiXactId.
    pub t_xmax: u32,
    /// `t_field3`: t_cid (command id, maybe combo) or t_xvac.
    pub t_field3: u32,
    /// `t_ctid`: this tuple's TID or its newer version's.
    pub t_ctid: ItemPointerData,
    /// `t_infomask2`: attribute count and HOT flags.
    pub t_infomask2: u16,
    /// `t_infomask`: visibility and layout flags.
    pub t_infomask: u16,
    /// `t_hoff`: offset of the user data (header + null bitmap + padding).
    pub t_hoff: u8,
}

impl HeapTupleHeaderData {
    /// Parse the fixed header at the start of `tuple`; `None` if it is shorter than 23 bytes.
    pub fn parse(tuple: &[u8]) -> Option<Self> {
        Some(HeapTupleHeaderData {
            t_xmin: u32_at(tuple, 0)?,
            t_xmax: u32_at(tuple, 4)?,
            t_field3: u32_at(tuple, 8)?,
            t_ctid: ItemPointerData::parse(tuple, 12)?,
            t_infomask2: u16_at(tuple, 18)?,
            t_infomask: u16_at(tuple, 20)?,
            t_hoff: u8_at(tuple, 22)?,
        })
    }

    pub fn write(&self, tuple: &mut [u8]) {
        tuple[0..4].copy_from_slice(&self.t_xmin.to_le_bytes());
        tuple[4..8].copy_from_slice(&self.t_xmax.to_le_bytes());
        tuple[8..12].copy_from_slice(&self.t_field3.to_le_bytes());
        self.t_ctid.write(tuple, 12);
        tuple[18..20].copy_from_slice(&self.t_infomask2.to_le_bytes());
        tuple[20..22].copy_from_slice(&self.t_infomask.to_le_bytes());
        tuple[22] = self.t_hoff;
    }

    /// `HeapTupleHeaderGetNatts`.
    pub fn natts(&self) -> u16 {
        self.t_infomask2 & HEAP_NATTS_MASK
    }

    pub fn has_nulls(&self) -> bool {
        self.t_infomask & HEAP_HASNULL != 0
    }

    /// The t_hoff heap_form_tuple would have written for this natts and HASNULL.
    pub fn expected_hoff(&self) -> usize {
        let bitmap = if self.has_nulls() { bitmaplen(self.natts()) } else { 0 };
        maxalign(SIZEOF_HEAP_TUPLE_HEADER + bitmap)
    }
}

/// `BITMAPLEN` (htup_details.h): bytes of null bitmap for `natts` attributes.
pub fn bitmaplen(natts: u16) -> usize {
    usize::from(natts).div_ceil(8)
}

/// The null bitmap as pageinspect prints it: one '1' (not null) or '0' per bit, low bit first.
pub fn bits_to_text(bits: &[u8]) -> String {
    let mut s = String::with_capacity(bits.len() * 8);
    for b in bits {
        for i in 0..8 {
            s.push(if b & (1 << i) != 0 { '1' } else { '0' });
        }
    }
    s
}

/// A heap item decoded the way pageinspect's heap_page_items guards it: the header only when the
/// item is a plausible tuple inside the page, the bitmap and data only when t_hoff is usable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeapTuple {
    #[serde(flatten)]
    pub header: HeapTupleHeaderData,
    pub natts: u16,
    pub infomask_flags: Vec<&'static str>,
    pub infomask_combined: Vec<&'static str>,
    /// Null bitmap text, when HEAP_HASNULL and it fits before t_hoff.
    pub t_bits: Option<String>,
    /// Pre-v12 OID, when HEAP_HASOID_OLD.
    pub t_oid: Option<u32>,
    /// Length of the user data after t_hoff, when t_hoff is usable.
    pub data_len: Option<usize>,
}

impl HeapTuple {
    /// Decode the item `tuple` (the lp_len bytes at lp_off). Callers check placement first.
    pub fn decode(tuple: &[u8]) -> Option<Self> {
        let header = HeapTupleHeaderData::parse(tuple)?;
        let (flags, combined) = infomask_flags(header.t_infomask, header.t_infomask2);
        let hoff = usize::from(header.t_hoff);
        let hoff_usable = hoff >= SIZEOF_HEAP_TUPLE_HEADER && hoff <= tuple.len() && hoff == maxalign(hoff);
        let mut t_bits = None;
        let mut t_oid = None;
        let mut data_len = None;
        if hoff_usable {
            if header.has_nulls() {
                let n = bitmaplen(header.natts());
                if n <= hoff - SIZEOF_HEAP_TUPLE_HEADER {
                    t_bits = Some(bits_to_text(&tuple[SIZEOF_HEAP_TUPLE_HEADER..SIZEOF_HEAP_TUPLE_HEADER + n]));
                }
            }
            if header.t_infomask & HEAP_HASOID_OLD != 0 {
                t_oid = u32_at(tuple, hoff.saturating_sub(4));
            }
            data_len = Some(tuple.len() - hoff);
        }
        Some(HeapTuple {
            natts: header.natts(),
            header,
            infomask_flags: flags,
            infomask_combined: combined,
            t_bits,
            t_oid,
            data_len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_tid_byte_order() {
        let h = HeapTupleHeaderData {
            t_xmin: 745,
            t_xmax: 0,
            t_field3: 3,
            t_ctid: ItemPointerData { block: 0x0001_0002, offset: 7 },
            t_infomask2: 3 | HEAP_HOT_UPDATED,
            t_infomask: HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID | HEAP_HASNULL,
            t_hoff: 24,
        };
        let mut buf = [0u8; 32];
        h.write(&mut buf);
        assert_eq!(&buf[12..18], &[1, 0, 2, 0, 7, 0]);
        assert_eq!(HeapTupleHeaderData::parse(&buf), Some(h));
        assert_eq!(h.natts(), 3);
        assert_eq!(h.expected_hoff(), 24);
        assert_eq!(h.t_ctid.to_string(), "(65538,7)");
    }

    #[test]
    fn decode_guards_hoff() {
        let mut buf = [0u8; 40];
        let mut h = HeapTupleHeaderData::parse(&buf).unwrap();
        h.t_infomask = HEAP_HASNULL;
        h.t_infomask2 = 3;
        h.t_hoff = 24;
        h.write(&mut buf);
        buf[23] = 0b101;
        let t = HeapTuple::decode(&buf).unwrap();
        assert_eq!(t.t_bits.as_deref(), Some("10100000"));
        assert_eq!(t.data_len, Some(16));
        buf[22] = 200; // t_hoff beyond the tuple
        let t = HeapTuple::decode(&buf).unwrap();
        assert_eq!((t.t_bits, t.data_len), (None, None));
    }

    #[test]
    fn flag_names() {
        let (raw, combined) = infomask_flags(HEAP_XMIN_FROZEN | HEAP_XMAX_INVALID, HEAP_ONLY_TUPLE);
        assert_eq!(raw, vec!["HEAP_XMIN_COMMITTED", "HEAP_XMIN_INVALID", "HEAP_XMAX_INVALID", "HEAP_ONLY_TUPLE"]);
        assert_eq!(combined, vec!["HEAP_XMIN_FROZEN"]);
    }
}
