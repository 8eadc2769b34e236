//! Dates and times as DateStyle ISO, IntervalStyle postgres and TimeZone UTC print them
//! (`datatype/timestamp.h`, `utils/adt/date.c`, `timestamp.c`, and `datetime.c`'s EncodeDateOnly,
//! EncodeDateTime, EncodeTimeOnly, EncodeInterval).

use std::fmt::Write as _;

use super::{fixed, oid, DatumResult, OutputOptions, Str};

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

/// The output function of a date or time type (date, time, timetz, timestamp, timestamptz, interval) on its
/// fixed-length bytes.
pub(super) fn format_datetime(type_oid: u32, data: &[u8], opts: &OutputOptions, out: &mut Vec<u8>) -> DatumResult {
    match type_oid {
        oid::DATE => format_date(valid_date(i32::from_le_bytes(fixed::<4>(data, "date")?))?, out),
        oid::TIME => format_time(valid_time(i64::from_le_bytes(fixed::<8>(data, "time")?))?, out),
        oid::TIMETZ => {
            let v = fixed::<12>(data, "timetz")?;
            let time = i64::from_le_bytes(v[0..8].try_into().unwrap_or([0; 8]));
            let zone = i32::from_le_bytes(v[8..12].try_into().unwrap_or([0; 4]));
            format_time(valid_time(time)?, out);
            format_zone(zone, out);
        }
        oid::TIMESTAMP => {
            format_timestamp(valid_timestamp(i64::from_le_bytes(fixed::<8>(data, "timestamp")?))?, false, out)
        }
        oid::TIMESTAMPTZ => {
            format_timestamp(valid_timestamp(i64::from_le_bytes(fixed::<8>(data, "timestamptz")?))?, true, out)
        }
        oid::INTERVAL => {
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
        o => return Err(format!("type oid {o} is not a date or time type")),
    }
    Ok(())
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
pub(super) fn format_zone(tz: i32, out: &mut Vec<u8>) {
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
