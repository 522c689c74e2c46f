//! Which other files an edit may break: the symbols the change touches, found in the
//! server's outline of the file (`textDocument/documentSymbol`) before the change, and the
//! files that refer to them (`textDocument/references`). Only declarations another file can
//! use count: functions, classes and their members, variables and constants at the top of
//! the file; a function's own parameters and locals never do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lsp_types::{DocumentSymbol, DocumentSymbolResponse, Location, Position, Range, SymbolKind};

use crate::position::{char_to_utf16, line_of, uri_to_path};

/// At most this many touched symbols are followed to their users.
pub(crate) const MAX_TOUCHED: usize = 8;

/// Where other files refer to what changed: file → 0-based lines of the references.
pub(crate) type Users = BTreeMap<PathBuf, Vec<u32>>;

/// A symbol to find the users of: its name and where the name is (the server's position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Touched {
    /// The symbol's name
    pub name: String,
    /// Its name's position (0-based line, UTF-16 column)
    pub at: Position,
}

/// The lines of `old` (0-based, inclusive) a change to `new` replaced; an insertion counts
/// the lines on both sides of it. `None` when the texts are equal.
pub(crate) fn changed_lines(old: &str, new: &str) -> Option<(u32, u32)> {
    if old == new {
        return None;
    }
    let a: Vec<&str> = old.split('\n').collect();
    let b: Vec<&str> = new.split('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let room = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    let end = a.len() - suffix;
    let (first, last) = if end > prefix {
        (prefix, end - 1)
    } else {
        (
            prefix.saturating_sub(1),
            prefix.min(a.len().saturating_sub(1)),
        )
    };
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Some((clamp(first), clamp(last)))
}

fn intersects(range: &Range, (first, last): (u32, u32)) -> bool {
    range.start.line <= last && range.end.line >= first
}

/// Symbols another file can refer to.
fn usable(kind: SymbolKind) -> bool {
    [
        SymbolKind::MODULE,
        SymbolKind::NAMESPACE,
        SymbolKind::PACKAGE,
        SymbolKind::CLASS,
        SymbolKind::METHOD,
        SymbolKind::PROPERTY,
        SymbolKind::FIELD,
        SymbolKind::CONSTRUCTOR,
        SymbolKind::ENUM,
        SymbolKind::INTERFACE,
        SymbolKind::FUNCTION,
        SymbolKind::VARIABLE,
        SymbolKind::CONSTANT,
        SymbolKind::ENUM_MEMBER,
        SymbolKind::STRUCT,
        SymbolKind::EVENT,
        SymbolKind::OPERATOR,
        SymbolKind::OBJECT,
    ]
    .contains(&kind)
}

/// Symbols whose members other files can refer to.
fn container(kind: SymbolKind) -> bool {
    [
        SymbolKind::MODULE,
        SymbolKind::NAMESPACE,
        SymbolKind::PACKAGE,
        SymbolKind::CLASS,
        SymbolKind::ENUM,
        SymbolKind::INTERFACE,
        SymbolKind::STRUCT,
        SymbolKind::OBJECT,
    ]
    .contains(&kind)
}

fn nested(symbols: &[DocumentSymbol], lines: Option<(u32, u32)>, out: &mut Vec<Touched>) {
    let mut symbols: Vec<&DocumentSymbol> = symbols.iter().collect();
    symbols.sort_by_key(|s| (s.range.start.line, s.range.start.character));
    for s in symbols {
        if !usable(s.kind) {
            continue;
        }
        let Some(lines) = lines else {
            out.push(Touched {
                name: s.name.clone(),
                at: s.selection_range.start,
            });
            continue;
        };
        if !intersects(&s.range, lines) {
            continue;
        }
        let before = out.len();
        if container(s.kind)
            && let Some(children) = &s.children
        {
            nested(children, Some(lines), out);
        }
        if out.len() == before {
            out.push(Touched {
                name: s.name.clone(),
                at: s.selection_range.start,
            });
        }
    }
}

/// Where `name` is written, searching `text` from `range`'s start (the server's position
/// when it is not found).
fn name_position(text: &str, name: &str, range: &Range) -> Position {
    let is_word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    for line in range.start.line..=range.end.line {
        let content = line_of(text, line);
        let mut from = 0;
        while let Some(found) = content[from..].find(name).map(|i| i + from) {
            let before = content[..found].chars().next_back();
            let after = content[found + name.len()..].chars().next();
            if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
                let chars = content[..found].chars().count();
                let chars = u32::try_from(chars).unwrap_or(u32::MAX);
                return Position::new(line, char_to_utf16(content, chars));
            }
            from = found + name.len().max(1);
        }
    }
    range.start
}

