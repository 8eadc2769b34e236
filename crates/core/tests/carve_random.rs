//! The carver and the block classifier never panic on bad bytes: random pages, and well-formed pages of
//! jsonb, array, numeric and text tuples with random damage (bytes overwritten, bits flipped, line pointers
//! scrambled), carved with the column types of the table.

use pgsurgeon_core::datum::TypeDesc;
use pgsurgeon_core::format::heap::{
    HeapTupleHeaderData, ItemPointerData, HEAP_HASVARWIDTH, HEAP_XMAX_INVALID, HEAP_XMIN_COMMITTED,
};
use pgsurgeon_core::format::tuple::{AttrDesc, RelDesc};
use pgsurgeon_core::rows::carve::{carve_pages, CarveConfig, ColumnOut, OutFormat};
use pgsurgeon_core::rows::classify::{classify_page, ClassifyConfig};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn attr(attnum: i16, attlen: i16, attalign: u8, typname: &str) -> AttrDesc {
    AttrDesc {
        attnum,
        attlen,
        attalign,
        attbyval: attlen > 0 && attlen <= 8,
        attisdropped: false,
        typname: typname.into(),
        attstorage: if attlen > 0 { b'p' } else { b'x' },
    }
}

fn ty(oid: u32, name: &str, typlen: i16, typalign: u8, elem: Option<TypeDesc>) -> TypeDesc {
    TypeDesc {
        oid,
        name: name.into(),
        typtype: b'b',
        typlen,
        typalign,
        typbyval: typlen > 0,
        typdelim: b',',
        elem: elem.map(Box::new),
        ..Default::default()
    }
}

