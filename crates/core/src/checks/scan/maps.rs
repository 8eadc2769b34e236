//! The visibility map and free space map pages covering one work unit's heap blocks, read beside the unit (a
//! chunk of 256 heap blocks needs 64 bytes of one VM page and part of one FSM leaf page), so that every heap page
//! is judged against its map bits and its FSM leaf with memory bounded by a page or two per unit.
//!
//! A map page is used only as the server would read it: the server reads both maps with RBM_ZERO_ON_ERROR
//! (visibilitymap.c vm_readbuf, freespace.c fsm_readbuf), so a page failing its header or checksum check holds no
//! bits. A VM page newer than [`ScanOptions::judged_up_to`] is not used either: its bits may have been set after
//! the heap page we read was written.

use std::path::Path;

use super::ScanOptions;
use crate::checks::maps::fsm::{heap_free_space, space_avail_to_cat};
use crate::checks::maps::vm::vm_page_findings;
use crate::finding::Finding;
use crate::format::fsm::{fsm_get_avail, fsm_get_location, fsm_logical_to_physical};
use crate::format::page::{Page, Verification};
use crate::format::vm::{locate, status_on_page};
use crate::sources::relfile::Relation;
use crate::sources::relpath::Fork;
use crate::visibility::service::Visibility;

/// The map forks of one main fork, when scanned with it.
#[derive(Clone, Copy, Default)]
pub(super) struct MapForks<'a> {
    pub(super) vm: Option<&'a Relation>,
    pub(super) fsm: Option<&'a Relation>,
    /// Unlogged (an init fork) or temporary: its pages carry no LSN a live scan could order them by.
    pub(super) unlogged: bool,
}

/// Each relation fork's map forks among `relations` (for main forks; none for the others).
pub(super) fn map_forks(relations: &[Relation]) -> Vec<MapForks<'_>> {
    let key = |r: &Relation| (r.tablespace_oid, r.database_oid, r.relfilenode, r.temp_backend);
    let mut by_key: std::collections::HashMap<_, MapForks<'_>> = std::collections::HashMap::new();
    for r in relations {
        match r.fork {
            Fork::Vm => by_key.entry(key(r)).or_default().vm = Some(r),
            Fork::Fsm => by_key.entry(key(r)).or_default().fsm = Some(r),
            Fork::Init => by_key.entry(key(r)).or_default().unlogged = true,
            _ => {}
        }
    }
    relations
        .iter()
        .map(|r| match (r.fork, by_key.get(&key(r))) {
            (Fork::Main, Some(m)) => MapForks { unlogged: m.unlogged || r.temp, ..*m },
            _ => MapForks::default(),
        })
        .collect()
}

/// The map pages of one unit: (fork block, page image) of the VM and FSM leaf pages that cover it.
#[derive(Default)]
pub(super) struct MapWindow {
    vm: Vec<(u64, Vec<u8>)>,
    fsm: Vec<(u64, Vec<u8>)>,
}

/// Block `block` of fork `rel`, as the server would accept it (None: absent, unreadable, or refused).
fn read_map_page(root: &Path, rel: &Relation, block: u64, opts: &ScanOptions) -> Option<Vec<u8>> {
    let segno = block / u64::from(opts.relseg_size);
    let seg = rel.segments.iter().find(|s| u64::from(s.segno) == segno)?;
    let offset = (block % u64::from(opts.relseg_size)) * u64::from(opts.blcksz);
    let bytes = super::unit::reread_page(&root.join(&seg.path), offset, opts.blcksz as usize)?;
    let page = Page::new(&bytes)?;
    if !matches!(page.verify(block as u32, opts.checksums), Verification::Valid) {
        return None;
    }
    if opts.judged_up_to().is_some_and(|lsn| page.header().pd_lsn.lsn() > lsn) {
        return None;
    }
    Some(bytes)
}

