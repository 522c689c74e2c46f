//! An Update of a file over 64 MiB without loading it: when every chunk's lines occur
//! exactly, each chunk becomes a byte sequence sought at line starts in one streamed pass
//! (which also checks that the file is valid UTF-8 without a BOM or carriage returns), and
//! the replacements are spliced into a copy of the file as Edit's large-file path does.
//! Anything else — a chunk found only loosely, `*** End of File`, a pure addition, CRLF —
//! returns `None` and the caller loads the file.

use std::fs::File;
use std::os::unix::fs::FileExt;

use memchr::memmem::Finder;

use super::grammar::Chunk;
use crate::diff::Span;

/// Bytes read per step.
const CHUNK: usize = 4 * 1024 * 1024;

/// One sought line sequence: its bytes (each line ended by `\n`), and which chunk's old
/// lines it is (`None`: a chunk's `@@` context line).
struct Sought {
    needle: Vec<u8>,
    chunk: Option<usize>,
}

/// The spans that apply `chunks` to `file` (of `len` bytes), found in one pass; `None`
/// when the general path must decide.
pub(crate) fn locate(
    file: &File,
    len: u64,
    chunks: &[Chunk],
) -> std::io::Result<Option<Vec<Span>>> {
    let plain = |l: &String| !l.contains(['\r', '\n']);
    let mut sought = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        if c.end_of_file
            || c.old_lines.is_empty()
            || !c.old_lines.iter().all(plain)
            || !c.new_lines.iter().all(plain)
            || c.context.as_ref().is_some_and(|l| !plain(l))
        {
            return Ok(None);
        }
        if let Some(context) = &c.context {
            sought.push(Sought {
                needle: line_bytes(std::slice::from_ref(context)),
                chunk: None,
            });
        }
        sought.push(Sought {
            needle: line_bytes(&c.old_lines),
            chunk: Some(i),
        });
    }
    let Some(found) = scan(file, len, &sought)? else {
        return Ok(None);
    };
    let mut spans = Vec::with_capacity(chunks.len() + 1);
    for (s, at) in sought.iter().zip(found) {
        let Some(i) = s.chunk else { continue };
        let new = &chunks[i].new_lines;
        let mut replacement = new.join("\n");
        if !new.is_empty() {
            replacement.push('\n');
        }
        let (Ok(start), Ok(n)) = (usize::try_from(at), usize::try_from(s.needle.len() as u64))
        else {
            return Ok(None);
        };
        spans.push(Span {
            start,
            end: start + n,
            replacement,
        });
    }
    // Every line ends with a newline afterwards.
    let mut last = [0_u8; 1];
    if len > 0 && file.read_at(&mut last, len - 1)? == 1 && last[0] != b'\n' {
        let Ok(end) = usize::try_from(len) else {
            return Ok(None);
        };
        spans.push(Span {
            start: end,
            end,
            replacement: "\n".to_owned(),
        });
    }
    Ok(Some(spans))
}

fn line_bytes(lines: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(l.as_bytes());
        out.push(b'\n');
    }
    out
}

/// Incremental UTF-8 validation across reads: the bytes of a character cut by a read.
#[derive(Default)]
struct Utf8 {
    carry: Vec<u8>,
}

impl Utf8 {
    fn feed(&mut self, data: &[u8]) -> bool {
        let mut start = 0;
        if let Some(&lead) = self.carry.first() {
            let width = match lead {
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => return false,
            };
            let need = width - self.carry.len();
            if data.len() < need {
                self.carry.extend_from_slice(data);
                return true;
            }
            self.carry.extend_from_slice(&data[..need]);
            if std::str::from_utf8(&self.carry).is_err() {
                return false;
            }
            self.carry.clear();
            start = need;
        }
        match std::str::from_utf8(&data[start..]) {
            Ok(_) => true,
            Err(e) if e.error_len().is_none() => {
                self.carry
                    .extend_from_slice(&data[start + e.valid_up_to()..]);
                true
            }
            Err(_) => false,
        }
    }
}

