//! `xs:dateTime` values (`wsu:Created`, `wse:Expires`, notification stamps) to and from
//! Unix time, without a date library.

/// An `xs:dateTime` read as Unix time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTime {
    /// Milliseconds since the Unix epoch (fractions beyond milliseconds are dropped).
    pub unix_millis: i64,
    /// Whether the text named its time zone (`Z` or `±hh:mm`); without one it was read as
    /// UTC, which is only safe where the specification says so.
    pub zoned: bool,
}

/// Reads `YYYY-MM-DDThh:mm:ss[.fff…][Z|±hh:mm]`. `None` for anything else.
pub fn parse(text: &str) -> Option<DateTime> {
    let b = text.as_bytes();
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = text.get(r)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
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
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let digits = r.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded: String = r[..digits].chars().chain("000".chars()).take(3).collect();
        millis = padded.parse().ok()?;
        rest = &r[digits..];
    }
    let (offset_minutes, zoned) = match rest.as_bytes() {
        b"" => (0, false),
        b"Z" => (0, true),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |c: &u8| c.is_ascii_digit().then(|| i64::from(c - b'0'));
            let minutes = (digit(h1)? * 10 + digit(h2)?) * 60 + digit(m1)? * 10 + digit(m2)?;
            (if *sign == b'+' { minutes } else { -minutes }, true)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(DateTime {
        unix_millis: seconds * 1000 + millis,
        zoned,
    })
}

/// The `xs:dateTime` in UTC, with milliseconds, of `millis` since the Unix epoch (not
/// before it): `2026-11-22T10:00:00.999Z`.
pub fn format_utc_millis(millis: u64) -> String {
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

    /// Seconds of a zoned value, as `wsu:Created` is read.
    fn unix_seconds(text: &str) -> Option<i64> {
        parse(text.trim())
            .filter(|d| d.zoned)
            .map(|d| d.unix_millis.div_euclid(1000))
    }

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
        assert_eq!(format_utc_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_utc_millis(951_782_400_123),
            "2000-02-29T00:00:00.123Z"
        );
        assert_eq!(
            format_utc_millis(1_795_341_600_999),
            "2026-11-22T10:00:00.999Z"
        );
        assert_eq!(
            format_utc_millis(4_107_542_399_001),
            "2100-02-28T23:59:59.001Z"
        );
        assert_eq!(
            unix_seconds(&format_utc_millis(1_795_341_600_999)),
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

    #[test]
    fn a_value_without_a_zone_reads_as_utc_and_says_so() {
        let d = parse("2026-11-22T10:00:00.5").unwrap();
        assert_eq!(d.unix_millis, 1_795_341_600_500);
        assert!(!d.zoned);
    }
}
