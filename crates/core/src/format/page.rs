//! The page header and the slotted-page view over a block (`src/include/storage/bufpage.h`,
//! `src/backend/storage/page/bufpage.c`).

use serde::Serialize;

use crate::format::bytes::{maxalign, u16_at, u32_at};
use crate::format::checksum::pg_checksum_page;
use crate::format::itemid::{ItemIdData, SIZE_OF_ITEM_ID_DATA};

/// Default block size (`BLCKSZ`, pg_config.h); the real one comes from pg_control.
pub const BLCKSZ: usize = 8192;
/// `SizeOfPageHeaderData` = offsetof(PageHeaderData, pd_linp) (bufpage.h).
pub const SIZE_OF_PAGE_HEADER_DATA: usize = 24;
/// `PD_HAS_FREE_LINES` (bufpage.h): unused line pointers exist before pd_lower.
pub const PD_HAS_FREE_LINES: u16 = 0x0001;
/// `PD_PAGE_FULL` (bufpage.h): an UPDATE found no room on the page.
pub const PD_PAGE_FULL: u16 = 0x0002;
/// `PD_ALL_VISIBLE` (bufpage.h): every tuple is visible to all; mirrors the VM bit.
pub const PD_ALL_VISIBLE: u16 = 0x0004;
/// `PD_VALID_FLAG_BITS` (bufpage.h): any other bit makes PageIsVerified reject the page.
pub const PD_VALID_FLAG_BITS: u16 = 0x0007;
/// `PG_PAGE_LAYOUT_VERSION` (bufpage.h), 4 since 8.3.
pub const PG_PAGE_LAYOUT_VERSION: u8 = 4;

/// `PageXLogRecPtr` (bufpage.h): the LSN split in two u32 halves, high half first on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PageXLogRecPtr {
    /// `xlogid`: high 32 bits.
    pub xlogid: u32,
    /// `xrecoff`: low 32 bits.
    pub xrecoff: u32,
}

impl PageXLogRecPtr {
    pub fn lsn(&self) -> u64 {
        (u64::from(self.xlogid) << 32) | u64::from(self.xrecoff)
    }
}

/// Format an LSN as PostgreSQL prints it (`%X/%X`).
pub fn format_lsn(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// `PageHeaderData` (bufpage.h), the 24 bytes at the start of every page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct PageHeaderData {
    /// `pd_lsn`: LSN of the last WAL record that changed the page.
    pub pd_lsn: PageXLogRecPtr,
    /// `pd_checksum`: page checksum, when data checksums are on.
    pub pd_checksum: u16,
    /// `pd_flags`: PD_* bits.
    pub pd_flags: u16,
    /// `pd_lower`: end of the line pointer array (start of free space).
    pub pd_lower: u16,
    /// `pd_upper`: start of the tuple area (end of free space).
    pub pd_upper: u16,
    /// `pd_special`: start of the access-method special space.
    pub pd_special: u16,
    /// `pd_pagesize_version`: page size in the high byte bits, layout version in the low byte.
    pub pd_pagesize_version: u16,
    /// `pd_prune_xid`: oldest XID that may be prunable, 0 if none.
    pub pd_prune_xid: u32,
}

impl PageHeaderData {
    /// Read the header from the first 24 bytes; `None` if the buffer is shorter.
    pub fn parse(buf: &[u8]) -> Option<Self> {
        Some(PageHeaderData {
            pd_lsn: PageXLogRecPtr { xlogid: u32_at(buf, 0)?, xrecoff: u32_at(buf, 4)? },
            pd_checksum: u16_at(buf, 8)?,
            pd_flags: u16_at(buf, 10)?,
            pd_lower: u16_at(buf, 12)?,
            pd_upper: u16_at(buf, 14)?,
            pd_special: u16_at(buf, 16)?,
            pd_pagesize_version: u16_at(buf, 18)?,
            pd_prune_xid: u32_at(buf, 20)?,
        })
    }

