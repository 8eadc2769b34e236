//! money, int2vector/oidvector, pg_snapshot/txid_snapshot, the reg* types and aclitem.

use std::fmt::Write as _;

use super::{fixed, oid, push_display, DatumResult, Str, TypeDesc};
use crate::format::bytes::{u32_at, u64_at};

/// cash_out (`utils/adt/cash.c`) with `lc_monetary = 'C'` (the salvage sessions set it): the C
/// locale leaves every lconv field empty or CHAR_MAX, so cash_out falls back to 2 fraction digits,
/// '.' and ',' every 3 digits, '$' before the amount and '-' before the '$'.
pub(super) fn format_money(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let v = i64::from_le_bytes(fixed::<8>(data, "money")?);
    let mut digits = v.unsigned_abs().to_string().into_bytes();
    while digits.len() < 3 {
        digits.insert(0, b'0');
    }
    let (int, frac) = digits.split_at(digits.len() - 2);
    if v < 0 {
        out.push(b'-');
    }
    out.push(b'$');
    for (i, d) in int.iter().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(b',');
        }
        out.push(*d);
    }
    out.push(b'.');
    out.extend_from_slice(frac);
    Ok(())
}

/// int2vectorout / oidvectorout (`utils/adt/int.c`, `oid.c`): the values of a one-dimensional
/// array, space-separated. The struct (`c.h` int2vector, oidvector) has ndim,
/// dataoffset, elemtype, dim1, lbound1, then the values at struct offset 24.
pub(super) fn format_vector(data: &[u8], width: usize, out: &mut Vec<u8>) -> DatumResult {
    let ndim = u32_at(data, 0).ok_or("vector without ndim")?;
    let n = match ndim {
        0 => 0,
        1 => u32_at(data, 12).ok_or("vector without its length")? as usize,
        d => return Err(format!("vector has {d} dimensions")),
    };
    let values = data.get(20..).unwrap_or(&[]);
    if values.len() < n.saturating_mul(width) {
        return Err(format!("vector of {n} values has only {} bytes", values.len()));
    }
    for (i, c) in values.chunks_exact(width).take(n).enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        if width == 2 {
            push_display(out, i16::from_le_bytes([c[0], c[1]]));
        } else {
            push_display(out, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        }
    }
    Ok(())
}

/// pg_snapshot_out (`utils/adt/xid8funcs.c`; txid_snapshot shares it): `xmin:xmax:xip,…`. The
/// struct has nxip, then 8-aligned xmin, xmax and xip[] (struct offsets 8, 16, 24).
pub(super) fn format_snapshot(data: &[u8], out: &mut Vec<u8>) -> DatumResult {
    let nxip = u32_at(data, 0).ok_or("snapshot without nxip")? as usize;
    let xmin = u64_at(data, 4).ok_or("snapshot without xmin")?;
    let xmax = u64_at(data, 12).ok_or("snapshot without xmax")?;
    let xips = data.get(20..).unwrap_or(&[]);
    if xips.len() < nxip.saturating_mul(8) {
        return Err(format!("snapshot of {nxip} xids has only {} bytes", xips.len()));
    }
    let _ = write!(Str(out), "{xmin}:{xmax}:");
    for (i, c) in xips.chunks_exact(8).take(nxip).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_display(out, u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
    }
    Ok(())
}

/// The reg* types' OIDs (`catalog/pg_type.dat`).
pub(super) fn is_reg_type(type_oid: u32) -> bool {
    matches!(
        type_oid,
        oid::REGPROC
            | oid::REGPROCEDURE
            | oid::REGOPER
            | oid::REGOPERATOR
            | oid::REGCLASS
            | oid::REGTYPE
            | oid::REGCONFIG
            | oid::REGDICTIONARY
            | oid::REGNAMESPACE
            | oid::REGROLE
            | oid::REGCOLLATION
    )
}

/// regclassout and its siblings (`utils/adt/regproc.c`): InvalidOid prints as '-' ('0' for regoper
/// and regoperator), an OID with a catalog row as the name the server gave it (qualified and quoted as the salvage session's
/// search_path requires; catalog.py asks the server for `oid::regclass::text` and so on), any
/// other OID as its number.
pub(super) fn format_reg(data: &[u8], t: &TypeDesc, out: &mut Vec<u8>) -> DatumResult {
    let v = u32::from_le_bytes(fixed::<4>(data, "reg*")?);
    if v == 0 {
        out.push(if matches!(t.oid, oid::REGOPER | oid::REGOPERATOR) { b'0' } else { b'-' });
    } else if let Some(name) = t.names.get(&v) {
        out.extend_from_slice(name.as_bytes());
    } else {
        push_display(out, v);
    }
    Ok(())
}

/// ACL_ALL_RIGHTS_STR (`utils/acl.h`), one letter per privilege bit; 'm' (MAINTAIN) exists since 17,
/// 's' and 'A' since 15: older servers never set those bits.
const ACL_RIGHTS: &[u8; 15] = b"arwdDxtXUCTcsAm";

/// putid (`utils/adt/acl.c`): a role name, double-quoted unless all alphanumeric or '_'.
fn putid(name: &str, out: &mut Vec<u8>) {
    let safe = name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
    if !safe {
        out.push(b'"');
    }
    for c in name.bytes() {
        if c == b'"' {
            out.push(b'"');
        }
        out.push(c);
    }
    if !safe {
        out.push(b'"');
    }
}

fn role(id: u32, t: &TypeDesc, out: &mut Vec<u8>) {
    match t.names.get(&id) {
        Some(name) => putid(name, out),
        None => push_display(out, id),
    }
}

/// aclitemout (`utils/adt/acl.c`): `grantee=privs/grantor`, PUBLIC (grantee 0) as an empty name,
/// '*' after a privilege held with grant option. AclMode is 32 bits up to 15 (grant options in
/// the high 16) and 64 bits since 16 (grant options in the high 32): the value's size tells.
pub(super) fn format_aclitem(data: &[u8], t: &TypeDesc, out: &mut Vec<u8>) -> DatumResult {
    let grantee = u32_at(data, 0).ok_or("aclitem without grantee")?;
    let grantor = u32_at(data, 4).ok_or("aclitem without grantor")?;
    let (privs, goptions) = match data.len() {
        12 => {
            let m = u64::from(u32_at(data, 8).unwrap_or(0));
            (m & 0xFFFF, m >> 16)
        }
        16 => {
            let m = u64_at(data, 8).unwrap_or(0);
            (m & 0xFFFF_FFFF, m >> 32)
        }
        n => return Err(format!("aclitem has {n} bytes, needs 12 or 16")),
    };
    if grantee != 0 {
        role(grantee, t, out);
    }
    out.push(b'=');
    for (i, c) in ACL_RIGHTS.iter().enumerate() {
        if privs & (1 << i) != 0 {
            out.push(*c);
        }
        if goptions & (1 << i) != 0 {
            out.push(b'*');
        }
    }
    out.push(b'/');
    role(grantor, t, out);
    Ok(())
}
