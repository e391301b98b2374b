//! Durations as people write them on the command line (`500ms`, `30s`, `10m`).

use std::time::Duration;

/// Parses `500ms`, `10s`, `5m`, `2h`, `1d` (or a bare number of seconds).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 30s, 10m or 500ms"))?;
    let millis = match unit {
        "ms" => Some(value),
        "" | "s" => value.checked_mul(1000),
        "m" => value.checked_mul(60_000),
        "h" => value.checked_mul(3_600_000),
        "d" => value.checked_mul(86_400_000),
        _ => {
            return Err(format!(
                "{text:?} has an unknown unit (use ms, s, m, h or d)"
            ));
        }
    };
    millis
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("1y").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
