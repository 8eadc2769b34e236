//! How pg_attribute describes itself. Every catalog's columns are rows of pg_attribute, pg_attribute's own included,
//! so its layout is found from its rows rather than written down per major version: the first three columns
//! (`attrelid oid`, `attname name`, `atttypid oid`) have kept their place since PostgreSQL 7.3, and the rows with
//! `attrelid = 1249` name every other column and its type. Only `attnum`'s place is guessed: the place is taken when
//! the layout those rows give, laid out with the storage of the built-in types, puts `attnum` exactly there.

use crate::error::{CoreError, Result};
use crate::format::heap::HeapTupleHeaderData;
use crate::format::itemid::LP_NORMAL;
use crate::format::page::Page;
use crate::format::tuple::{align_nominal, AttrDesc, RelDesc};
use crate::sources::blocks::BlockReader;
use crate::visibility::xact::{judge, Clog, StatusSources, Verdict};
use std::collections::HashMap;

/// `AttributeRelationId` (catalog/pg_attribute.h).
pub const ATTRIBUTE_RELATION_ID: u32 = 1249;
/// `NAMEDATALEN` (pg_config_manual.h).
pub const NAMEDATALEN: usize = 64;

/// Storage of the fixed-width built-in types catalogs use (typlen, typalign, typbyval), by OID
/// (catalog/pg_type.dat): bool, char, name, int8, int2, int4, regproc, oid, xid, cid, float4, float8.
pub fn fixed_type_storage(typid: u32) -> Option<(i16, u8, bool)> {
    Some(match typid {
        16 | 18 => (1, b'c', true),
        19 => (NAMEDATALEN as i16, b'c', false),
        20 => (8, b'd', true),
        21 => (2, b's', true),
        23 | 24 | 26 | 28 | 29 | 700 => (4, b'i', true),
        701 => (8, b'd', true),
        _ => return None,
    })
}

/// A column of a catalog, as pg_attribute describes it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CatAttr {
    pub attnum: i16,
    pub name: String,
    pub typid: u32,
    pub attlen: i16,
    #[serde(serialize_with = "ser_char")]
    pub attalign: u8,
    pub attbyval: bool,
    #[serde(serialize_with = "ser_char")]
    pub attstorage: u8,
    pub dropped: bool,
}

fn ser_char<S: serde::Serializer>(v: &u8, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(&char::from(*v).to_string())
}

/// The tuple data (past t_hoff) of every visible tuple of a heap file whose data starts with `first4`.
pub(crate) fn visible_tuples_starting(
    reader: &BlockReader,
    nblocks: u64,
    blcksz: usize,
    clog: &Clog,
    first4: [u8; 4],
) -> Vec<Vec<u8>> {
    let server = HashMap::new();
    let multis = HashMap::new();
    let src = StatusSources { clog, server: &server, can_ask: false, multis: &multis, horizons: None };
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for block in 0..nblocks {
        if reader.read_into(block, 1, &mut buf).is_err() {
            continue;
        }
        let Some(page) = Page::new(&buf[..blcksz.min(buf.len())]) else { continue };
        if !page.header_is_sane(blcksz) {
            continue;
        }
        for (_, id) in page.item_ids() {
            if id.lp_flags() != LP_NORMAL {
                continue;
            }
            let Some(t) = page.item_bytes(id) else { continue };
            let Some(h) = HeapTupleHeaderData::parse(t) else { continue };
            let hoff = usize::from(h.t_hoff);
            if t.len() < hoff + 4 || t[hoff..hoff + 4] != first4 {
                continue;
            }
            if judge(&h, &src).verdict == Verdict::Live {
                out.push(t[hoff..].to_vec());
            }
        }
    }
    out
}

fn i16_at(d: &[u8], at: usize) -> Option<i16> {
    Some(i16::from_le_bytes([*d.get(at)?, *d.get(at + 1)?]))
}

fn cstring(d: &[u8]) -> String {
    let end = d.iter().position(|b| *b == 0).unwrap_or(d.len());
    String::from_utf8_lossy(&d[..end]).into_owned()
}

/// Byte offsets of the leading fixed-width columns of `cols` (in attnum order), up to the first column of a type
/// without a known fixed storage. Catalog rows keep their fixed-width, NOT NULL columns first, so these offsets hold
/// in every row.
fn fixed_offsets(cols: &[(i16, String, u32)]) -> Vec<(String, usize, i16, u8)> {
    let mut off = 0usize;
    let mut out = Vec::new();
    for (_, name, typid) in cols {
        let Some((len, align, _)) = fixed_type_storage(*typid) else { break };
        off = align_nominal(off, align);
        out.push((name.clone(), off, len, align));
        off += len as usize;
    }
    out
}

