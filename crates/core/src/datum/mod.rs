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

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;

use crate::format::bytes::u32_at;

mod array;
mod datetime;
mod geo;
mod jsonb;
mod jsonpath;
mod misc;
mod nested;
mod network;
mod number;
mod range;
mod record;
mod textsearch;

pub use array::{array_first_item, format_array};
pub use datetime::{format_date, format_interval, format_time, format_timestamp, j2date};
pub use jsonb::format_jsonb;
pub use nested::varlena_any;
pub use number::{format_float4, format_float8, format_numeric, validate_numeric};

use jsonb::push_json_string;
use nested::{align_to, read_att};
use number::{push_int, push_uint};

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

/// Whether every text `format_value` writes for type `t` is ASCII letters, digits, '.', '+' and '-' (integers,
/// OIDs, floats, numeric, bool): nothing COPY escapes or quotes, in text or CSV, and nothing that is not UTF-8, so
/// the carver need not look at it again.
pub fn output_is_plain_ascii(t: &TypeDesc) -> bool {
    use oid::*;
    t.elem.is_none()
        && !matches!(t.typtype, b'c' | b'r' | b'm' | b'e')
        && matches!(t.oid, BOOL | INT2 | INT4 | INT8 | OID | XID | CID | XID8 | FLOAT4 | FLOAT8 | NUMERIC)
}

/// Append the text form of a value of type `t` to `out`. `data` is the payload: the fixed-length
/// bytes, or a varlena's data without its header (detoasted, decompressed).
pub fn format_value(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    if t.elem.is_some() && t.typlen == -1 {
        return format_array(data, t, opts, out);
    }
    match t.typtype {
        b'c' => record::format_record(data, t, opts, out),
        b'r' => range::format_range(data, t, opts, out),
        b'm' => range::format_multirange(data, t, opts, out),
        b'e' => format_enum(data, t, out),
        _ => format_base(data, t, opts, out),
    }
}

/// enum_out: the label of the pg_enum row whose oid the value holds.
fn format_enum(data: &[u8], t: &TypeDesc, out: &mut Vec<u8>) -> DatumResult {
    let v = fixed::<4>(data, "enum")?;
    let oid = u32::from_le_bytes(v);
    match t.enum_labels.get(&oid) {
        Some(label) => {
            out.extend_from_slice(label.as_bytes());
            Ok(())
        }
        None => Err(format!("enum value oid {oid} is not a label of type {}", t.name)),
    }
}

/// A base type's output function, by type OID: the one-liners here, each family in its module.
fn format_base(data: &[u8], t: &TypeDesc, opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    use oid::*;
    match t.oid {
        BOOL => {
            let [b] = fixed::<1>(data, "bool")?;
            out.push(if b != 0 { b't' } else { b'f' });
        }
        CHAR => format_char(fixed::<1>(data, "\"char\"")?[0], opts, out),
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
        UUID => format_uuid(&fixed::<16>(data, "uuid")?, out),
        DATE | TIME | TIMETZ | TIMESTAMP | TIMESTAMPTZ | INTERVAL => datetime::format_datetime(t.oid, data, opts, out)?,
        TID => format_tid(&fixed::<6>(data, "tid")?, out),
        PG_LSN => format_lsn(u64::from_le_bytes(fixed::<8>(data, "pg_lsn")?), opts, out),
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
        MACADDR => network::push_mac(out, &fixed::<6>(data, "macaddr")?),
        MACADDR8 => network::push_mac(out, &fixed::<8>(data, "macaddr8")?),
        INET | CIDR => network::format_inet(data, t.oid == CIDR, out)?,
        BIT | VARBIT => format_bits(data, out)?,
        _ => return Err(format!("type {} (oid {}) is not supported by the carver", t.name, t.oid)),
    }
    Ok(())
}

/// charout: non-ASCII bytes as \ooo (PostgreSQL 15+), NUL as empty.
fn format_char(b: u8, opts: &OutputOptions, out: &mut Vec<u8>) {
    if b >= 0x80 && opts.server_version_num >= 150000 {
        let _ = write!(Str(out), "\\{:03o}", b);
    } else if b != 0 {
        out.push(b);
    }
}

/// uuid_out: 8-4-4-4-12 lower-case hex digits.
fn format_uuid(v: &[u8; 16], out: &mut Vec<u8>) {
    for (i, b) in v.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        push_hex(out, &[*b]);
    }
}

/// tidout: `(block,offset)`, the block number stored as two 16-bit halves, high first.
fn format_tid(v: &[u8; 6], out: &mut Vec<u8>) {
    let block = (u32::from(u16::from_le_bytes([v[0], v[1]])) << 16) | u32::from(u16::from_le_bytes([v[2], v[3]]));
    let off = u16::from_le_bytes([v[4], v[5]]);
    let _ = write!(Str(out), "({block},{off})");
}

/// pg_lsn_out (utils/adt/pg_lsn.c) pads the low half to 8 digits from PostgreSQL 19;
/// 14 to 18 print both halves unpadded.
fn format_lsn(v: u64, opts: &OutputOptions, out: &mut Vec<u8>) {
    if opts.server_version_num >= 190000 {
        let _ = write!(Str(out), "{:X}/{:08X}", v >> 32, v & 0xFFFF_FFFF);
    } else {
        let _ = write!(Str(out), "{:X}/{:X}", v >> 32, v & 0xFFFF_FFFF);
    }
}

/// bit_out / varbit_out: a bit length word, then the bits, most significant first.
fn format_bits(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let bitlen = u32_at(data, 0).ok_or("bit string shorter than its length word")? as usize;
    let bytes = data.get(4..).unwrap_or(&[]);
    if bytes.len() < bitlen.div_ceil(8) {
        return Err(format!("bit string of {bitlen} bits has only {} bytes", bytes.len()));
    }
    for i in 0..bitlen {
        out.push(if bytes[i / 8] & (0x80 >> (i % 8)) != 0 { b'1' } else { b'0' });
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

/// isspace() in the C locale.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
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

#[cfg(test)]
mod tests;
