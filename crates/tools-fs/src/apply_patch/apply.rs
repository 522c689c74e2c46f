//! The new text of one updated file, computed as codex computes it: the chunks are found
//! in order (each after the one before), the replaced lines are swapped, the lines kept
//! keep their own line endings, new lines take the ending of the file's first line, and
//! every line ends with one (an unterminated last line gains the file's ending).

use super::grammar::Chunk;
use super::seek::seek;

/// A line ending of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Lf,
    CrLf,
}

impl Ending {
    fn as_str(self) -> &'static str {
        match self {
            Ending::Lf => "\n",
            Ending::CrLf => "\r\n",
        }
    }
}

/// One replacement: at line `start`, `len` lines replaced by `lines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replacement {
    pub start: usize,
    pub len: usize,
    pub lines: Vec<String>,
    /// For each new line that is a context line, its offset in the replaced lines (the
    /// file's own text is kept, as codex keeps it)
    pub kept: Vec<Option<usize>>,
}

/// Why a chunk could not be placed: codex's message (the file named by `shown`).
pub(crate) fn context_missing(context: &str, shown: &str) -> String {
    format!("Failed to find context '{context}' in {shown}")
}

/// Codex's message for old lines not found.
pub(crate) fn lines_missing(old: &[String], shown: &str) -> String {
    format!(
        "Failed to find expected lines in {shown}:\n{}",
        old.join("\n")
    )
}

/// Where each chunk goes in `lines` (the file's lines without their endings), sorted by
/// position; the error is codex's message.
pub(crate) fn replacements<S: AsRef<str>>(
    lines: &[S],
    chunks: &[Chunk],
    shown: &str,
) -> Result<Vec<Replacement>, String> {
    let mut out: Vec<Replacement> = Vec::with_capacity(chunks.len());
    let mut at = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.context {
            match seek(lines, std::slice::from_ref(context), at, false) {
                Some(i) => at = i + 1,
                None => return Err(context_missing(context, shown)),
            }
        }
        if chunk.old_lines.is_empty() {
            // A pure addition goes at the end of the file.
            out.push(Replacement {
                start: lines.len(),
                len: 0,
                lines: chunk.new_lines.clone(),
                kept: Vec::new(),
            });
            continue;
        }
        let mut pattern: &[String] = &chunk.old_lines;
        let mut new: &[String] = &chunk.new_lines;
        let mut found = seek(lines, pattern, at, chunk.end_of_file);
        let mut kept = chunk.kept.clone();
        if found.is_none() && pattern.last().is_some_and(String::is_empty) {
            // A trailing empty line stands for the file's final newline.
            pattern = &pattern[..pattern.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(lines, pattern, at, chunk.end_of_file);
            kept.clear();
        }
        let Some(start) = found else {
            return Err(lines_missing(&chunk.old_lines, shown));
        };
        out.push(Replacement {
            start,
            len: pattern.len(),
            lines: new.to_vec(),
            kept,
        });
        at = start + pattern.len();
    }
    out.sort_by_key(|r| r.start);
    Ok(out)
}

/// A file's text split into lines, each with its ending (none for an unterminated last
/// line).
struct Lines<'a> {
    lines: Vec<(&'a str, Option<Ending>)>,
    preferred: Ending,
}

fn split(text: &str) -> Lines<'_> {
    let mut lines = Vec::new();
    let mut preferred = None;
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', text.as_bytes()) {
        let line = &text[start..nl];
        let (line, ending) = match line.strip_suffix('\r') {
            Some(l) => (l, Ending::CrLf),
            None => (line, Ending::Lf),
        };
        preferred.get_or_insert(ending);
        lines.push((line, Some(ending)));
        start = nl + 1;
    }
    if start < text.len() {
        lines.push((&text[start..], None));
    }
    Lines {
        lines,
        preferred: preferred.unwrap_or(Ending::Lf),
    }
}

