//! Unified diffs of an edit, computed only around the changed regions so a one-line edit of
//! a 100 MB file does not diff 100 MB.

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Whole-file diffs (Write) are skipped above this many bytes on either side.
const MAX_WHOLE_DIFF: usize = 4 * 1024 * 1024;

/// One hunk, as the reference's `structuredPatch`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    /// First line in the old file (1-based)
    pub old_start: usize,
    /// Lines from the old file
    pub old_lines: usize,
    /// First line in the new file (1-based)
    pub new_start: usize,
    /// Lines in the new file
    pub new_lines: usize,
    /// The lines, each prefixed with ' ', '-' or '+'
    pub lines: Vec<String>,
}

/// A replaced byte range of the original and its replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
    pub replacement: String,
}

/// Hunks of `old` → `new` by a line diff, with line numbers shifted by the given offsets.
fn diff_hunks(old: &str, new: &str, old_line0: usize, new_line0: usize) -> Vec<Hunk> {
    let diff = TextDiff::configure()
        .timeout(std::time::Duration::from_secs(2))
        .diff_lines(old, new);
    let mut hunks = Vec::new();
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let mut lines = Vec::new();
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                let value = change.value();
                let value = value.strip_suffix('\n').unwrap_or(value);
                let value = value.strip_suffix('\r').unwrap_or(value);
                lines.push(format!("{sign}{value}"));
            }
        }
        hunks.push(Hunk {
            old_start: old_line0 + old_range.start + usize::from(!old_range.is_empty()),
            old_lines: old_range.len(),
            new_start: new_line0 + new_range.start + usize::from(!new_range.is_empty()),
            new_lines: new_range.len(),
            lines,
        });
    }
    hunks
}

fn count_lines(text: &str) -> usize {
    memchr::memchr_iter(b'\n', text.as_bytes()).count()
}

/// Start of the line `n` lines before the line containing `pos`.
fn back_lines(text: &str, pos: usize, n: usize) -> usize {
    let bytes = text.as_bytes();
    let mut start = memchr::memrchr(b'\n', &bytes[..pos]).map_or(0, |i| i + 1);
    for _ in 0..n {
        if start == 0 {
            break;
        }
        start = memchr::memrchr(b'\n', &bytes[..start - 1]).map_or(0, |i| i + 1);
    }
    start
}

/// End (after the newline) of the line `n` lines after the line containing `pos - 1`.
fn forward_lines(text: &str, pos: usize, n: usize) -> usize {
    let bytes = text.as_bytes();
    let mut end = if pos > 0 && bytes.get(pos - 1) == Some(&b'\n') {
        pos
    } else {
        memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |i| pos + i + 1)
    };
    for _ in 0..n {
        if end >= bytes.len() {
            break;
        }
        end = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i + 1);
    }
    end
}

/// Hunks for `spans` (sorted, non-overlapping) applied to `original`.
pub(crate) fn hunks_for_spans(original: &str, spans: &[Span]) -> Vec<Hunk> {
    // Regions: the spans' lines plus context, merged when they touch.
    let mut regions: Vec<(usize, usize, Vec<&Span>)> = Vec::new();
    for span in spans {
        let start = back_lines(original, span.start, CONTEXT);
        let end = forward_lines(original, span.end, CONTEXT);
        match regions.last_mut() {
            Some(last) if start <= last.1 => {
                last.1 = last.1.max(end);
                last.2.push(span);
            }
            _ => regions.push((start, end, vec![span])),
        }
    }
    let mut hunks = Vec::new();
    let mut line_pos = 0;
    let mut lines_before = 0;
    let mut delta: isize = 0;
    for (start, end, region_spans) in regions {
        lines_before += count_lines(&original[line_pos..start]);
        line_pos = start;
        let old = &original[start..end];
        let mut new = String::with_capacity(old.len());
        let mut at = start;
        for span in &region_spans {
            new.push_str(&original[at..span.start]);
            new.push_str(&span.replacement);
            at = span.end;
        }
        new.push_str(&original[at..end]);
        let new_line0 = lines_before.saturating_add_signed(delta);
        hunks.extend(diff_hunks(old, &new, lines_before, new_line0));
        delta += count_lines(&new) as isize - count_lines(old) as isize;
    }
    hunks
}

/// Hunks of a whole-file change (Write); empty when either side is too large to diff.
pub(crate) fn hunks_whole(old: &str, new: &str) -> Vec<Hunk> {
    if old.len() > MAX_WHOLE_DIFF || new.len() > MAX_WHOLE_DIFF {
        return Vec::new();
    }
    diff_hunks(old, new, 0, 0)
}

/// The unified diff text of `hunks` for `path`.
pub(crate) fn unified(path: &str, hunks: &[Hunk]) -> String {
    if hunks.is_empty() {
        return String::new();
    }
    let mut out = format!("--- {path}\n+++ {path}\n");
    for h in hunks {
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            h.old_start, h.old_lines, h.new_start, h.new_lines
        ));
        for line in &h.lines {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_around_a_span_have_file_line_numbers() {
        let original: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let start = original.find("line 10\n").unwrap();
        let spans = [Span {
            start,
            end: start + "line 10".len(),
            replacement: "LINE TEN".to_owned(),
        }];
        let hunks = hunks_for_spans(&original, &spans);
        assert_eq!(hunks.len(), 1);
        let h = &hunks[0];
        assert_eq!(
            (h.old_start, h.old_lines, h.new_start, h.new_lines),
            (7, 7, 7, 7)
        );
        assert_eq!(
            h.lines,
            [
                " line 7",
                " line 8",
                " line 9",
                "-line 10",
                "+LINE TEN",
                " line 11",
                " line 12",
                " line 13"
            ]
        );
        let text = unified("f.txt", &hunks);
        assert!(
            text.starts_with("--- f.txt\n+++ f.txt\n@@ -7,7 +7,7 @@\n"),
            "{text}"
        );
    }

    #[test]
    fn later_hunks_account_for_earlier_line_changes() {
        let original: String = (1..=30).map(|i| format!("l{i}\n")).collect();
        let a = original.find("l2\n").unwrap();
        let b = original.find("l25\n").unwrap();
        let spans = [
            Span {
                start: a,
                end: a + 3,
                replacement: "x\ny\nz\n".to_owned(),
            },
            Span {
                start: b,
                end: b + 4,
                replacement: String::new(),
            },
        ];
        let hunks = hunks_for_spans(&original, &spans);
        assert_eq!(hunks.len(), 2);
        assert_eq!((hunks[0].old_start, hunks[0].new_start), (1, 1));
        assert_eq!(hunks[1].old_start, 22);
        assert_eq!(hunks[1].new_start, 24);
        assert_eq!((hunks[1].old_lines, hunks[1].new_lines), (7, 6));
    }
}
