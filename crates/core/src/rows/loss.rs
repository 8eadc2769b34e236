//! The evidence behind the loss account: for heap pages whose rows are in question (all zeroes, or a line pointer
//! array destroyed), every row the table's btree indexes still name there, whether the entries naming it are all
//! marked dead, its key in the table's unique key and whether that key names a row elsewhere too (then this one
//! was an older version), and whether the visibility map held the page all-visible (then no row on it was dead).
//! The counting and the words are the caller's; this reads the files once.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::format::vm;
use crate::rows::evidence::{walk_leaves, IndexFiles};
use crate::sources::blocks::{default_blcksz, default_relseg, BlockReader, SegFile};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LossConfig {
    pub indexes: Vec<IndexFiles>,
    /// The index (by name, among `indexes`) whose keys name rows: the primary key or another unique index.
    #[serde(default)]
    pub key_index: Option<String>,
    pub blocks: Vec<u64>,
    /// The heap's visibility map fork; empty when it has none.
    #[serde(default)]
    pub vm: Vec<SegFile>,
    #[serde(default = "default_blcksz")]
    pub blcksz: u32,
    #[serde(default = "default_relseg")]
    pub relseg_size: u32,
}

/// A row index entries name on a page in question.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NamedRow {
    pub lp: u16,
    pub indexes: Vec<String>,
    /// Every entry naming it is marked LP_DEAD: an index scan found the row dead to every transaction.
    pub dead: bool,
    /// Its key in the key index, hex; None when that index does not name it.
    pub key: Option<String>,
    /// Another row the same key names, outside the pages in question (block, line pointer).
    pub elsewhere: Option<(u64, u16)>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PageEvidence {
    pub block: u64,
    /// The visibility map's all-visible bit for the page; None when there is no map or it cannot be read.
    pub all_visible: Option<bool>,
    pub rows: Vec<NamedRow>,
}

/// The visibility map's all-visible bit of `block`.
fn all_visible(reader: &BlockReader, block: u64, blcksz: u32) -> Option<bool> {
    let (vm_block, byte, shift) = vm::locate(block, blcksz);
    let page = reader.read(vm_block, 1).ok()?;
    let b = page.get(byte)?;
    Some((b >> shift) & vm::VISIBILITYMAP_ALL_VISIBLE != 0)
}

/// Everything the table's indexes and visibility map say about the rows of `cfg.blocks`.
pub fn loss_evidence(cfg: &LossConfig) -> Result<Vec<PageEvidence>> {
    let want: HashSet<u64> = cfg.blocks.iter().copied().collect();
    let mut named: Named = BTreeMap::new();
    let key_ix = cfg.indexes.iter().find(|ix| cfg.key_index.as_deref() == Some(ix.name.as_str()));
    for ix in &cfg.indexes {
        let keyed = key_ix.is_some_and(|k| k.name == ix.name);
        walk_leaves(ix, cfg.blcksz, cfg.relseg_size, |e| {
            if !want.contains(&e.block) {
                return;
            }
            let slot = named.entry((e.block, e.lp)).or_default();
            if !slot.0.contains(&ix.name) {
                slot.0.push(ix.name.clone());
            }
            slot.1 += 1;
            slot.2 += u32::from(e.dead);
            if keyed && !e.dead {
                slot.3 = Some(e.key.to_vec());
            }
        })?;
    }
    let elsewhere = match key_ix {
        Some(ix) => rows_elsewhere(ix, cfg, &want, &named)?,
        None => HashMap::new(),
    };
    let vm_reader = (!cfg.vm.is_empty()).then(|| BlockReader::new(&cfg.vm, cfg.blcksz, cfg.relseg_size));
    let mut out: Vec<PageEvidence> = Vec::new();
    let mut blocks: Vec<u64> = want.into_iter().collect();
    blocks.sort_unstable();
    for block in blocks {
        let rows = named
            .range((block, 0)..=(block, u16::MAX))
            .map(|(&(_, lp), (indexes, entries, dead, key))| NamedRow {
                lp,
                indexes: indexes.clone(),
                dead: *dead == *entries,
                elsewhere: key.as_ref().and_then(|k| elsewhere.get(k).copied()),
                key: key.as_deref().map(hex),
            })
            .collect();
        let all_visible = vm_reader.as_ref().and_then(|r| all_visible(r, block, cfg.blcksz));
        out.push(PageEvidence { block, all_visible, rows });
    }
    Ok(out)
}

/// (block, lp) -> (indexes naming it, entries naming it, of them dead, key).
type Named = BTreeMap<(u64, u16), (Vec<String>, u32, u32, Option<Vec<u8>>)>;

/// For each key of a row on the pages in question: a live entry with the same key pointing outside them.
fn rows_elsewhere(
    ix: &IndexFiles,
    cfg: &LossConfig,
    want: &HashSet<u64>,
    named: &Named,
) -> Result<HashMap<Vec<u8>, (u64, u16)>> {
    let keys: HashSet<&[u8]> = named.values().filter_map(|v| v.3.as_deref()).collect();
    let mut out: HashMap<Vec<u8>, (u64, u16)> = HashMap::new();
    if keys.is_empty() {
        return Ok(out);
    }
    walk_leaves(ix, cfg.blcksz, cfg.relseg_size, |e| {
        if !e.dead && !want.contains(&e.block) && keys.contains(e.key) {
            out.entry(e.key.to_vec()).or_insert((e.block, e.lp));
        }
    })?;
    Ok(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
