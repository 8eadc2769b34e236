//! Map fork injectors: a visibility map bit set for a heap block (mode `vm`), and a free space map page's slot or
//! upper node made wrong (mode `fsm`). The page given is the map fork's block; `value` names the heap block.

use super::{invalid, DamageSpec, Rng};
use crate::error::Result;
use crate::format::bytes::maxalign;
use crate::format::fsm::{
    fsm_get_location, fsm_logical_to_physical, NodesPerPage, NonLeafNodesPerPage, FSM_PAGE_DATA_FP_NODES,
};
use crate::format::page::SIZE_OF_PAGE_HEADER_DATA;
use crate::format::vm::{locate, VISIBILITYMAP_ALL_FROZEN, VISIBILITYMAP_ALL_VISIBLE};

/// Mode `vm`: heap block `spec.value`'s all-visible bit (field `all-visible`) or both bits (`all-frozen`: the
/// server never sets all-frozen without all-visible, visibilitymap.c) set on VM block `blkno`.
pub(super) fn vm(page: &mut [u8], blkno: u32, field: &str, spec: &DamageSpec) -> Result<String> {
    let heap = spec.value.ok_or_else(|| invalid("mode vm needs the heap block (value)"))?;
    let blcksz = page.len() as u32;
    let (vb, byte, shift) = locate(heap, blcksz);
    if vb != u64::from(blkno) {
        return Err(invalid(format!("heap block {heap} is on visibility map block {vb}, not {blkno}")));
    }
    let bits = match field {
        "all-frozen" => VISIBILITYMAP_ALL_VISIBLE | VISIBILITYMAP_ALL_FROZEN,
        _ => VISIBILITYMAP_ALL_VISIBLE,
    };
    let old = page[byte];
    if (old >> shift) & bits == bits {
        return Err(invalid(format!("heap block {heap} is marked {field} already")));
    }
    page[byte] = old | (bits << shift);
    Ok(format!("visibility map bits of heap block {heap}: {} -> {}", (old >> shift) & 3, (page[byte] >> shift) & 3))
}

fn fp_nodes_at() -> usize {
    maxalign(SIZE_OF_PAGE_HEADER_DATA) + FSM_PAGE_DATA_FP_NODES
}

/// `fsm_set_avail` (fsmpage.c): leaf `slot` set to `value`, its upper nodes on the page kept the max of their
/// children.
fn set_avail(page: &mut [u8], slot: usize, value: u8) {
    let base = fp_nodes_at();
    let blcksz = page.len();
    let nodes = NodesPerPage(blcksz);
    let mut n = NonLeafNodesPerPage(blcksz) + slot;
    page[base + n] = value;
    while n > 0 {
        n = (n - 1) / 2;
        let l = 2 * n + 1;
        let mut v = page[base + l];
        if l + 1 < nodes {
            v = v.max(page[base + l + 1]);
        }
        page[base + n] = v;
    }
}

/// Mode `fsm`: field `beyond-end` records free space for heap block `spec.value` (one at or past the table's end,
/// chosen by the caller) on its leaf page `blkno`, the page's tree kept consistent; field `upper-node` sets an
/// upper node of the page to a value other than the max of its children.
pub(super) fn fsm(page: &mut [u8], blkno: u32, field: &str, spec: &DamageSpec, rng: &mut Rng) -> Result<String> {
    let blcksz = page.len();
    if blcksz < 1024 {
        return Err(invalid("a free space map page is at least 1024 bytes"));
    }
    let base = fp_nodes_at();
    match field {
        "beyond-end" => {
            let heap = spec.value.ok_or_else(|| invalid("field beyond-end needs the heap block (value)"))?;
            let (addr, slot) = fsm_get_location(heap, blcksz);
            let phys = fsm_logical_to_physical(addr, blcksz);
            if phys != u64::from(blkno) {
                return Err(invalid(format!("heap block {heap} is on free space map block {phys}, not {blkno}")));
            }
            let cat = rng.between(128, 255) as u8;
            set_avail(page, slot, cat);
            Ok(format!(
                "free space map slot of heap block {heap}: category {cat} (about {} bytes free)",
                usize::from(cat) * (blcksz / 256)
            ))
        }
        _ => {
            // an upper node with both children on the page, in the top levels where a search starts
            let node = match spec.item {
                Some(n) if usize::from(n) < NonLeafNodesPerPage(blcksz) => usize::from(n),
                Some(n) => return Err(invalid(format!("node {n} is not an upper node of this page"))),
                None => rng.below(255) as usize,
            };
            let old = page[base + node];
            let v = rng.other_than(8, u64::from(old)) as u8;
            page[base + node] = v;
            Ok(format!("free space map upper node {node}: category {old} -> {v}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::maps::fsm::{fsm_root, inconsistent_nodes};
    use crate::format::fsm::{fsm_get_avail, SlotsPerFSMPage};
    use crate::format::vm::status_on_page;

    const B: usize = 8192;

    fn spec(field: &str, value: Option<u64>) -> DamageSpec {
        DamageSpec { mode: "x".into(), field: Some(field.into()), value, ..Default::default() }
    }

    #[test]
    fn vm_bits_are_set_for_the_named_block_only_once() {
        let mut page = vec![0u8; B];
        let note = vm(&mut page, 0, "all-frozen", &spec("all-frozen", Some(5))).expect("set");
        assert_eq!(status_on_page(&page, 5, B as u32), 3, "{note}");
        assert_eq!(status_on_page(&page, 4, B as u32), 0);
        assert!(vm(&mut page, 0, "all-visible", &spec("all-visible", Some(5))).is_err(), "already set");
        // a heap block of another map page, and no block at all
        assert!(vm(&mut page, 0, "all-visible", &spec("all-visible", Some(40_000))).is_err());
        assert!(vm(&mut page, 0, "all-visible", &spec("all-visible", None)).is_err());
    }

    #[test]
    fn fsm_damage_past_the_end_keeps_the_tree_and_an_upper_node_breaks_it() {
        let mut rng = Rng::new(7, 0);
        let mut page = vec![0u8; B];
        fsm(&mut page, 2, "beyond-end", &spec("beyond-end", Some(40)), &mut rng).expect("leaf 0 is block 2");
        let cat = fsm_get_avail(&page, 40, B).expect("slot");
        assert!(cat >= 128 && fsm_root(&page) == Some(cat));
        assert!(inconsistent_nodes(&page, B).is_empty());
        // the slot of a heap block on another leaf page
        assert!(
            fsm(&mut page, 2, "beyond-end", &spec("beyond-end", Some(SlotsPerFSMPage(B) as u64)), &mut rng).is_err()
        );
        let note = fsm(&mut page, 2, "upper-node", &spec("upper-node", None), &mut rng).expect("node");
        // the node itself is wrong, and its parent too when it now differs from the max the parent holds
        let node: usize =
            note.split_whitespace().nth(5).and_then(|n| n.trim_end_matches(':').parse().ok()).expect(&note);
        assert!(inconsistent_nodes(&page, B).iter().any(|&(n, _, _)| n == node), "{note}");
        assert!(fsm(&mut vec![0u8; 512], 2, "upper-node", &spec("upper-node", None), &mut rng).is_err());
    }
}
