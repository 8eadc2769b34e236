//! The row engine: pages → tuples → datums → encoder → writer. [`find`](crate::rows::find) finds the tuples of
//! one page and [`carve`](crate::rows::carve) turns them into rows ([`detoast`](crate::rows::detoast) for their TOAST
//! values, [`output`](crate::rows::output) for what comes out, `undelete` for removed versions);
//! [`engine`](crate::rows::engine) runs it over a whole relation in parallel, in bounded memory, writing as it goes.
//! [`toastindex`](crate::rows::toastindex) finds TOAST values through the pages of the TOAST index, as a running
//! server has them. [`classify`](crate::rows::classify) tells salvage which blocks SQL may read;
//! [`evidence`](crate::rows::evidence) lists the rows the indexes say were on a block,
//! [`loss`](crate::rows::loss) what else tells whether they were live, and [`entryscan`](crate::rows::entryscan) what
//! repair planning needs of the index entries, streamed.
//! (Links name whole paths: lib.rs's line about this module is read in the crate's scope.)

pub mod carve;
pub mod classify;
pub mod detoast;
pub mod encode;
pub mod engine;
pub mod entryscan;
pub mod evidence;
pub mod find;
pub mod loss;
pub mod output;
pub mod toastindex;
mod undelete;

#[cfg(test)]
mod tests;
