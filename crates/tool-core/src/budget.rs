//! The output budget: results over a tool's threshold keep a preview inline and spill whole
//! to a file under the state directory, whose path the model can Read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::ContentBlock;

/// No result is kept inline above this many characters, whatever the tool says.
pub const PERSIST_THRESHOLD_CAP: usize = 50_000;
/// How much of a spilled result the model sees inline.
pub const PREVIEW_BYTES: usize = 2_000;
/// Error texts keep this many characters, half from the head and half from the tail.
pub const ERROR_TEXT_CAP: usize = 10_000;

/// The largest index `<= at` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    let mut i = at;
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Keeps the first and last `cap / 2` characters of `text`, with
/// `… [N characters truncated] …` between; shorter texts pass unchanged.
pub fn cut_middle(text: &str, cap: usize) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text.to_owned();
    }
    let half = cap / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(total - half).collect();
    format!(
        "{head}\n\n… [{} characters truncated] …\n\n{tail}",
        total - 2 * half
    )
}

/// A count with its noun: `1 file`, `3 files`; `one` for exactly one, else `many`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A human-readable size: `812B`, `12.3KB`, `4.5MB`.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Total characters of the text blocks.
pub fn text_len(content: &[ContentBlock]) -> usize {
    content
        .iter()
        .filter_map(ContentBlock::as_text)
        .map(|t| t.chars().count())
        .sum()
}

/// Applies the budget: when the text blocks exceed `threshold` characters, writes their
/// text to `dir/name.txt` and replaces them with one `<persisted-output>` block holding the
/// path and a 2 KB preview. Image blocks stay. Returns the spill path.
///
/// If the file cannot be written, the text is cut in the middle instead and the block says
/// why, so nothing is silently lost.
///
/// The file is created, written and synced on the runtime's blocking threads; a result
/// within the threshold returns at once.
pub async fn apply_budget(
    content: &mut Vec<ContentBlock>,
    threshold: usize,
    dir: &Path,
    name: &str,
) -> Option<PathBuf> {
    if text_len(content) <= threshold {
        return None;
    }
    let full: Vec<&str> = content.iter().filter_map(ContentBlock::as_text).collect();
    let full = full.join("\n");
    content.retain(|b| b.as_text().is_none());
    let safe_name = crate::path::safe_stem(name);
    let path = dir.join(format!("{safe_name}.txt"));
    // Shared with the blocking task, so the text is still here should the task fail.
    let full = Arc::new(full);
    let written = {
        let (dir, path, text) = (dir.to_path_buf(), path.clone(), Arc::clone(&full));
        tokio::task::spawn_blocking(move || write_spill(&dir, &path, &text))
            .await
            .unwrap_or_else(|e| {
                Err(std::io::Error::other(format!(
                    "the writing task failed: {e}"
                )))
            })
    };
    let block = match written {
        Ok(()) => {
            let cut = floor_char_boundary(&full, PREVIEW_BYTES);
            let more = if cut < full.len() { "\n..." } else { "" };
            format!(
                "<persisted-output>\nOutput too large ({}). Full output saved to: {}\n\nPreview (first {}):\n{}{more}\n</persisted-output>",
                format_size(full.len()),
                path.display(),
                format_size(PREVIEW_BYTES),
                &full[..cut],
            )
        }
        Err(ref e) => format!(
            "{}\n\n(The output was too large to show whole, and saving it to {} failed: {e})",
            cut_middle(&full, threshold),
            path.display()
        ),
    };
    content.insert(0, ContentBlock::text(block));
    written.ok().map(|()| path)
}

/// Creates `dir` and writes `text` to `path`, synced.
fn write_spill(dir: &Path, path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut f = std::fs::File::create(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_middle_keeps_head_and_tail() {
        assert_eq!(cut_middle("short", 10), "short");
        let long = "a".repeat(10) + &"b".repeat(10);
        let cut = cut_middle(&long, 10);
        assert!(cut.starts_with("aaaaa\n"));
        assert!(cut.ends_with("\nbbbbb"));
        assert!(cut.contains("[10 characters truncated]"));
        // Multi-byte characters are never split.
        let _ = cut_middle(&"é".repeat(100), 7);
    }

    #[tokio::test]
    async fn spills_over_threshold() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let mut small = vec![ContentBlock::text("hi")];
        assert!(
            apply_budget(&mut small, 10, dir.path(), "x")
                .await
                .is_none()
        );
        assert_eq!(small, vec![ContentBlock::text("hi")]);

        let big = "é".repeat(3000);
        let mut content = vec![ContentBlock::text(big.clone())];
        let path = apply_budget(&mut content, 100, dir.path(), "call/1").await;
        let path = path.ok_or_else(|| std::io::Error::other("not spilled"))?;
        assert_eq!(std::fs::read_to_string(&path)?, big);
        let text = content[0].as_text().unwrap_or_default();
        assert!(
            text.starts_with(
                "<persisted-output>\nOutput too large (5.9KB). Full output saved to: "
            )
        );
        assert!(text.contains(&path.display().to_string()));
        assert!(text.ends_with("...\n</persisted-output>"));
        assert_eq!(
            path.file_name().and_then(|n| n.to_str()),
            Some("call_1.txt")
        );
        Ok(())
    }
}
