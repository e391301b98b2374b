//! Durations as people write them on the command line (`500ms`, `1.5s`, `1m30s`, `2h`).

use std::time::Duration;

/// The units a duration may use, longest name first so that `ms` is not read as `m`.
const UNITS: &[(&str, u128)] = &[
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("d", 86_400_000_000_000),
];

/// Parses a duration: one or more `<number><unit>` parts, largest unit first, each unit at most
/// once (`1m30s`, `2h`, `500ms`), a decimal number (`1.5s`, `0.25h`), or a bare number of
/// seconds (`7`, `2.5`). Units: `ms`, `s`, `m`, `h`, `d`. Anything finer than a nanosecond is
/// cut off.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let trimmed = text.trim();
    let invalid = || {
        format!(
            "{trimmed:?} is not a duration: write a number with a unit (ms, s, m, h, d), such as \
             500ms, 1.5s, 1m30s or 2h"
        )
    };
    if trimmed.is_empty() {
        return Err(invalid());
    }
    if let Some(nanos) = decimal_nanos(trimmed, 1_000_000_000) {
        return to_duration(nanos, trimmed);
    }
    let mut rest = trimmed;
    let mut total: u128 = 0;
    let mut previous: Option<usize> = None;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(invalid)?;
        let (number, after) = rest.split_at(number_len);
        let (rank, (unit, scale)) = UNITS
            .iter()
            .enumerate()
            .find(|(_, (unit, _))| after.starts_with(unit))
            .ok_or_else(|| {
                format!("{trimmed:?} has an unknown unit (use ms, s, m, h or d, as in 1m30s)")
            })?;
        // Largest unit first, each once: `30s1m` and `1s1s` are typos, not sums.
        if number.is_empty() || previous.is_some_and(|p| rank >= p) {
            return Err(invalid());
        }
        previous = Some(rank);
        let part = decimal_nanos(number, *scale).ok_or_else(invalid)?;
        total = total.checked_add(part).ok_or_else(|| too_long(trimmed))?;
        rest = &after[unit.len()..];
    }
    to_duration(total, trimmed)
}

/// `number` (digits, at most one `.`, digits on at least one side) times `scale` nanoseconds.
fn decimal_nanos(number: &str, scale: u128) -> Option<u128> {
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    let empty = whole.is_empty() && fraction.is_empty();
    if !digits(whole) || !digits(fraction) || empty || number.ends_with('.') {
        return None;
    }
    let whole: u128 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let mut nanos = whole.checked_mul(scale)?;
    let mut place = scale;
    for b in fraction.bytes() {
        place /= 10;
        nanos = nanos.checked_add(u128::from(b - b'0') * place)?;
    }
    Some(nanos)
}

fn to_duration(nanos: u128, text: &str) -> std::result::Result<Duration, String> {
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| too_long(text))?;
    // The remainder is below 10^9, so it fits.
    let sub = (nanos % 1_000_000_000) as u32;
    Ok(Duration::new(secs, sub))
}

fn too_long(text: &str) -> String {
    format!("{text:?} is too long")
}

/// A duration as `parse_duration` reads it back: `500ms`, `90s`, `10m`, `1h`.
pub fn shown(duration: Duration) -> String {
    let secs = duration.as_secs();
    match (duration.subsec_millis(), secs) {
        (0, s) if s > 0 && s % 3600 == 0 => format!("{}h", s / 3600),
        (0, s) if s > 0 && s % 60 == 0 => format!("{}m", s / 60),
        (0, s) => format!("{s}s"),
        _ => format!("{}ms", duration.as_millis()),
    }
}

#[cfg(test)]
mod tests {
    use crate::base::duration::*;

    fn ms(n: u64) -> std::result::Result<Duration, String> {
        Ok(Duration::from_millis(n))
    }

    #[test]
    fn single_units() {
        assert_eq!(parse_duration("500ms"), ms(500));
        assert_eq!(parse_duration("10s"), ms(10_000));
        assert_eq!(parse_duration("90s"), ms(90_000));
        assert_eq!(parse_duration("0s"), ms(0));
        assert_eq!(parse_duration("2m"), ms(120_000));
        assert_eq!(parse_duration("2h"), ms(7_200_000));
        assert_eq!(parse_duration("1d"), ms(86_400_000));
        assert_eq!(parse_duration(" 7 "), ms(7_000));
    }

    #[test]
    fn fractions_and_compounds() {
        assert_eq!(parse_duration("1.5s"), ms(1_500));
        assert_eq!(parse_duration(".5s"), ms(500));
        assert_eq!(parse_duration("2.5"), ms(2_500));
        assert_eq!(parse_duration("0.25h"), ms(900_000));
        assert_eq!(parse_duration("1m30s"), ms(90_000));
        assert_eq!(parse_duration("1h2m3s4ms"), ms(3_723_004));
        assert_eq!(parse_duration("1.5m10s"), ms(100_000));
        assert_eq!(
            parse_duration("1.0000000005s"),
            Ok(Duration::new(1, 0)),
            "finer than a nanosecond is cut off"
        );
    }

    #[test]
    fn anything_else_is_refused_with_a_clear_error() {
        for bad in [
            "", "s", "1y", "-1s", "1.s", "1..5s", "1.2.3s", "30s1m", "1s1s", "1m 30s", "ms",
            "1m30", "abc", "1e3s",
        ] {
            let err = parse_duration(bad).expect_err(bad);
            assert!(
                err.contains("not a duration") || err.contains("unknown unit"),
                "{bad}: {err}"
            );
        }
        assert!(parse_duration("1y").unwrap_err().contains("unknown unit"));
        assert!(
            parse_duration("99999999999999999999999d")
                .unwrap_err()
                .contains("too long")
        );
    }

    #[test]
    fn a_shown_duration_reads_back_as_itself() {
        for text in ["500ms", "1500ms", "90s", "10m", "1h", "0s", "61s"] {
            let duration = parse_duration(text).unwrap();
            assert_eq!(shown(duration), text);
            assert_eq!(parse_duration(&shown(duration)), Ok(duration));
        }
    }
}
