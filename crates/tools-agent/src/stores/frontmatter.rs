//! A small reader for the YAML front matter of SKILL.md and agent files: `key: value`
//! scalars (quoted or not), `[a, b]` and `- item` lists, and `|` / `>` blocks. That subset is
//! what these files use; anything else is reported with its line.

use std::collections::BTreeMap;

/// A front-matter value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrontValue {
    /// A scalar, unquoted
    Text(String),
    /// A list of scalars
    List(Vec<String>),
}

impl FrontValue {
    /// The scalar, or the list joined by ", ".
    pub fn text(&self) -> String {
        match self {
            FrontValue::Text(t) => t.clone(),
            FrontValue::List(l) => l.join(", "),
        }
    }

    /// The list, or a scalar split on commas (the `tools: Read, Grep` form).
    pub fn list(&self) -> Vec<String> {
        match self {
            FrontValue::List(l) => l.clone(),
            FrontValue::Text(t) => t
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }

    /// `true`, `yes` or `on` (any case).
    pub fn is_true(&self) -> bool {
        matches!(self, FrontValue::Text(t) if matches!(t.to_ascii_lowercase().as_str(), "true" | "yes" | "on"))
    }
}

/// A parsed document: front-matter keys and the markdown body after it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FrontMatter {
    /// The keys
    pub keys: BTreeMap<String, FrontValue>,
    /// The text after the closing `---`
    pub body: String,
}

impl FrontMatter {
    /// A key's scalar text.
    pub fn get(&self, key: &str) -> Option<String> {
        self.keys.get(key).map(FrontValue::text)
    }
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')))
    {
        return s[1..s.len() - 1].to_owned();
    }
    s.to_owned()
}

/// Parses `text`. A file without front matter has no keys and is all body; an unclosed
/// front matter or a line that is not `key: value` is an error naming the line.
pub(crate) fn parse(text: &str) -> Result<FrontMatter, String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => {
            return Ok(FrontMatter {
                keys: BTreeMap::new(),
                body: text.to_owned(),
            });
        }
    }
    let all: Vec<&str> = text.lines().collect();
    let Some(end) = all
        .iter()
        .skip(1)
        .position(|l| l.trim_end() == "---")
        .map(|p| p + 1)
    else {
        return Err(
            "the front matter opened by `---` on line 1 is never closed by another `---` line"
                .to_owned(),
        );
    };
    let mut keys = BTreeMap::new();
    let mut i = 1;
    while i < end {
        let line = all[i];
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            i += 1;
            continue;
        }
        let Some((key, rest)) = line.split_once(':') else {
            return Err(format!(
                "line {}: expected `key: value`, found `{}`",
                i + 1,
                line.trim()
            ));
        };
        if line.starts_with(char::is_whitespace) {
            return Err(format!(
                "line {}: unexpected indentation in `{}`",
                i + 1,
                line.trim()
            ));
        }
        let key = key.trim().to_owned();
        let rest = rest.trim();
        i += 1;
        let value = if rest == "|" || rest == ">" || rest == "|-" || rest == ">-" {
            let mut block = Vec::new();
            while i < end && (all[i].starts_with(char::is_whitespace) || all[i].trim().is_empty()) {
                block.push(all[i].trim());
                i += 1;
            }
            let sep = if rest.starts_with('|') { "\n" } else { " " };
            FrontValue::Text(block.join(sep).trim().to_owned())
        } else if rest.is_empty() {
            let mut items = Vec::new();
            while i < end && all[i].trim_start().starts_with("- ") {
                items.push(unquote(&all[i].trim_start()[2..]));
                i += 1;
            }
            if items.is_empty() {
                FrontValue::Text(String::new())
            } else {
                FrontValue::List(items)
            }
        } else if rest.starts_with('[') && rest.ends_with(']') {
            FrontValue::List(
                rest[1..rest.len() - 1]
                    .split(',')
                    .map(unquote)
                    .filter(|s| !s.is_empty())
                    .collect(),
            )
        } else {
            FrontValue::Text(unquote(rest))
        };
        keys.insert(key, value);
    }
    let body = all[end + 1..].join("\n");
    Ok(FrontMatter { keys, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_usual_forms() {
        let doc = parse("---\nname: pdf\ndescription: \"Work with PDFs: fill, merge\"\nallowed-tools: [Read, \"Bash(pdftotext:*)\"]\ntools:\n  - Read\n  - Grep\nlong: >\n  one\n  two\nflag: true\n---\n# Body\ntext\n").unwrap();
        assert_eq!(doc.get("name").as_deref(), Some("pdf"));
        assert_eq!(
            doc.get("description").as_deref(),
            Some("Work with PDFs: fill, merge")
        );
        assert_eq!(
            doc.keys["allowed-tools"].list(),
            ["Read", "Bash(pdftotext:*)"]
        );
        assert_eq!(doc.keys["tools"].list(), ["Read", "Grep"]);
        assert_eq!(doc.get("long").as_deref(), Some("one two"));
        assert!(doc.keys["flag"].is_true());
        assert_eq!(doc.body, "# Body\ntext");
        assert_eq!(
            FrontValue::Text("Read, Grep".into()).list(),
            ["Read", "Grep"]
        );
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(parse("no front matter").unwrap().body, "no front matter");
        assert!(
            parse("---\nname: x\n")
                .unwrap_err()
                .contains("never closed")
        );
        assert!(
            parse("---\nname x\n---\n")
                .unwrap_err()
                .starts_with("line 2:")
        );
    }
}
