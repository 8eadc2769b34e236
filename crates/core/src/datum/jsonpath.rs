//! jsonpath (`utils/adt/jsonpath.c` jsonpath_out/printJsonPathItem, layout from
//! flattenJsonPathParseItem and `utils/jsonpath.h`): a header word (version, lax flag), then items
//! each made of a type byte, an int-aligned position of the next item, and type-specific fields;
//! positions are relative to the item that holds them.

use super::{format_numeric, push_display, push_json_string, DatumResult};
use crate::format::bytes::u32_at;

/// JSONPATH_LAX (`utils/jsonpath.h`).
const JSONPATH_LAX: u32 = 0x8000_0000;

// JsonPathItemType (`utils/jsonpath.h`): on-disk values, new ones only ever appended.
const NULL: u8 = 0;
const STRING: u8 = 1;
const NUMERIC: u8 = 2;
const BOOL: u8 = 3;
const AND: u8 = 4;
const OR: u8 = 5;
const NOT: u8 = 6;
const IS_UNKNOWN: u8 = 7;
const EQUAL: u8 = 8;
const MOD: u8 = 18;
const PLUS: u8 = 19;
const MINUS: u8 = 20;
const ANY_ARRAY: u8 = 21;
const ANY_KEY: u8 = 22;
const INDEX_ARRAY: u8 = 23;
const ANY: u8 = 24;
const KEY: u8 = 25;
const CURRENT: u8 = 26;
const ROOT: u8 = 27;
const VARIABLE: u8 = 28;
const FILTER: u8 = 29;
const EXISTS: u8 = 30;
const TYPE: u8 = 31;
const DATETIME: u8 = 37;
const KEY_VALUE: u8 = 38;
const LAST: u8 = 40;
const STARTS_WITH: u8 = 41;
const LIKE_REGEX: u8 = 42;
const BIGINT: u8 = 43;
const DECIMAL: u8 = 46;
const TIME: u8 = 50;
const TIMESTAMP_TZ: u8 = 53;

/// Binary operators (jspOperationName), from AND to MOD.
const BINARY: [&str; 15] = ["&&", "||", "", "", "==", "!=", "<", ">", "<=", ">=", "+", "-", "*", "/", "%"];
/// Method names (jspOperationName) from TYPE to KEY_VALUE, and from BIGINT to TIMESTAMP_TZ (17+); DATETIME,
/// DECIMAL and TIME to TIMESTAMP_TZ take an optional argument.
const METHODS: [&str; 8] = ["type", "size", "abs", "floor", "ceiling", "double", "datetime", "keyvalue"];
const METHODS17: [&str; 11] = [
    "bigint",
    "boolean",
    "date",
    "decimal",
    "integer",
    "number",
    "string",
    "time",
    "time_tz",
    "timestamp",
    "timestamp_tz",
];

/// operationPriority.
fn priority(t: u8) -> i32 {
    match t {
        OR => 0,
        AND => 1,
        EQUAL..=13 | STARTS_WITH => 2,
        14 | 15 => 3,
        16..=MOD => 4,
        PLUS | MINUS => 5,
        _ => 6,
    }
}

struct Path<'a> {
    d: &'a [u8],
    /// Items left to print: a sound path prints each item once and each takes at least 8 bytes;
    /// damaged positions can make operands share a subtree, which would take exponential time.
    budget: std::cell::Cell<usize>,
}

struct Item {
    t: u8,
    pos: usize,
    next: i32,
    /// offset of the type-specific fields
    at: usize,
}

