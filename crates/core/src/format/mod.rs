//! PostgreSQL's on-disk formats under their own names: bounds-checked byte reads, the page header and line
//! pointers, heap and btree tuples, the page checksum, `pg_control`, attribute walking, TOAST and the free space map's tree. Nothing here
//! knows where the bytes came from or what a tuple's transaction did.

pub mod brin;
pub mod btree;
pub mod bytes;
pub mod checksum;
pub mod compress;
pub mod control;
pub mod fsm;
pub mod gin;
pub mod gist;
pub mod hash;
pub mod heap;
pub mod itemid;
pub mod page;
pub mod relmap;
pub mod spgist;
pub mod toast;
pub mod tuple;
pub mod vm;
