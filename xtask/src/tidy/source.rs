//! A small Rust lexer for the source checks: comments blanked, string contents kept or
//! blanked, and the lines of `#[cfg(test)]` items found.
//!
//! Blanking replaces characters with spaces and keeps every newline, so byte offsets map to
//! the same lines as in the original text. It knows line and nested block comments, string
//! and byte-string literals with escapes, raw strings (`r"…"`, `r#"…"#`, `br#"…"#`), char
//! literals and lifetimes; that is all the checks need.

/// One file's text, blanked two ways.
#[derive(Debug)]
pub struct Masked {
    /// Comments, string contents and char literals blanked: what the code does.
    pub code: String,
    /// Comments blanked, string literals kept: for checks that read literal arguments.
    pub strings: String,
}

#[derive(Clone, Copy)]
enum State {
    Code,
    LineComment,
    BlockComment(usize),
    Str,
    RawStr(usize),
    Char,
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Blanks `text` (see [`Masked`]).
pub fn mask(text: &str) -> Masked {
    let chars: Vec<char> = text.chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut strings = String::with_capacity(text.len());
    let mut state = State::Code;
    let mut i = 0;
    // Pushes `c` to `code` when `in_code`, to `strings` when `in_strings`, else blanks.
    let mut push = |c: char, in_code: bool, in_strings: bool| {
        put(&mut code, c, in_code);
        put(&mut strings, c, in_strings);
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match state {
            State::Code => {
                if c == '/' && next == Some('/') {
                    state = State::LineComment;
                    push(c, false, false);
                } else if c == '/' && next == Some('*') {
                    state = State::BlockComment(1);
                    push(c, false, false);
                    push('*', false, false);
                    i += 1;
                } else if c == '"' {
                    state = State::Str;
                    push(c, true, true);
                } else if c == 'r' && starts_raw(&chars, i) {
                    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
                    for k in 0..=hashes + 1 {
                        push(chars[i + k], true, true);
                    }
                    i += hashes + 1;
                    state = State::RawStr(hashes);
                } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
                    state = State::Char;
                    push(c, true, true);
                } else {
                    push(c, true, true);
                }
            }
            State::LineComment => {
                if c == '\n' {
                    state = State::Code;
                }
                push(c, false, false);
            }
            State::BlockComment(depth) => {
                if c == '/' && next == Some('*') {
                    state = State::BlockComment(depth + 1);
                    push(c, false, false);
                    push('*', false, false);
                    i += 1;
                } else if c == '*' && next == Some('/') {
                    state = if depth == 1 {
                        State::Code
                    } else {
                        State::BlockComment(depth - 1)
                    };
                    push(c, false, false);
                    push('/', false, false);
                    i += 1;
                } else {
                    push(c, false, false);
                }
            }
            State::Str => {
                if c == '\\' {
                    push(c, false, true);
                    if let Some(escaped) = next {
                        push(escaped, false, true);
                        i += 1;
                    }
                } else if c == '"' {
                    state = State::Code;
                    push(c, true, true);
                } else {
                    push(c, false, true);
                }
            }
            State::RawStr(hashes) => {
                let closes = c == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
                if closes {
                    for k in 0..=hashes {
                        push(chars[i + k], true, true);
                    }
                    i += hashes;
                    state = State::Code;
                } else {
                    push(c, false, true);
                }
            }
            State::Char => {
                if c == '\\' {
                    push(c, false, true);
                    if let Some(escaped) = next {
                        push(escaped, false, true);
                        i += 1;
                    }
                } else if c == '\'' {
                    state = State::Code;
                    push(c, true, true);
                } else {
                    push(c, false, true);
                }
            }
        }
        i += 1;
    }
    Masked { code, strings }
}

/// Pushes `c`, or as many spaces as its UTF-8 length (a newline is always kept).
fn put(out: &mut String, c: char, keep: bool) {
    if keep || c == '\n' {
        out.push(c);
    } else {
        out.extend(std::iter::repeat_n(' ', c.len_utf8()));
    }
}

