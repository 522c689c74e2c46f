//! `--mcp-wait`: how long `call`, `list`, `schema` and `batch` wait for the MCP servers of
//! `.mcp.json` to start (with the `mcp` feature; without it there are none to wait for).

use std::time::Duration;

/// How long `call`, `list`, `schema` and `batch` wait for MCP servers by default, in
/// seconds.
pub const DEFAULT_WAIT: &str = "5";

/// Parses `--mcp-wait`: seconds, zero or more.
pub fn parse_wait(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{text}` is not a number of seconds from 0 up"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_are_seconds() {
        let check = |text: &str, expected: Result<Duration, &str>| {
            let got = parse_wait(text);
            assert_eq!(
                got.as_ref().map_err(String::as_str),
                expected.as_ref().map_err(|e| *e),
                "{text}"
            );
        };
        check("5", Ok(Duration::from_secs(5)));
        check("0", Ok(Duration::ZERO));
        check(" 0.25 ", Ok(Duration::from_millis(250)));
        check("-1", Err("`-1` is not a number of seconds from 0 up"));
        check("inf", Err("`inf` is not a number of seconds from 0 up"));
        check("NaN", Err("`NaN` is not a number of seconds from 0 up"));
        check("soon", Err("`soon` is not a number of seconds"));
    }
}
