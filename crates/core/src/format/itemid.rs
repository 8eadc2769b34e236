//! Line pointers (`src/include/storage/itemid.h`): a u32 of three bit-fields, lp_off:15,
//! lp_flags:2, lp_len:15, least significant first.

use serde::Serialize;

use crate::format::bytes::u32_at;

/// sizeof(ItemIdData) (itemid.h).
pub const SIZE_OF_ITEM_ID_DATA: usize = 4;
/// `LP_UNUSED` (itemid.h): free for reuse.
pub const LP_UNUSED: u8 = 0;
/// `LP_NORMAL` (itemid.h): points at a tuple.
pub const LP_NORMAL: u8 = 1;
/// `LP_REDIRECT` (itemid.h): HOT redirect; lp_off holds the target offset number.
pub const LP_REDIRECT: u8 = 2;
/// `LP_DEAD` (itemid.h): dead, storage may or may not remain.
pub const LP_DEAD: u8 = 3;

/// `ItemIdData` (itemid.h), kept as the raw word so damaged values round-trip exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemIdData(pub u32);

impl ItemIdData {
    pub fn parse(buf: &[u8], at: usize) -> Option<Self> {
        u32_at(buf, at).map(ItemIdData)
    }

    pub fn new(lp_off: u16, lp_flags: u8, lp_len: u16) -> Self {
        ItemIdData(u32::from(lp_off & 0x7FFF) | (u32::from(lp_flags & 3) << 15) | (u32::from(lp_len & 0x7FFF) << 17))
    }

    /// `lp_off`: byte offset of the item, or the redirect target's offset number.
    pub fn lp_off(&self) -> u16 {
        (self.0 & 0x7FFF) as u16
    }

    /// `lp_flags`: LP_UNUSED / LP_NORMAL / LP_REDIRECT / LP_DEAD.
    pub fn lp_flags(&self) -> u8 {
        ((self.0 >> 15) & 0x3) as u8
    }

    /// `lp_len`: byte length of the item.
    pub fn lp_len(&self) -> u16 {
        ((self.0 >> 17) & 0x7FFF) as u16
    }

    /// `ItemIdHasStorage`.
    pub fn has_storage(&self) -> bool {
        self.lp_len() != 0
    }

    pub fn flags_name(&self) -> &'static str {
        match self.lp_flags() {
            LP_UNUSED => "LP_UNUSED",
            LP_NORMAL => "LP_NORMAL",
            LP_REDIRECT => "LP_REDIRECT",
            _ => "LP_DEAD",
        }
    }
}

/// A line pointer as pageinspect shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LinePointer {
    pub lp: u16,
    pub lp_off: u16,
    pub lp_flags: u8,
    pub lp_len: u16,
}

impl LinePointer {
    pub fn from_item(lp: u16, id: ItemIdData) -> Self {
        LinePointer { lp, lp_off: id.lp_off(), lp_flags: id.lp_flags(), lp_len: id.lp_len() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitfields_match_the_reference_example() {
        // off 8152, NORMAL, len 40 is stored as d8 9f 50 00
        let id = ItemIdData::parse(&[0xd8, 0x9f, 0x50, 0x00], 0).unwrap();
        assert_eq!((id.lp_off(), id.lp_flags(), id.lp_len()), (8152, LP_NORMAL, 40));
        assert_eq!(ItemIdData::new(8152, LP_NORMAL, 40), id);
        assert!(ItemIdData::parse(&[0, 0, 0], 0).is_none());
    }
}