    /// Write the header into the first 24 bytes of `buf` (which must be at least that long).
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..4].copy_from_slice(&self.pd_lsn.xlogid.to_le_bytes());
        buf[4..8].copy_from_slice(&self.pd_lsn.xrecoff.to_le_bytes());
        buf[8..10].copy_from_slice(&self.pd_checksum.to_le_bytes());
        buf[10..12].copy_from_slice(&self.pd_flags.to_le_bytes());
        buf[12..14].copy_from_slice(&self.pd_lower.to_le_bytes());
        buf[14..16].copy_from_slice(&self.pd_upper.to_le_bytes());
        buf[16..18].copy_from_slice(&self.pd_special.to_le_bytes());
        buf[18..20].copy_from_slice(&self.pd_pagesize_version.to_le_bytes());
        buf[20..24].copy_from_slice(&self.pd_prune_xid.to_le_bytes());
    }

    /// `PageGetPageSize`.
    pub fn page_size(&self) -> usize {
        usize::from(self.pd_pagesize_version & 0xFF00)
    }

    /// `PageGetPageLayoutVersion`.
    pub fn layout_version(&self) -> u8 {
        (self.pd_pagesize_version & 0x00FF) as u8
    }

    /// `PageIsNew`: pd_upper == 0 (never initialised, or damaged).
    pub fn is_new(&self) -> bool {
        self.pd_upper == 0
    }

    /// `PageGetMaxOffsetNumber`: how many line pointers pd_lower claims.
    pub fn max_offset_number(&self) -> u16 {
        let lower = usize::from(self.pd_lower);
        if lower <= SIZE_OF_PAGE_HEADER_DATA {
            0
        } else {
            ((lower - SIZE_OF_PAGE_HEADER_DATA) / SIZE_OF_ITEM_ID_DATA) as u16
        }
    }

    /// Names of the set PD_* bits, plus `0x…` for bits PostgreSQL does not define.
    pub fn flag_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (bit, name) in [
            (PD_HAS_FREE_LINES, "PD_HAS_FREE_LINES"),
            (PD_PAGE_FULL, "PD_PAGE_FULL"),
            (PD_ALL_VISIBLE, "PD_ALL_VISIBLE"),
        ] {
            if self.pd_flags & bit != 0 {
                out.push(name.to_string());
            }
        }
        let unknown = self.pd_flags & !PD_VALID_FLAG_BITS;
        if unknown != 0 {
            out.push(format!("0x{unknown:04x}"));
        }
        out
    }
}

/// The outcome of PostgreSQL's read-time page verification (`PageIsVerified`, bufpage.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Verification {
    /// Header sane and (if checksums are on) checksum right.
    Valid,
    /// All bytes zero: accepted silently, the page reads as empty.
    AllZero,
    /// The server raises "invalid page in block …".
    Invalid {
        header_sane: bool,
        /// Set when checksums are on and the stored value differs.
        checksum_failure: bool,
    },
}

/// A block and what PostgreSQL would make of it. Construction never fails on bad bytes.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    bytes: &'a [u8],
    header: PageHeaderData,
}

impl<'a> Page<'a> {
    /// View `bytes` as a page. `None` only when the buffer cannot even hold a header.
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        Some(Page { bytes, header: PageHeaderData::parse(bytes)? })
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn header(&self) -> &PageHeaderData {
        &self.header
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Every byte is zero (what PageIsVerified accepts silently as a new page).
    pub fn is_all_zero(&self) -> bool {
        // Compare in u64 steps; pages are multiples of 8 bytes but do not rely on it.
        let mut chunks = self.bytes.chunks_exact(8);
        let words_zero = chunks.all(|c| u64::from_ne_bytes(c.try_into().unwrap_or([1; 8])) == 0);
        words_zero && chunks.remainder().iter().all(|b| *b == 0)
    }

    /// The bytes from pd_special to the end, when pd_special lies inside the page.
    pub fn special(&self) -> Option<&'a [u8]> {
        self.bytes.get(usize::from(self.header.pd_special)..)
    }

