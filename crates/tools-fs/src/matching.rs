//! How Edit finds `old_string`: exactly; then modulo line endings; then with curly quotes
//! read as straight ones (mapped back to the original slice); then, beyond the reference,
//! ignoring indentation style and trailing whitespace, accepted only for a single
//! candidate. When nothing matches, the error shows the closest region and the first line
//! that differs.

use crate::diff::Span;
use crate::text::{View, dominant_ending, straighten_quotes, with_ending};

/// Which rule found the match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    /// Byte for byte
    Exact,
    /// After reading CRLF as LF
    LineEndings,
    /// After reading curly quotes as straight ones
    Quotes,
    /// Ignoring indentation style (tabs or spaces) and trailing whitespace; unique only
    Whitespace,
}

/// One edit applied to a text.
#[cfg(test)]
#[derive(Debug, Clone)]
pub(crate) struct Applied {
    /// The text after the edit
    pub text: String,
    /// What was replaced, in the text before the edit
    pub spans: Vec<Span>,
    /// How the match was found
    pub kind: MatchKind,
}

/// Replaces straight quotes in `new` by curly ones in the style of `matched` (the file's
/// text): an opening quote at the start or after whitespace or an opening bracket or dash;
/// an apostrophe between letters is ’.
fn curl_quotes(new: &str, matched: &str) -> String {
    let single = matched.contains(['‘', '’']);
    let double = matched.contains(['“', '”']);
    let chars: Vec<char> = new.chars().collect();
    let mut out = String::with_capacity(new.len());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let opening = prev.is_none_or(|p| p.is_whitespace() || "([{—–".contains(p));
        match c {
            '\'' if single => {
                let apostrophe =
                    prev.is_some_and(char::is_alphabetic) && next.is_some_and(char::is_alphabetic);
                out.push(if apostrophe || !opening { '’' } else { '‘' });
            }
            '"' if double => out.push(if opening { '“' } else { '”' }),
            _ => out.push(c),
        }
    }
    out
}

/// Non-overlapping occurrences of `needle`, at most `max`.
fn find_all(haystack: &str, needle: &str, max: usize) -> Vec<usize> {
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut found = Vec::new();
    let mut at = 0;
    while found.len() < max
        && let Some(i) = finder.find(&haystack.as_bytes()[at..])
    {
        found.push(at + i);
        at += i + needle.len().max(1);
    }
    found
}

