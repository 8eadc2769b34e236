//! The datum tests: each family's printing on hand-made bytes, and [`format_value`] on damaged ones.

use super::datetime::format_zone;
use super::jsonb::{JB_FARRAY, JB_FOBJECT, JB_FSCALAR, JENTRY_ISBOOL_TRUE, JENTRY_ISSTRING};
use super::network::format_ipv6;
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
    // every digit count, each power of ten and its neighbours, appended after what the buffer already holds
    let mut out = b"x".to_vec();
    let mut want = String::from("x");
    for p in 0..20 {
        let ten = 10u64.pow(p);
        for v in [ten - 1, ten, ten + 1, ten.saturating_mul(5).saturating_add(3)] {
            push_uint(&mut out, v);
            out.push(b' ');
            want.push_str(&format!("{v} "));
        }
    }
    assert_eq!(String::from_utf8(out).unwrap(), want);
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
    let multi = TypeDesc { oid: 2, typtype: b'm', subtype: Some(Box::new(textrange.clone())), ..Default::default() };
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
