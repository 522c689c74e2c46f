//! Paths and URIs, and columns: the model counts characters (Unicode scalar values) from 1,
//! servers count UTF-16 code units from 0 (the encoding every server must speak; see
//! `server.rs` for why we do not negotiate another).

use std::path::{Path, PathBuf};

use tool_core::ToolError;

/// The `file://` URI of an absolute path.
pub(crate) fn path_to_uri(path: &Path) -> Result<String, ToolError> {
    url::Url::from_file_path(path)
        .map(String::from)
        .map_err(|()| {
            ToolError::respond(format!(
                "{} cannot be sent to a language server: it is not an absolute path",
                path.display()
            ))
        })
}

/// The path of a `file://` URI; `None` for other schemes.
pub(crate) fn uri_to_path(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri).ok()?.to_file_path().ok()
}

/// The UTF-16 offset of the 0-based character `chars` of `line` (clamped to the line's end).
pub(crate) fn char_to_utf16(line: &str, chars: u32) -> u32 {
    let units: usize = line.chars().take(chars as usize).map(char::len_utf16).sum();
    u32::try_from(units).unwrap_or(u32::MAX)
}

/// The 0-based character index of UTF-16 offset `units` in `line` (clamped to the line's end).
pub(crate) fn utf16_to_char(line: &str, units: u32) -> u32 {
    let mut seen = 0usize;
    let mut count = 0u32;
    for c in line.chars() {
        if seen >= units as usize {
            break;
        }
        seen += c.len_utf16();
        count += 1;
    }
    count
}

/// Line `line` (0-based) of `text`, without its line ending; empty past the end.
pub(crate) fn line_of(text: &str, line: u32) -> &str {
    text.split('\n')
        .nth(line as usize)
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(line: &str, chars: u32, units: u32) {
        assert_eq!(char_to_utf16(line, chars), units, "{line:?} char {chars}");
        assert_eq!(utf16_to_char(line, units), chars, "{line:?} units {units}");
    }

    #[test]
    fn columns_convert_both_ways() {
        check("abc", 0, 0);
        check("abc", 2, 2);
        check("abc", 3, 3);
        check("é = 1", 2, 2);
        check("😀 = x", 1, 2);
        check("😀😀x", 2, 4);
        check("", 0, 0);
    }

    #[test]
    fn columns_clamp_past_the_end() {
        assert_eq!(char_to_utf16("ab", 10), 2);
        assert_eq!(utf16_to_char("ab", 10), 2);
    }

    #[test]
    fn paths_round_trip_through_uris() {
        let path = Path::new("/tmp/a dir/é.py");
        let uri = path_to_uri(path).unwrap_or_default();
        assert_eq!(uri, "file:///tmp/a%20dir/%C3%A9.py");
        assert_eq!(uri_to_path(&uri).as_deref(), Some(path));
        assert!(path_to_uri(Path::new("rel.py")).is_err());
        assert_eq!(uri_to_path("untitled:1"), None);
    }

    #[test]
    fn lines_are_found_without_endings() {
        assert_eq!(line_of("a\r\nb\nc", 0), "a");
        assert_eq!(line_of("a\r\nb\nc", 2), "c");
        assert_eq!(line_of("a", 5), "");
    }
}
