//! The visibility map fork (`_vm`): two bits per heap block after each page's header
//! (access/heap/visibilitymap.c).

/// `VISIBILITYMAP_ALL_VISIBLE` (access/visibilitymapdefs.h).
pub const VISIBILITYMAP_ALL_VISIBLE: u8 = 0x01;

/// `VISIBILITYMAP_ALL_FROZEN` (access/visibilitymapdefs.h).
pub const VISIBILITYMAP_ALL_FROZEN: u8 = 0x02;
/// `VISIBILITYMAP_VALID_BITS` (access/visibilitymapdefs.h).
pub const VISIBILITYMAP_VALID_BITS: u8 = 0x03;

/// Heap blocks one visibility map page covers: (BLCKSZ - MAXALIGN(SizeOfPageHeaderData)) bytes,
/// four heap blocks a byte (`HEAPBLOCKS_PER_PAGE`, access/heap/visibilitymap.c).
pub fn heapblocks_per_page(blcksz: u32) -> u64 {
    u64::from(blcksz - 24) * 4
}

/// Where heap block `heap_block`'s bits are: (VM block, byte offset in that page, bit shift).
pub fn locate(heap_block: u64, blcksz: u32) -> (u64, usize, u32) {
    let per_page = heapblocks_per_page(blcksz);
    let slot = heap_block % per_page;
    // HEAPBLK_TO_MAPBYTE and HEAPBLK_TO_OFFSET (visibilitymap.c): four blocks a byte, two bits each
    (heap_block / per_page, 24 + (slot / 4) as usize, ((slot % 4) * 2) as u32)
}

/// The two bits of heap block `heap_block` on the visibility map page image `vm_page` (the page of
/// [`locate`]'s VM block): `visibilitymap_get_status` (visibilitymap.c). 0 when the page is too short.
pub fn status_on_page(vm_page: &[u8], heap_block: u64, blcksz: u32) -> u8 {
    let (_, byte, shift) = locate(heap_block, blcksz);
    vm_page.get(byte).map_or(0, |b| (b >> shift) & VISIBILITYMAP_VALID_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_blocks_of_each_map_page_sit_after_its_header() {
        assert_eq!(locate(0, 8192), (0, 24, 0));
        assert_eq!(locate(5, 8192), (0, 25, 2));
        let per = heapblocks_per_page(8192);
        assert_eq!(per, 32672);
        assert_eq!(locate(per + 3, 8192), (1, 24, 6));
    }
}