impl MapWindow {
    /// The map pages covering heap blocks `first..first + n`. The FSM only offline: a running server's map on
    /// disk lags the one it follows (see `relation::fsm_check`), and it is information only.
    pub(super) fn read(root: &Path, forks: MapForks<'_>, first: u64, n: u64, opts: &ScanOptions) -> MapWindow {
        let mut w = MapWindow::default();
        if n == 0 {
            return w;
        }
        let last = first + n - 1;
        // An unlogged or temporary table's pages are written back whenever they are evicted and carry no LSN: in a
        // live scan (or a backup) its map page may be newer than its heap page with nothing to tell, so its bits
        // are judged only in a stopped cluster.
        let vm = forks.vm.filter(|_| !(forks.unlogged && opts.judged_up_to().is_some()));
        if let Some(vm) = vm {
            for b in locate(first, opts.blcksz).0..=locate(last, opts.blcksz).0 {
                if let Some(p) = read_map_page(root, vm, b, opts) {
                    w.vm.push((b, p));
                }
            }
        }
        if let (Some(fsm), None) = (forks.fsm, opts.judged_up_to()) {
            let blcksz = opts.blcksz as usize;
            for leaf in fsm_get_location(first, blcksz).0.logpageno..=fsm_get_location(last, blcksz).0.logpageno {
                let addr = crate::format::fsm::FSMAddress { level: 0, logpageno: leaf };
                if let Some(p) = read_map_page(root, fsm, fsm_logical_to_physical(addr, blcksz), opts) {
                    w.fsm.push((leaf, p));
                }
            }
        }
        w
    }

    /// The VM bits of heap block `block` (0 when its map page is absent or was not usable).
    fn vm_bits(&self, block: u64, blcksz: u32) -> u8 {
        let (vb, _, _) = locate(block, blcksz);
        self.vm.iter().find(|(b, _)| *b == vb).map_or(0, |(_, p)| status_on_page(p, block, blcksz))
    }

    /// The FSM category recorded for heap block `block`, when its leaf page was read.
    fn fsm_category(&self, block: u64, blcksz: usize) -> Option<u8> {
        let (addr, slot) = fsm_get_location(block, blcksz);
        let (_, p) = self.fsm.iter().find(|(l, _)| *l == addr.logpageno)?;
        fsm_get_avail(p, slot, blcksz)
    }

    /// A live scan's verdict on a heap page's map bits: from a copy of the page that a read made after the
    /// judgement gives again, byte for byte ([`read_alike`]). A copy torn by a concurrent write (an old header over
    /// newer tuples: nothing tells it without checksums) never exists in the file; the page read again does, and is
    /// judged in its turn. A stable copy newer than the redo point is not judged at all, like any such page.
    pub(super) fn live_vm_findings(
        &self,
        judged: &[u8],
        block: u64,
        vis: &Visibility,
        opts: &ScanOptions,
        reread: impl Fn() -> Option<Vec<u8>>,
    ) -> Vec<Finding> {
        let bits = self.vm_bits(block, opts.blcksz);
        let Some(copy) = read_alike(judged, LIVE_VM_READS, reread) else { return Vec::new() };
        match Page::new(&copy) {
            Some(p) if opts.judged_up_to().is_none_or(|lsn| p.header().pd_lsn.lsn() <= lsn) => {
                vm_page_findings(&p, block, bits, vis)
            }
            _ => Vec::new(),
        }
    }

    /// One heap page against its map entries: findings for wrong VM bits, and whether its FSM leaf records more
    /// free space than the page has (stale: information).
    pub(super) fn heap_page(
        &self,
        page: &Page<'_>,
        block: u64,
        vis: Option<&Visibility>,
        blcksz: u32,
        out: &mut Vec<Finding>,
    ) -> bool {
        let bits = self.vm_bits(block, blcksz);
        if let (true, Some(vis)) = (bits != 0, vis) {
            out.extend(vm_page_findings(page, block, bits, vis));
        }
        let blcksz = blcksz as usize;
        self.fsm_category(block, blcksz)
            .is_some_and(|cat| cat > space_avail_to_cat(heap_free_space(page, blcksz), blcksz))
    }
}

/// Reads of a heap page a live scan makes before it gives up on judging the page's map bits (the page keeps
/// changing: the server's copy is newer than anything read here).
const LIVE_VM_READS: usize = 3;