/// The file offset of each sought sequence, each found at a line start at or after the end
/// of the one before; `None` when one is missing or the file is not plain UTF-8 text with
/// LF endings.
fn scan(file: &File, len: u64, sought: &[Sought]) -> std::io::Result<Option<Vec<u64>>> {
    // Offsets below are in the stream "\n" + file, so a line start always follows a '\n'.
    // Each sequence is sought with the '\n' before it.
    let needles: Vec<Vec<u8>> = sought
        .iter()
        .map(|s| [b"\n".as_slice(), &s.needle].concat())
        .collect();
    let finders: Vec<Finder<'_>> = needles.iter().map(Finder::new).collect();
    let mut window: Vec<u8> = vec![b'\n'];
    let mut base = 0_u64;
    let mut from = 0_u64;
    let mut found = Vec::with_capacity(sought.len());
    let mut utf8 = Utf8::default();
    let mut buf = vec![0_u8; CHUNK];
    let mut pos = 0_u64;
    loop {
        while let Some(s) = sought.get(found.len()) {
            // Bytes before `base` were searched already and dropped.
            from = from.max(base);
            let rel = usize::try_from(from - base).unwrap_or(usize::MAX);
            let hit = window.get(rel..).and_then(|w| finders[found.len()].find(w));
            let Some(i) = hit else { break };
            // '\n' at stream offset v, the sequence at file offset v.
            let v = from + i as u64;
            found.push(v);
            from = v + s.needle.len() as u64;
        }
        if pos >= len {
            break;
        }
        let want = usize::try_from((len - pos).min(CHUNK as u64)).unwrap_or(CHUNK);
        let got = file.read_at(&mut buf[..want], pos)?;
        if got == 0 {
            // The file shrank: let the general path judge it.
            return Ok(None);
        }
        let data = &buf[..got];
        if pos == 0
            && (data.starts_with(b"\xEF\xBB\xBF")
                || data.starts_with(b"\xFF\xFE")
                || data.starts_with(b"\xFE\xFF")
                || memchr::memchr(0, &data[..data.len().min(8192)]).is_some())
        {
            return Ok(None);
        }
        if memchr::memchr(b'\r', data).is_some() || !utf8.feed(data) {
            return Ok(None);
        }
        pos += got as u64;
        if found.len() < sought.len() {
            // Keep what a match starting before this read may still need.
            let keep = sought[found.len()].needle.len() + 1;
            let rel_from = usize::try_from(from.saturating_sub(base))
                .unwrap_or(usize::MAX)
                .min(window.len());
            let cut = rel_from.max(window.len().saturating_sub(keep));
            window.drain(..cut);
            base += cut as u64;
            window.extend_from_slice(data);
        }
    }
    if !utf8.carry.is_empty() || found.len() < sought.len() {
        return Ok(None);
    }
    Ok(Some(found))
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::apply_patch::apply::apply;

    fn chunk(context: Option<&str>, old: &[&str], new: &[&str]) -> Chunk {
        Chunk {
            context: context.map(str::to_owned),
            old_lines: old.iter().map(|s| (*s).to_owned()).collect(),
            new_lines: new.iter().map(|s| (*s).to_owned()).collect(),
            kept: Vec::new(),
            end_of_file: false,
        }
    }

    fn spliced(text: &[u8], spans: &[Span]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut at = 0;
        for s in spans {
            out.extend_from_slice(&text[at..s.start]);
            out.extend_from_slice(s.replacement.as_bytes());
            at = s.end;
        }
        out.extend_from_slice(&text[at..]);
        out
    }

    /// The streamed result equals the general path's, or the path declines.
    fn check(text: &str, chunks: &[Chunk], streamed: bool) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        let file = File::open(f.path()).unwrap();
        let got = locate(&file, text.len() as u64, chunks).unwrap();
        assert_eq!(got.is_some(), streamed, "{chunks:?}");
        if let Some(spans) = got {
            let general = apply(text, chunks, "f").unwrap();
            assert_eq!(
                String::from_utf8(spliced(text.as_bytes(), &spans)).unwrap(),
                general
            );
        }
    }

    #[test]
    fn streamed_equals_the_general_path() {
        let text: String = (0..300_000).map(|i| format!("line {i} é\n")).collect();
        assert!(text.len() > CHUNK);
        check(&text, &[chunk(None, &["line 5 é"], &["five"])], true);
        check(&text, &[chunk(None, &["line 299999 é"], &[])], true);
        check(
            &text,
            &[chunk(None, &["line 0 é", "line 1 é"], &["a", "b", "c"])],
            true,
        );
        check(
            &text,
            &[
                chunk(Some("line 10 é"), &["line 11 é"], &["x"]),
                chunk(None, &["line 250000 é"], &["y"]),
            ],
            true,
        );
        // Across a read boundary.
        let at = text[..CHUNK].rfind('\n').unwrap();
        let line = text[at + 1..].lines().next().unwrap().to_owned();
        let prev = text[..at].rsplit('\n').next().unwrap().to_owned();
        check(&text, &[chunk(None, &[&prev, &line], &["joined"])], true);
        // The first of several.
        check(
            &format!("{text}line 5 é\n"),
            &[chunk(None, &["line 5 é"], &["x"])],
            true,
        );
        // Declined: a prefix of a line only, missing, loose, CRLF, no final newline kept.
        check(&text, &[chunk(None, &["ine 5 é"], &["x"])], false);
        check(&text, &[chunk(None, &["absent"], &["x"])], false);
        check(&text, &[chunk(None, &["line 5 é  "], &["x"])], false);
        check(
            &format!("a\r\n{text}"),
            &[chunk(None, &["line 5 é"], &["x"])],
            false,
        );
        check(
            &format!("{text}tail"),
            &[chunk(None, &["line 5 é"], &["x"])],
            true,
        );
        check(
            &format!("{text}\u{FEFF}"),
            &[chunk(None, &["line 5 é"], &["x"])],
            true,
        );
        let mut bad = text.clone().into_bytes();
        bad.push(0xFF);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&bad).unwrap();
        let file = File::open(f.path()).unwrap();
        let chunks = [chunk(None, &["line 5 é"], &["x"])];
        assert!(locate(&file, bad.len() as u64, &chunks).unwrap().is_none());
    }

    #[test]
    fn utf8_across_reads() {
        let s = "aé😀b".as_bytes();
        for cut in 0..s.len() {
            let mut u = Utf8::default();
            assert!(
                u.feed(&s[..cut]) && u.feed(&s[cut..]) && u.carry.is_empty(),
                "{cut}"
            );
        }
        let mut u = Utf8::default();
        assert!(!u.feed(b"\xFFa"));
    }
}