/// The comparison key of a line: its words joined by single spaces.
fn key(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A hash of [`key`]`(line)`, without building it.
fn key_hash(line: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    for word in line.split_whitespace() {
        word.hash(&mut hasher);
    }
    hasher.finish()
}

/// Leading whitespace of a line.
fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Lines of a text with their start offsets (without the newline).
fn lines_with_offsets(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices('\n') {
        out.push((start, &text[start..i]));
        start = i + 1;
    }
    if start < text.len() {
        out.push((start, &text[start..]));
    }
    out
}

/// Pairs of (old_string indent, file indent) of the lines a whitespace match paired.
type IndentPairs = Vec<(String, String)>;

/// A unique match ignoring indentation style and trailing whitespace, in `text` (LF only):
/// the byte range and, for re-indenting the replacement, pairs of (old_string indent, file
/// indent).
fn whitespace_match(text: &str, old: &str) -> Option<(usize, usize, IndentPairs)> {
    let ends_with_newline = old.ends_with('\n');
    let old_lines: Vec<&str> = old.strip_suffix('\n').unwrap_or(old).split('\n').collect();
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let old_keys: Vec<String> = old_lines.iter().map(|l| key(l)).collect();
    let lines = lines_with_offsets(text);
    let m = old_lines.len();
    if lines.len() < m {
        return None;
    }
    // The lines' keys as hashes, searched with Knuth-Morris-Pratt: linear in the lines of
    // the file and of old_string whatever they repeat (comparing old_string at every line
    // would take their product). A hit is confirmed on the keys themselves.
    let wanted: Vec<u64> = old_lines.iter().map(|l| key_hash(l)).collect();
    let mut fallback = vec![0_usize; m];
    let mut k = 0;
    for i in 1..m {
        while k > 0 && wanted[i] != wanted[k] {
            k = fallback[k - 1];
        }
        if wanted[i] == wanted[k] {
            k += 1;
        }
        fallback[i] = k;
    }
    let mut candidates = Vec::new();
    let mut q = 0;
    for (i, (_, line)) in lines.iter().enumerate() {
        let h = key_hash(line);
        while q > 0 && h != wanted[q] {
            q = fallback[q - 1];
        }
        if h == wanted[q] {
            q += 1;
        }
        if q == m {
            let first = i + 1 - m;
            if (0..m).all(|j| key(lines[first + j].1) == old_keys[j]) {
                candidates.push(first);
                if candidates.len() > 1 {
                    return None;
                }
            }
            q = fallback[q - 1];
        }
    }
    let i = *candidates.first()?;
    let start = lines[i].0;
    let (last_start, last) = lines[i + m - 1];
    let mut end = last_start + last.len();
    if ends_with_newline && end < text.len() {
        end += 1;
    }
    let pairs = (0..m)
        .map(|j| {
            (
                indent(old_lines[j]).to_owned(),
                indent(lines[i + j].1).to_owned(),
            )
        })
        .collect();
    Some((start, end, pairs))
}

/// Re-indents `new` from the model's indentation to the file's: indents seen in the
/// old_string map to the file's; other indents are converted between tabs and spaces at the
/// ratio the pairs show.
fn reindent(new: &str, pairs: &[(String, String)]) -> String {
    let ratio = pairs.iter().find_map(|(model, file)| {
        let spaces = model.chars().filter(|c| *c == ' ').count();
        let tabs = file.chars().filter(|c| *c == '\t').count();
        (spaces > 0 && tabs > 0 && !model.contains('\t') && !file.contains(' '))
            .then(|| (spaces / tabs).max(1))
    });
    let reverse = pairs.iter().find_map(|(model, file)| {
        let tabs = model.chars().filter(|c| *c == '\t').count();
        let spaces = file.chars().filter(|c| *c == ' ').count();
        (spaces > 0 && tabs > 0 && !file.contains('\t') && !model.contains(' '))
            .then(|| (spaces / tabs).max(1))
    });
    let mut out = String::with_capacity(new.len());
    for (n, line) in new.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let ind = indent(line);
        let rest = &line[ind.len()..];
        if let Some((_, file)) = pairs.iter().find(|(model, _)| model == ind) {
            out.push_str(file);
        } else if let Some(r) = ratio.filter(|_| !ind.contains('\t')) {
            let spaces = ind.len();
            out.push_str(&"\t".repeat(spaces / r));
            out.push_str(&" ".repeat(spaces % r));
        } else if let Some(r) = reverse.filter(|_| !ind.contains(' ')) {
            out.push_str(&" ".repeat(ind.len() * r));
        } else {
            out.push_str(ind);
        }
        out.push_str(rest);
    }
    out
}

/// The message when nothing matches: the reference's, plus the closest region of the file
/// with line numbers and the first line that differs.
fn not_found_message(text: &str, old: &str) -> String {
    let mut message = format!("String to replace not found in file.\nString: {old}");
    if let Some(hint) = closest_region(text, old) {
        message.push_str("\n\n");
        message.push_str(&hint);
    }
    message
}

/// Lines longer than this (in bytes) are not compared character by character.
const LONGEST_COMPARED_LINE: usize = 2_000;

