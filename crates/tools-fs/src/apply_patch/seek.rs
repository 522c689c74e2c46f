//! Finding a chunk's lines in a file as codex does: the first match at or after a line,
//! tried exactly, then ignoring trailing whitespace, then ignoring whitespace at both ends,
//! then with Unicode punctuation (dashes, curly quotes, odd spaces) read as ASCII.

/// Where `pattern` first occurs in `lines` at or after `start` (only at the very end when
/// `eof`), under the strictest comparison that finds it. An empty pattern is at `start`.
pub(crate) fn seek<S: AsRef<str>>(
    lines: &[S],
    pattern: &[String],
    start: usize,
    eof: bool,
) -> Option<usize> {
    if pattern.is_empty() {
        return Some(start);
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last = lines.len() - pattern.len();
    let from = if eof { last } else { start };
    let passes: [fn(&str, &str) -> bool; 4] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
        |a, b| normalised(a).eq(normalised(b)),
    ];
    passes.iter().find_map(|same| {
        (from..=last).find(|&i| {
            pattern
                .iter()
                .zip(&lines[i..])
                .all(|(p, l)| same(l.as_ref(), p))
        })
    })
}

/// `s` trimmed, with typographic dashes, quotes and spaces read as their ASCII forms.
fn normalised(s: &str) -> impl Iterator<Item = char> + '_ {
    s.trim().chars().map(|c| match c {
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2004}' | '\u{2005}' | '\u{2006}'
        | '\u{2007}' | '\u{2008}' | '\u{2009}' | '\u{200A}' | '\u{202F}' | '\u{205F}'
        | '\u{3000}' => ' ',
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn strictest_first_then_looser() {
        let lines = v(&["foo  ", "bar", "  foo", "“q” – x\u{a0}y"]);
        assert_eq!(seek(&lines, &v(&["bar"]), 0, false), Some(1));
        assert_eq!(seek(&lines, &v(&["foo"]), 0, false), Some(0));
        assert_eq!(seek(&lines, &v(&["foo"]), 1, false), Some(2));
        assert_eq!(seek(&lines, &v(&["\"q\" - x y"]), 0, false), Some(3));
        assert_eq!(seek(&lines, &v(&["bar"]), 2, false), None);
        assert_eq!(seek(&lines, &v(&["bar"]), 9, false), None);
        assert_eq!(seek(&lines, &v(&[]), 7, false), Some(7));
        assert_eq!(seek(&lines, &v(&["a", "b", "c", "d", "e"]), 0, false), None);
        // At the end only.
        assert_eq!(seek(&lines, &v(&["bar"]), 0, true), None);
        assert_eq!(
            seek(&lines, &v(&["  foo", "“q” – x\u{a0}y"]), 0, true),
            Some(2)
        );
        // An exact match later wins over a loose one earlier.
        let lines = v(&["x ", "x"]);
        assert_eq!(seek(&lines, &v(&["x"]), 0, false), Some(1));
    }
}
