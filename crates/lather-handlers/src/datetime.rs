//! `xs:dateTime` values (as in `wsu:Created`) to and from Unix time, without a date library.

/// Seconds since the Unix epoch of an `xs:dateTime` with a time zone (`Z` or `±HH:MM`);
/// fractional seconds are dropped. `None` for anything else, including a missing zone
/// (a timestamp without one cannot be compared safely).
pub(crate) fn unix_seconds(text: &str) -> Option<i64> {
    let b = text.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = std::str::from_utf8(b.get(r)?).ok()?;
        if s.bytes().all(|c| c.is_ascii_digit()) {
            s.parse().ok()
        } else {
            None
        }
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut rest = &b[19..];
    if rest.first() == Some(&b'.') {
        let digits = rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        rest = &rest[1 + digits..];
    }
    let offset = match rest {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |c: &u8| c.is_ascii_digit().then(|| i64::from(c - b'0'));
            let minutes = (digit(h1)? * 10 + digit(h2)?) * 60 + digit(m1)? * 10 + digit(m2)?;
            if *sign == b'+' {
                minutes * 60
            } else {
                -minutes * 60
            }
        }
        _ => return None,
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The `xs:dateTime` in UTC, with milliseconds, of `millis` since the Unix epoch (not
/// before it): `2026-11-22T10:00:00.999Z`.
pub(crate) fn utc_millis(millis: u64) -> String {
    let secs = millis / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
    let (year, month, day) = civil_from_days(days);
    let rest = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        millis % 1000
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_calendar_timegm() {
        // calendar.timegm(time.strptime(…, '%Y-%m-%dT%H:%M:%SZ'))
        assert_eq!(unix_seconds("2026-11-22T10:00:00Z"), Some(1_795_341_600));
        assert_eq!(unix_seconds("2000-02-29T23:59:59Z"), Some(951_868_799));
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
    }

    #[test]
    fn formats_like_python_isoformat() {
        // datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
        //     .isoformat(timespec='milliseconds').replace('+00:00', 'Z')
        assert_eq!(utc_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc_millis(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc_millis(1_795_341_600_999), "2026-11-22T10:00:00.999Z");
        assert_eq!(utc_millis(4_107_542_399_001), "2100-02-28T23:59:59.001Z");
        assert_eq!(
            unix_seconds(&utc_millis(1_795_341_600_999)),
            Some(1_795_341_600)
        );
    }

    #[test]
    fn handles_fractions_and_offsets_and_refuses_the_rest() {
        assert_eq!(
            unix_seconds("2026-11-22T11:30:00.123+01:30"),
            Some(1_795_341_600)
        );
        assert_eq!(
            unix_seconds("2026-11-22T08:00:00-02:00"),
            Some(1_795_341_600)
        );
        for bad in [
            "2026-11-22T10:00:00",
            "2026-13-01T00:00:00Z",
            "2026-11-22 10:00:00Z",
            "yesterday",
            "2026-11-22T10:00:00.Z",
        ] {
            assert_eq!(unix_seconds(bad), None, "{bad}");
        }
    }
}