    /// `PageGetSpecialSize`, from the buffer length (not the header's size word).
    pub fn special_size(&self) -> usize {
        self.bytes.len().saturating_sub(usize::from(self.header.pd_special))
    }

    /// How many line pointers can be read without leaving the buffer, at most what pd_lower claims.
    pub fn readable_item_count(&self) -> u16 {
        let claimed = usize::from(self.header.max_offset_number());
        let fit = self.bytes.len().saturating_sub(SIZE_OF_PAGE_HEADER_DATA) / SIZE_OF_ITEM_ID_DATA;
        claimed.min(fit) as u16
    }

    /// Line pointer `offnum` (1-based), if its 4 bytes are inside the buffer.
    pub fn item_id(&self, offnum: u16) -> Option<ItemIdData> {
        if offnum == 0 {
            return None;
        }
        let at = SIZE_OF_PAGE_HEADER_DATA + usize::from(offnum - 1) * SIZE_OF_ITEM_ID_DATA;
        ItemIdData::parse(self.bytes, at)
    }

    /// All readable line pointers with their offset numbers.
    pub fn item_ids(&self) -> impl Iterator<Item = (u16, ItemIdData)> + 'a {
        let n = usize::from(self.readable_item_count());
        let array = &self.bytes[SIZE_OF_PAGE_HEADER_DATA..SIZE_OF_PAGE_HEADER_DATA + n * SIZE_OF_ITEM_ID_DATA];
        array
            .chunks_exact(SIZE_OF_ITEM_ID_DATA)
            .enumerate()
            .map(|(i, w)| ((i + 1) as u16, ItemIdData(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))))
    }

    /// The bytes an item's storage covers, when it lies wholly inside the buffer.
    pub fn item_bytes(&self, id: ItemIdData) -> Option<&'a [u8]> {
        let start = usize::from(id.lp_off());
        self.bytes.get(start..start + usize::from(id.lp_len()))
    }

    /// The header rules PageIsVerified applies (bufpage.c), for a page of `blcksz` bytes.
    pub fn header_is_sane(&self, blcksz: usize) -> bool {
        let h = &self.header;
        (h.pd_flags & !PD_VALID_FLAG_BITS) == 0
            && h.pd_lower <= h.pd_upper
            && h.pd_upper <= h.pd_special
            && usize::from(h.pd_special) <= blcksz
            && usize::from(h.pd_special) == maxalign(usize::from(h.pd_special))
    }

    /// What the server does when it reads this page (`PageIsVerified`): `blkno` counts across
    /// segments; `checksums` is whether the cluster has data checksums on.
    pub fn verify(&self, blkno: u32, checksums: bool) -> Verification {
        let mut checksum_failure = false;
        let mut header_sane = false;
        if !self.header.is_new() {
            if checksums {
                checksum_failure = pg_checksum_page(self.bytes, blkno) != Some(self.header.pd_checksum);
            }
            header_sane = self.header_is_sane(self.bytes.len());
            if header_sane && !checksum_failure {
                return Verification::Valid;
            }
        }
        if self.is_all_zero() {
            return Verification::AllZero;
        }
        Verification::Invalid { header_sane, checksum_failure }
    }
}

/// A heap page of `blcksz` bytes holding `tuples` (each a complete tuple image: header and data) as items 1..n,
/// laid out as PostgreSQL does: line pointers from the header down, tuples MAXALIGNed from the end up. `None`
/// when they do not fit. The checksum is left 0 (see [`crate::format::checksum::set_checksum`]).
pub fn assemble_heap_page(tuples: &[&[u8]], blcksz: usize) -> Option<Vec<u8>> {
    let mut page = vec![0u8; blcksz];
    let mut upper = blcksz;
    let lower = SIZE_OF_PAGE_HEADER_DATA + tuples.len() * SIZE_OF_ITEM_ID_DATA;
    for (i, t) in tuples.iter().enumerate() {
        upper = upper.checked_sub(maxalign(t.len()))?;
        if upper < lower || t.len() > 0x7FFF {
            return None;
        }
        page[upper..upper + t.len()].copy_from_slice(t);
        let id = ItemIdData::new(upper as u16, crate::format::itemid::LP_NORMAL, t.len() as u16);
        let at = SIZE_OF_PAGE_HEADER_DATA + i * SIZE_OF_ITEM_ID_DATA;
        page[at..at + SIZE_OF_ITEM_ID_DATA].copy_from_slice(&id.0.to_le_bytes());
    }
    PageHeaderData {
        pd_lower: lower as u16,
        pd_upper: upper as u16,
        pd_special: blcksz as u16,
        pd_pagesize_version: (blcksz as u16 & 0xFF00) | u16::from(PG_PAGE_LAYOUT_VERSION),
        ..Default::default()
    }
    .write(&mut page);
    Some(page)
}

