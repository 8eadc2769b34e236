use super::*;

/// A struct with a distinct value in every field, so a wrong offset shows up as a mismatch.
fn sample(layout: ControlLayout) -> ControlFileData {
    ControlFileData {
        system_identifier: 0x0102_0304_0506_0708,
        pg_control_version: layout.pg_control_version(),
        catalog_version_no: match layout {
            ControlLayout::V1300 => 202307071,
            ControlLayout::V1700 => 202406281,
            ControlLayout::V1800 => 202506291,
        },
        state: 4,
        time: 1_700_000_001,
        check_point: Lsn(0x0000_0002_0000_0010),
        check_point_copy: CheckPoint {
            redo: Lsn(0x0000_0002_0000_0008),
            this_timeline_id: 3,
            prev_timeline_id: 2,
            full_page_writes: true,
            wal_level: layout.has_checkpoint_wal_level().then_some(WalLevel::Logical),
            next_xid: FullTransactionId::from_epoch_and_xid(5, 4_000_000_000),
            next_oid: 11,
            next_multi: 12,
            next_multi_offset: 13,
            oldest_xid: 14,
            oldest_xid_db: 15,
            oldest_multi: 16,
            oldest_multi_db: 17,
            time: 1_700_000_002,
            oldest_commit_ts_xid: 18,
            newest_commit_ts_xid: 19,
            oldest_active_xid: 20,
        },
        unlogged_lsn: Lsn(21),
        min_recovery_point: Lsn(22),
        min_recovery_point_tli: 23,
        backup_start_point: Lsn(24),
        backup_end_point: Lsn(25),
        backup_end_required: true,
        wal_level: 2,
        wal_log_hints: true,
        max_connections: 26,
        max_worker_processes: 27,
        max_wal_senders: 28,
        max_prepared_xacts: 29,
        max_locks_per_xact: 30,
        track_commit_timestamp: true,
        max_align: 8,
        float_format: FLOATFORMAT_VALUE,
        blcksz: 8192,
        relseg_size: 131072,
        xlog_blcksz: 8192,
        xlog_seg_size: 16 << 20,
        name_data_len: 64,
        index_max_keys: 32,
        toast_max_chunk_size: 1996,
        loblksize: 2048,
        float8_by_val: true,
        data_checksum_version: 1,
        default_char_signedness: layout.has_default_char_signedness().then_some(false),
        mock_authentication_nonce: std::array::from_fn(|i| i as u8 + 0x40),
        crc: 0,
    }
}

#[test]
fn synthetic_round_trip_every_layout() {
    for layout in ControlLayout::ALL {
        let mut data = sample(layout);
        let mut buf = vec![0u8; PG_CONTROL_FILE_SIZE];
        data.encode_into(&mut buf, layout).unwrap();
        data.crc = rewrite_crc(&mut buf).unwrap();
        assert_eq!(ControlFileData::decode(&buf, layout).unwrap(), data);
        let cf = parse_control(&buf).unwrap();
        assert!(cf.crc_ok, "{layout:?}");
        assert!(cf.anomalies.is_empty(), "{layout:?}: {:?}", cf.anomalies);
        assert_eq!(cf.state, DBState::InCrashRecovery);
        assert_eq!(cf.next_xid.to_string(), "5:4000000000");
        assert_eq!(cf.redo_wal_file.as_deref(), Some("000000030000000200000000"));
        assert_eq!(cf.default_char_signedness, data.default_char_signedness);
        // Every field lies inside the struct and before the CRC.
        assert!(layout.mock_authentication_nonce_offset() + MOCK_AUTH_NONCE_LEN <= layout.crc_offset());
        assert!(layout.crc_offset() + 4 <= layout.size());
    }
}

#[test]
fn wrong_layout_crc_is_recognised() {
    // An intact 18 file read with the 17 layout (say PG_VERSION was wrong): the CRC fails at
    // 17's offset but matches at 18's, which points at a version mix-up, not damage.
    let mut buf = vec![0u8; PG_CONTROL_FILE_SIZE];
    sample(ControlLayout::V1800).encode_into(&mut buf, ControlLayout::V1800).unwrap();
    rewrite_crc(&mut buf).unwrap();
    let cf = parse_control_as(&buf, 17).unwrap();
    assert!(!cf.crc_ok);
    assert!(cf.anomalies.iter().any(|a| a.contains("does match the layout of pg_control_version 1800")));
    assert!(cf.anomalies.iter().any(|a| a.contains("pg_control_version is 1800")));
}

#[test]
fn crc32c_is_postgres_crc() {
    // Standard CRC-32C check value, which PostgreSQL's pg_crc32c also produces.
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn lsn_text() {
    assert_eq!(Lsn(0x1A2B3C8).to_string(), "0/1A2B3C8");
    assert_eq!(Lsn(0x0000_0001_0000_00FF).to_string(), "1/FF");
    assert_eq!("0/1a2b3c8".parse::<Lsn>().unwrap(), Lsn(0x1A2B3C8));
    assert_eq!("A/0".parse::<Lsn>().unwrap(), Lsn(10 << 32));
    for bad in ["", "1", "1/", "/1", "x/1", "1/2/3", "100000000/0"] {
        assert!(bad.parse::<Lsn>().is_err(), "{bad}");
    }
    assert_eq!(serde_json::to_string(&Lsn(0x10)).unwrap(), "\"0/10\"");
}

#[test]
fn enums_round_trip() {
    for code in -1..9 {
        assert_eq!(DBState::from_code(code).code(), code);
        assert_eq!(WalLevel::from_code(code).code(), code);
    }
    assert_eq!(DBState::from_code(1).name(), "shut down");
    assert_eq!(DBState::from_code(2).name(), "shut down in recovery");
    assert_eq!(DBState::from_code(99).name(), "unrecognized status code");
    assert!(DBState::Shutdowned.is_clean_shutdown());
    assert!(!DBState::InProduction.is_clean_shutdown());
    assert_eq!(serde_json::to_string(&DBState::InProduction).unwrap(), "\"in production\"");
}

#[test]
fn catversion_ranges() {
    assert_eq!(major_from_catversion(202007201), None);
    assert_eq!(major_from_catversion(202007202), Some(14));
    assert_eq!(major_from_catversion(202107181), Some(14));
    assert_eq!(major_from_catversion(202209061), Some(15));
    assert_eq!(major_from_catversion(202307071), Some(16));
    assert_eq!(major_from_catversion(202406281), Some(17));
    assert_eq!(major_from_catversion(202506291), Some(18));
    assert_eq!(major_from_catversion(202506292), None);
    assert_eq!(major_from_catversion(0), None);
}

#[test]
fn wal_file_names() {
    assert_eq!(wal_file_name(1, Lsn(0x1CA7450), 16 << 20).as_deref(), Some("000000010000000000000001"));
    assert_eq!(wal_file_name(2, Lsn(0x0000_0003_2100_0000), 16 << 20).as_deref(), Some("000000020000000300000021"));
    assert_eq!(wal_file_name(1, Lsn(1), 0), None);
    assert_eq!(wal_file_name(1, Lsn(1), 3 << 20), None);
}
