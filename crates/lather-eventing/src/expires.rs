//! `Expires` values: `xs:duration` or `xs:dateTime`, turned into a span from now.
//!
//! A duration's years count 365 days and its months 30 days. A dateTime without a zone is
//! read as UTC (the source's local time here).

use std::time::Duration;

/// A requested expiration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Requested {
    /// A span from now.
    In(Duration),
    /// A duration or dateTime that lies in the past or is negative.
    Past,
}

/// Reads `text` as an `xs:duration` or an `xs:dateTime`, relative to `now_ms` (Unix
/// milliseconds). `None` if it is neither.
pub(crate) fn parse(text: &str, now_ms: u64) -> Option<Requested> {
    let text = text.trim();
    if text.starts_with('P') || text.starts_with("-P") {
        return duration(text);
    }
    let at = unix_millis(text)?;
    let now = i128::from(now_ms);
    Some(if at <= now {
        Requested::Past
    } else {
        Requested::In(Duration::from_millis(u64::try_from(at - now).ok()?))
    })
}

/// An `xs:duration` such as `PT1H30M` or `P1DT0.5S`.
fn duration(text: &str) -> Option<Requested> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let rest = rest.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) if !t.is_empty() => (d, Some(t)),
        Some(_) => return None,
        None => (rest, None),
    };
    if date.is_empty() && time.is_none() {
        return None;
    }
    let mut millis: u128 = 0;
    millis += fields(
        date,
        &[
            ('Y', 365 * 86_400_000),
            ('M', 30 * 86_400_000),
            ('D', 86_400_000),
        ],
    )?;
    if let Some(t) = time {
        millis += fields(t, &[('H', 3_600_000), ('M', 60_000), ('S', 1000)])?;
    }
    if negative && millis > 0 {
        return Some(Requested::Past);
    }
    Some(Requested::In(Duration::from_millis(
        u64::try_from(millis).unwrap_or(u64::MAX),
    )))
}

/// Sums `number designator` pairs in the designators' order; only seconds may be fractional.
fn fields(text: &str, units: &[(char, u128)]) -> Option<u128> {
    let mut total: u128 = 0;
    let mut rest = text;
    let mut next_unit = 0;
    while !rest.is_empty() {
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let (number, tail) = rest.split_at(end);
        let designator = tail.chars().next()?;
        let index = units[next_unit..]
            .iter()
            .position(|(u, _)| *u == designator)?
            + next_unit;
        let scale = units[index].1;
        total = total.checked_add(scaled(number, scale, designator == 'S')?)?;
        next_unit = index + 1;
        rest = &tail[1..];
    }
    Some(total)
}

fn scaled(number: &str, scale: u128, fraction_allowed: bool) -> Option<u128> {
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) if fraction_allowed && !f.is_empty() => (w, f),
        Some(_) => return None,
        None => (number, ""),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: u128 = whole.parse().ok()?;
    let mut millis = whole.checked_mul(scale)?;
    if !fraction.is_empty() {
        let digits: String = fraction.chars().chain("000".chars()).take(3).collect();
        millis += digits.parse::<u128>().ok()?;
    }
    Some(millis)
}

/// Unix milliseconds of an `xs:dateTime` (`YYYY-MM-DDThh:mm:ss[.fff][Z|±hh:mm]`).
fn unix_millis(text: &str) -> Option<i128> {
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
    let num = |r: std::ops::Range<usize>| -> Option<i128> {
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
    let offset_minutes = match rest {
        "" | "Z" => 0,
        zone if zone.len() == 6 && zone.as_bytes()[3] == b':' => {
            let sign = match zone.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let h: i128 = zone.get(1..3)?.parse().ok()?;
            let m: i128 = zone.get(4..6)?.parse().ok()?;
            sign * (h * 60 + m)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i128, month: i128, day: i128) -> i128 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `d` as an `xs:duration` in whole seconds, or milliseconds when below a second matters:
/// `PT3600S`, `PT0.250S`.
pub(crate) fn format_duration(d: Duration) -> String {
    let millis = d.as_millis();
    if millis.is_multiple_of(1000) {
        format!("PT{}S", millis / 1000)
    } else {
        format!("PT{}.{:03}S", millis / 1000, millis % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_read_in_every_field() {
        let ms = |t: &str| match parse(t, 0) {
            Some(Requested::In(d)) => d.as_millis(),
            other => panic!("{t}: {other:?}"),
        };
        assert_eq!(ms("PT1H30M"), 5_400_000);
        assert_eq!(ms("P1DT0.5S"), 86_400_500);
        assert_eq!(ms("P1Y2M"), (365 + 60) * 86_400_000);
        assert_eq!(ms("PT0S"), 0);
        assert_eq!(parse("-PT5S", 0), Some(Requested::Past));
        for bad in ["P", "PT", "P1H", "PT1M1H", "PT1.5M", "P-1D", "1H", "PTxS"] {
            assert_eq!(parse(bad, 0), None, "{bad}");
        }
    }

    #[test]
    fn date_times_are_relative_to_now() {
        // 2026-01-01T00:00:00Z is 1767225600 s (python3 -c "import datetime;
        // print(int(datetime.datetime(2026,1,1,tzinfo=datetime.timezone.utc).timestamp()))").
        let now = 1_767_225_600_000;
        assert_eq!(
            parse("2026-01-01T00:01:00Z", now),
            Some(Requested::In(Duration::from_secs(60)))
        );
        assert_eq!(
            parse("2026-01-01T01:01:00.5+01:00", now),
            Some(Requested::In(Duration::from_millis(60_500)))
        );
        assert_eq!(parse("2025-12-31T23:59:59", now), Some(Requested::Past));
        assert_eq!(parse("2026-13-01T00:00:00Z", now), None);
    }

    #[test]
    fn durations_are_written_in_seconds() {
        assert_eq!(format_duration(Duration::from_secs(3600)), "PT3600S");
        assert_eq!(format_duration(Duration::from_millis(250)), "PT0.250S");
    }
}