/// pg_attribute's own tuple descriptor, read from its rows in `reader`.
pub fn attribute_layout(reader: &BlockReader, nblocks: u64, blcksz: usize, clog: &Clog) -> Result<Vec<CatAttr>> {
    let rows = visible_tuples_starting(reader, nblocks, blcksz, clog, ATTRIBUTE_RELATION_ID.to_le_bytes());
    let named: Vec<(String, u32, &Vec<u8>)> = rows
        .iter()
        .filter(|d| d.len() >= 4 + NAMEDATALEN + 4)
        .map(|d| {
            let typid = u32::from_le_bytes([d[68], d[69], d[70], d[71]]);
            (cstring(&d[4..4 + NAMEDATALEN]), typid, d)
        })
        .collect();
    let bad = |detail: String| CoreError::Format { what: "pg_attribute", detail };
    if named.len() < 10 {
        return Err(bad(format!(
            "found {} visible rows describing pg_attribute itself; its pages or pg_xact are damaged",
            named.len()
        )));
    }
    for off in (4 + NAMEDATALEN + 4..160).step_by(2) {
        let mut cols: Vec<(i16, String, u32)> = Vec::new();
        let mut ok = true;
        for (name, typid, d) in &named {
            match i16_at(d, off) {
                Some(n) if n != 0 => cols.push((n, name.clone(), *typid)),
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        let mut user: Vec<(i16, String, u32)> = cols.iter().filter(|c| c.0 > 0).cloned().collect();
        user.sort();
        let consecutive = user.iter().enumerate().all(|(i, c)| c.0 as usize == i + 1);
        if user.is_empty() || !consecutive {
            continue;
        }
        let fixed = fixed_offsets(&user);
        let at = |n: &str| fixed.iter().find(|f| f.0 == n).map(|f| f.1);
        if at("attrelid") != Some(0)
            || at("attname") != Some(4)
            || at("atttypid") != Some(68)
            || at("attnum") != Some(off)
        {
            continue;
        }
        let (Some(len_at), Some(align_at), Some(byval_at), Some(storage_at)) =
            (at("attlen"), at("attalign"), at("attbyval"), at("attstorage"))
        else {
            continue;
        };
        // The self rows now say each column's storage; it must agree with the layout used to read them.
        let mut attrs = Vec::new();
        for (attnum, name, typid) in &user {
            let d = named.iter().find(|n| &n.0 == name).map(|n| n.2).ok_or_else(|| bad(name.clone()))?;
            let attlen = i16_at(d, len_at).unwrap_or(0);
            let attalign = d.get(align_at).copied().unwrap_or(0);
            attrs.push(CatAttr {
                attnum: *attnum,
                name: name.clone(),
                typid: *typid,
                attlen,
                attalign,
                attbyval: d.get(byval_at).copied().unwrap_or(0) != 0,
                attstorage: d.get(storage_at).copied().unwrap_or(b'p'),
                dropped: false,
            });
        }
        let agrees = fixed.iter().all(|(name, _, len, align)| {
            attrs.iter().any(|a| &a.name == name && a.attlen == *len && a.attalign == *align)
        });
        if agrees && attrs.iter().all(|a| matches!(a.attalign, b'c' | b's' | b'i' | b'd')) {
            return Ok(attrs);
        }
    }
    Err(bad("its rows do not describe a layout with attrelid, attname, atttypid and attnum in place".into()))
}

/// A RelDesc for a catalog from its pg_attribute rows (`attrs`, user columns).
pub fn rel_desc(attrs: &[CatAttr], toast_relid: u32) -> RelDesc {
    described(attrs, toast_relid, |_| String::new())
}

/// A RelDesc from a relation's pg_attribute rows (`attrs`; system columns left out), each type named by `typname`.
pub fn described(attrs: &[CatAttr], toast_relid: u32, typname: impl Fn(u32) -> String) -> RelDesc {
    let mut v: Vec<&CatAttr> = attrs.iter().filter(|a| a.attnum > 0).collect();
    v.sort_by_key(|a| a.attnum);
    RelDesc {
        natts: v.last().map_or(0, |a| a.attnum as u16),
        attrs: v
            .iter()
            .map(|a| AttrDesc {
                attnum: a.attnum,
                attlen: a.attlen,
                attalign: a.attalign,
                attbyval: a.attbyval,
                attisdropped: a.dropped,
                typname: typname(a.typid),
                attstorage: a.attstorage,
            })
            .collect(),
        has_toast: toast_relid != 0,
        toast_relid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::blocks::SegFile;

    /// Pages of random bytes, and pages of plausible headers over random tuples: the layout is refused, never a
    /// panic, and a valid-looking random file never yields a layout by chance.
    #[test]
    fn garbage_is_refused() {
        let dir = std::env::temp_dir().join(format!("pgsurgeon-boot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("1249");
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..40 {
            let mut file = vec![0u8; 8192 * 4];
            for b in file.iter_mut() {
                *b = next() as u8;
            }
            if round % 2 == 0 {
                for p in 0..4 {
                    let page = &mut file[p * 8192..(p + 1) * 8192];
                    page[12..14].copy_from_slice(&(24u16 + 4 * 20).to_le_bytes()); // pd_lower: 20 items
                    page[14..16].copy_from_slice(&4000u16.to_le_bytes());
                    page[16..18].copy_from_slice(&8192u16.to_le_bytes());
                    page[18..20].copy_from_slice(&(8192u16 | 4).to_le_bytes());
                }
            }
            std::fs::write(&path, &file).unwrap();
            let reader = BlockReader::new(&[SegFile { segno: 0, path: path.clone() }], 8192, 131072);
            let clog = Clog::bare(None, 8192, true);
            assert!(attribute_layout(&reader, 4, 8192, &clog).is_err());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