/// Whether the `r` at `i` starts a raw string: `r"`, `r#…#"`, also after a `b`.
fn starts_raw(chars: &[char], i: usize) -> bool {
    let before_ok = |at: Option<usize>| at.and_then(|j| chars.get(j)).is_none_or(|&p| !is_ident(p));
    let prefix_ok = before_ok(i.checked_sub(1))
        || (i >= 1 && chars[i - 1] == 'b' && before_ok(i.checked_sub(2)));
    if !prefix_ok {
        return false;
    }
    let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
    chars.get(i + 1 + hashes) == Some(&'"')
}

/// For each line of `code` (as [`Masked::code`] gives it), whether it belongs to an item
/// under `#[cfg(test)]` (the attribute line included).
pub fn test_lines(code: &str) -> Vec<bool> {
    let lines: Vec<&str> = code.split('\n').collect();
    let mut in_test = vec![false; lines.len()];
    let mut index = 0;
    while index < lines.len() {
        let trimmed = lines[index].trim_start();
        if !(trimmed.starts_with("#[cfg(test)]") || trimmed.starts_with("#[cfg(all(test")) {
            index += 1;
            continue;
        }
        // The item runs to the `;` before any brace, or to the brace closing its first one.
        let mut depth = 0usize;
        let mut opened = false;
        let mut end = index;
        'item: for (offset, line) in lines[index..].iter().enumerate() {
            end = index + offset;
            let text = if offset == 0 {
                line.trim_start().trim_start_matches("#[cfg(test)]")
            } else {
                line
            };
            for c in text.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => {
                        depth = depth.saturating_sub(1);
                        if opened && depth == 0 {
                            break 'item;
                        }
                    }
                    ';' if !opened => break 'item,
                    _ => {}
                }
            }
        }
        for flag in &mut in_test[index..=end] {
            *flag = true;
        }
        index = end + 1;
    }
    in_test
}

/// `code` with the lines of `#[cfg(test)]` items blanked (newlines kept).
pub fn without_tests(code: &str) -> String {
    let flags = test_lines(code);
    code.split('\n')
        .zip(flags)
        .map(|(line, test)| {
            if test {
                " ".repeat(line.len())
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_strings_are_blanked() {
        let text = "let a = \"x // y\"; // crate::z\n/* a /* b */ c */ let b = 'x';\n";
        let masked = mask(text);
        assert_eq!(masked.code.len(), text.len());
        assert!(!masked.code.contains("crate::z"));
        assert!(!masked.code.contains("x // y"));
        assert!(masked.strings.contains("\"x // y\""));
        assert!(!masked.strings.contains("crate::z"));
        assert!(masked.code.contains("let b = ' ';"));
        assert!(!masked.code.contains(" c "));
    }

    #[test]
    fn raw_strings_lifetimes_and_escapes() {
        let text = "f(r#\"a \" {\"#, '\\'', '{', b'}', \"\\\"}\"); fn g<'a>(x: &'a str) {}\n";
        let masked = mask(text);
        let braces =
            masked.code.matches('{').count() as i64 - masked.code.matches('}').count() as i64;
        assert_eq!(braces, 0, "{}", masked.code);
        assert!(masked.code.contains("fn g<'a>(x: &'a str) {}"));
        assert!(masked.strings.contains("r#\"a \" {\"#"));
    }

    #[test]
    fn non_ascii_keeps_offsets() {
        let text = "// é \u{a7}\nlet s = \"ü\";\n";
        let masked = mask(text);
        assert_eq!(masked.code.len(), text.len());
        assert_eq!(masked.strings.len(), text.len());
        assert_eq!(
            line_of(&masked.code, masked.code.find("let").unwrap_or(0)),
            2
        );
    }

    #[test]
    fn cfg_test_items_are_found() {
        let code = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() {\n    }\n}\nfn c() {}\n\
                    #[cfg(test)]\nmod more;\nfn d() {}\n";
        let flags = test_lines(code);
        assert_eq!(
            flags,
            vec![
                false, true, true, true, true, true, false, true, true, false, false
            ]
        );
    }
}
