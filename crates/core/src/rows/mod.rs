//! The row engine: pages → tuples → datums → encoder → writer. [`find`] finds the tuples of one page and
//! [`carve`] turns them into rows ([`detoast`] for their TOAST values, [`output`] for what comes out); [`engine`]
//! runs it over a whole relation in parallel, in bounded memory, writing as it goes. [`classify`] tells salvage
//! which blocks SQL may read; [`evidence`] lists the rows the indexes say were on a block.

pub mod carve;
pub mod classify;
pub mod detoast;
pub mod encode;
pub mod engine;
pub mod evidence;
pub mod find;
pub mod output;

#[cfg(test)]
mod tests;
