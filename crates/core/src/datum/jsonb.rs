//! jsonb as jsonb_out prints it (`utils/adt/jsonb.c` JsonbToCString, `jsonb_util.c`, `utils/jsonb.h`).

use std::cell::Cell;
use std::fmt::Write as _;

use super::{format_numeric, varlena_any, DatumResult, Str};
use crate::format::bytes::u32_at;

const JB_CMASK: u32 = 0x0FFF_FFFF;
pub(super) const JB_FSCALAR: u32 = 0x1000_0000;
pub(super) const JB_FOBJECT: u32 = 0x2000_0000;
pub(super) const JB_FARRAY: u32 = 0x4000_0000;
const JENTRY_OFFLENMASK: u32 = 0x0FFF_FFFF;
const JENTRY_TYPEMASK: u32 = 0x7000_0000;
const JENTRY_HAS_OFF: u32 = 0x8000_0000;
pub(super) const JENTRY_ISSTRING: u32 = 0x0000_0000;
const JENTRY_ISNUMERIC: u32 = 0x1000_0000;
const JENTRY_ISBOOL_FALSE: u32 = 0x2000_0000;
pub(super) const JENTRY_ISBOOL_TRUE: u32 = 0x3000_0000;
const JENTRY_ISNULL: u32 = 0x4000_0000;
const JENTRY_ISCONTAINER: u32 = 0x5000_0000;

/// jsonb_out on a jsonb varlena payload.
pub fn format_jsonb(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    // Every value of a sound jsonb has its own 4-byte JEntry, so there are fewer than len/4 of them;
    // damaged offsets can make siblings share a nested container, and printing it again and again
    // would take exponential time.
    let budget = Cell::new(data.len() / 4 + 16);
    jsonb_container(data, &budget, out, 0)
}

fn intalign(x: usize) -> usize {
    (x + 3) & !3
}

/// `data` is the container (header word first). Offsets inside are relative to the start of the
/// children's data area, which is 4-aligned in the original datum (4-byte varlena header + the
/// header word + 4 bytes per JEntry).
fn jsonb_container(data: &[u8], budget: &Cell<usize>, out: &mut Vec<u8>, depth: u32) -> DatumResult {
    if depth > 1000 {
        return Err("jsonb nesting is deeper than 1000".into());
    }
    let header = u32_at(data, 0).ok_or("jsonb container without its header")?;
    let count = (header & JB_CMASK) as usize;
    let is_object = header & JB_FOBJECT != 0;
    let is_array = header & JB_FARRAY != 0;
    if is_object == is_array {
        return Err(format!("jsonb container header 0x{header:08x} is neither an object nor an array"));
    }
    let c = Container::open(data, count, is_object, budget, depth)?;
    if is_array && header & JB_FSCALAR != 0 {
        if count != 1 {
            return Err(format!("jsonb scalar container holds {count} values"));
        }
        return c.value(0, out);
    }
    if is_array {
        out.push(b'[');
        for i in 0..count {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            c.value(i, out)?;
        }
        out.push(b']');
    } else {
        out.push(b'{');
        for i in 0..count {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            let (ty, start, end) = c.span(i)?;
            if ty != JENTRY_ISSTRING {
                return Err("jsonb object key is not a string".into());
            }
            push_json_string(&data[start..end], out);
            out.extend_from_slice(b": ");
            c.value(count + i, out)?;
        }
        out.push(b'}');
    }
    Ok(())
}

/// Offset of a container's JEntries: right after its header word.
const CHILDREN_AT: usize = 4;

/// A container's children, located: each one's JEntry and where its bytes lie.
struct Container<'a> {
    data: &'a [u8],
    /// Where the children's data area starts in `data` (after the header word and the JEntries).
    base: usize,
    /// Each child's start relative to `base`, then the end of the last.
    starts: Vec<usize>,
    budget: &'a Cell<usize>,
    depth: u32,
}

