//! What the model reads of a command's output: the head of the output file up to the inline
//! cap with the reference's truncation marker, read in bounded memory whatever the size.

use std::io::Read;
use std::path::Path;

/// The model sees at most this many characters of a command's output (the reference's
/// `BASH_MAX_OUTPUT_LENGTH` default).
pub const MAX_OUTPUT_CHARS: usize = 30_000;

/// The output as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    /// The text, leading blank lines and trailing whitespace removed, cut at the cap
    pub text: String,
    /// The whole output's size in bytes
    pub total_bytes: u64,
    /// Whether the text was cut
    pub truncated: bool,
    /// Lines after the cut
    pub lines_cut: u64,
}

/// Reads at most `cap` characters from the start of `file` and counts what follows.
///
/// Memory is bounded by the cap (4 bytes per character at most) plus a fixed buffer.
pub fn read_head(file: &Path, cap: usize) -> std::io::Result<Shown> {
    let mut f = std::fs::File::open(file)?;
    let total_bytes = f.metadata()?.len();
    let mut head = Vec::with_capacity((cap.saturating_mul(4)).min(total_bytes as usize) + 1);
    (&mut f)
        .take((cap as u64).saturating_mul(4))
        .read_to_end(&mut head)?;
    let decoded = String::from_utf8_lossy(&head);
    let trimmed_start = strip_leading_blank_lines(&decoded);
    let mut chars = trimmed_start.char_indices();
    let cut_at = chars.nth(cap).map(|(i, _)| i);
    let fits = cut_at.is_none() && (head.len() as u64) == total_bytes;
    if fits {
        return Ok(Shown {
            text: trimmed_start.trim_end().to_owned(),
            total_bytes,
            truncated: false,
            lines_cut: 0,
        });
    }
    let cut = cut_at.unwrap_or(trimmed_start.len());
    let shown = &trimmed_start[..cut];
    // Lines after the cut: those in the rest of the head, then in the rest of the file.
    let mut lines_cut = trimmed_start[cut..].bytes().filter(|b| *b == b'\n').count() as u64;
    let mut buf = vec![0_u8; 1 << 20];
    let mut last = trimmed_start[cut..]
        .bytes()
        .last()
        .or_else(|| shown.bytes().last());
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        // memchr counts with vector instructions: a GiB of short lines takes a fraction of
        // the time a byte loop does.
        lines_cut += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        last = buf.get(n - 1).copied();
    }
    // An unterminated last line counts as a line.
    if last.is_some_and(|b| b != b'\n') {
        lines_cut += 1;
    }
    Ok(Shown {
        text: shown.to_owned(),
        total_bytes,
        truncated: true,
        lines_cut,
    })
}

fn strip_leading_blank_lines(s: &str) -> &str {
    let mut rest = s;
    loop {
        match rest.find('\n') {
            Some(i) if rest[..i].trim().is_empty() => rest = &rest[i + 1..],
            _ => return rest,
        }
    }
}

/// The reference's marker after a cut: `… [N lines truncated] …`.
pub fn truncation_marker(lines: u64) -> String {
    format!("\n\n… [{lines} lines truncated] …")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(content: &[u8], cap: usize) -> std::io::Result<Shown> {
        let dir = tempfile::tempdir()?;
        let f = dir.path().join("out");
        std::fs::write(&f, content)?;
        read_head(&f, cap)
    }

    #[test]
    fn small_output_is_trimmed_not_cut() -> std::io::Result<()> {
        let s = shown(b"\n  \nhello\nworld  \n\n", 100)?;
        assert_eq!(s.text, "hello\nworld");
        assert!(!s.truncated);
        assert_eq!(s.total_bytes, 19);
        Ok(())
    }

    #[test]
    fn large_output_keeps_the_head_and_counts_lines() -> std::io::Result<()> {
        let content: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let s = shown(content.as_bytes(), 20)?;
        assert_eq!(s.text, "line 0\nline 1\nline 2");
        assert!(s.truncated);
        // "\n" after "line 2" starts the cut: lines 3..=999 remain (997), plus the rest of
        // line 2's terminator counted as a line break.
        assert_eq!(s.lines_cut, 998);
        Ok(())
    }

    #[test]
    fn invalid_utf8_and_multibyte_are_safe() -> std::io::Result<()> {
        let mut content = "é".repeat(50).into_bytes();
        content.push(0xff);
        let s = shown(&content, 10)?;
        assert_eq!(s.text.chars().count(), 10);
        assert!(s.truncated);
        Ok(())
    }
}
