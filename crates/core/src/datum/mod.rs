//! Column values as PostgreSQL's output functions print them, from their on-disk bytes: what
//! `COPY … TO` would write for a row with these settings: `DateStyle = 'ISO, MDY'`,
//! `IntervalStyle = postgres`, `TimeZone = UTC`, `extra_float_digits = 1`, `bytea_output = hex`,
//! `lc_monetary = 'C'` (the salvage sessions set the same, so rows read through SQL and carved rows
//! agree; money prints as `$1,234.56` / `-$0.05`).
//!
//! Sources: `utils/adt/{int,int8,float,numeric,bool,char,name,varlena,bytea,date,timestamp,uuid,
//! jsonb,jsonb_util,json,arrayfuncs,network,mac,varbit,enum,tid,pg_lsn}.c`,
//! `utils/adt/datetime.c` (EncodeDateOnly, EncodeDateTime, EncodeTimeOnly, EncodeInterval),
//! `common/d2s.c`/`f2s.c` (shortest float output), `commands/copyto.c` (CopyAttributeOutText/CSV);
//! the submodules name theirs (geometric types, ranges and multiranges, composites, tsvector and
//! tsquery, jsonpath, money, reg*, aclitem, int2vector/oidvector, pg_snapshot).
//!
//! What the bytes alone cannot tell travels in the [`TypeDesc`](crate::datum::TypeDesc) the catalog builds per column:
//! enum labels, a composite's attributes, a range's subtype, and for reg* and aclitem the names
//! the server prints for each OID. Where an output format changed between releases (pg_lsn in 19,
//! interval infinities in 17, `"char"` escapes in 15, aclitem's 64-bit privileges in 16),
//! [`OutputOptions::server_version_num`](crate::datum::OutputOptions::server_version_num) or the value's size decides.
//!
//! Values arrive already detoasted: `payload` is the varlena data without its header, or the
//! fixed-length bytes. Nothing here panics on bad bytes; a value that cannot be decoded is an
//! `Err` with the reason.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;

use crate::format::bytes::{u16_at, u32_at, u8_at};

mod geo;
mod jsonpath;
mod misc;
mod range;
mod record;
mod textsearch;

/// Built-in type OIDs (`catalog/pg_type.dat`).
pub mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const CHAR: u32 = 18;
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT2VECTOR: u32 = 22;
    pub const INT4: u32 = 23;
    pub const REGPROC: u32 = 24;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const TID: u32 = 27;
    pub const XID: u32 = 28;
    pub const CID: u32 = 29;
    pub const OIDVECTOR: u32 = 30;
    pub const JSON: u32 = 114;
    pub const PG_NODE_TREE: u32 = 194;
    pub const XML: u32 = 142;
    pub const POINT: u32 = 600;
    pub const LSEG: u32 = 601;
    pub const PATH: u32 = 602;
    pub const BOX: u32 = 603;
    pub const POLYGON: u32 = 604;
    pub const LINE: u32 = 628;
    pub const CIDR: u32 = 650;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const CIRCLE: u32 = 718;
    pub const MACADDR8: u32 = 774;
    pub const CASH: u32 = 790;
    pub const MACADDR: u32 = 829;
    pub const INET: u32 = 869;
    pub const ACLITEM: u32 = 1033;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIME: u32 = 1083;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const INTERVAL: u32 = 1186;
    pub const TIMETZ: u32 = 1266;
    pub const BIT: u32 = 1560;
    pub const VARBIT: u32 = 1562;
    pub const NUMERIC: u32 = 1700;
    pub const REFCURSOR: u32 = 1790;
    pub const REGPROCEDURE: u32 = 2202;
    pub const REGOPER: u32 = 2203;
    pub const REGOPERATOR: u32 = 2204;
    pub const REGCLASS: u32 = 2205;
    pub const REGTYPE: u32 = 2206;
    pub const UUID: u32 = 2950;
    pub const TXID_SNAPSHOT: u32 = 2970;
    pub const PG_LSN: u32 = 3220;
    pub const TSVECTOR: u32 = 3614;
    pub const TSQUERY: u32 = 3615;
    pub const REGCONFIG: u32 = 3734;
    pub const REGDICTIONARY: u32 = 3769;
    pub const JSONB: u32 = 3802;
    pub const JSONPATH: u32 = 4072;
    pub const REGNAMESPACE: u32 = 4089;
    pub const REGROLE: u32 = 4096;
    pub const REGCOLLATION: u32 = 4191;
    pub const PG_SNAPSHOT: u32 = 5038;
    pub const XID8: u32 = 5069;
}

/// A column's type, as the salvage SQL describes it (domains resolved to their base type).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TypeDesc {
    /// Base type OID.
    pub oid: u32,
    /// Base type name, for messages.
    #[serde(default)]
    pub name: String,
    /// pg_type.typtype: b base, e enum, c composite, r range, d domain (resolved), m multirange.
    #[serde(default = "default_typtype", deserialize_with = "crate::format::tuple::de_char")]
    pub typtype: u8,
    #[serde(default)]
    pub typlen: i16,
    #[serde(default = "default_align", deserialize_with = "crate::format::tuple::de_char")]
    pub typalign: u8,
    #[serde(default)]
    pub typbyval: bool,
    /// Array delimiter (pg_type.typdelim), ',' for all but box.
    #[serde(default = "default_delim", deserialize_with = "crate::format::tuple::de_char")]
    pub typdelim: u8,
    /// For arrays: the element type.
    #[serde(default)]
    pub elem: Option<Box<TypeDesc>>,
    /// For enums: pg_enum oid -> label.
    #[serde(default, deserialize_with = "de_labels")]
    pub enum_labels: HashMap<u32, String>,
    /// For composites: every attribute of the row type in attnum order, dropped ones included
    /// (values still hold them).
    #[serde(default)]
    pub fields: Vec<FieldDesc>,
    /// For ranges: the subtype; for multiranges: the range type (which has its subtype).
    #[serde(default)]
    pub subtype: Option<Box<TypeDesc>>,
    /// For reg* types: object oid -> the text the server prints for it (`oid::regclass::text`…);
    /// for aclitem: role oid -> role name (unquoted). An oid missing here prints as its number.
    #[serde(default, deserialize_with = "de_labels")]
    pub names: HashMap<u32, String>,
}

/// One attribute of a composite type.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FieldDesc {
    #[serde(default)]
    pub name: String,
    pub attlen: i16,
    #[serde(default = "default_align", deserialize_with = "crate::format::tuple::de_char")]
    pub attalign: u8,
    #[serde(default)]
    pub dropped: bool,
    /// None for a dropped attribute.
    #[serde(default, rename = "type")]
    pub r#type: Option<TypeDesc>,
    /// A table row type's attmissingval as text: what a value written before the attribute was added holds.
    #[serde(default)]
    pub missing: Option<String>,
}

fn default_typtype() -> u8 {
    b'b'
}
fn default_align() -> u8 {
    b'i'
}
fn default_delim() -> u8 {
    b','
}

fn de_labels<'de, D: serde::Deserializer<'de>>(d: D) -> Result<HashMap<u32, String>, D::Error> {
    // JSON object keys are strings; accept {"16390": "red"} or null.
    let m: Option<HashMap<String, String>> = Option::deserialize(d)?;
    let mut out = HashMap::new();
    for (k, v) in m.unwrap_or_default() {
        let k: u32 = k.parse().map_err(|_| serde::de::Error::custom(format!("enum label key {k:?} is not an oid")))?;
        out.insert(k, v);
    }
    Ok(out)
}

/// Settings the output depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputOptions {
    /// server_version_num (pg_lsn printing changed in 18).
    pub server_version_num: u32,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions { server_version_num: 180000 }
    }
}

/// Why a value could not be printed.
pub type DatumResult = Result<(), String>;