impl Path<'_> {
    fn i32(&self, at: usize) -> Result<i32, String> {
        u32_at(self.d, at).map(|v| v as i32).ok_or_else(|| format!("jsonpath field at {at} runs past the value"))
    }

    fn item(&self, pos: usize) -> Result<Item, String> {
        let t = *self.d.get(pos).ok_or_else(|| format!("jsonpath item at {pos} lies past the value"))?;
        let at = (pos + 1 + 3) & !3;
        Ok(Item { t, pos, next: self.i32(at)?, at: at + 4 })
    }

    fn rel(&self, it: &Item, off: i32) -> Result<usize, String> {
        it.pos.checked_add_signed(off as isize).ok_or_else(|| "jsonpath position overflows".to_string())
    }

    fn child(&self, it: &Item, field: usize) -> Result<Option<Item>, String> {
        let off = self.i32(it.at + 4 * field)?;
        if off == 0 {
            return Ok(None);
        }
        Ok(Some(self.item(self.rel(it, off)?)?))
    }

    fn arg(&self, it: &Item, field: usize) -> Result<Item, String> {
        self.child(it, field)?.ok_or_else(|| "jsonpath operator without its operand".into())
    }

    fn string(&self, it: &Item) -> Result<&[u8], String> {
        let len = usize::try_from(self.i32(it.at)?).map_err(|_| "jsonpath string length is negative")?;
        self.d.get(it.at + 4..it.at + 4 + len).ok_or_else(|| "jsonpath string runs past the value".into())
    }

    /// printJsonPathItem: `it` and the chain of items after it (accessors, methods). `in_key`: `it` follows
    /// another item, so a key or wildcard takes a '.'; `brackets`: an operator must parenthesize itself.
    fn print(&self, it: &Item, in_key: bool, brackets: bool, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        if depth > 1000 {
            return Err("jsonpath nesting is deeper than 1000".into());
        }
        let left = self.budget.get().checked_sub(1).ok_or("jsonpath holds more items than its size allows")?;
        self.budget.set(left);
        self.print_item(it, in_key, brackets, out, depth)?;
        if it.next > 0 {
            let n = self.item(self.rel(it, it.next)?)?;
            if n.pos <= it.pos {
                return Err("jsonpath next item goes backwards".into());
            }
            self.print(&n, true, true, out, depth + 1)?;
        }
        Ok(())
    }

    /// An operand or argument of an item at `depth`: printed without a leading '.'.
    fn operand(&self, arg: &Item, brackets: bool, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        self.print(arg, false, brackets, out, depth + 1)
    }

    /// One item, without the items chained after it.
    fn print_item(&self, it: &Item, in_key: bool, brackets: bool, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        match it.t {
            NULL => out.extend_from_slice(b"null"),
            STRING => push_json_string(self.string(it)?, out),
            NUMERIC => self.print_numeric(it, out)?,
            BOOL => {
                let b = *self.d.get(it.at).ok_or("jsonpath bool runs past the value")?;
                out.extend_from_slice(if b != 0 { b"true" } else { b"false" });
            }
            AND..=MOD | STARTS_WITH if it.t != NOT && it.t != IS_UNKNOWN => {
                self.print_binary(it, brackets, out, depth)?
            }
            NOT | IS_UNKNOWN | FILTER | EXISTS => {
                out.extend_from_slice(match it.t {
                    NOT => b"!(".as_slice(),
                    IS_UNKNOWN => b"(",
                    FILTER => b"?(",
                    _ => b"exists (",
                });
                self.operand(&self.arg(it, 0)?, false, out, depth)?;
                out.extend_from_slice(if it.t == IS_UNKNOWN { b") is unknown".as_slice() } else { b")" });
            }
            PLUS | MINUS => bracketed(brackets, out, |out| {
                out.push(if it.t == PLUS { b'+' } else { b'-' });
                let a = self.arg(it, 0)?;
                self.operand(&a, priority(a.t) <= priority(it.t), out, depth)
            })?,
            ANY_ARRAY => out.extend_from_slice(b"[*]"),
            ANY_KEY => {
                if in_key {
                    out.push(b'.');
                }
                out.push(b'*');
            }
            INDEX_ARRAY => self.print_subscripts(it, out, depth)?,
            ANY => self.print_any(it, in_key, out)?,
            KEY => {
                if in_key {
                    out.push(b'.');
                }
                push_json_string(self.string(it)?, out);
            }
            CURRENT => out.push(b'@'),
            ROOT => out.push(b'$'),
            VARIABLE => {
                out.push(b'$');
                push_json_string(self.string(it)?, out);
            }
            LAST => out.extend_from_slice(b"last"),
            LIKE_REGEX => self.print_like_regex(it, brackets, out, depth)?,
            TYPE..=KEY_VALUE | BIGINT..=TIMESTAMP_TZ => self.print_method(it, out, depth)?,
            t => return Err(format!("jsonpath item type {t} is unknown")),
        }
        Ok(())
    }

    /// A numeric literal, parenthesized when an item follows it (as printJsonPathItem does).
    fn print_numeric(&self, it: &Item, out: &mut Vec<u8>) -> DatumResult {
        let word = u32_at(self.d, it.at).ok_or("jsonpath numeric runs past the value")?;
        let n = (word >> 2) as usize;
        let v = self.d.get(it.at + 4..it.at + n.max(4)).ok_or("jsonpath numeric runs past the value")?;
        if it.next > 0 {
            out.push(b'(');
        }
        format_numeric(v, out)?;
        if it.next > 0 {
            out.push(b')');
        }
        Ok(())
    }

    /// `left op right`; an operand binding no tighter than the operator is parenthesized.
    fn print_binary(&self, it: &Item, brackets: bool, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        bracketed(brackets, out, |out| {
            let l = self.arg(it, 0)?;
            self.operand(&l, priority(l.t) <= priority(it.t), out, depth)?;
            out.push(b' ');
            out.extend_from_slice(if it.t == STARTS_WITH {
                b"starts with".as_slice()
            } else {
                BINARY[usize::from(it.t - AND)].as_bytes()
            });
            out.push(b' ');
            let r = self.arg(it, 1)?;
            self.operand(&r, priority(r.t) <= priority(it.t), out, depth)
        })
    }

    /// `[a, b to c]`: a count, then a (from, to) pair of positions per subscript; `to` 0 when there is none.
    fn print_subscripts(&self, it: &Item, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        let n = usize::try_from(self.i32(it.at)?).map_err(|_| "jsonpath subscript count is negative")?;
        out.push(b'[');
        for i in 0..n {
            if i > 0 {
                out.push(b',');
            }
            let from = self.i32(it.at + 4 + 8 * i)?;
            let to = self.i32(it.at + 8 + 8 * i)?;
            self.operand(&self.item(self.rel(it, from)?)?, false, out, depth)?;
            if to != 0 {
                out.extend_from_slice(b" to ");
                self.operand(&self.item(self.rel(it, to)?)?, false, out, depth)?;
            }
        }
        out.push(b']');
        Ok(())
    }

    /// `**`, `**{n}` or `**{n to m}`, where u32::MAX is `last`.
    fn print_any(&self, it: &Item, in_key: bool, out: &mut Vec<u8>) -> DatumResult {
        if in_key {
            out.push(b'.');
        }
        let first = self.i32(it.at)? as u32;
        let last = self.i32(it.at + 4)? as u32;
        let bound = |v: u32, out: &mut Vec<u8>| {
            if v == u32::MAX {
                out.extend_from_slice(b"last");
            } else {
                push_display(out, v);
            }
        };
        if first == 0 && last == u32::MAX {
            out.extend_from_slice(b"**");
        } else {
            out.extend_from_slice(b"**{");
            bound(first, out);
            if first != last {
                out.extend_from_slice(b" to ");
                bound(last, out);
            }
            out.push(b'}');
        }
        Ok(())
    }

    /// `expr like_regex "pattern" flag "…"`: flags, the expression's position, then the pattern's length and text.
    fn print_like_regex(&self, it: &Item, brackets: bool, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        bracketed(brackets, out, |out| {
            let flags = self.i32(it.at)? as u32;
            let expr = self.item(self.rel(it, self.i32(it.at + 4)?)?)?;
            self.operand(&expr, priority(expr.t) <= priority(it.t), out, depth)?;
            out.extend_from_slice(b" like_regex ");
            let len = usize::try_from(self.i32(it.at + 8)?).map_err(|_| "jsonpath pattern length is negative")?;
            let pat = self.d.get(it.at + 12..it.at + 12 + len).ok_or("jsonpath pattern runs past the value")?;
            push_json_string(pat, out);
            if flags != 0 {
                // JSP_REGEX_ICASE, DOTALL, MLINE, WSPACE, QUOTE (utils/jsonpath.h)
                out.extend_from_slice(b" flag \"");
                for (bit, c) in [(1, b'i'), (2, b's'), (4, b'm'), (8, b'x'), (0x10, b'q')] {
                    if flags & bit != 0 {
                        out.push(c);
                    }
                }
                out.push(b'"');
            }
            Ok(())
        })
    }

    /// An item method: `.name()`, or with its optional arguments for decimal, datetime and time to timestamp_tz.
    fn print_method(&self, it: &Item, out: &mut Vec<u8>, depth: u32) -> DatumResult {
        match it.t {
            DECIMAL => {
                out.extend_from_slice(b".decimal(");
                if let Some(l) = self.child(it, 0)? {
                    self.operand(&l, false, out, depth)?;
                }
                if let Some(r) = self.child(it, 1)? {
                    out.push(b',');
                    self.operand(&r, false, out, depth)?;
                }
                out.push(b')');
            }
            DATETIME | TIME..=TIMESTAMP_TZ => {
                let name = if it.t == DATETIME { "datetime" } else { METHODS17[usize::from(it.t - BIGINT)] };
                out.push(b'.');
                out.extend_from_slice(name.as_bytes());
                out.push(b'(');
                if let Some(a) = self.child(it, 0)? {
                    self.operand(&a, false, out, depth)?;
                }
                out.push(b')');
            }
            TYPE..=KEY_VALUE => {
                out.push(b'.');
                out.extend_from_slice(METHODS[usize::from(it.t - TYPE)].as_bytes());
                out.extend_from_slice(b"()");
            }
            BIGINT..=TIMESTAMP_TZ => {
                out.push(b'.');
                out.extend_from_slice(METHODS17[usize::from(it.t - BIGINT)].as_bytes());
                out.extend_from_slice(b"()");
            }
            t => return Err(format!("jsonpath item type {t} is unknown")),
        }
        Ok(())
    }
}

/// `(…)` around what `f` prints when `brackets` says so.
fn bracketed(brackets: bool, out: &mut Vec<u8>, f: impl FnOnce(&mut Vec<u8>) -> DatumResult) -> DatumResult {
    if brackets {
        out.push(b'(');
    }
    f(out)?;
    if brackets {
        out.push(b')');
    }
    Ok(())
}

/// jsonpath_out on the varlena payload.
pub(super) fn format_jsonpath(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let header = u32_at(data, 0).ok_or("jsonpath without its header")?;
    if header & !JSONPATH_LAX != 1 {
        return Err(format!("jsonpath version {} is unknown", header & !JSONPATH_LAX));
    }
    if header & JSONPATH_LAX == 0 {
        out.extend_from_slice(b"strict ");
    }
    // positions count from the data after the header; the data is int-aligned in the datum
    let d = &data[4..];
    let p = Path { d, budget: std::cell::Cell::new(d.len() / 8 + 1) };
    let root = p.item(0)?;
    p.print(&root, false, true, out, 0)
}
