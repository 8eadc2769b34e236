//! The tuple descriptor the walk needs: a relation's attributes as pg_attribute has them, and how they are
//! read from the JSON the Python side builds out of catalog queries.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One pg_attribute row, as much of it as the walk needs (`attlen`, `attalign`, `attbyval`,
/// `attstorage` are pg_attribute's own copies, so dropped columns keep them).
///
/// In JSON, `attalign` and `attstorage` may be one-character strings (`"i"`, as SQL returns
/// them) or byte values (`105`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttrDesc {
    pub attnum: i16,
    /// > 0 fixed length, -1 varlena, -2 cstring.
    pub attlen: i16,
    /// b'c', b's', b'i' or b'd'.
    #[serde(serialize_with = "ser_char", deserialize_with = "de_char")]
    pub attalign: u8,
    #[serde(default)]
    pub attbyval: bool,
    #[serde(default)]
    pub attisdropped: bool,
    /// Type name, for messages only.
    #[serde(default)]
    pub typname: String,
    /// b'p', b'e', b'm' or b'x'.
    #[serde(default = "default_storage", serialize_with = "ser_char", deserialize_with = "de_char")]
    pub attstorage: u8,
}

fn default_storage() -> u8 {
    b'p'
}

fn ser_char<S: Serializer>(v: &u8, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&char::from(*v).to_string())
}

/// A catalog "char" code (`attalign`, `typtype`…) given as a one-character string, as SQL returns it, or a byte.
pub(crate) fn de_char<'de, D: Deserializer<'de>>(d: D) -> Result<u8, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum CharOrByte {
        Byte(u8),
        Str(String),
    }
    match CharOrByte::deserialize(d)? {
        CharOrByte::Byte(b) => Ok(b),
        CharOrByte::Str(s) if s.len() == 1 => Ok(s.as_bytes()[0]),
        CharOrByte::Str(s) => Err(serde::de::Error::custom(format!("expected a one-character code, got {s:?}"))),
    }
}

fn de_oid<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumOrStr {
        Num(u32),
        Str(String),
    }
    match NumOrStr::deserialize(d)? {
        NumOrStr::Num(n) => Ok(n),
        NumOrStr::Str(s) => s.parse().map_err(|_| serde::de::Error::custom(format!("expected an OID, got {s:?}"))),
    }
}

/// A relation's tuple descriptor: `attrs` in attnum order (1..=natts, dropped columns included).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelDesc {
    /// pg_class.relnatts.
    pub natts: u16,
    pub attrs: Vec<AttrDesc>,
    /// reltoastrelid != 0.
    #[serde(default)]
    pub has_toast: bool,
    /// pg_class.reltoastrelid (the TOAST table's OID, which is what pointers carry). JSON may
    /// give it as a number or, as json_build_object does for `oid`, a numeric string.
    #[serde(default, deserialize_with = "de_oid")]
    pub toast_relid: u32,
}

impl RelDesc {
    /// The descriptor every TOAST table has (`catalog/toasting.c`): chunk_id oid, chunk_seq int4,
    /// chunk_data bytea, all with plain storage.
    pub fn toast_table() -> RelDesc {
        let att = |attnum: i16, attlen: i16, typname: &str| AttrDesc {
            attnum,
            attlen,
            attalign: b'i',
            attbyval: attlen > 0,
            attisdropped: false,
            typname: typname.to_string(),
            attstorage: b'p',
        };
        RelDesc {
            natts: 3,
            attrs: vec![att(1, 4, "oid"), att(2, 4, "int4"), att(3, -1, "bytea")],
            has_toast: false,
            toast_relid: 0,
        }
    }
}
