//! Damage detection: the checks over one page, the whole-relation scan that runs them in parallel, the
//! one-block inspector, and diagnosis of pages the server hands over.

pub mod cluster;
pub mod diagnose;
pub mod inspect;
pub mod maps;
pub mod page;
pub mod scan;
