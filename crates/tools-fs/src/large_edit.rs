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

/// What one segment of the file holds.
#[derive(Debug, Default)]
struct Segment {
    /// Matches that start in the segment (at most two are kept): the offset, and the
    /// newlines between the segment's start and it
    matches: Vec<(u64, usize)>,
    /// Newlines in the segment
    newlines: usize,
    /// Whether the segment's characters are valid UTF-8 (and, for the first, no BOM and no
    /// NUL near the start)
    valid: bool,
}

/// The next character boundary at or after `at`, given the bytes from `at` on (a valid
/// file has one within three bytes).
fn boundary(at: u64, bytes: &[u8]) -> u64 {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|&&b| (0x80..0xC0).contains(&b))
        .count();
    at + skip as u64
}

/// Scans `file[from..to]` in steps of `chunk` bytes (each read with enough bytes after it
/// for a match or a character that starts inside it).
fn scan_segment(
    file: &File,
    len: u64,
    (from, to): (u64, u64),
    finder: &Finder<'_>,
    chunk: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> std::io::Result<Segment> {
    use std::sync::atomic::Ordering;
    let overlap = (finder.needle().len() as u64).max(4);
    let mut seg = Segment {
        valid: true,
        ..Segment::default()
    };
    let mut buf = vec![0_u8; usize::try_from(chunk + overlap).unwrap_or(0)];
    let mut at = from;
    while at < to {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let own_end = (at + chunk).min(to);
        let read_end = (own_end + overlap).min(len);
        let want = usize::try_from(read_end - at).unwrap_or(0);
        file.read_exact_at(&mut buf[..want], at)?;
        let data = &buf[..want];
        let own = usize::try_from(own_end - at).unwrap_or(0);
        if at == 0 {
            let head = &data[..data.len().min(8192)];
            if data.starts_with(b"\xEF\xBB\xBF")
                || data.starts_with(b"\xFF\xFE")
                || data.starts_with(b"\xFE\xFF")
                || memchr::memchr(0, head).is_some()
            {
                seg.valid = false;
                break;
            }
        }
        // The characters that start in this step.
        let v_from = usize::try_from(boundary(at, data) - at).unwrap_or(0);
        let v_to = if own_end == len {
            own
        } else {
            usize::try_from(boundary(own_end, &data[own..]) - at).unwrap_or(0)
        };
        if v_from > v_to || std::str::from_utf8(&data[v_from..v_to]).is_err() {
            seg.valid = false;
            break;
        }
        for pos in finder.find_iter(data) {
            if pos >= own {
                break;
            }
            seg.matches
                .push((at + pos as u64, seg.newlines + newlines(&data[..pos])));
            if seg.matches.len() > 1 {
                return Ok(seg);
            }
        }
        seg.newlines += newlines(&data[..own]);
        at = own_end;
    }
    Ok(seg)
}

/// The offset of the one match of `needle` in `file` (of `len` bytes) and the newlines
/// before it, when the file is valid UTF-8 without a BOM or NUL near its start; `None`
/// otherwise (no match, several, or a file the general path must judge).
///
/// Every core scans a segment of the file: reading it out of the page cache is most of
/// the cost, and a unique match needs every byte looked at.
fn find_unique(
    file: &File,
    len: u64,
    needle: &[u8],
    workers: usize,
    chunk: u64,
) -> std::io::Result<Option<(u64, usize)>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let finder = Finder::new(needle);
    // Segments of at least two steps each.
    let count = usize::try_from(len / (2 * chunk))
        .unwrap_or(usize::MAX)
        .clamp(1, workers.max(1));
    let size = len.div_ceil(count as u64);
    let stop = AtomicBool::new(false);
    let results: Vec<std::io::Result<Segment>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..count as u64)
            .map(|i| {
                let range = ((i * size).min(len), ((i + 1) * size).min(len));
                let (finder, stop) = (&finder, &stop);
                scope.spawn(move || {
                    let seg = scan_segment(file, len, range, finder, chunk, stop);
                    // A segment that settles the answer stops the others.
                    if seg
                        .as_ref()
                        .map_or(true, |s| !s.valid || s.matches.len() > 1)
                    {
                        stop.store(true, Ordering::Relaxed);
                    }
                    seg
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(std::io::Error::other("a search thread of Edit panicked"))
                })
            })
            .collect()
    });
    if stop.load(Ordering::Relaxed) {
        // Invalid somewhere, or more than one match: the general path decides (an error in
        // a segment is still reported).
        for r in results {
            r?;
        }
        return Ok(None);
    }
    let mut found = None;
    let mut lines = 0_usize;
    for seg in results {
        let seg = seg?;
        for &(at, before) in &seg.matches {
            if found.is_some() {
                return Ok(None);
            }
            found = Some((at, lines + before));
        }
        lines += seg.newlines;
    }
    Ok(found)
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
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let Some((start, lines_before)) =
        find_unique(file, len, old.as_bytes(), workers, CHUNK as u64)?
    else {
        return Ok(None);
    };
    let mut end = start + old.len() as u64;
    // A deletion takes the line break after it (one within `len`: a file that grows
    // meanwhile must not move the span past the bytes scanned).
    if new.is_empty() && !old.ends_with('\n') {
        let mut next = [0_u8; 2];
        let room = usize::try_from(len.saturating_sub(end)).map_or(2, |r| r.min(2));
        let got = file.read_at(&mut next[..room], end)?;
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
    // More newlines here than the search counted: the file changed under the search.
    let Some(lines_before_window) = lines_before.checked_sub(newlines(before)) else {
        return Ok(None);
    };
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

    /// `find_unique` with tiny steps and many segments against a plain search.
    fn check_unique(text: &str, needle: &str) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let file = File::open(f.path()).unwrap();
        let all: Vec<usize> = text.match_indices(needle).map(|(i, _)| i).collect();
        let expected =
            (all.len() == 1).then(|| (all[0] as u64, text[..all[0]].matches('\n').count()));
        for (workers, chunk) in [(1, 5), (3, 4), (4, 7), (8, 1 << 20)] {
            let got =
                find_unique(&file, text.len() as u64, needle.as_bytes(), workers, chunk).unwrap();
            assert_eq!(got, expected, "{needle:?} in {text:?}, {workers} × {chunk}");
        }
    }

    #[test]
    fn unique_matches_across_segments_and_steps() {
        let base: String = (0..60).map(|i| format!("é{i}😀\n")).collect();
        // Every position of a match, so it straddles every step and segment boundary.
        for at in 0..base.len() {
            if !base.is_char_boundary(at) {
                continue;
            }
            let text = format!("{}NEEDLE{}", &base[..at], &base[at..]);
            check_unique(&text, "NEEDLE");
        }
        check_unique(&base, "é7😀\n");
        check_unique(&base, "absent");
        check_unique(&base, "😀");
        check_unique("", "x");
        check_unique("x", "x");
        // Invalid UTF-8, wherever it is, leaves the decision to the general path.
        for at in [0, 1, 17, 100] {
            let mut bytes = base.clone().into_bytes();
            bytes.insert(at, 0xFF);
            let mut f = tempfile::NamedTempFile::new().unwrap();
            f.write_all(&bytes).unwrap();
            let file = File::open(f.path()).unwrap();
            for (workers, chunk) in [(1, 5), (4, 7)] {
                let got = find_unique(&file, bytes.len() as u64, b"\n", workers, chunk).unwrap();
                assert_eq!(got, None);
                let got = find_unique(&file, bytes.len() as u64, "é3😀".as_bytes(), workers, chunk)
                    .unwrap();
                assert_eq!(got, None, "0xFF at {at}");
            }
        }
    }

    #[test]
    fn a_line_break_appended_after_the_search_is_not_taken() {
        // `len` is the size the search saw; the file has grown since (a log being written).
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(b"keep\nDROP\n").unwrap();
        let file = File::open(f.path()).unwrap();
        let got = locate_streamed(&file, 9, "DROP", "").unwrap().unwrap();
        assert_eq!((got.span.start, got.span.end), (5, 9));
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
