//! Network addresses: inet and cidr (`utils/adt/network.c`, `inet_net_ntop.c`), macaddr and macaddr8
//! (`utils/adt/mac.c`, `mac8.c`).

use std::fmt::Write as _;

use super::{push_hex, DatumResult, Str};
use crate::format::bytes::u8_at;

/// inet_out / cidr_out: the address, then `/bits` unless an inet's prefix covers the whole address.
pub(super) fn format_inet(data: &[u8], cidr: bool, out: &mut Vec<u8>) -> DatumResult {
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
pub(super) fn format_ipv6(a: &[u8], out: &mut Vec<u8>) {
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

/// macaddr_out / macaddr8_out: lower-case hex bytes joined by colons.
pub(super) fn push_mac(out: &mut Vec<u8>, v: &[u8]) {
    for (i, b) in v.iter().enumerate() {
        if i > 0 {
            out.push(b':');
        }
        push_hex(out, &[*b]);
    }
}
