//! Names and descriptions of MCP tools as the pool shows them: `mcp__<server>__<tool>`,
//! parts sanitised to `[A-Za-z0-9_-]`, long names shortened with a hash, descriptions capped
//! and cleaned of invisible characters.

/// Longest pool name; longer names keep a prefix and get a hash suffix.
pub const MAX_NAME_LEN: usize = 64;
/// Longest description the model sees.
pub const MAX_DESCRIPTION_CHARS: usize = 2048;
/// Longest tool name a server may offer (the MCP 2025-11-25 guidance).
pub const MAX_SERVER_TOOL_NAME: usize = 128;

/// One name part with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn sanitize(part: &str) -> String {
    tool_core::path::safe_stem(part)
}

/// FNV-1a, 64 bits: a stable hash for name suffixes (not for security).
fn fnv1a(text: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The pool name of `tool` on `server`: `mcp__<server>__<tool>`, sanitised, and over
/// [`MAX_NAME_LEN`] characters cut with an 8-hex-digit hash of the full name appended.
pub fn qualified_name(server: &str, tool: &str) -> String {
    let full = format!("mcp__{}__{}", sanitize(server), sanitize(tool));
    if full.len() <= MAX_NAME_LEN {
        return full;
    }
    let hash = format!("{:08x}", fnv1a(&full) as u32);
    let keep = MAX_NAME_LEN - hash.len() - 1;
    format!("{}_{hash}", &full[..keep])
}

/// Why a server's tool name is refused, or `None` when it is acceptable: 1–128 characters,
/// ASCII letters, digits, `_`, `-`, `.` and `/` (the MCP guidance plus SEP-986's `/`).
pub fn invalid_tool_name(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("the name is empty".to_owned());
    }
    if name.chars().count() > MAX_SERVER_TOOL_NAME {
        return Some(format!(
            "the name is {} characters long (at most {MAX_SERVER_TOOL_NAME})",
            name.chars().count()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
    {
        return Some(format!(
            "the name contains {c:?}; only ASCII letters, digits, _ - . / are allowed"
        ));
    }
    None
}

/// Characters that render as nothing and can hide instructions from a person reading a
/// description: zero-width characters, bidirectional controls, Unicode tags.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{2069}'
        | '\u{FEFF}'
        | '\u{E0000}'..='\u{E007F}')
}

/// A description as the model sees it: invisible characters removed, cut to
/// [`MAX_DESCRIPTION_CHARS`] with "… \[truncated\]". Returns the text and warnings.
pub fn clean_description(text: &str) -> (String, Vec<String>) {
    let mut warnings = Vec::new();
    let invisible = text.chars().filter(|c| is_invisible(*c)).count();
    let mut cleaned: String = text.chars().filter(|c| !is_invisible(*c)).collect();
    if invisible > 0 {
        warnings.push(format!(
            "removed {invisible} invisible character(s) from the description"
        ));
    }
    let count = cleaned.chars().count();
    if count > MAX_DESCRIPTION_CHARS {
        let suffix = "… [truncated]";
        let keep = MAX_DESCRIPTION_CHARS - suffix.chars().count();
        cleaned = cleaned.chars().take(keep).collect::<String>() + suffix;
        warnings.push(format!(
            "the description had {count} characters; it was cut to {MAX_DESCRIPTION_CHARS}"
        ));
    }
    (cleaned, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let check = |server: &str, tool: &str, expected: &str| {
            assert_eq!(qualified_name(server, tool), expected, "{server} {tool}");
        };
        check("github", "create_issue", "mcp__github__create_issue");
        check("my.server", "read-file", "mcp__my_server__read-file");
        check("s", "a/b.c", "mcp__s__a_b_c");
        let long = qualified_name("server", &"x".repeat(100));
        assert_eq!(long.len(), MAX_NAME_LEN);
        assert!(long.starts_with("mcp__server__xxx"));
        assert_ne!(long, qualified_name("server", &"x".repeat(101)));
    }

    #[test]
    fn tool_names_are_validated() {
        let check = |name: &str, ok: bool| {
            assert_eq!(invalid_tool_name(name).is_none(), ok, "{name}");
        };
        check("read_file", true);
        check("ns.tool/v1-x", true);
        check("", false);
        check("has space", false);
        check("café", false);
        check(&"a".repeat(500), false);
    }

    #[test]
    fn descriptions_are_capped_and_cleaned() {
        let (text, warnings) = clean_description("Reads\u{200B} a file\u{E0041}");
        assert_eq!(text, "Reads a file");
        assert_eq!(warnings.len(), 1);
        let (text, warnings) = clean_description(&"d".repeat(200_000));
        assert_eq!(text.chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(text.ends_with("… [truncated]"));
        assert_eq!(warnings.len(), 1);
        assert_eq!(clean_description("fine").1.len(), 0);
    }
}
