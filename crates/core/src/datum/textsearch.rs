//! tsvector and tsquery (`utils/adt/tsvector.c` tsvectorout, `utils/adt/tsquery.c` tsqueryout,
//! layouts from `tsearch/ts_type.h`).

use super::{push_display, DatumResult};
use crate::format::bytes::{u16_at, u32_at};

/// A lexeme or operand in single quotes, quote and backslash doubled.
fn quoted(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'\'');
    for &c in s {
        if c == b'\'' || c == b'\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push(b'\'');
}

/// TSVectorData: size, WordEntry[size] (bit 0 haspos, bits 1–11 len, bits 12–31 pos into the
/// string area), the string area; a lexeme with positions is followed (at a 2-aligned offset in
/// the string area) by a uint16 count and WordEntryPos values (weight in bits 14–15, position below).
pub(super) fn format_tsvector(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let size = u32_at(data, 0).ok_or("tsvector without its size")? as usize;
    let strs_at = size.checked_mul(4).and_then(|n| n.checked_add(4)).ok_or("tsvector size overflows")?;
    let strs =
        data.get(strs_at..).ok_or_else(|| format!("tsvector of {size} lexemes has only {} bytes", data.len()))?;
    for i in 0..size {
        let e = u32_at(data, 4 + 4 * i).unwrap_or(0);
        let haspos = e & 1 != 0;
        let len = ((e >> 1) & 0x7FF) as usize;
        let pos = (e >> 12) as usize;
        let lexeme = strs.get(pos..pos + len).ok_or_else(|| format!("tsvector lexeme {i} runs past the value"))?;
        if i > 0 {
            out.push(b' ');
        }
        quoted(lexeme, out);
        if !haspos {
            continue;
        }
        let at = (pos + len + 1) & !1;
        let npos = usize::from(u16_at(strs, at).ok_or_else(|| format!("tsvector lexeme {i} lacks its positions"))?);
        for k in 0..npos {
            let wp = u16_at(strs, at + 2 + 2 * k).ok_or_else(|| format!("tsvector lexeme {i} positions run past"))?;
            out.push(if k == 0 { b':' } else { b',' });
            push_display(out, wp & 0x3FFF);
            match wp >> 14 {
                3 => out.push(b'A'),
                2 => out.push(b'B'),
                1 => out.push(b'C'),
                _ => {}
            }
        }
    }
    Ok(())
}

/// QueryItem types and operators (`tsearch/ts_type.h`).
const QI_VAL: u8 = 1;
const QI_OPR: u8 = 2;
const QI_VALSTOP: u8 = 3;
const OP_NOT: u8 = 1;
const OP_AND: u8 = 2;
const OP_OR: u8 = 3;
const OP_PHRASE: u8 = 4;
/// tsearch_op_priority (`utils/adt/tsquery.c`), indexed by operator - 1: NOT, AND, OR, PHRASE.
const PRIORITIES: [i32; 4] = [4, 2, 1, 3];
/// sizeof(QueryItem): the union of QueryOperand (12 bytes) and QueryOperator.
const ITEM: usize = 12;

struct Query<'a> {
    items: &'a [u8],
    operands: &'a [u8],
    n: usize,
    cur: usize,
}

impl Query<'_> {
    /// infix(): the items are in prefix order (operator, right operand, left operand); operators
    /// of lower priority than their parent, and a phrase operator on the right of a phrase
    /// operator, are parenthesised.
    fn infix(&mut self, parent: i32, right_phrase: bool, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        if depth > 1000 {
            return Err("tsquery nesting is deeper than 1000".into());
        }
        if self.cur >= self.n {
            return Err("tsquery operator lacks an operand".into());
        }
        let it = &self.items[self.cur * ITEM..(self.cur + 1) * ITEM];
        self.cur += 1;
        match it[0] {
            QI_VAL | QI_VALSTOP => {
                let weight = it[1];
                let prefix = it[2] != 0;
                let bits = u32_at(it, 8).unwrap_or(0);
                let (len, dist) = ((bits & 0xFFF) as usize, (bits >> 12) as usize);
                let s = self.operands.get(dist..dist + len).ok_or("tsquery operand runs past the value")?;
                quoted(s, out);
                if weight != 0 || prefix {
                    out.push(b':');
                    if prefix {
                        out.push(b'*');
                    }
                    for (bit, c) in [(8, b'A'), (4, b'B'), (2, b'C'), (1, b'D')] {
                        if weight & bit != 0 {
                            out.push(c);
                        }
                    }
                }
            }
            QI_OPR => {
                let op = it[1];
                if !(OP_NOT..=OP_PHRASE).contains(&op) {
                    return Err(format!("tsquery operator {op} is unknown"));
                }
                let prio = PRIORITIES[usize::from(op - 1)];
                if op == OP_NOT {
                    let paren = prio < parent;
                    if paren {
                        out.extend_from_slice(b"( ");
                    }
                    out.push(b'!');
                    self.infix(prio, false, out, depth + 1)?;
                    if paren {
                        out.extend_from_slice(b" )");
                    }
                    return Ok(());
                }
                let distance = i16::from_le_bytes([it[2], it[3]]);
                let paren = prio < parent || (op == OP_PHRASE && right_phrase);
                if paren {
                    out.extend_from_slice(b"( ");
                }
                let mut right = Vec::new();
                self.infix(prio, op == OP_PHRASE, &mut right, depth + 1)?;
                self.infix(prio, false, out, depth + 1)?;
                match op {
                    OP_OR => out.extend_from_slice(b" | "),
                    OP_AND => out.extend_from_slice(b" & "),
                    _ if distance != 1 => {
                        out.extend_from_slice(b" <");
                        push_display(out, distance);
                        out.extend_from_slice(b"> ");
                    }
                    _ => out.extend_from_slice(b" <-> "),
                }
                out.extend_from_slice(&right);
                if paren {
                    out.extend_from_slice(b" )");
                }
            }
            t => return Err(format!("tsquery item type {t} is unknown")),
        }
        Ok(())
    }
}

/// TSQueryData: size, QueryItem[size] in prefix order, then the operands' NUL-terminated text.
pub(super) fn format_tsquery(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let n = u32_at(data, 0).ok_or("tsquery without its size")? as usize;
    if n == 0 {
        return Ok(());
    }
    let end = n.checked_mul(ITEM).and_then(|b| b.checked_add(4)).ok_or("tsquery size overflows")?;
    let items = data.get(4..end).ok_or_else(|| format!("tsquery of {n} items has only {} bytes", data.len()))?;
    let mut q = Query { items, operands: &data[end..], n, cur: 0 };
    q.infix(-1, false, out, 0)?;
    if q.cur != n {
        return Err(format!("tsquery holds {n} items but its expression uses {}", q.cur));
    }
    Ok(())
}