/// The symbols of the outline `outline` (of `text`) that the `lines` touch: the innermost
/// usable ones (a method rather than its class); `None` for `lines` means every usable
/// symbol at the top of the file. At most [`MAX_TOUCHED`].
pub(crate) fn touched(
    outline: DocumentSymbolResponse,
    text: &str,
    lines: Option<(u32, u32)>,
) -> Vec<Touched> {
    let mut out = Vec::new();
    match outline {
        DocumentSymbolResponse::Nested(symbols) => nested(&symbols, lines, &mut out),
        DocumentSymbolResponse::Flat(symbols) => {
            // Flat lists hold locals too: a symbol inside a function or method is left out,
            // and of two nested candidates the inner one is kept.
            let inside_function = |r: &Range| {
                symbols.iter().any(|o| {
                    matches!(o.kind, SymbolKind::FUNCTION | SymbolKind::METHOD)
                        && o.location.range != *r
                        && o.location.range.start <= r.start
                        && r.end <= o.location.range.end
                })
            };
            let candidates: Vec<_> = symbols
                .iter()
                .filter(|s| usable(s.kind) && !inside_function(&s.location.range))
                .filter(|s| match lines {
                    Some(lines) => intersects(&s.location.range, lines),
                    None => s.container_name.as_deref().is_none_or(str::is_empty),
                })
                .collect();
            for s in &candidates {
                let r = &s.location.range;
                let holds_another = candidates.iter().any(|o| {
                    let q = &o.location.range;
                    q != r && r.start <= q.start && q.end <= r.end
                });
                if lines.is_none() || !holds_another {
                    out.push(Touched {
                        name: s.name.clone(),
                        at: name_position(text, &s.name, r),
                    });
                }
            }
        }
    }
    out.truncate(MAX_TOUCHED);
    out
}

/// Adds the `locations` outside `file` to `users`.
pub(crate) fn add_references(users: &mut Users, file: &Path, locations: &[Location]) {
    for l in locations {
        if let Some(path) = uri_to_path(l.uri.as_str())
            && path != file
        {
            let lines = users.entry(path).or_default();
            lines.push(l.range.start.line);
            lines.sort_unstable();
            lines.dedup();
        }
    }
}