fn table() -> (RelDesc, Vec<ColumnOut>) {
    let desc = RelDesc {
        natts: 5,
        attrs: vec![
            attr(1, 4, b'i', "int4"),
            attr(2, -1, b'i', "text"),
            attr(3, -1, b'i', "jsonb"),
            attr(4, -1, b'i', "_int4"),
            attr(5, -1, b'i', "numeric"),
        ],
        has_toast: false,
        toast_relid: 0,
    };
    let int4 = ty(23, "int4", 4, b'i', None);
    let cols = vec![
        ColumnOut { attnum: 1, name: "id".into(), r#type: Some(int4.clone()), missing: None },
        ColumnOut { attnum: 2, name: "t".into(), r#type: Some(ty(25, "text", -1, b'i', None)), missing: None },
        ColumnOut { attnum: 3, name: "j".into(), r#type: Some(ty(3802, "jsonb", -1, b'i', None)), missing: None },
        ColumnOut { attnum: 4, name: "a".into(), r#type: Some(ty(1007, "_int4", -1, b'i', Some(int4))), missing: None },
        ColumnOut { attnum: 5, name: "n".into(), r#type: Some(ty(1700, "numeric", -1, b'i', None)), missing: None },
    ];
    (desc, cols)
}

fn short_varlena(payload: &[u8], out: &mut Vec<u8>) {
    out.push(((payload.len() + 1) << 1 | 1) as u8);
    out.extend_from_slice(payload);
}

/// A well-formed tuple: id, text, jsonb {"k": id}, int4[] {id, id+1}, numeric id.
fn tuple(block: u32, lp: u16, id: i32) -> Vec<u8> {
    let mut t = vec![0u8; 24];
    HeapTupleHeaderData {
        t_xmin: 700,
        t_xmax: 0,
        t_field3: 0,
        t_ctid: ItemPointerData { block, offset: lp },
        t_infomask2: 5,
        t_infomask: HEAP_XMIN_COMMITTED | HEAP_XMAX_INVALID | HEAP_HASVARWIDTH,
        t_hoff: 24,
    }
    .write(&mut t);
    t.extend_from_slice(&id.to_le_bytes());
    short_varlena(format!("row {id}").as_bytes(), &mut t);
    // jsonb: object, 1 pair; key "k" (string, len 1), value numeric (short numeric, 4-aligned)
    let mut numeric = vec![];
    numeric.extend_from_slice(&0x8000u16.to_le_bytes());
    numeric.extend_from_slice(&((id.unsigned_abs() % 10000) as u16).to_le_bytes());
    let mut j = vec![];
    j.extend_from_slice(&(0x2000_0001u32).to_le_bytes());
    j.extend_from_slice(&1u32.to_le_bytes());
    let value_len = 3 + 5; // 3 padding bytes to 4-align after the key, then a short varlena numeric
    j.extend_from_slice(&(0x1000_0000u32 | value_len).to_le_bytes());
    j.push(b'k');
    j.extend_from_slice(&[0, 0, 0]);
    short_varlena(&numeric, &mut j);
    short_varlena(&j, &mut t);
    // int4[]: ndim 1, no nulls, elemtype 23, dim 2, lbound 1, then the data at MAXALIGN(16 + 8) = 24 from the
    // 4-byte header (right after the lower bound)
    let mut a = vec![];
    a.extend_from_slice(&1u32.to_le_bytes());
    a.extend_from_slice(&0u32.to_le_bytes());
    a.extend_from_slice(&23u32.to_le_bytes());
    a.extend_from_slice(&2u32.to_le_bytes());
    a.extend_from_slice(&1u32.to_le_bytes());
    a.extend_from_slice(&id.to_le_bytes());
    a.extend_from_slice(&(id + 1).to_le_bytes());
    short_varlena(&a, &mut t);
    short_varlena(&numeric, &mut t);
    t
}

fn page(block: u32, n: u16) -> Vec<u8> {
    let tuples: Vec<Vec<u8>> = (0..n).map(|i| tuple(block, i + 1, i32::from(i) * 7)).collect();
    let refs: Vec<&[u8]> = tuples.iter().map(|t| t.as_slice()).collect();
    pgsurgeon_core::format::page::assemble_heap_page(&refs, 8192).expect("test rows fit on a page")
}

fn config(desc: RelDesc, columns: Vec<ColumnOut>) -> CarveConfig {
    serde_json::from_value::<CarveConfig>(serde_json::json!({
        "nblocks": 100,
        "desc": serde_json::to_value(&desc).unwrap(),
        "columns": [],
    }))
    .map(|mut c| {
        c.columns = columns;
        c.format = OutFormat::Text;
        c
    })
    .unwrap()
}

#[test]
fn healthy_page_round_trips() {
    let (desc, cols) = table();
    let cfg = config(desc, cols);
    let p = page(3, 20);
    let (res, out) = carve_pages(&p, &[3], &[], &cfg).unwrap();
    assert_eq!(res.rows.len(), 20);
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("0\trow 0\t{\"k\": 0}\t{0,1}\t0\n"), "{text}");
    assert!(text.contains("7\trow 7\t{\"k\": 7}\t{7,8}\t7\n"), "{text}");
}

#[test]
fn damaged_pages_never_panic() {
    let (desc, cols) = table();
    let cfg = config(desc.clone(), cols.clone());
    let ccfg = ClassifyConfig {
        files: vec![],
        first: 0,
        nblocks: 100,
        blcksz: 8192,
        relseg_size: 131072,
        checksums: false,
        desc: Some(desc),
        horizons: None,
        jobs: None,
        unit_blocks: 256,
        columns: cols,
        rel_nblocks: None,
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let healthy = page(3, 25);
    let mut found = 0usize;
    for round in 0..3000u64 {
        let mut p =
            if round % 10 == 0 { (0..8192).map(|_| rng.next() as u8).collect::<Vec<u8>>() } else { healthy.clone() };
        match round % 4 {
            0 => {
                for _ in 0..=rng.below(40) {
                    let i = rng.below(8192) as usize;
                    p[i] ^= 1 << rng.below(8);
                }
            }
            1 => {
                let at = rng.below(8192) as usize;
                let n = (rng.below(64) as usize).min(8192 - at);
                for b in &mut p[at..at + n] {
                    *b = rng.next() as u8;
                }
            }
            2 => {
                for b in &mut p[..24 + 4 * rng.below(30) as usize] {
                    *b = rng.next() as u8;
                }
            }
            _ => {
                let at = 24 + rng.below(8000) as usize;
                for b in &mut p[at..(at + 8).min(8192)] {
                    *b = 0xff;
                }
            }
        }
        let _ = classify_page(&p, 3, &ccfg);
        let (res, out) = carve_pages(&p, &[3], &[], &cfg).unwrap();
        for r in &res.rows {
            assert!(r.data_end <= out.len() && r.data_start <= r.data_end);
        }
        found += res.rows.len();
    }
    assert!(found > 10_000, "damaged copies of a 25-tuple page should still give rows ({found})");
}