fn closest_region(text: &str, old: &str) -> Option<String> {
    let view = View::new(text, false);
    let old = old.replace("\r\n", "\n");
    let old_lines: Vec<&str> = old.strip_suffix('\n').unwrap_or(&old).split('\n').collect();
    let lines: Vec<&str> = view.text.split('\n').collect();
    let m = old_lines.len();
    if m == 0 || lines.len().saturating_mul(m) > 20_000_000 {
        return None;
    }
    let old_keys: Vec<String> = old_lines.iter().map(|l| key(l)).collect();
    let file_keys: Vec<String> = lines.iter().map(|l| key(l)).collect();
    let mut best: Option<(usize, usize)> = None; // (score, start)
    for i in 0..lines.len() {
        let score = (0..m)
            .filter(|&j| {
                i + j < lines.len() && !old_keys[j].is_empty() && file_keys[i + j] == old_keys[j]
            })
            .count();
        if score > 0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, i));
        }
    }
    let start = match best {
        Some((_, i)) => i,
        None => {
            // No line in common: the single line most like the first non-blank line.
            let probe = old_lines.iter().find(|l| !l.trim().is_empty())?.trim();
            // A character diff costs up to the product of the lengths: long lines are not
            // compared.
            if lines.len() > 20_000 || probe.len() > LONGEST_COMPARED_LINE {
                return None;
            }
            let (ratio, i) = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.len() <= LONGEST_COMPARED_LINE)
                .map(|(i, l)| {
                    let r = similar::TextDiff::from_chars(l.trim(), probe).ratio();
                    (r, i)
                })
                .fold((0.0_f32, 0), |a, b| if b.0 > a.0 { b } else { a });
            if ratio < 0.6 {
                return None;
            }
            let offset = old_lines
                .iter()
                .position(|l| !l.trim().is_empty())
                .unwrap_or(0);
            i.saturating_sub(offset)
        }
    };
    let end = (start + m).min(lines.len());
    let mut hint = format!(
        "The closest match is at lines {}-{} of the file:\n",
        start + 1,
        end
    );
    for (n, line) in lines[start..end].iter().enumerate() {
        hint.push_str(&format!("{}\t{line}\n", start + n + 1));
    }
    if let Some(j) = (0..m).find(|&j| lines.get(start + j) != Some(&old_lines[j])) {
        let file_line = lines.get(start + j).copied().unwrap_or("(end of file)");
        hint.push_str(&format!(
            "The first line that differs is line {}:\n  file:       {:?}\n  old_string: {:?}",
            start + j + 1,
            file_line,
            old_lines[j]
        ));
    }
    Some(hint.trim_end().to_owned())
}

/// Applies one edit to `text`. `old` may be empty only for an empty or whitespace-only
/// text (then `new` replaces it whole). Edit itself locates ([`locate_edit`]) and
/// [`splice`]s, so that a spliced write never builds the text; the tests compare with this.
#[cfg(test)]
pub(crate) fn apply_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Applied, String> {
    let located = locate_edit(text, old, new, replace_all)?;
    Ok(Applied {
        text: splice(text, &located.spans),
        spans: located.spans,
        kind: located.kind,
    })
}

/// Where an edit applies, without building the new text.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// What is replaced, in the text before the edit
    pub spans: Vec<Span>,
    /// How the match was found
    pub kind: MatchKind,
    /// The original text of the first match
    pub actual_old: String,
}