/// The `max` files of `users` with the most references (ties by path).
pub(crate) fn busiest(users: Users, max: usize) -> Users {
    let mut list: Vec<(PathBuf, Vec<u32>)> = users.into_iter().collect();
    list.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
    list.truncate(max);
    list.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use lsp_types::{SymbolInformation, Uri};
    use serde_json::json;

    use super::*;

    /// Inclusive 0-based lines, or none.
    type Lines = Option<(u32, u32)>;

    #[test]
    fn changed_lines_cover_replacements_and_insertions() {
        let cases: &[(&str, &str, Lines)] = &[
            ("a\nb\nc\n", "a\nb\nc\n", None),
            ("a\nb\nc\n", "a\nB\nc\n", Some((1, 1))),
            ("a\nb\nc\n", "a\nB\nC\nc\n", Some((1, 1))),
            ("a\nb\nc\n", "a\nx\nb\nc\n", Some((0, 1))),
            ("a\nb\nc\n", "a\nc\n", Some((1, 1))),
            ("a\nb\nc", "x\nb\nc", Some((0, 0))),
            ("a\nb", "a\nb\nc", Some((1, 1))),
            ("", "x", Some((0, 0))),
            ("a\na\na\n", "a\na\n", Some((2, 2))),
        ];
        for (old, new, expected) in cases {
            assert_eq!(changed_lines(old, new), *expected, "{old:?} -> {new:?}");
        }
    }

    fn symbol(
        name: &str,
        kind: SymbolKind,
        lines: (u32, u32),
        children: Vec<DocumentSymbol>,
    ) -> DocumentSymbol {
        let value = json!({
            "name": name,
            "kind": kind,
            "range": {"start": {"line": lines.0, "character": 0}, "end": {"line": lines.1, "character": 1}},
            "selectionRange": {"start": {"line": lines.0, "character": 4}, "end": {"line": lines.0, "character": 5}},
        });
        let mut s: DocumentSymbol = serde_json::from_value(value).unwrap_or_else(|e| panic!("{e}"));
        s.children = Some(children);
        s
    }

    fn names(found: &[Touched]) -> Vec<&str> {
        found.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn the_innermost_usable_symbols_are_touched() {
        let outline = || {
            DocumentSymbolResponse::Nested(vec![
                symbol(
                    "scale",
                    SymbolKind::FUNCTION,
                    (0, 2),
                    vec![symbol("x", SymbolKind::VARIABLE, (0, 0), vec![])],
                ),
                symbol(
                    "Shape",
                    SymbolKind::CLASS,
                    (4, 9),
                    vec![
                        symbol("area", SymbolKind::METHOD, (5, 6), vec![]),
                        symbol("side", SymbolKind::FIELD, (8, 8), vec![]),
                    ],
                ),
                symbol("UNIT", SymbolKind::CONSTANT, (11, 11), vec![]),
            ])
        };
        let cases: &[(Lines, &[&str])] = &[
            // A parameter's line: the function, not the parameter.
            (Some((0, 0)), &["scale"]),
            (Some((5, 5)), &["area"]),
            // Inside the class but in no member: the class.
            (Some((7, 7)), &["Shape"]),
            (Some((2, 11)), &["scale", "area", "side", "UNIT"]),
            (Some((3, 3)), &[]),
            // Not knowing what changed: everything at the top.
            (None, &["scale", "Shape", "UNIT"]),
        ];
        for (lines, expected) in cases {
            assert_eq!(
                names(&touched(outline(), "", *lines)),
                *expected,
                "{lines:?}"
            );
        }
        let many: Vec<DocumentSymbol> = (0..20)
            .map(|i| symbol(&format!("f{i}"), SymbolKind::FUNCTION, (i, i), vec![]))
            .collect();
        assert_eq!(
            touched(DocumentSymbolResponse::Nested(many), "", None).len(),
            MAX_TOUCHED
        );
    }

    #[test]
    fn flat_outlines_leave_locals_out_and_find_the_name() {
        let text = "def scale(x: int) -> int:\n    return x\n\n\nUNIT = 1\n";
        let info = |name: &str,
                    kind: SymbolKind,
                    range: ((u32, u32), (u32, u32)),
                    container: Option<&str>| {
            let value = json!({
                "name": name, "kind": kind,
                "location": {"uri": "file:///p/u.py", "range": {
                    "start": {"line": range.0.0, "character": range.0.1},
                    "end": {"line": range.1.0, "character": range.1.1}}},
                "containerName": container,
            });
            serde_json::from_value::<SymbolInformation>(value).unwrap_or_else(|e| panic!("{e}"))
        };
        let outline = || {
            DocumentSymbolResponse::Flat(vec![
                info("scale", SymbolKind::FUNCTION, ((0, 0), (1, 12)), None),
                info("x", SymbolKind::VARIABLE, ((0, 10), (0, 16)), Some("scale")),
                info("UNIT", SymbolKind::VARIABLE, ((4, 0), (4, 4)), None),
            ])
        };
        let found = touched(outline(), text, Some((0, 0)));
        assert_eq!(names(&found), ["scale"]);
        assert_eq!(found[0].at, Position::new(0, 4));
        assert_eq!(names(&touched(outline(), text, None)), ["scale", "UNIT"]);
    }

    #[test]
    fn references_outside_the_file_are_users() {
        let loc = |path: &str, line: u32| Location {
            uri: path.parse::<Uri>().unwrap_or_else(|e| panic!("{e}")),
            range: Range::new(Position::new(line, 0), Position::new(line, 3)),
        };
        let mut users = Users::new();
        add_references(
            &mut users,
            Path::new("/p/u.py"),
            &[
                loc("file:///p/u.py", 1),
                loc("file:///p/a.py", 3),
                loc("file:///p/a.py", 3),
                loc("file:///p/a.py", 1),
                loc("file:///p/b.py", 7),
                loc("https://example.com/x.py", 7),
            ],
        );
        assert_eq!(
            users,
            Users::from([
                (PathBuf::from("/p/a.py"), vec![1, 3]),
                (PathBuf::from("/p/b.py"), vec![7]),
            ])
        );
        assert_eq!(
            busiest(users, 1),
            Users::from([(PathBuf::from("/p/a.py"), vec![1, 3])])
        );
    }
}