/// What kind of page a block is, judged from its special space (sizes and page ids from
/// `access/nbtree.h`, `access/hash.h`, `access/gist.h`, `access/spgist_private.h`,
/// `access/ginblock.h`, `access/brin_page.h`, `commands/sequence.c`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PageKind {
    /// All zero bytes.
    Zero,
    /// pd_upper == 0 but not all zero (damaged, or never initialised).
    Uninitialized,
    /// No special space: heap, TOAST, VM and FSM pages.
    Heap,
    Btree,
    BtreeMeta,
    Hash,
    Gist,
    SpGist,
    Gin,
    Brin,
    Sequence,
    /// Visibility map and free space map pages: a bitmap or tree in the page contents, no items.
    Map,
    /// The special space matches nothing we know (often a damaged header).
    Unknown,
}

/// `MAX_BT_CYCLE_ID` (nbtree.h); larger values identify other AMs' special spaces.
pub const MAX_BT_CYCLE_ID: u16 = 0xFF7F;
/// `BTP_META` (access/nbtree.h), a `btpo_flags` bit: the btree metapage. Here rather than in btree.rs
/// with the other flags because telling page kinds apart needs it, and the btree is built on the page.
pub const BTP_META: u16 = 1 << 3;
/// `HASHO_PAGE_ID` (access/hash.h).
pub const HASHO_PAGE_ID: u16 = 0xFF80;
/// `GIST_PAGE_ID` (access/gist.h).
pub const GIST_PAGE_ID: u16 = 0xFF81;
/// `SPGIST_PAGE_ID` (access/spgist_private.h).
pub const SPGIST_PAGE_ID: u16 = 0xFF82;
/// `SEQ_MAGIC` (commands/sequence.c).
pub const SEQ_MAGIC: u32 = 0x1717;
/// BRIN page types in the last u16 of the special space (access/brin_page.h).
pub const BRIN_PAGETYPE_META: u16 = 0xF091;
pub const BRIN_PAGETYPE_REGULAR: u16 = 0xF093;

