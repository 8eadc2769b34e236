use super::*;

#[test]
fn alignment_macros() {
    assert_eq!(align_nominal(5, b'c'), 5);
    assert_eq!(align_nominal(5, b's'), 6);
    assert_eq!(align_nominal(5, b'i'), 8);
    assert_eq!(align_nominal(9, b'd'), 16);
    assert_eq!(align_nominal(9, b'?'), 10);
    assert_eq!(align_nominal(usize::MAX, b'd'), usize::MAX & !7);
}

#[test]
fn reldesc_json_accepts_chars_and_bytes() {
    let j = r#"{"natts":2,"has_toast":true,"toast_relid":"5","attrs":[
        {"attnum":1,"attlen":4,"attalign":"i","attbyval":true,"attisdropped":false,"typname":"int4","attstorage":"p"},
        {"attnum":2,"attlen":-1,"attalign":105,"typname":"text"}]}"#;
    let r: RelDesc = serde_json::from_str(j).unwrap();
    assert_eq!(r.attrs[0].attalign, b'i');
    assert_eq!(r.attrs[1].attalign, b'i');
    assert_eq!(r.attrs[1].attstorage, b'p');
    let back = serde_json::to_string(&r).unwrap();
    assert!(back.contains(r#""attalign":"i""#));
    let again: RelDesc = serde_json::from_str(&back).unwrap();
    assert_eq!(again, r);
}