impl TypeDesc {
    /// Whether [`format_value`] knows this type.
    pub fn supported(&self) -> bool {
        if let Some(e) = &self.elem {
            return self.typlen == -1 && e.supported();
        }
        match self.typtype {
            b'e' => return true,
            b'c' => {
                return !self.fields.is_empty()
                    && self.fields.iter().all(|f| f.dropped || f.r#type.as_ref().is_some_and(|t| t.supported()))
            }
            b'r' | b'm' => return self.subtype.as_ref().is_some_and(|t| t.supported()),
            b'b' => {}
            _ => return false,
        }
        use oid::*;
        matches!(
            self.oid,
            BOOL | BYTEA
                | CHAR
                | NAME
                | INT8
                | INT2
                | INT4
                | TEXT
                | OID
                | TID
                | XID
                | CID
                | JSON
                | XML
                | POINT
                | CIDR
                | FLOAT4
                | FLOAT8
                | MACADDR8
                | MACADDR
                | INET
                | BPCHAR
                | VARCHAR
                | DATE
                | TIME
                | TIMESTAMP
                | TIMESTAMPTZ
                | INTERVAL
                | TIMETZ
                | BIT
                | VARBIT
                | NUMERIC
                | UUID
                | PG_LSN
                | JSONB
                | XID8
                | INT2VECTOR
                | OIDVECTOR
                | LSEG
                | PATH
                | BOX
                | POLYGON
                | LINE
                | CIRCLE
                | CASH
                | ACLITEM
                | REFCURSOR
                | TXID_SNAPSHOT
                | PG_SNAPSHOT
                | TSVECTOR
                | TSQUERY
                | JSONPATH
                | PG_NODE_TREE
        ) || misc::is_reg_type(self.oid)
    }
}

/// Append the text form of a value of type `t` to `out`. `data` is the payload: the fixed-length
/// bytes, or a varlena's data without its header (detoasted, decompressed).
pub fn format_value(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    if t.elem.is_some() && t.typlen == -1 {
        return format_array(data, t, opts, out);
    }
    match t.typtype {
        b'c' => return record::format_record(data, t, opts, out),
        b'r' => return range::format_range(data, t, opts, out),
        b'm' => return range::format_multirange(data, t, opts, out),
        _ => {}
    }
    if t.typtype == b'e' {
        let v = fixed::<4>(data, "enum")?;
        let oid = u32::from_le_bytes(v);
        return match t.enum_labels.get(&oid) {
            Some(label) => {
                out.extend_from_slice(label.as_bytes());
                Ok(())
            }
            None => Err(format!("enum value oid {oid} is not a label of type {}", t.name)),
        };
    }
    use oid::*;
    match t.oid {
        BOOL => {
            let [b] = fixed::<1>(data, "bool")?;
            out.push(if b != 0 { b't' } else { b'f' });
        }
        CHAR => {
            let [b] = fixed::<1>(data, "\"char\"")?;
            // charout: non-ASCII bytes as \ooo (PostgreSQL 15+), NUL as empty.
            if b >= 0x80 && opts.server_version_num >= 150000 {
                let _ = write!(Str(out), "\\{:03o}", b);
            } else if b != 0 {
                out.push(b);
            }
        }
        NAME => {
            let end = data.iter().position(|b| *b == 0).unwrap_or(data.len());
            out.extend_from_slice(&data[..end]);
        }
        INT2 => push_int(out, i64::from(i16::from_le_bytes(fixed::<2>(data, "int2")?))),
        INT4 => push_int(out, i64::from(i32::from_le_bytes(fixed::<4>(data, "int4")?))),
        INT8 => push_int(out, i64::from_le_bytes(fixed::<8>(data, "int8")?)),
        OID | XID | CID => push_uint(out, u64::from(u32::from_le_bytes(fixed::<4>(data, "oid")?))),
        XID8 => push_uint(out, u64::from_le_bytes(fixed::<8>(data, "xid8")?)),
        FLOAT4 => format_float4(f32::from_le_bytes(fixed::<4>(data, "float4")?), out),
        FLOAT8 => format_float8(f64::from_le_bytes(fixed::<8>(data, "float8")?), out),
        NUMERIC => format_numeric(data, out)?,
        // pg_node_tree's output routine is textout's: the stored text of a planner tree, as it is
        TEXT | VARCHAR | BPCHAR | JSON | XML | REFCURSOR | PG_NODE_TREE => out.extend_from_slice(data),
        BYTEA => {
            out.extend_from_slice(b"\\x");
            push_hex(out, data);
        }
        UUID => {
            let v = fixed::<16>(data, "uuid")?;
            for (i, b) in v.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    out.push(b'-');
                }
                push_hex(out, &[*b]);
            }
        }
        DATE => format_date(valid_date(i32::from_le_bytes(fixed::<4>(data, "date")?))?, out),
        TIME => format_time(valid_time(i64::from_le_bytes(fixed::<8>(data, "time")?))?, out),
        TIMETZ => {
            let v = fixed::<12>(data, "timetz")?;
            let time = i64::from_le_bytes(v[0..8].try_into().unwrap_or([0; 8]));
            let zone = i32::from_le_bytes(v[8..12].try_into().unwrap_or([0; 4]));
            format_time(valid_time(time)?, out);
            format_zone(zone, out);
        }
        TIMESTAMP => format_timestamp(valid_timestamp(i64::from_le_bytes(fixed::<8>(data, "timestamp")?))?, false, out),
        TIMESTAMPTZ => {
            format_timestamp(valid_timestamp(i64::from_le_bytes(fixed::<8>(data, "timestamptz")?))?, true, out)
        }
        INTERVAL => {
            let v = fixed::<16>(data, "interval")?;
            let time = i64::from_le_bytes(v[0..8].try_into().unwrap_or([0; 8]));
            let day = i32::from_le_bytes(v[8..12].try_into().unwrap_or([0; 4]));
            let month = i32::from_le_bytes(v[12..16].try_into().unwrap_or([0; 4]));
            // interval infinities exist from 17 on; before, the same bits are an ordinary (huge) interval
            if opts.server_version_num >= 170000 || !interval_is_infinite(time, day, month) {
                format_interval(time, day, month, out);
            } else {
                format_finite_interval(time, day, month, out);
            }
        }
        TID => {
            let v = fixed::<6>(data, "tid")?;
            let block =
                (u32::from(u16::from_le_bytes([v[0], v[1]])) << 16) | u32::from(u16::from_le_bytes([v[2], v[3]]));
            let off = u16::from_le_bytes([v[4], v[5]]);
            let _ = write!(Str(out), "({block},{off})");
        }
        PG_LSN => {
            let v = u64::from_le_bytes(fixed::<8>(data, "pg_lsn")?);
            // pg_lsn_out (utils/adt/pg_lsn.c) pads the low half to 8 digits from PostgreSQL 19;
            // 14 to 18 print both halves unpadded.
            if opts.server_version_num >= 190000 {
                let _ = write!(Str(out), "{:X}/{:08X}", v >> 32, v & 0xFFFF_FFFF);
            } else {
                let _ = write!(Str(out), "{:X}/{:X}", v >> 32, v & 0xFFFF_FFFF);
            }
        }
        JSONB => format_jsonb(data, out)?,
        POINT | LSEG | PATH | BOX | POLYGON | LINE | CIRCLE => geo::format_geo(t.oid, data, out)?,
        CASH => misc::format_money(data, out)?,
        INT2VECTOR => misc::format_vector(data, 2, out)?,
        OIDVECTOR => misc::format_vector(data, 4, out)?,
        TXID_SNAPSHOT | PG_SNAPSHOT => misc::format_snapshot(data, out)?,
        ACLITEM => misc::format_aclitem(data, t, out)?,
        TSVECTOR => textsearch::format_tsvector(data, out)?,
        TSQUERY => textsearch::format_tsquery(data, out)?,
        JSONPATH => jsonpath::format_jsonpath(data, out)?,
        o if misc::is_reg_type(o) => misc::format_reg(data, t, out)?,
        MACADDR => {
            let v = fixed::<6>(data, "macaddr")?;
            push_mac(out, &v);
        }
        MACADDR8 => {
            let v = fixed::<8>(data, "macaddr8")?;
            push_mac(out, &v);
        }
        INET | CIDR => format_inet(data, t.oid == CIDR, out)?,
        BIT | VARBIT => {
            let bitlen = u32_at(data, 0).ok_or("bit string shorter than its length word")? as usize;
            let bytes = data.get(4..).unwrap_or(&[]);
            if bytes.len() < bitlen.div_ceil(8) {
                return Err(format!("bit string of {bitlen} bits has only {} bytes", bytes.len()));
            }
            for i in 0..bitlen {
                out.push(if bytes[i / 8] & (0x80 >> (i % 8)) != 0 { b'1' } else { b'0' });
            }
        }
        _ => return Err(format!("type {} (oid {}) is not supported by the carver", t.name, t.oid)),
    }
    Ok(())
}