impl PageKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            PageKind::Zero => "zero",
            PageKind::Uninitialized => "uninitialized",
            PageKind::Heap => "heap",
            PageKind::Btree => "btree",
            PageKind::BtreeMeta => "btree_meta",
            PageKind::Hash => "hash",
            PageKind::Gist => "gist",
            PageKind::SpGist => "spgist",
            PageKind::Gin => "gin",
            PageKind::Brin => "brin",
            PageKind::Sequence => "sequence",
            PageKind::Map => "map",
            PageKind::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "heap" => PageKind::Heap,
            "btree" => PageKind::Btree,
            "btree_meta" => PageKind::BtreeMeta,
            "hash" => PageKind::Hash,
            "gist" => PageKind::Gist,
            "spgist" => PageKind::SpGist,
            "gin" => PageKind::Gin,
            "brin" => PageKind::Brin,
            "sequence" => PageKind::Sequence,
            "map" => PageKind::Map,
            _ => return None,
        })
    }

    /// Guess the kind from the page alone. A damaged pd_special makes this `Unknown`; callers
    /// that know the relation's access method should pass it instead of guessing.
    pub fn guess(page: &Page<'_>) -> PageKind {
        if page.is_all_zero() {
            return PageKind::Zero;
        }
        if page.header().is_new() {
            return PageKind::Uninitialized;
        }
        let Some(special) = page.special() else {
            return PageKind::Unknown;
        };
        let last = if special.len() >= 2 { u16_at(special, special.len() - 2) } else { None };
        match special.len() {
            0 => PageKind::Heap,
            8 => match last {
                Some(SPGIST_PAGE_ID) => PageKind::SpGist,
                Some(BRIN_PAGETYPE_META..=BRIN_PAGETYPE_REGULAR) => PageKind::Brin,
                _ if u32_at(special, 0) == Some(SEQ_MAGIC) => PageKind::Sequence,
                _ => PageKind::Gin,
            },
            16 => match last {
                Some(HASHO_PAGE_ID) => PageKind::Hash,
                Some(GIST_PAGE_ID) => PageKind::Gist,
                Some(c) if c <= MAX_BT_CYCLE_ID => {
                    let flags = u16_at(special, 12).unwrap_or(0);
                    if flags & BTP_META != 0 {
                        PageKind::BtreeMeta
                    } else {
                        PageKind::Btree
                    }
                }
                _ => PageKind::Unknown,
            },
            _ => PageKind::Unknown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty heap page as PageInit leaves it.
    pub(crate) fn empty_page() -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        let h = PageHeaderData {
            pd_lower: 24,
            pd_upper: BLCKSZ as u16,
            pd_special: BLCKSZ as u16,
            pd_pagesize_version: BLCKSZ as u16 | u16::from(PG_PAGE_LAYOUT_VERSION),
            ..Default::default()
        };
        h.write(&mut p);
        p
    }

    #[test]
    fn header_round_trip() {
        let mut p = empty_page();
        let mut h = PageHeaderData::parse(&p).unwrap();
        h.pd_lsn = PageXLogRecPtr { xlogid: 1, xrecoff: 0x2A };
        h.pd_prune_xid = 77;
        h.write(&mut p);
        let back = PageHeaderData::parse(&p).unwrap();
        assert_eq!(back, h);
        assert_eq!(format_lsn(back.pd_lsn.lsn()), "1/2A");
        assert_eq!(back.page_size(), 8192);
        assert_eq!(back.layout_version(), 4);
    }

    #[test]
    fn verification_follows_page_is_verified() {
        let p = empty_page();
        let page = Page::new(&p).unwrap();
        assert_eq!(page.verify(0, false), Verification::Valid);
        // without a stamped checksum, checksums-on verification fails
        assert!(matches!(page.verify(0, true), Verification::Invalid { checksum_failure: true, .. }));
        let z = vec![0u8; BLCKSZ];
        assert_eq!(Page::new(&z).unwrap().verify(3, true), Verification::AllZero);

        let mut bad = empty_page();
        bad[16..18].copy_from_slice(&8190u16.to_le_bytes()); // unaligned pd_special
        let page = Page::new(&bad).unwrap();
        assert!(matches!(page.verify(0, false), Verification::Invalid { header_sane: false, .. }));
    }

    #[test]
    fn assembled_pages_hold_their_tuples() {
        let a = vec![0xAAu8; 30];
        let b = vec![0xBBu8; 41];
        let p = assemble_heap_page(&[&a, &b], BLCKSZ).unwrap();
        let page = Page::new(&p).unwrap();
        assert_eq!(page.verify(0, false), Verification::Valid);
        let items: Vec<_> = page.item_ids().map(|(_, id)| page.item_bytes(id).unwrap().to_vec()).collect();
        assert_eq!(items, vec![a.clone(), b]);
        assert_eq!(page.header().pd_upper as usize, BLCKSZ - 32 - 48);
        let big = vec![0u8; 5000];
        assert!(assemble_heap_page(&[&big, &big], BLCKSZ).is_none());
    }

    #[test]
    fn tiny_buffers_do_not_panic() {
        assert!(Page::new(&[0u8; 10]).is_none());
        let p = Page::new(&[0xFFu8; 30]).unwrap();
        assert_eq!(p.readable_item_count(), 1);
        let _ = p.verify(0, true);
    }
}
