//! Transaction status and tuple visibility read offline: the SLRUs (`pg_xact`, `pg_subtrans`, `pg_multixact`,
//! `pg_commit_ts`) and the judgement of a heap tuple header against them, as `HeapTupleSatisfiesMVCC` would.

pub mod commit_ts;
pub mod hint_evidence;
pub mod multi_evidence;
pub mod multixact;
pub mod service;
pub mod slru;
pub mod transam;
pub mod xact;