/// `text` with `chunks` applied, or codex's message for the first chunk not found.
pub(crate) fn apply(text: &str, chunks: &[Chunk], shown: &str) -> Result<String, String> {
    let Lines { lines, preferred } = split(text);
    let texts: Vec<&str> = lines.iter().map(|(l, _)| *l).collect();
    let plan = replacements(&texts, chunks, shown)?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut push = |line: &str, ending: Option<Ending>| {
        out.push_str(line);
        out.push_str(ending.unwrap_or(preferred).as_str());
    };
    let mut next = 0;
    for r in &plan {
        // Replacements overlapping an earlier one (two chunks anchored at the same lines)
        // take nothing more of the file before them.
        let keep_to = r.start.max(next).min(lines.len());
        for &(line, ending) in &lines[next.min(keep_to)..keep_to] {
            push(line, ending);
        }
        for (k, line) in r.lines.iter().enumerate() {
            let own = r.kept.get(k).copied().flatten().filter(|&o| o < r.len);
            match own.and_then(|o| lines.get(r.start + o)) {
                Some(&(text, ending)) => push(text, ending),
                None => push(line, Some(preferred)),
            }
        }
        next = next.max(r.start.saturating_add(r.len)).max(keep_to);
    }
    for &(line, ending) in lines.get(next..).unwrap_or(&[]) {
        push(line, ending);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(context: Option<&str>, old: &[&str], new: &[&str], eof: bool) -> Chunk {
        Chunk {
            context: context.map(str::to_owned),
            old_lines: old.iter().map(|s| (*s).to_owned()).collect(),
            new_lines: new.iter().map(|s| (*s).to_owned()).collect(),
            kept: Vec::new(),
            end_of_file: eof,
        }
    }

    fn check(text: &str, chunks: &[Chunk], expected: Result<&str, &str>) {
        let got = apply(text, chunks, "f");
        assert_eq!(
            got.as_deref(),
            expected.map_err(str::to_owned).as_deref(),
            "{text:?}"
        );
    }

    #[test]
    fn endings_kept_and_added() {
        check(
            "a\r\nb\r\nc\r\n",
            &[chunk(None, &["a", "b"], &["a", "B", "B2"], false)],
            Ok("a\r\nB\r\nB2\r\nc\r\n"),
        );
        check(
            "a\nb\nc",
            &[chunk(None, &["a"], &["A"], false)],
            Ok("A\nb\nc\n"),
        );
        check(
            "x\n\n",
            &[chunk(None, &[], &["add"], false)],
            Ok("x\n\nadd\n"),
        );
        check(
            "a\r\nb\nc\n",
            &[chunk(None, &["b"], &["B"], false)],
            Ok("a\r\nB\r\nc\n"),
        );
        check("", &[chunk(None, &[], &["x"], false)], Ok("x\n"));
    }

    #[test]
    fn chunks_in_order_and_at_the_end() {
        check(
            "a\nb\na\nb\n",
            &[chunk(None, &["a", "b"], &["A", "B"], true)],
            Ok("a\nb\nA\nB\n"),
        );
        check(
            "a\nb\nc\n",
            &[chunk(None, &["a"], &["A"], true)],
            Err("Failed to find expected lines in f:\na"),
        );
        check(
            "a\nb\nc\n",
            &[
                chunk(None, &["b"], &["B"], false),
                chunk(None, &["a"], &["A"], false),
            ],
            Err("Failed to find expected lines in f:\na"),
        );
        check(
            "fn x\n  a\nfn y\n  a\n",
            &[chunk(Some("fn y"), &["  a"], &["  b"], false)],
            Ok("fn x\n  a\nfn y\n  b\n"),
        );
        check(
            "a\n",
            &[chunk(Some("zz"), &["a"], &["b"], false)],
            Err("Failed to find context 'zz' in f"),
        );
        // The trailing empty line stands for the final newline.
        check(
            "a\nb\n",
            &[chunk(None, &["b", ""], &["c", ""], false)],
            Ok("a\nc\n"),
        );
    }
}