/// A `fmt::Write` over a byte vector.
struct Str<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Str<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// Decimal digits of `v`, without going through `core::fmt` (integers are most of the values a table holds).
fn push_uint(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..]);
}

fn push_int(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_uint(out, v.unsigned_abs());
}

fn push_display<T: std::fmt::Display>(out: &mut Vec<u8>, v: T) {
    let _ = write!(Str(out), "{v}");
}

fn fixed<const N: usize>(data: &[u8], what: &str) -> Result<[u8; N], String> {
    data.get(..N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| format!("{what} value has {} bytes, needs {N}", data.len()))
}

fn push_hex(out: &mut Vec<u8>, data: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.reserve(data.len() * 2);
    for b in data {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xF)]);
    }
}

fn push_mac(out: &mut Vec<u8>, v: &[u8]) {
    for (i, b) in v.iter().enumerate() {
        if i > 0 {
            out.push(b':');
        }
        push_hex(out, &[*b]);
    }
}

// ---------------------------------------------------------------------------------------------
// Floats: the shortest round-trip digits (Ryu in d2s.c/f2s.c; Rust's `{:e}` gives the same
// digits), laid out as PostgreSQL does: fixed notation when the decimal exponent is in
// [-4, 15) for float8 and [-4, 6) for float4, else d.ddde+XX.
// ---------------------------------------------------------------------------------------------

/// float8out with extra_float_digits > 0 (the default 1).
pub fn format_float8(v: f64, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else {
        float_layout(&format!("{v:e}"), 15, out);
    }
}

/// float4out with extra_float_digits > 0.
pub fn format_float4(v: f32, out: &mut Vec<u8>) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
    } else {
        float_layout(&format!("{v:e}"), 6, out);
    }
}

/// `sci` is Rust's `{:e}` text: `-1.2345e-7`, `0e0`.
fn float_layout(sci: &str, fixed_below: i32, out: &mut Vec<u8>) {
    let (mant, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: Vec<u8> = mant.bytes().filter(|b| b.is_ascii_digit()).collect();
    if neg {
        out.push(b'-');
    }
    if digits.iter().all(|d| *d == b'0') {
        out.push(b'0');
        return;
    }
    if (-4..fixed_below).contains(&exp) {
        let n = digits.len() as i32;
        if exp < 0 {
            out.extend_from_slice(b"0.");
            for _ in 0..(-exp - 1) {
                out.push(b'0');
            }
            out.extend_from_slice(&digits);
        } else if exp + 1 >= n {
            out.extend_from_slice(&digits);
            for _ in 0..(exp + 1 - n) {
                out.push(b'0');
            }
        } else {
            let point = (exp + 1) as usize;
            out.extend_from_slice(&digits[..point]);
            out.push(b'.');
            out.extend_from_slice(&digits[point..]);
        }
    } else {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let _ = write!(Str(out), "{:02}", exp.unsigned_abs());
    }
}

// ---------------------------------------------------------------------------------------------
// numeric (utils/adt/numeric.c)
// ---------------------------------------------------------------------------------------------

const NUMERIC_SIGN_MASK: u16 = 0xC000;
const NUMERIC_NEG: u16 = 0x4000;
const NUMERIC_SHORT: u16 = 0x8000;
const NUMERIC_SPECIAL: u16 = 0xC000;
const NUMERIC_EXT_SIGN_MASK: u16 = 0xF000;
const NUMERIC_NAN: u16 = 0xC000;
const NUMERIC_PINF: u16 = 0xD000;
const NUMERIC_NINF: u16 = 0xF000;
const NUMERIC_SHORT_SIGN_MASK: u16 = 0x2000;
const NUMERIC_SHORT_DSCALE_MASK: u16 = 0x1F80;
const NUMERIC_SHORT_DSCALE_SHIFT: u16 = 7;
const NUMERIC_SHORT_WEIGHT_SIGN_MASK: u16 = 0x0040;
const NUMERIC_SHORT_WEIGHT_MASK: u16 = 0x003F;
const NUMERIC_DSCALE_MASK: u16 = 0x3FFF;
const NBASE: u16 = 10000;

/// Whether a numeric payload is well formed (what [`format_numeric`] checks), without printing it.
pub fn validate_numeric(data: &[u8]) -> DatumResult {
    let h = u16_at(data, 0).ok_or("numeric value without a header word")?;
    let at = match h & NUMERIC_SIGN_MASK {
        NUMERIC_SPECIAL => {
            return match h & NUMERIC_EXT_SIGN_MASK {
                NUMERIC_NAN | NUMERIC_PINF | NUMERIC_NINF => Ok(()),
                _ => Err(format!("numeric special value 0x{h:04x} is unknown")),
            };
        }
        NUMERIC_SHORT => 2usize,
        _ => {
            u16_at(data, 2).ok_or("numeric value without its weight")?;
            4
        }
    };
    let body = data.get(at..).unwrap_or(&[]);
    if body.len() % 2 != 0 {
        return Err(format!("numeric digits take an odd number of bytes ({})", body.len()));
    }
    match body.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).find(|d| *d >= NBASE) {
        Some(d) => Err(format!("numeric digit {d} is not below 10000")),
        None => Ok(()),
    }
}

/// Whether a value prints without error: as [`format_value`], cheaper where the type allows (`scratch` is
/// overwritten).
pub fn validate_value(data: &[u8], t: &TypeDesc, opts: &OutputOptions, scratch: &mut Vec<u8>) -> DatumResult {
    if t.elem.is_none() && t.typtype == b'b' && t.oid == oid::NUMERIC {
        return validate_numeric(data);
    }
    scratch.clear();
    format_value(data, t, opts, scratch)
}