impl<'a> Container<'a> {
    /// An object's `count` pairs are 2·`count` children: its keys, then its values in the same order.
    fn open(
        data: &'a [u8],
        count: usize,
        is_object: bool,
        budget: &'a Cell<usize>,
        depth: u32,
    ) -> Result<Self, String> {
        let nchildren = if is_object { count.checked_mul(2).ok_or("jsonb count overflows")? } else { count };
        let entries = nchildren.checked_mul(4).ok_or("jsonb count overflows")?;
        let base = CHILDREN_AT.checked_add(entries).ok_or("overflow")?;
        if base > data.len() {
            return Err(format!("jsonb container claims {count} entries, more than its {} bytes hold", data.len()));
        }
        let mut c = Container { data, base, starts: Vec::with_capacity(nchildren + 1), budget, depth };
        // Each child starts where the previous ended: an entry holds its end offset (HAS_OFF, every
        // JB_OFFSET_STRIDE entries) or its length. One pass, not a walk back per child, so damaged
        // entries without HAS_OFF cost linear time.
        c.starts.push(0usize);
        for j in 0..nchildren {
            let e = c.entry(j);
            let v = (e & JENTRY_OFFLENMASK) as usize;
            let prev = c.starts[j];
            c.starts.push(if e & JENTRY_HAS_OFF != 0 { v } else { prev.wrapping_add(v) });
        }
        Ok(c)
    }

    fn entry(&self, i: usize) -> u32 {
        u32_at(self.data, CHILDREN_AT + i * 4).unwrap_or(0)
    }

    /// Child `i`'s type bits and its byte range in `data`.
    fn span(&self, i: usize) -> Result<(u32, usize, usize), String> {
        let e = self.entry(i);
        let off = self.starts[i];
        let len = if e & JENTRY_HAS_OFF != 0 {
            ((e & JENTRY_OFFLENMASK) as usize).checked_sub(off).ok_or("jsonb entry offsets go backwards")?
        } else {
            (e & JENTRY_OFFLENMASK) as usize
        };
        let start = self.base.checked_add(off).ok_or("overflow")?;
        let end = start.checked_add(len).ok_or("overflow")?;
        if end > self.data.len() {
            return Err(format!("jsonb entry {i} runs to byte {end}, past the container's {}", self.data.len()));
        }
        Ok((e & JENTRY_TYPEMASK, start, end))
    }

    /// Print child `i` as a value (a scalar or a nested container).
    fn value(&self, i: usize, out: &mut Vec<u8>) -> DatumResult {
        let left = self.budget.get().checked_sub(1).ok_or("jsonb holds more values than its size allows")?;
        self.budget.set(left);
        let (ty, start, end) = self.span(i)?;
        let data = self.data;
        let base = self.base;
        match ty {
            JENTRY_ISSTRING => push_json_string(&data[start..end], out),
            JENTRY_ISNUMERIC => {
                let s = base + intalign(start - base);
                let v = data.get(s..end).ok_or("jsonb numeric runs past its entry")?;
                let (payload, _) = varlena_any(v).ok_or("jsonb numeric has a bad varlena header")?;
                format_numeric(payload, out)?;
            }
            JENTRY_ISBOOL_FALSE => out.extend_from_slice(b"false"),
            JENTRY_ISBOOL_TRUE => out.extend_from_slice(b"true"),
            JENTRY_ISNULL => out.extend_from_slice(b"null"),
            JENTRY_ISCONTAINER => {
                let s = base + intalign(start - base);
                let v = data.get(s..end).ok_or("jsonb container runs past its entry")?;
                jsonb_container(v, self.budget, out, self.depth + 1)?;
            }
            t => return Err(format!("jsonb entry type 0x{t:08x} is unknown")),
        }
        Ok(())
    }
}

/// escape_json.
pub(super) fn push_json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            8 => out.extend_from_slice(b"\\b"),
            12 => out.extend_from_slice(b"\\f"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            c if c < 0x20 => {
                let _ = write!(Str(out), "\\u{:04x}", c);
            }
            c => out.push(c),
        }
    }
    out.push(b'"');
}
