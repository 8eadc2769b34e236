//! The visibility map and the free space map against what they describe: a heap page's tuples against its
//! all-visible and all-frozen bits ([`vm`]), an FSM page's tree against itself and a heap page's free space
//! against its leaf ([`fsm`]). The scan reads the map pages beside the heap pages they cover
//! (`checks::scan::maps`); these functions judge one page at a time.

pub mod fsm;
pub mod vm;