/// numeric_out (get_str_from_var) on a numeric's varlena payload.
pub fn format_numeric(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let h = u16_at(data, 0).ok_or("numeric value without a header word")?;
    let (neg, weight, dscale, digits_at) = match h & NUMERIC_SIGN_MASK {
        NUMERIC_SPECIAL => {
            out.extend_from_slice(match h & NUMERIC_EXT_SIGN_MASK {
                NUMERIC_NAN => b"NaN".as_slice(),
                NUMERIC_PINF => b"Infinity",
                NUMERIC_NINF => b"-Infinity",
                _ => return Err(format!("numeric special value 0x{h:04x} is unknown")),
            });
            return Ok(());
        }
        NUMERIC_SHORT => {
            let neg = h & NUMERIC_SHORT_SIGN_MASK != 0;
            let dscale = (h & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT;
            let w = h & NUMERIC_SHORT_WEIGHT_MASK;
            let weight = if h & NUMERIC_SHORT_WEIGHT_SIGN_MASK != 0 { i32::from(w) - 64 } else { i32::from(w) };
            (neg, weight, dscale, 2usize)
        }
        sign => {
            let weight = i32::from(u16_at(data, 2).ok_or("numeric value without its weight")? as i16);
            (sign == NUMERIC_NEG, weight, h & NUMERIC_DSCALE_MASK, 4usize)
        }
    };
    let body = data.get(digits_at..).unwrap_or(&[]);
    if body.len() % 2 != 0 {
        return Err(format!("numeric digits take an odd number of bytes ({})", body.len()));
    }
    let digits: Vec<u16> = body.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
    if let Some(d) = digits.iter().find(|d| **d >= NBASE) {
        return Err(format!("numeric digit {d} is not below 10000"));
    }
    if weight.unsigned_abs() > 0x7FFF || digits.len() > 0x8000 {
        return Err(format!("numeric weight {weight} is out of range"));
    }
    let digit = |i: i32| -> u16 {
        if i >= 0 && (i as usize) < digits.len() {
            digits[i as usize]
        } else {
            0
        }
    };
    if neg {
        out.push(b'-');
    }
    let four = |v: u16| -> [u8; 4] {
        [b'0' + (v / 1000) as u8, b'0' + (v / 100 % 10) as u8, b'0' + (v / 10 % 10) as u8, b'0' + (v % 10) as u8]
    };
    if weight < 0 {
        out.push(b'0');
    } else {
        for d in 0..=weight {
            let f = four(digit(d));
            if d == 0 {
                let skip = f.iter().take(3).take_while(|c| **c == b'0').count();
                out.extend_from_slice(&f[skip..]);
            } else {
                out.extend_from_slice(&f);
            }
        }
    }
    if dscale > 0 {
        out.push(b'.');
        let mut written = 0usize;
        let mut d = weight + 1;
        let want = usize::from(dscale);
        while written < want {
            let f = four(digit(d));
            let take = (want - written).min(4);
            out.extend_from_slice(&f[..take]);
            written += take;
            d += 1;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Dates and times (datatype/timestamp.h, utils/adt/datetime.c, DateStyle ISO)
// ---------------------------------------------------------------------------------------------

const POSTGRES_EPOCH_JDATE: i64 = 2_451_545;
const USECS_PER_DAY: i64 = 86_400_000_000;
const USECS_PER_HOUR: i64 = 3_600_000_000;
const USECS_PER_MINUTE: i64 = 60_000_000;
const USECS_PER_SEC: i64 = 1_000_000;

/// DATE_END_JULIAN, MIN_TIMESTAMP and END_TIMESTAMP (`datatype/timestamp.h`): the server never stores a date,
/// timestamp or time outside these (DATETIME_MIN_JULIAN is 0), so a value outside them is damage.
const DATE_END_JULIAN: i64 = 2_147_483_494;
const MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
const END_TIMESTAMP: i64 = 9_223_371_331_200_000_000;

fn valid_date(v: i32) -> Result<i32, String> {
    let jd = i64::from(v) + POSTGRES_EPOCH_JDATE;
    if v == i32::MIN || v == i32::MAX || (0..DATE_END_JULIAN).contains(&jd) {
        Ok(v)
    } else {
        Err(format!("date {v} is out of range"))
    }
}

fn valid_timestamp(v: i64) -> Result<i64, String> {
    if v == i64::MIN || v == i64::MAX || (MIN_TIMESTAMP..END_TIMESTAMP).contains(&v) {
        Ok(v)
    } else {
        Err(format!("timestamp {v} is out of range"))
    }
}

fn valid_time(v: i64) -> Result<i64, String> {
    if (0..=USECS_PER_DAY).contains(&v) {
        Ok(v)
    } else {
        Err(format!("time {v} is out of range"))
    }
}

/// j2date (datetime.c): Julian day number to (year, month, day).
pub fn j2date(jd: i64) -> (i64, u32, u32) {
    let mut julian = (jd + 32044) as u64;
    let mut quad = julian / 146097;
    let extra = (julian - quad * 146097) * 4 + 3;
    julian += 60 + quad * 3 + extra / 146097;
    quad = julian / 1461;
    julian -= quad * 1461;
    let mut y = (julian * 4 / 1461) as i64;
    julian = if y != 0 { (julian + 305) % 365 } else { (julian + 306) % 366 } + 123;
    y += (quad * 4) as i64;
    let year = y - 4800;
    let q = julian * 2141 / 65536;
    let day = julian - 7834 * q / 256;
    let month = (q + 10) % 12 + 1;
    (year, month as u32, day as u32)
}

fn push_date_part(year: i64, month: u32, day: u32, out: &mut Vec<u8>) {
    let y = if year > 0 { year } else { -year + 1 };
    let _ = write!(Str(out), "{y:04}-{month:02}-{day:02}");
}

/// date_out.
pub fn format_date(v: i32, out: &mut Vec<u8>) {
    match v {
        i32::MIN => out.extend_from_slice(b"-infinity"),
        i32::MAX => out.extend_from_slice(b"infinity"),
        _ => {
            let (y, m, d) = j2date(i64::from(v) + POSTGRES_EPOCH_JDATE);
            push_date_part(y, m, d, out);
            if y <= 0 {
                out.extend_from_slice(b" BC");
            }
        }
    }
}

/// Seconds with a fraction of trailing-zero-trimmed microseconds (AppendSeconds).
fn push_seconds(sec: i64, fsec: i64, out: &mut Vec<u8>) {
    let _ = write!(Str(out), "{:02}", sec.abs());
    if fsec != 0 {
        let s = format!("{:06}", fsec.abs());
        out.push(b'.');
        out.extend_from_slice(s.trim_end_matches('0').as_bytes());
    }
}

/// time_out.
pub fn format_time(v: i64, out: &mut Vec<u8>) {
    let hour = v / USECS_PER_HOUR;
    let rest = v - hour * USECS_PER_HOUR;
    let min = rest / USECS_PER_MINUTE;
    let rest = rest - min * USECS_PER_MINUTE;
    let sec = rest / USECS_PER_SEC;
    let fsec = rest - sec * USECS_PER_SEC;
    let _ = write!(Str(out), "{hour:02}:{min:02}:");
    push_seconds(sec, fsec, out);
}

/// EncodeTimezone: `tz` is seconds west of UTC.
fn format_zone(tz: i32, out: &mut Vec<u8>) {
    let t = i64::from(tz).abs();
    let hour = t / 3600;
    let min = (t / 60) % 60;
    let sec = t % 60;
    out.push(if tz <= 0 { b'+' } else { b'-' });
    if sec != 0 {
        let _ = write!(Str(out), "{hour:02}:{min:02}:{sec:02}");
    } else if min != 0 {
        let _ = write!(Str(out), "{hour:02}:{min:02}");
    } else {
        let _ = write!(Str(out), "{hour:02}");
    }
}

/// timestamp_out / timestamptz_out (TimeZone UTC, so "+00").
pub fn format_timestamp(v: i64, with_zone: bool, out: &mut Vec<u8>) {
    match v {
        i64::MIN => return out.extend_from_slice(b"-infinity"),
        i64::MAX => return out.extend_from_slice(b"infinity"),
        _ => {}
    }
    let date = v.div_euclid(USECS_PER_DAY);
    let time = v.rem_euclid(USECS_PER_DAY);
    let (y, m, d) = j2date(date + POSTGRES_EPOCH_JDATE);
    push_date_part(y, m, d, out);
    out.push(b' ');
    let hour = time / USECS_PER_HOUR;
    let min = (time / USECS_PER_MINUTE) % 60;
    let sec = (time / USECS_PER_SEC) % 60;
    let fsec = time % USECS_PER_SEC;
    let _ = write!(Str(out), "{hour:02}:{min:02}:");
    push_seconds(sec, fsec, out);
    if with_zone {
        out.extend_from_slice(b"+00");
    }
    if y <= 0 {
        out.extend_from_slice(b" BC");
    }
}

/// interval_out with IntervalStyle postgres (EncodeInterval, INTSTYLE_POSTGRES).
pub fn format_interval(time: i64, day: i32, month: i32, out: &mut Vec<u8>) {
    if time == i64::MIN && day == i32::MIN && month == i32::MIN {
        return out.extend_from_slice(b"-infinity");
    }
    if time == i64::MAX && day == i32::MAX && month == i32::MAX {
        return out.extend_from_slice(b"infinity");
    }
    format_finite_interval(time, day, month, out);
}

/// INTERVAL_NOBEGIN / INTERVAL_NOEND (`datatype/timestamp.h`, PostgreSQL 17+).
fn interval_is_infinite(time: i64, day: i32, month: i32) -> bool {
    (time == i64::MIN && day == i32::MIN && month == i32::MIN)
        || (time == i64::MAX && day == i32::MAX && month == i32::MAX)
}

/// EncodeInterval without the infinities.
fn format_finite_interval(time: i64, day: i32, month: i32, out: &mut Vec<u8>) {
    let year = i64::from(month / 12);
    let mon = i64::from(month % 12);
    let mday = i64::from(day);
    let hour = time / USECS_PER_HOUR;
    let rest = time - hour * USECS_PER_HOUR;
    let min = rest / USECS_PER_MINUTE;
    let rest = rest - min * USECS_PER_MINUTE;
    let sec = rest / USECS_PER_SEC;
    let fsec = rest - sec * USECS_PER_SEC;
    let mut is_zero = true;
    let mut is_before = false;
    let mut part = |value: i64, units: &str, out: &mut Vec<u8>| {
        if value == 0 {
            return;
        }
        let _ = write!(
            Str(out),
            "{}{}{} {}{}",
            if is_zero { "" } else { " " },
            if is_before && value > 0 { "+" } else { "" },
            value,
            units,
            if value != 1 { "s" } else { "" }
        );
        is_before = value < 0;
        is_zero = false;
    };
    part(year, "year", out);
    part(mon, "mon", out);
    part(mday, "day", out);
    if is_zero || hour != 0 || min != 0 || sec != 0 || fsec != 0 {
        let minus = hour < 0 || min < 0 || sec < 0 || fsec < 0;
        let _ = write!(
            Str(out),
            "{}{}{:02}:{:02}:",
            if is_zero { "" } else { " " },
            if minus {
                "-"
            } else if is_before {
                "+"
            } else {
                ""
            },
            hour.abs(),
            min.abs()
        );
        push_seconds(sec, fsec, out);
    }
}

// ---------------------------------------------------------------------------------------------
// inet / cidr (utils/adt/network.c, inet_net_ntop.c)
// ---------------------------------------------------------------------------------------------

fn format_inet(data: &[u8], cidr: bool, out: &mut Vec<u8>) -> DatumResult {
    let family = u8_at(data, 0).ok_or("inet value is empty")?;
    let bits = u8_at(data, 1).ok_or("inet value without its prefix length")?;
    let addr = data.get(2..).unwrap_or(&[]);
    // PGSQL_AF_INET = AF_INET + 0 = 2, PGSQL_AF_INET6 = AF_INET + 1 = 3.
    let full = match family {
        2 => {
            let a = addr.get(..4).ok_or("inet v4 address is short")?;
            let _ = write!(Str(out), "{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
            32
        }
        3 => {
            let a = addr.get(..16).ok_or("inet v6 address is short")?;
            format_ipv6(a, out);
            128
        }
        f => return Err(format!("inet family {f} is unknown")),
    };
    if cidr || bits != full {
        let _ = write!(Str(out), "/{bits}");
    }
    Ok(())
}

/// inet_net_ntop_ipv6 (BIND): the longest run of two or more zero words becomes "::"; an
/// IPv4-mapped or compatible address ends in dotted quad.
fn format_ipv6(a: &[u8], out: &mut Vec<u8>) {
    let words: Vec<u16> = a.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
    let (mut best, mut cur): ((isize, usize), (isize, usize)) = ((-1, 0), (-1, 0));
    for (i, w) in words.iter().enumerate() {
        if *w == 0 {
            if cur.0 == -1 {
                cur = (i as isize, 1);
            } else {
                cur.1 += 1;
            }
        } else if cur.0 != -1 {
            if best.0 == -1 || cur.1 > best.1 {
                best = cur;
            }
            cur = (-1, 0);
        }
    }
    if cur.0 != -1 && (best.0 == -1 || cur.1 > best.1) {
        best = cur;
    }
    if best.0 != -1 && best.1 < 2 {
        best = (-1, 0);
    }
    let mut i = 0usize;
    while i < 8 {
        if best.0 != -1 && i as isize >= best.0 && i < best.0 as usize + best.1 {
            if i as isize == best.0 {
                out.push(b':');
            }
            i += 1;
            continue;
        }
        if i != 0 {
            out.push(b':');
        }
        if i == 6 && best.0 == 0 && (best.1 == 6 || (best.1 == 5 && words[5] == 0xffff)) {
            let _ = write!(Str(out), "{}.{}.{}.{}", a[12], a[13], a[14], a[15]);
            return;
        }
        let _ = write!(Str(out), "{:x}", words[i]);
        i += 1;
    }
    if best.0 != -1 && best.0 as usize + best.1 == 8 {
        out.push(b':');
    }
}

// ---------------------------------------------------------------------------------------------
// jsonb (utils/adt/jsonb.c JsonbToCString, jsonb_util.c, utils/jsonb.h)
// ---------------------------------------------------------------------------------------------

const JB_CMASK: u32 = 0x0FFF_FFFF;
const JB_FSCALAR: u32 = 0x1000_0000;
const JB_FOBJECT: u32 = 0x2000_0000;
const JB_FARRAY: u32 = 0x4000_0000;
const JENTRY_OFFLENMASK: u32 = 0x0FFF_FFFF;
const JENTRY_TYPEMASK: u32 = 0x7000_0000;
const JENTRY_HAS_OFF: u32 = 0x8000_0000;
const JENTRY_ISSTRING: u32 = 0x0000_0000;
const JENTRY_ISNUMERIC: u32 = 0x1000_0000;
const JENTRY_ISBOOL_FALSE: u32 = 0x2000_0000;
const JENTRY_ISBOOL_TRUE: u32 = 0x3000_0000;
const JENTRY_ISNULL: u32 = 0x4000_0000;
const JENTRY_ISCONTAINER: u32 = 0x5000_0000;

/// jsonb_out on a jsonb varlena payload.
pub fn format_jsonb(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    // Every value of a sound jsonb has its own 4-byte JEntry, so there are fewer than len/4 of them;
    // damaged offsets can make siblings share a nested container, and printing it again and again
    // would take exponential time.
    let budget = std::cell::Cell::new(data.len() / 4 + 16);
    jsonb_container(data, &budget, out, 0)
}

fn intalign(x: usize) -> usize {
    (x + 3) & !3
}

/// `data` is the container (header word first). Offsets inside are relative to the start of the
/// children's data area, which is 4-aligned in the original datum (4-byte varlena header + the
/// header word + 4 bytes per JEntry).
fn jsonb_container(data: &[u8], budget: &std::cell::Cell<usize>, out: &mut Vec<u8>, depth: u32) -> DatumResult {
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
    let nchildren = if is_object { count.checked_mul(2).ok_or("jsonb count overflows")? } else { count };
    let children_at = 4usize;
    let base = children_at.checked_add(nchildren.checked_mul(4).ok_or("jsonb count overflows")?).ok_or("overflow")?;
    if base > data.len() {
        return Err(format!("jsonb container claims {count} entries, more than its {} bytes hold", data.len()));
    }
    let entry = |i: usize| u32_at(data, children_at + i * 4).unwrap_or(0);
    // Each child starts where the previous ended: an entry holds its end offset (HAS_OFF, every
    // JB_OFFSET_STRIDE entries) or its length. One pass, not a walk back per child, so damaged
    // entries without HAS_OFF cost linear time.
    let mut starts = Vec::with_capacity(nchildren + 1);
    starts.push(0usize);
    for j in 0..nchildren {
        let e = entry(j);
        let v = (e & JENTRY_OFFLENMASK) as usize;
        let prev = starts[j];
        starts.push(if e & JENTRY_HAS_OFF != 0 { v } else { prev.wrapping_add(v) });
    }
    let span = |i: usize| -> Result<(u32, usize, usize), String> {
        let e = entry(i);
        let off = starts[i];
        let len = if e & JENTRY_HAS_OFF != 0 {
            ((e & JENTRY_OFFLENMASK) as usize).checked_sub(off).ok_or("jsonb entry offsets go backwards")?
        } else {
            (e & JENTRY_OFFLENMASK) as usize
        };
        let start = base.checked_add(off).ok_or("overflow")?;
        let end = start.checked_add(len).ok_or("overflow")?;
        if end > data.len() {
            return Err(format!("jsonb entry {i} runs to byte {end}, past the container's {}", data.len()));
        }
        Ok((e & JENTRY_TYPEMASK, start, end))
    };
    let value = |i: usize, out: &mut Vec<u8>| -> DatumResult {
        let left = budget.get().checked_sub(1).ok_or("jsonb holds more values than its size allows")?;
        budget.set(left);
        let (ty, start, end) = span(i)?;
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
                jsonb_container(v, budget, out, depth + 1)?;
            }
            t => return Err(format!("jsonb entry type 0x{t:08x} is unknown")),
        }
        Ok(())
    };
    if is_array && header & JB_FSCALAR != 0 {
        if count != 1 {
            return Err(format!("jsonb scalar container holds {count} values"));
        }
        return value(0, out);
    }
    if is_array {
        out.push(b'[');
        for i in 0..count {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            value(i, out)?;
        }
        out.push(b']');
    } else {
        out.push(b'{');
        for i in 0..count {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            let (ty, start, end) = span(i)?;
            if ty != JENTRY_ISSTRING {
                return Err("jsonb object key is not a string".into());
            }
            push_json_string(&data[start..end], out);
            out.extend_from_slice(b": ");
            value(count + i, out)?;
        }
        out.push(b'}');
    }
    Ok(())
}

/// escape_json.
fn push_json_string(s: &[u8], out: &mut Vec<u8>) {
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

/// isspace() in the C locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// One attribute inside a composite or range value: `data` holds the value's bytes from virtual
/// offset `base` (offsets counted from the start of the datum, varlena header included, which is
/// what alignment is relative to); the attribute starts at virtual offset `p`, before alignment.
/// With `packed`, a varlena starting with a non-zero byte is a short one and not aligned
/// (att_align_pointer, `access/tupmacs.h`). Returns the attribute's payload (a compressed inline
/// varlena decompressed) and the virtual offset after it.
fn read_att(
    data: &[u8],
    base: usize,
    p: usize,
    typlen: i16,
    typalign: u8,
    packed: bool,
) -> Result<(Cow<'_, [u8]>, usize), String> {
    let rel = |v: usize| v.checked_sub(base).ok_or_else(|| format!("attribute offset {v} before the value"));
    if typlen > 0 {
        let at = align_to(p, typalign);
        let n = typlen as usize;
        let s = data.get(rel(at)?..).and_then(|r| r.get(..n)).ok_or("attribute runs past the value")?;
        return Ok((Cow::Borrowed(s), at + n));
    }
    if typlen == -2 {
        let at = align_to(p, typalign);
        let rest = data.get(rel(at)?..).ok_or("attribute starts past the value")?;
        let nul = rest.iter().position(|b| *b == 0).ok_or("cstring attribute without NUL")?;
        return Ok((Cow::Borrowed(&rest[..nul]), at + nul + 1));
    }
    if typlen != -1 {
        return Err(format!("attribute length {typlen} is invalid"));
    }
    let short = packed && data.get(rel(p)?).is_some_and(|b| *b != 0);
    let at = if short { p } else { align_to(p, typalign) };
    let rest = data.get(rel(at)?..).ok_or("attribute starts past the value")?;
    let b0 = *rest.first().ok_or("attribute starts past the value")?;
    if b0 == 0x01 {
        return Err("a TOAST pointer inside a value cannot be followed".into());
    }
    if b0 & 0x01 == 0x01 {
        let n = usize::from(b0 >> 1);
        let s = rest.get(1..n).ok_or("short varlena attribute runs past the value")?;
        return Ok((Cow::Borrowed(s), at + n));
    }
    let word = u32_at(rest, 0).ok_or("varlena attribute header runs past the value")?;
    let n = ((word >> 2) & 0x3FFF_FFFF) as usize;
    let body = rest.get(4..n.max(4)).filter(|_| n >= 4).ok_or("varlena attribute runs past the value")?;
    if b0 & 0x03 == 0x02 {
        // compressed inline: va_tcinfo (raw size, method in the top 2 bits), then the data
        let tcinfo = u32_at(body, 0).ok_or("compressed attribute without its size")?;
        let raw =
            crate::format::compress::decompress((tcinfo >> 30) as u8, &body[4..], (tcinfo & 0x3FFF_FFFF) as usize)
                .map_err(|e| format!("compressed attribute: {e}"))?;
        return Ok((Cow::Owned(raw), at + n));
    }
    Ok((Cow::Borrowed(body), at + n))
}

/// A varlena value found inside another value (array element, jsonb numeric): its payload and
/// total size (header included). Only 1-byte and plain 4-byte headers; `None` for anything else.
pub fn varlena_any(v: &[u8]) -> Option<(&[u8], usize)> {
    let b0 = *v.first()?;
    if b0 == 0x01 {
        return None; // an external pointer inside a value cannot be followed
    }
    if b0 & 0x01 == 0x01 {
        let n = usize::from(b0 >> 1);
        if n == 0 {
            return None;
        }
        return Some((v.get(1..n)?, n));
    }
    let word = u32_at(v, 0)?;
    if b0 & 0x03 != 0 {
        return None; // compressed inside a value: not produced by the server
    }
    let n = ((word >> 2) & 0x3FFF_FFFF) as usize;
    if n < 4 {
        return None;
    }
    Some((v.get(4..n)?, n))
}

// ---------------------------------------------------------------------------------------------
// Arrays (utils/adt/arrayfuncs.c array_out, utils/array.h)
// ---------------------------------------------------------------------------------------------

/// MAXDIM (utils/array.h).
const MAXDIM: usize = 6;

fn align_to(off: usize, align: u8) -> usize {
    let a = match align {
        b'c' => 1,
        b's' => 2,
        b'i' => 4,
        b'd' => 8,
        _ => 1,
    };
    (off + a - 1) & !(a - 1)
}

/// The elements of an array value as text (None for NULL), at most `limit` of them, with its dimensions and lower
/// bounds; None for an empty array.
type ArrayItems = (Vec<i32>, Vec<i32>, Vec<Option<Vec<u8>>>);
fn array_items(data: &[u8], elem: &TypeDesc, opts: &OutputOptions, limit: usize) -> Result<Option<ArrayItems>, String> {
    let ndim = u32_at(data, 0).ok_or("array without ndim")? as usize;
    let dataoffset = u32_at(data, 4).ok_or("array without dataoffset")? as usize;
    if ndim == 0 {
        return Ok(None);
    }
    if ndim > MAXDIM {
        return Err(format!("array has {ndim} dimensions, more than {MAXDIM}"));
    }
    let mut dims = Vec::with_capacity(ndim);
    let mut lbs = Vec::with_capacity(ndim);
    for i in 0..ndim {
        dims.push(u32_at(data, 12 + 4 * i).ok_or("array dimensions run past the value")? as i32);
        lbs.push(u32_at(data, 12 + 4 * ndim + 4 * i).ok_or("array bounds run past the value")? as i32);
    }
    let mut nitems: usize = 1;
    for d in &dims {
        if *d < 0 {
            return Err(format!("array dimension {d} is negative"));
        }
        nitems = nitems.checked_mul(*d as usize).ok_or("array size overflows")?;
    }
    if nitems == 0 {
        return Ok(None);
    }
    if nitems > data.len() * 8 + 8 {
        return Err(format!("array claims {nitems} elements, more than its {} bytes can hold", data.len()));
    }
    // Header sizes counted from the 4-byte varlena header, as ARR_OVERHEAD_* do.
    let bitmap_at = 16 + 8 * ndim; // sizeof(ArrayType) + dims + lbounds, from the header
    let has_nulls = dataoffset != 0;
    let data_start = if has_nulls { dataoffset } else { crate::format::bytes::maxalign(bitmap_at) };
    let to_payload = |virt: usize| virt.checked_sub(4);
    let bitmap = if has_nulls {
        let from = to_payload(bitmap_at).ok_or("array header is short")?;
        Some(data.get(from..from + nitems.div_ceil(8)).ok_or("array null bitmap runs past the value")?)
    } else {
        None
    };
    // Elements, as text (None for NULL).
    let mut items: Vec<Option<Vec<u8>>> = Vec::with_capacity(nitems);
    let mut p = data_start; // virtual offset
    for i in 0..nitems.min(limit) {
        if let Some(bm) = bitmap {
            if bm[i / 8] & (1 << (i % 8)) == 0 {
                items.push(None);
                continue;
            }
        }
        let at = to_payload(p).ok_or("array element before the value start")?;
        let rest = data.get(at..).ok_or_else(|| format!("array element {i} starts past the value"))?;
        let (payload, size): (&[u8], usize) = if elem.typlen > 0 {
            let n = elem.typlen as usize;
            (rest.get(..n).ok_or_else(|| format!("array element {i} runs past the value"))?, n)
        } else if elem.typlen == -1 {
            varlena_any(rest).ok_or_else(|| format!("array element {i} has a bad varlena header"))?
        } else {
            let nul = rest.iter().position(|b| *b == 0).ok_or("array cstring element without NUL")?;
            (&rest[..nul], nul + 1)
        };
        let mut text = Vec::new();
        format_value(payload, elem, opts, &mut text)?;
        items.push(Some(text));
        p = align_to(p + size, elem.typalign);
    }
    Ok(Some((dims, lbs, items)))
}

/// The first element of an array value as text (`attmissingval`'s one value), None when it is NULL or absent.
pub fn array_first_item(data: &[u8], elem: &TypeDesc, opts: &OutputOptions) -> Result<Option<Vec<u8>>, String> {
    Ok(array_items(data, elem, opts, 1)?.and_then(|(_, _, items)| items.into_iter().next().flatten()))
}

/// array_out. `data` is the payload after the varlena header; offsets inside an array are
/// relative to its (4-byte) header, so position p in `data` is p + 4 in the array's terms.
pub fn format_array(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    let elem = t.elem.as_deref().ok_or("array without an element type")?;
    let Some((dims, lbs, items)) = array_items(data, elem, opts, usize::MAX)? else {
        // array_out prints any empty array as {}, whatever its dimensions say
        out.extend_from_slice(b"{}");
        return Ok(());
    };
    if lbs.iter().any(|lb| *lb != 1) {
        for (d, lb) in dims.iter().zip(&lbs) {
            let _ = write!(Str(out), "[{}:{}]", lb, i64::from(*lb) + i64::from(*d) - 1);
        }
        out.push(b'=');
    }
    let delim = if elem.typdelim == 0 { b',' } else { elem.typdelim };
    let mut idx = 0usize;
    write_dim(&dims, 0, &items, &mut idx, delim, out);
    Ok(())
}

fn write_dim(dims: &[i32], level: usize, items: &[Option<Vec<u8>>], idx: &mut usize, delim: u8, out: &mut Vec<u8>) {
    out.push(b'{');
    for k in 0..dims[level] {
        if k > 0 {
            out.push(delim);
        }
        if level + 1 < dims.len() {
            write_dim(dims, level + 1, items, idx, delim, out);
        } else {
            match items.get(*idx) {
                Some(Some(v)) => push_array_item(v, delim, out),
                _ => out.extend_from_slice(b"NULL"),
            }
            *idx += 1;
        }
    }
    out.push(b'}');
}

fn push_array_item(v: &[u8], delim: u8, out: &mut Vec<u8>) {
    let is_space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    let needquote = v.is_empty()
        || v.eq_ignore_ascii_case(b"NULL")
        || v.iter().any(|&c| c == b'"' || c == b'\\' || c == b'{' || c == b'}' || c == delim || is_space(c));
    if !needquote {
        out.extend_from_slice(v);
        return;
    }
    out.push(b'"');
    for &c in v {
        if c == b'"' || c == b'\\' {
            out.push(b'\\');
        }
        out.push(c);
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_print_like_display() {
        for v in [0i64, 1, -1, 9, 10, -10, 99, 100, i64::from(i32::MIN), i64::from(i32::MAX), i64::MIN, i64::MAX] {
            let mut out = Vec::new();
            push_int(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
        let mut out = Vec::new();
        push_uint(&mut out, u64::MAX);
        assert_eq!(String::from_utf8(out).unwrap(), u64::MAX.to_string());
    }

    fn s(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn floats_like_postgres() {
        let f8 = |x: f64| s(|o| format_float8(x, o));
        assert_eq!(f8(0.1), "0.1");
        assert_eq!(f8(1.5), "1.5");
        assert_eq!(f8(-0.0), "-0");
        assert_eq!(f8(0.0), "0");
        assert_eq!(f8(1e15), "1e+15");
        assert_eq!(f8(123456789012345.0), "123456789012345");
        assert_eq!(f8(1e-5), "1e-05");
        assert_eq!(f8(0.0001), "0.0001");
        assert_eq!(f8(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(f8(1e300), "1e+300");
        assert_eq!(f8(f64::NAN), "NaN");
        assert_eq!(f8(-f64::INFINITY), "-Infinity");
        assert_eq!(f8(100.0), "100");
        let f4 = |x: f32| s(|o| format_float4(x, o));
        assert_eq!(f4(1.1), "1.1");
        assert_eq!(f4(1e6), "1e+06");
        assert_eq!(f4(123456.0), "123456");
    }

    #[test]
    fn numerics() {
        // 1234.5678: long format, weight 0, dscale 4, digits 1234 5678
        let mut d = vec![];
        d.extend_from_slice(&(0x8000u16 | (4 << 7)).to_le_bytes()); // short: dscale 4, weight 0
        d.extend_from_slice(&1234u16.to_le_bytes());
        d.extend_from_slice(&5678u16.to_le_bytes());
        assert_eq!(s(|o| format_numeric(&d, o).unwrap()), "1234.5678");
        let mut d = vec![];
        d.extend_from_slice(&(0x8000u16 | 0x2000 | (2 << 7) | 0x40 | 0x3F).to_le_bytes()); // weight -1
        d.extend_from_slice(&500u16.to_le_bytes());
        assert_eq!(s(|o| format_numeric(&d, o).unwrap()), "-0.05");
        let d = 0x8000u16.to_le_bytes();
        assert_eq!(s(|o| format_numeric(&d, o).unwrap()), "0");
        let d = 0xD000u16.to_le_bytes();
        assert_eq!(s(|o| format_numeric(&d, o).unwrap()), "Infinity");
        // 10000000: weight 1, digits 1000 0 (short)
        let mut d = vec![];
        d.extend_from_slice(&(0x8000u16 | 1).to_le_bytes());
        d.extend_from_slice(&1000u16.to_le_bytes());
        assert_eq!(s(|o| format_numeric(&d, o).unwrap()), "10000000");
    }

    #[test]
    fn dates_and_times() {
        assert_eq!(s(|o| format_date(0, o)), "2000-01-01");
        assert_eq!(s(|o| format_date(-730119, o)), "0001-01-01");
        assert_eq!(s(|o| format_date(-730120, o)), "0001-12-31 BC");
        assert_eq!(s(|o| format_date(8766, o)), "2024-01-01");
        assert_eq!(s(|o| format_timestamp(1_500_000, true, o)), "2000-01-01 00:00:01.5+00");
        assert_eq!(s(|o| format_timestamp(-1, false, o)), "1999-12-31 23:59:59.999999");
        assert_eq!(s(|o| format_time(3_723_000_000, o)), "01:02:03");
        assert_eq!(s(|o| format_zone(-19800, o)), "+05:30");
        assert_eq!(s(|o| format_interval(3_723_000_000, 3, 14, o)), "1 year 2 mons 3 days 01:02:03");
        assert_eq!(s(|o| format_interval(0, 0, 0, o)), "00:00:00");
        assert_eq!(s(|o| format_interval(-1_000_000, 1, 0, o)), "1 day -00:00:01");
        assert_eq!(s(|o| format_interval(0, -1, 1, o)), "1 mon -1 days");
    }

    #[test]
    fn jsonb_scalar_and_object() {
        // {"a": true}: object count 1, entries: key "a" (len 1), value true
        let mut d = vec![];
        d.extend_from_slice(&(JB_FOBJECT | 1).to_le_bytes());
        d.extend_from_slice(&1u32.to_le_bytes());
        d.extend_from_slice(&(JENTRY_ISBOOL_TRUE).to_le_bytes());
        d.push(b'a');
        assert_eq!(s(|o| format_jsonb(&d, o).unwrap()), "{\"a\": true}");
        let mut d = vec![];
        d.extend_from_slice(&(JB_FARRAY | JB_FSCALAR | 1).to_le_bytes());
        d.extend_from_slice(&(JENTRY_ISSTRING | 2).to_le_bytes());
        d.extend_from_slice(b"\"x");
        assert_eq!(s(|o| format_jsonb(&d, o).unwrap()), "\"\\\"x\"");
    }

    #[test]
    fn ipv6() {
        let mut a = [0u8; 16];
        a[15] = 1;
        assert_eq!(s(|o| format_ipv6(&a, o)), "::1");
        let a = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(s(|o| format_ipv6(&a, o)), "2001:db8::1");
    }

    fn fmt(data: &[u8], t: &TypeDesc, version: u32) -> Result<String, String> {
        let mut out = Vec::new();
        format_value(data, t, &OutputOptions { server_version_num: version }, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    fn base(oid: u32) -> TypeDesc {
        TypeDesc { oid, typtype: b'b', ..Default::default() }
    }

    #[test]
    fn money_in_the_c_locale() {
        let m = |v: i64| fmt(&v.to_le_bytes(), &base(oid::CASH), 180000).unwrap();
        assert_eq!(m(123456), "$1,234.56");
        assert_eq!(m(-5), "-$0.05");
        assert_eq!(m(0), "$0.00");
        assert_eq!(m(i64::MIN), "-$92,233,720,368,547,758.08");
        assert_eq!(m(100_000_000), "$1,000,000.00");
    }

    #[test]
    fn lsn_and_interval_by_version() {
        let lsn = 0x1_0001_8800u64.to_le_bytes();
        assert_eq!(fmt(&lsn, &base(oid::PG_LSN), 180000).unwrap(), "1/18800");
        assert_eq!(fmt(&lsn, &base(oid::PG_LSN), 190000).unwrap(), "1/00018800");
        let mut inf = i64::MAX.to_le_bytes().to_vec();
        inf.extend_from_slice(&i32::MAX.to_le_bytes());
        inf.extend_from_slice(&i32::MAX.to_le_bytes());
        assert_eq!(fmt(&inf, &base(oid::INTERVAL), 170000).unwrap(), "infinity");
        assert_eq!(
            fmt(&inf, &base(oid::INTERVAL), 160000).unwrap(),
            "178956970 years 7 mons 2147483647 days 2562047788:00:54.775807"
        );
    }

    #[test]
    fn pg_node_tree_prints_its_text() {
        // CREATE TABLE … AS SELECT * FROM pg_class stores relpartbound, a pg_node_tree, in a user table
        let t = base(oid::PG_NODE_TREE);
        assert!(t.supported());
        let tree = b"{PARTITIONBOUNDSPEC :strategy l :listdatums <>}";
        assert_eq!(fmt(tree, &t, 180000).unwrap(), String::from_utf8_lossy(tree));
    }

    #[test]
    fn reg_types_and_aclitem() {
        let mut t = base(oid::REGCLASS);
        t.names.insert(1259, "pg_class".into());
        assert_eq!(fmt(&1259u32.to_le_bytes(), &t, 180000).unwrap(), "pg_class");
        assert_eq!(fmt(&0u32.to_le_bytes(), &t, 180000).unwrap(), "-");
        assert_eq!(fmt(&77u32.to_le_bytes(), &t, 180000).unwrap(), "77");
        assert_eq!(fmt(&0u32.to_le_bytes(), &base(oid::REGOPER), 180000).unwrap(), "0");
        let mut acl = base(oid::ACLITEM);
        acl.names.insert(10, "postgres".into());
        acl.names.insert(20, "we\"ird".into());
        // PostgreSQL 15: 32-bit privileges, grant options in the high half; SELECT (bit 1) with grant option
        let mut v = vec![];
        v.extend_from_slice(&20u32.to_le_bytes());
        v.extend_from_slice(&10u32.to_le_bytes());
        v.extend_from_slice(&(0x2u32 | (0x2 << 16) | 0x1).to_le_bytes());
        assert_eq!(fmt(&v, &acl, 150000).unwrap(), "\"we\"\"ird\"=ar*/postgres");
        // PostgreSQL 16+: 64 bits; PUBLIC grantee; unknown grantor as its number
        let mut v = vec![];
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&99u32.to_le_bytes());
        v.extend_from_slice(&((1u64 << 14) | (1u64 << (32 + 14))).to_le_bytes());
        assert_eq!(fmt(&v, &acl, 170000).unwrap(), "=m*/99");
        assert!(fmt(&v[..10], &acl, 170000).is_err());
    }

    #[test]
    fn geometry_and_vectors() {
        let mut b = vec![];
        for x in [1.0f64, 2.5, -0.0, 0.1] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        assert_eq!(fmt(&b, &base(oid::BOX), 180000).unwrap(), "(1,2.5),(-0,0.1)");
        assert_eq!(fmt(&b, &base(oid::LSEG), 180000).unwrap(), "[(1,2.5),(-0,0.1)]");
        assert_eq!(fmt(&b[..24], &base(oid::CIRCLE), 180000).unwrap(), "<(1,2.5),-0>");
        assert!(fmt(&b[..20], &base(oid::LINE), 180000).is_err());
        // int2vector: ndim 1, dataoffset 0, elemtype, dim1 2, lbound 0, values
        let mut v = vec![];
        for w in [1u32, 0, 21, 2, 0] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(&(-3i16).to_le_bytes());
        v.extend_from_slice(&7i16.to_le_bytes());
        assert_eq!(fmt(&v, &base(oid::INT2VECTOR), 180000).unwrap(), "-3 7");
        assert!(fmt(&v[..22], &base(oid::INT2VECTOR), 180000).is_err());
    }

    #[test]
    fn jsonpath_with_shared_operands_stops() {
        // 40 `&&` items whose both operands are the next item: printing would visit 2^40 items
        let mut v = 0x8000_0001u32.to_le_bytes().to_vec(); // lax, version 1
        for _ in 0..40 {
            v.extend_from_slice(&[4, 0, 0, 0]);
            for w in [0i32, 16, 16] {
                v.extend_from_slice(&w.to_le_bytes());
            }
        }
        v.extend_from_slice(&[27, 0, 0, 0, 0, 0, 0, 0]); // $
        assert!(fmt(&v, &base(oid::JSONPATH), 180000).unwrap_err().contains("more items"));
        // the same with one `&&` prints
        let mut v = 0x8000_0001u32.to_le_bytes().to_vec();
        v.extend_from_slice(&[4, 0, 0, 0]);
        for w in [0i32, 16, 16] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(&[27, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(fmt(&v, &base(oid::JSONPATH), 180000).unwrap(), "($ && $)");
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = crate::inject::Rng::new(42, 0);
        let int4 = TypeDesc { oid: oid::INT4, typlen: 4, typalign: b'i', ..Default::default() };
        let text = TypeDesc { oid: oid::TEXT, typlen: -1, typalign: b'i', ..Default::default() };
        let range = TypeDesc { oid: 3904, typtype: b'r', subtype: Some(Box::new(int4.clone())), ..Default::default() };
        let textrange = TypeDesc { oid: 1, typtype: b'r', subtype: Some(Box::new(text.clone())), ..Default::default() };
        let multi =
            TypeDesc { oid: 2, typtype: b'm', subtype: Some(Box::new(textrange.clone())), ..Default::default() };
        let field = |t: &TypeDesc, dropped: bool| FieldDesc {
            attlen: t.typlen,
            attalign: t.typalign,
            dropped,
            r#type: (!dropped).then(|| t.clone()),
            ..Default::default()
        };
        let comp = TypeDesc {
            typtype: b'c',
            fields: vec![field(&int4, false), field(&text, true), field(&text, false), field(&range, false)],
            ..Default::default()
        };
        let mut types: Vec<TypeDesc> = [
            oid::LSEG,
            oid::PATH,
            oid::BOX,
            oid::POLYGON,
            oid::LINE,
            oid::CIRCLE,
            oid::CASH,
            oid::INT2VECTOR,
            oid::OIDVECTOR,
            oid::TXID_SNAPSHOT,
            oid::PG_SNAPSHOT,
            oid::ACLITEM,
            oid::TSVECTOR,
            oid::TSQUERY,
            oid::JSONPATH,
            oid::REGCLASS,
            oid::REGOPER,
        ]
        .into_iter()
        .map(base)
        .collect();
        types.extend([range, textrange, multi, comp]);
        let mut out = Vec::new();
        for t in &types {
            for _ in 0..20_000 {
                let mut v = vec![0u8; rng.below(80) as usize];
                rng.fill(&mut v);
                if !v.is_empty() && rng.below(2) == 0 {
                    // small counts and offsets reach deeper than pure noise
                    v[0] = (rng.below(4)) as u8;
                    v.iter_mut().skip(1).take(3).for_each(|b| *b = 0);
                }
                out.clear();
                let _ = format_value(&v, t, &OutputOptions::default(), &mut out);
            }
        }
    }
}
