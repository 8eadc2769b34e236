//! The row engine: pages → tuples → datums → encoder → writer. [`carve`] finds and formats the rows of one
//! page; [`engine`] runs it over a whole relation in parallel, in bounded memory, writing as it goes.

pub mod carve;
pub mod encode;
pub mod engine;
