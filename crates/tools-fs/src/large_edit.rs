//! The streamed path of one exact Edit of a large file: the file is searched in fixed-size
//! chunks instead of being loaded, and only a window around the match is decoded for the
//! diff. Anything unusual (no exact match, several matches, a BOM, invalid UTF-8, a
//! replacement whose line breaks depend on the whole file, lines too long for the window)
//! returns `None`, and the caller takes the general path, which has every rule and message.

use std::fs::File;
use std::os::unix::fs::FileExt;

use memchr::memmem::Finder;

use crate::diff::{Hunk, Span, hunks_for_spans};
use crate::text::{LineEnding, with_ending};

/// Bytes read per step.
const CHUNK: usize = 4 * 1024 * 1024;
/// Bytes read on each side of the match for the diff's context lines.
const WINDOW: u64 = 64 * 1024;
/// Lines of context the diff shows (diff.rs); the window must hold one more on each side.
const CONTEXT_LINES: usize = 3;

/// An exact, unique match found by streaming.
#[derive(Debug)]
pub(crate) struct Streamed {
    /// The replaced byte range of the file and its replacement
    pub span: Span,
    /// The diff around it, with the file's line numbers
    pub hunks: Vec<Hunk>,
}

fn newlines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// Finds the one exact match of `old` in `file` (of `len` bytes) and builds its span and
/// diff, reading the file once in [`CHUNK`]s; `None` when the general path must decide.
pub(crate) fn locate_streamed(
    file: &File,
    len: u64,
    old: &str,
    new: &str,
) -> std::io::Result<Option<Streamed>> {
    if old.is_empty() {
        return Ok(None);
    }
    // Line breaks in the replacement follow the matched text; when it has none, the file's
    // dominant ending decides, which needs the whole file.
    let replacement = if new.contains('\n') {
        if old.contains("\r\n") {
            with_ending(new, LineEnding::CrLf)
        } else if old.contains('\n') {
            with_ending(new, LineEnding::Lf)
        } else {
            return Ok(None);
        }
    } else {
        new.to_owned()
    };
    let finder = Finder::new(old.as_bytes());
    // Kept from one chunk to the next: a match may straddle them, and so may a character.
    let keep = (old.len() - 1).max(3);
    let mut buf = vec![0_u8; CHUNK + keep];
    let mut carry = 0_usize; // bytes at the start of `buf` from the previous step
    let mut base = 0_u64; // file offset of buf[0]
    let mut lines_before_base = 0_usize;
    let mut validated = 0_u64; // file offset up to which the bytes are valid UTF-8
    let mut found: Option<(u64, usize)> = None; // (offset, lines before it)
    let mut first = true;
    loop {
        let n = file.read_at(&mut buf[carry..], base + carry as u64)?;
        if n == 0 {
            break;
        }
        let avail = carry + n;
        let data = &buf[..avail];
        if first {
            first = false;
            let head = &data[..data.len().min(8192)];
            if data.starts_with(b"\xEF\xBB\xBF")
                || data.starts_with(b"\xFF\xFE")
                || data.starts_with(b"\xFE\xFF")
                || memchr::memchr(0, head).is_some()
            {
                return Ok(None);
            }
        }
        let from = usize::try_from(validated - base).unwrap_or(usize::MAX);
        match std::str::from_utf8(&data[from.min(avail)..]) {
            Ok(_) => validated = base + avail as u64,
            Err(e) if e.error_len().is_none() => validated += e.valid_up_to() as u64,
            Err(_) => return Ok(None),
        }
        for pos in finder.find_iter(data) {
            let at = base + pos as u64;
            // A short pattern kept from the last step is seen again: the same match.
            if found.is_some_and(|(f, _)| f == at) {
                continue;
            }
            if found.is_some() {
                return Ok(None);
            }
            found = Some((at, lines_before_base + newlines(&data[..pos])));
        }
        let kept = keep.min(avail);
        let step = avail - kept;
        // Line numbers are needed only up to the match.
        if found.is_none() {
            lines_before_base += newlines(&data[..step]);
        }
        buf.copy_within(step..avail, 0);
        base += step as u64;
        carry = kept;
    }
    if validated < len {
        return Ok(None);
    }
    let Some((start, lines_before)) = found else {
        return Ok(None);
    };
    let mut end = start + old.len() as u64;
    // A deletion takes the line break after it.
    if new.is_empty() && !old.ends_with('\n') {
        let mut next = [0_u8; 2];
        let got = file.read_at(&mut next, end)?;
        if next[..got].starts_with(b"\r\n") {
            end += 2;
        } else if next[..got].starts_with(b"\n") {
            end += 1;
        }
    }
    // The window: whole lines around the match, enough of them for the context.
    let win_start = start.saturating_sub(WINDOW);
    let win_end = end.saturating_add(WINDOW).min(len);
    let mut window = vec![0_u8; usize::try_from(win_end - win_start).unwrap_or(0)];
    file.read_exact_at(&mut window, win_start)?;
    let rel_start = usize::try_from(start - win_start).unwrap_or(0);
    let rel_end = usize::try_from(end - win_start).unwrap_or(0);
    let cut_front = if win_start == 0 {
        0
    } else {
        match memchr::memchr(b'\n', &window[..rel_start]) {
            Some(i) => i + 1,
            None => return Ok(None),
        }
    };
    let cut_back = if win_end == len {
        window.len()
    } else {
        match memchr::memrchr(b'\n', &window[rel_end..]) {
            Some(i) => rel_end + i + 1,
            None => return Ok(None),
        }
    };
    let before = &window[cut_front..rel_start];
    let after = &window[rel_end..cut_back];
    if (win_start > 0 && newlines(before) <= CONTEXT_LINES)
        || (win_end < len && newlines(after) <= CONTEXT_LINES)
    {
        return Ok(None);
    }
    let Ok(text) = std::str::from_utf8(&window[cut_front..cut_back]) else {
        return Ok(None);
    };
    let lines_before_window = lines_before - newlines(before);
    let local = Span {
        start: rel_start - cut_front,
        end: rel_end - cut_front,
        replacement: replacement.clone(),
    };
    let mut hunks = hunks_for_spans(text, std::slice::from_ref(&local));
    for h in &mut hunks {
        h.old_start += lines_before_window;
        h.new_start += lines_before_window;
    }
    let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
        return Ok(None);
    };
    Ok(Some(Streamed {
        span: Span {
            start,
            end,
            replacement,
        },
        hunks,
    }))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::matching::apply_edit;

    /// The streamed result equals the general path's, or the path declines.
    fn check(text: &str, old: &str, new: &str, expect_streamed: bool) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let file = File::open(f.path()).unwrap();
        let got = locate_streamed(&file, text.len() as u64, old, new).unwrap();
        assert_eq!(got.is_some(), expect_streamed, "{old:?} → {new:?}");
        if let Some(s) = got {
            let general = apply_edit(text, old, new, false).unwrap();
            assert_eq!(vec![s.span.clone()], general.spans);
            assert_eq!(s.hunks, hunks_for_spans(text, &general.spans));
        }
    }

    #[test]
    fn streamed_matches_the_general_path() {
        let text: String = (0..400_000).map(|i| format!("line {i} text\n")).collect();
        assert!(text.len() > CHUNK);
        check(&text, "line 5 text", "LINE FIVE", true);
        check(&text, "line 399999 text\n", "end\n", true);
        check(&text, "line 0 text", "first", true);
        // Deletions take their line break; multi-line matches keep LF.
        check(&text, "line 300000 text", "", true);
        check(&text, "line 7 text\nline 8", "a\nb", true);
        // A match across the chunk boundary is found once.
        let at = CHUNK - 3;
        let around = &text[text[..at].rfind('\n').unwrap() + 1..];
        let straddling = &around[..around.find('\n').unwrap()];
        check(&text, straddling, "X", true);
        // Declined: several matches, none, a line break needing the file's ending.
        check(&text, "text", "x", false);
        check(&text, "absent", "x", false);
        check(&text, "line 9 text", "a\nb", false);
        // A pattern shorter than the kept bytes, unique, found once.
        let short = format!("{}Q\n", &text[..CHUNK - 1]);
        check(&short, "Q", "R", true);
        // Declined: invalid UTF-8 late in the file, a BOM, a NUL near the start.
        let mut bad = text.clone().into_bytes();
        bad.extend_from_slice(b"\xFF\n");
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&bad).unwrap();
        let file = File::open(f.path()).unwrap();
        let got = locate_streamed(&file, bad.len() as u64, "line 5 text", "x").unwrap();
        assert!(got.is_none());
        check(&format!("\u{FEFF}{text}"), "line 5 text", "x", false);
        check(&format!("a\0b\n{text}"), "line 5 text", "x", false);
        // Multibyte characters across chunk boundaries validate.
        let wide: String = (0..400_000).map(|i| format!("é ligne {i} ü\n")).collect();
        check(&wide, "ligne 123456 ü", "x", true);
    }
}