/// A copy of a running server's page that a read gives twice alike, starting from `first` (already read): each of
/// up to `reads` reads compared with the copy before it. None when they keep differing or a read fails.
fn read_alike(first: &[u8], reads: usize, again: impl Fn() -> Option<Vec<u8>>) -> Option<Vec<u8>> {
    let mut copy = first.to_vec();
    for _ in 0..reads {
        let next = again()?;
        if next == copy {
            return Some(copy);
        }
        copy = next;
    }
    None
}

/// A free space map page of a running server: its tree judged only when a second read gives the same bytes. The
/// server writes FSM pages without WAL (MarkBufferDirtyHint) and at any time, so a copy read while it is written
/// may be torn; the buffer itself is only changed under an exclusive lock, so a page read twice alike is one the
/// server wrote whole.
pub(super) fn live_fsm_page(
    bytes: &[u8],
    block: u64,
    opts: &ScanOptions,
    again: impl Fn() -> Option<Vec<u8>>,
    out: &mut super::unit::ChunkSummary,
) {
    let blcksz = opts.blcksz as usize;
    if page_is_usable(bytes, block, opts) && crate::checks::maps::fsm::fsm_tree_finding(bytes, block, blcksz).is_some()
    {
        if let Some(second) = read_alike(bytes, 1, again) {
            out.findings.extend(crate::checks::maps::fsm::fsm_tree_finding(&second, block, blcksz));
        }
    }
}

fn page_is_usable(bytes: &[u8], block: u64, opts: &ScanOptions) -> bool {
    Page::new(bytes).is_some_and(|p| matches!(p.verify(block as u32, opts.checksums), Verification::Valid))
}

/// One page of a free space map fork: its tree within the page (offline; a live scan reads it twice first,
/// [`live_fsm_page`]), and its root kept for the check across levels.
pub(super) fn fsm_page(bytes: &[u8], block: u64, opts: &ScanOptions, out: &mut super::unit::ChunkSummary) {
    if opts.judged_up_to().is_some() {
        return;
    }
    let blcksz = opts.blcksz as usize;
    out.findings.extend(crate::checks::maps::fsm::fsm_tree_finding(bytes, block, blcksz));
    if let Some(root) = crate::checks::maps::fsm::fsm_root(bytes) {
        out.fsm_roots.push((block, root));
    }
}

/// The slots of the upper FSM pages of `fsm` (a fork of `nblocks` blocks) that differ from the root of the page
/// below them (`roots`: (FSM block, root), sorted). Upper pages are brought up to date by `FreeSpaceMapVacuum` at
/// the end of VACUUM, not as leaves change, and a search that meets a stale slot corrects it (freespace.c,
/// fsm_search): a difference is information, counted.
pub(super) fn fsm_upper_stale(
    root: &Path,
    fsm: &Relation,
    nblocks: u64,
    roots: &[(u64, u8)],
    opts: &ScanOptions,
) -> u64 {
    use crate::format::fsm::{FSMAddress, SlotsPerFSMPage, FSM_TREE_DEPTH};
    let blcksz = opts.blcksz as usize;
    if blcksz < 1024 || roots.is_empty() || opts.judged_up_to().is_some() {
        return 0;
    }
    let slots = SlotsPerFSMPage(blcksz) as u64;
    let root_of = |b: u64| roots.binary_search_by_key(&b, |r| r.0).ok().map(|i| roots[i].1);
    let mut stale = 0;
    for level in 1..FSM_TREE_DEPTH(blcksz) {
        for logpageno in 0.. {
            let phys = fsm_logical_to_physical(FSMAddress { level, logpageno }, blcksz);
            if phys >= nblocks {
                break;
            }
            // a page the scan found unusable (no root recorded) is judged by the page checks alone
            if root_of(phys).is_none() {
                continue;
            }
            let Some(page) = read_map_page(root, fsm, phys, opts) else { continue };
            for slot in 0..slots {
                let child = fsm_logical_to_physical(
                    FSMAddress { level: level - 1, logpageno: logpageno * slots + slot },
                    blcksz,
                );
                let have = fsm_get_avail(&page, slot as usize, blcksz).unwrap_or(0);
                let below = if child < nblocks { root_of(child) } else { Some(0) };
                if below.is_some_and(|b| b != have) {
                    stale += 1;
                }
                if child >= nblocks {
                    break;
                }
            }
        }
    }
    stale
}