/// `text` with `spans` (sorted, disjoint) replaced.
pub(crate) fn splice(text: &str, spans: &[Span]) -> String {
    let mut out = String::with_capacity(
        text.len() + spans.iter().map(|s| s.replacement.len()).sum::<usize>(),
    );
    let mut at = 0;
    for span in spans {
        out.push_str(&text[at..span.start]);
        out.push_str(&span.replacement);
        at = span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Finds where `old` → `new` applies in `text`: the match rules of Edit. `old` may be
/// empty only for an empty or whitespace-only text (then `new` replaces it whole).
pub(crate) fn locate_edit(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
) -> Result<Located, String> {
    if old.is_empty() {
        if !text.trim().is_empty() {
            return Err("Cannot create new file - file already exists.".to_owned());
        }
        return Ok(Located {
            spans: vec![Span {
                start: 0,
                end: text.len(),
                replacement: new.to_owned(),
            }],
            kind: MatchKind::Exact,
            actual_old: text.to_owned(),
        });
    }
    let max = if replace_all { usize::MAX } else { 2 };
    // The file's dominant line ending costs a pass over the whole text; only a replacement
    // with line breaks in a match without any needs it.
    let mut file_ending = None;
    // (original ranges, kind, re-indent pairs)
    let mut found: Vec<(usize, usize)> = find_all(text, old, max)
        .into_iter()
        .map(|i| (i, i + old.len()))
        .collect();
    let mut kind = MatchKind::Exact;
    let mut pairs: Vec<(String, String)> = Vec::new();
    if found.is_empty() {
        let old_lf = old.replace("\r\n", "\n");
        let has_cr = text.contains("\r\n");
        let has_quotes = text.contains(['‘', '’', '“', '”']);
        if has_cr {
            let view = View::new(text, false);
            found = find_all(&view.text, &old_lf, max)
                .into_iter()
                .map(|i| (view.to_original(i), view.to_original(i + old_lf.len())))
                .collect();
            kind = MatchKind::LineEndings;
        }
        if found.is_empty() && has_quotes {
            let view = View::new(text, true);
            let old_q = straighten_quotes(&old_lf);
            found = find_all(&view.text, &old_q, max)
                .into_iter()
                .map(|i| (view.to_original(i), view.to_original(i + old_q.len())))
                .collect();
            kind = MatchKind::Quotes;
        }
        if found.is_empty() {
            let view = View::new(text, false);
            if let Some((s, e, p)) = whitespace_match(&view.text, &old_lf) {
                found = vec![(view.to_original(s), view.to_original(e))];
                pairs = p;
                kind = MatchKind::Whitespace;
            }
        }
    }
    if found.is_empty() {
        return Err(not_found_message(text, old));
    }
    if found.len() > 1 && !replace_all {
        let total = find_all_count(text, &found, old);
        return Err(format!(
            "Found {total} matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: {old}"
        ));
    }
    let actual_old = text[found[0].0..found[0].1].to_owned();
    let mut spans = Vec::with_capacity(found.len());
    for (start, mut end) in found {
        let matched = &text[start..end];
        let mut replacement = new.to_owned();
        if kind == MatchKind::Whitespace {
            replacement = reindent(&replacement.replace("\r\n", "\n"), &pairs);
        }
        if kind == MatchKind::Quotes {
            replacement = curl_quotes(&replacement, matched);
        }
        // Line breaks in the replacement follow the matched region, else the file.
        if replacement.contains('\n') {
            let ending = if matched.contains("\r\n") {
                crate::text::LineEnding::CrLf
            } else if matched.contains('\n') {
                crate::text::LineEnding::Lf
            } else {
                *file_ending.get_or_insert_with(|| dominant_ending(text))
            };
            replacement = with_ending(&replacement, ending);
        }
        // A deletion takes the line break after it.
        if new.is_empty() && !old.ends_with('\n') {
            if text[end..].starts_with("\r\n") {
                end += 2;
            } else if text[end..].starts_with('\n') {
                end += 1;
            }
        }
        spans.push(Span {
            start,
            end,
            replacement,
        });
    }
    Ok(Located {
        spans,
        kind,
        actual_old,
    })
}

/// How many matches there are in all, for the "Found N matches" message.
fn find_all_count(text: &str, found: &[(usize, usize)], old: &str) -> usize {
    let exact = find_all(text, old, usize::MAX).len();
    exact.max(found.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies an edit and returns the new text, or the error.
    fn check(text: &str, old: &str, new: &str, all: bool) -> Result<(String, MatchKind), String> {
        apply_edit(text, old, new, all).map(|a| (a.text, a.kind))
    }

    #[test]
    fn exact_and_literal() {
        assert_eq!(
            check("a b c", "b", "$0 $&", false),
            Ok(("a $0 $& c".into(), MatchKind::Exact))
        );
        assert_eq!(
            check("x x", "x", "y", true),
            Ok(("y y".into(), MatchKind::Exact))
        );
        let err = check("x x x", "x", "y", false).unwrap_err();
        assert!(
            err.starts_with("Found 3 matches of the string to replace, but replace_all is false."),
            "{err}"
        );
        assert!(err.ends_with("\nString: x"), "{err}");
    }

    #[test]
    fn deletion_takes_its_newline() {
        assert_eq!(check("a\nb\nc\n", "b", "", false).unwrap().0, "a\nc\n");
        assert_eq!(
            check("a\r\nb\r\nc\r\n", "b", "", false).unwrap().0,
            "a\r\nc\r\n"
        );
        assert_eq!(check("a\nb\n", "b\n", "", false).unwrap().0, "a\n");
    }

    #[test]
    fn crlf_files_keep_their_endings() {
        let text = "one\r\ntwo\r\nthree\r\n";
        let (out, kind) = check(text, "one\ntwo\n", "1\n2\n", false).unwrap();
        assert_eq!(out, "1\r\n2\r\nthree\r\n");
        assert_eq!(kind, MatchKind::LineEndings);
        // Mixed: a CRLF region gets CRLF, the LF lines stay LF.
        let mixed = "a\r\nb\r\nc\nd\n";
        let (out, _) = check(mixed, "a\nb", "A\nB", false).unwrap();
        assert_eq!(out, "A\r\nB\r\nc\nd\n");
        let (out, _) = check(mixed, "c\nd", "C\nX\nD", false).unwrap();
        assert_eq!(out, "a\r\nb\r\nC\nX\nD\n");
    }

    #[test]
    fn curly_quotes_match_and_are_kept() {
        let text = "say “hello” and it’s ‘fine’\n";
        let (out, kind) = check(
            text,
            "say \"hello\" and it's",
            "say \"bye\" and it's",
            false,
        )
        .unwrap();
        assert_eq!(kind, MatchKind::Quotes);
        assert_eq!(out, "say “bye” and it’s ‘fine’\n");
        assert_eq!(curl_quotes("'a' don't", "‘x’"), "‘a’ don’t");
    }

    #[test]
    fn whitespace_tolerant_when_unique() {
        let text = "fn f() {\n\tif x {\n\t\treturn 1;   \n\t}\n}\n";
        let (out, kind) = check(
            text,
            "    if x {\n        return 1;\n    }",
            "    if x {\n        return 2;\n    }",
            false,
        )
        .unwrap();
        assert_eq!(kind, MatchKind::Whitespace);
        assert_eq!(out, "fn f() {\n\tif x {\n\t\treturn 2;\n\t}\n}\n");
        // Two candidates: refused.
        let twice = "\tx = 1;\n\tx = 1;\n";
        let err = check(twice, "  x = 1;  ", "y", false).unwrap_err();
        assert!(
            err.starts_with("String to replace not found in file."),
            "{err}"
        );
    }

    #[test]
    fn repetitive_files_and_long_lines_cost_linear_time() {
        // Whitespace-tolerant matching of 5,000 identical lines in a file of 200,000: one
        // pass, not one comparison of old_string per line.
        let text = "  x = 1;\n".repeat(200_000) + "  y = 2;\n";
        let old = "x = 1;\n".repeat(5_000) + "y = 2;\n";
        let started = std::time::Instant::now();
        let out = check(&text, &old, "z\n", false);
        assert!(out.is_ok(), "{out:?}");
        // One long line unlike the other: no character diff of the two.
        let long = "a".repeat(1_000_000);
        let err = check(&long, &"b".repeat(1_000_000), "c", false).unwrap_err();
        assert!(err.starts_with("String to replace not found"), "{err:.200}");
        // A hang guard only: the quadratic forms took minutes.
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }

    #[test]
    fn not_found_shows_the_closest_region() {
        let text = "alpha\nbeta\ngamma\ndelta\n";
        let err = check(text, "beta\ngamma!\ndelta", "x", false).unwrap_err();
        assert_eq!(
            err,
            "String to replace not found in file.\nString: beta\ngamma!\ndelta\n\nThe closest match is at lines 2-4 of the file:\n2\tbeta\n3\tgamma\n4\tdelta\nThe first line that differs is line 3:\n  file:       \"gamma\"\n  old_string: \"gamma!\""
        );
        let err = check(text, "gamm", "x", false);
        assert!(err.is_ok());
        let err = check(text, "zzzz qqq", "x", false).unwrap_err();
        assert_eq!(
            err,
            "String to replace not found in file.\nString: zzzz qqq"
        );
        let err = check(text, "deltx", "x", false).unwrap_err();
        assert!(err.contains("The closest match is at lines 4-4"), "{err}");
    }

    #[test]
    fn empty_old_string_fills_only_blank_text() {
        assert_eq!(check("", "", "new", false).unwrap().0, "new");
        assert_eq!(check(" \n", "", "new", false).unwrap().0, "new");
        assert_eq!(
            check("x", "", "new", false).unwrap_err(),
            "Cannot create new file - file already exists."
        );
    }
}
