//! What the model reads of a command's output: the head of the output file up to the inline
//! cap with the reference's truncation marker, read in bounded memory whatever the size.

use std::fs::File;
use std::os::unix::fs::FileExt;

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

/// Reads at most `cap` characters from the start of `file` (through the descriptor, from
/// offset 0) and counts what follows.
///
/// Memory is bounded by the cap (4 bytes per character at most) plus a fixed buffer.
pub fn read_head(file: &File, cap: usize) -> std::io::Result<Shown> {
    let f = file;
    let total_bytes = f.metadata()?.len();
    let want = usize::try_from(total_bytes.min((cap as u64).saturating_mul(4))).unwrap_or(0);
    let mut head = vec![0_u8; want];
    let mut got = 0;
    while got < want {
        match f.read_at(&mut head[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    head.truncate(got);
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
    let mut last = trimmed_start[cut..]
        .bytes()
        .last()
        .or_else(|| shown.bytes().last());
    let from = head.len() as u64;
    if from < total_bytes {
        lines_cut += count_newlines(f, from, total_bytes)?;
        let mut end = [0_u8; 1];
        if f.read_at(&mut end, total_bytes - 1)? == 1 {
            last = Some(end[0]);
        }
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

/// Bytes per block when counting the lines of a large output.
const COUNT_BLOCK: u64 = 8 << 20;

/// Newlines in `file[from..to]`, counted by every core at once for a large output (copying
/// a GiB out of the page cache is most of the cost); memchr counts with vector
/// instructions.
fn count_newlines(file: &File, from: u64, to: u64) -> std::io::Result<u64> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let count_range = |start: u64, end: u64, buf: &mut [u8]| -> std::io::Result<u64> {
        let mut at = start;
        let mut n = 0_u64;
        while at < end {
            let want = usize::try_from((end - at).min(buf.len() as u64)).unwrap_or(buf.len());
            let got = file.read_at(&mut buf[..want], at)?;
            if got == 0 {
                break;
            }
            n += memchr::memchr_iter(b'\n', &buf[..got]).count() as u64;
            at += got as u64;
        }
        Ok(n)
    };
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if workers == 1 || to - from <= 2 * COUNT_BLOCK {
        return count_range(from, to, &mut vec![0_u8; 1 << 20]);
    }
    let next = AtomicU64::new(from);
    let total = AtomicU64::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| -> std::io::Result<()> {
                    let mut buf = vec![0_u8; 1 << 20];
                    loop {
                        let start = next.fetch_add(COUNT_BLOCK, Ordering::Relaxed);
                        if start >= to {
                            return Ok(());
                        }
                        let n = count_range(start, (start + COUNT_BLOCK).min(to), &mut buf)?;
                        total.fetch_add(n, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("a counting thread panicked")))?;
        }
        Ok(total.load(Ordering::Relaxed))
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
        read_head(&File::open(&f)?, cap)
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
    fn large_outputs_are_counted_in_blocks() -> std::io::Result<()> {
        // Over two counting blocks, no newline at the end: every line after the cut counts.
        let line = "x".repeat(99) + "\n";
        let lines = (3 * COUNT_BLOCK as usize) / line.len();
        let mut content = line.repeat(lines);
        content.push_str("unterminated");
        let s = shown(content.as_bytes(), 150)?;
        assert!(s.truncated);
        assert_eq!(s.text, format!("{}\n{}", "x".repeat(99), "x".repeat(50)));
        assert_eq!(s.lines_cut, lines as u64);
        assert_eq!(s.total_bytes, content.len() as u64);
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
