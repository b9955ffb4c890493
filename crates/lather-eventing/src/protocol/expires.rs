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
    let at = i128::from(lather_envelope::datetime::parse(text)?.unix_millis);
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
