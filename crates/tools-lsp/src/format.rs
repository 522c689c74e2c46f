//! Readable text for each operation's result: paths relative to the working directory,
//! 1-based lines and character columns, the source line beside each location.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use lsp_types::{
    CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall, DocumentSymbol, Hover,
    HoverContents, Location, MarkedString, Position, Range, SymbolInformation, SymbolKind, Uri,
};
use tool_core::path::display_path;

use crate::position::{line_of, uri_to_path, utf16_to_char};

/// Source lines shown beside locations are cut to this many characters.
const LINE_PREVIEW_CHARS: usize = 160;

/// File texts read while formatting one result, for column conversion and previews.
#[derive(Debug)]
pub(crate) struct Files {
    cwd: PathBuf,
    texts: HashMap<PathBuf, Option<String>>,
}

/// A location in readable form.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Place {
    /// The file
    pub path: PathBuf,
    /// 1-based line
    pub line: u32,
    /// 1-based character
    pub character: u32,
}

impl Files {
    pub(crate) fn new(cwd: &Path, current: (&Path, &str)) -> Self {
        let mut texts = HashMap::new();
        texts.insert(current.0.to_path_buf(), Some(current.1.to_owned()));
        Files {
            cwd: cwd.to_path_buf(),
            texts,
        }
    }

    fn text(&mut self, path: &Path) -> Option<&str> {
        self.texts
            .entry(path.to_path_buf())
            .or_insert_with(|| {
                std::fs::read(path)
                    .ok()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            })
            .as_deref()
    }

    /// The path as the model should see it.
    pub(crate) fn show(&self, path: &Path) -> String {
        display_path(path, &self.cwd)
    }

    /// `uri` + `position` in readable form; `None` for non-file URIs.
    pub(crate) fn place(&mut self, uri: &Uri, position: Position) -> Option<Place> {
        let path = uri_to_path(uri.as_str())?;
        Some(self.place_in(&path, position))
    }

    pub(crate) fn place_in(&mut self, path: &Path, position: Position) -> Place {
        let character = match self.text(path) {
            Some(text) => utf16_to_char(line_of(text, position.line), position.character),
            None => position.character,
        };
        Place {
            path: path.to_path_buf(),
            line: position.line + 1,
            character: character + 1,
        }
    }

    /// `path:line:col`.
    pub(crate) fn show_place(&self, place: &Place) -> String {
        format!(
            "{}:{}:{}",
            self.show(&place.path),
            place.line,
            place.character
        )
    }

    /// The trimmed source line at `place`, cut to a preview.
    pub(crate) fn preview(&mut self, place: &Place) -> String {
        let Some(text) = self.text(&place.path) else {
            return String::new();
        };
        let line = line_of(text, place.line.saturating_sub(1)).trim();
        if line.chars().count() > LINE_PREVIEW_CHARS {
            let cut: String = line.chars().take(LINE_PREVIEW_CHARS).collect();
            format!("{cut}…")
        } else {
            line.to_owned()
        }
    }
}

/// The name of a symbol kind.
pub(crate) fn kind_name(kind: SymbolKind) -> &'static str {
    const NAMES: [&str; 26] = [
        "File",
        "Module",
        "Namespace",
        "Package",
        "Class",
        "Method",
        "Property",
        "Field",
        "Constructor",
        "Enum",
        "Interface",
        "Function",
        "Variable",
        "Constant",
        "String",
        "Number",
        "Boolean",
        "Array",
        "Object",
        "Key",
        "Null",
        "EnumMember",
        "Struct",
        "Event",
        "Operator",
        "TypeParameter",
    ];
    let value: i32 = serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_i64())
        .and_then(|v| i32::try_from(v).ok())
        .unwrap_or(0);
    usize::try_from(value - 1)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("Symbol")
}

/// A list of locations, one per line with its source line: definitions, implementations.
/// Returns the text and the number of files.
pub(crate) fn locations(
    files: &mut Files,
    places: &[Place],
    what: (&str, &str),
    none: &str,
) -> (String, usize) {
    if places.is_empty() {
        return (none.to_owned(), 0);
    }
    let mut out = format!("Found {}:", tool_core::plural(places.len(), what.0, what.1));
    for place in places {
        let preview = files.preview(place);
        out.push_str(&format!("\n{}", files.show_place(place)));
        if !preview.is_empty() {
            out.push_str(&format!(": {preview}"));
        }
    }
    let count = places
        .iter()
        .map(|p| &p.path)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    (out, count)
}

/// References grouped by file.
pub(crate) fn references(files: &mut Files, places: &[Place]) -> (String, usize) {
    if places.is_empty() {
        return ("No references found.".to_owned(), 0);
    }
    let mut by_file: BTreeMap<&Path, Vec<&Place>> = BTreeMap::new();
    for place in places {
        by_file.entry(&place.path).or_default().push(place);
    }
    let mut out = format!(
        "Found {} in {}:",
        tool_core::plural(places.len(), "reference", "references"),
        tool_core::plural(by_file.len(), "file", "files")
    );
    for (path, refs) in &by_file {
        out.push_str(&format!("\n\n{}:", files.show(path)));
        for place in refs {
            let preview = files.preview(place);
            out.push_str(&format!(
                "\n  {}:{}: {preview}",
                place.line, place.character
            ));
        }
    }
    (out, by_file.len())
}

/// Hover contents as plain text (Markdown kept as is).
pub(crate) fn hover(hover: Option<Hover>) -> Option<String> {
    let marked = |m: MarkedString| match m {
        MarkedString::String(s) => s,
        MarkedString::LanguageString(ls) => format!("```{}\n{}\n```", ls.language, ls.value),
    };
    let text = match hover?.contents {
        HoverContents::Scalar(m) => marked(m),
        HoverContents::Array(items) => items
            .into_iter()
            .map(marked)
            .collect::<Vec<_>>()
            .join("\n\n"),
        HoverContents::Markup(m) => m.value,
    };
    let text = clean_markdown(&text).trim().to_owned();
    (!text.is_empty()).then_some(text)
}

/// Markdown as clean text outside code: HTML entities decoded (pyright writes indentation
/// as `&nbsp;` and `<` as `&lt;`), backslash escapes of punctuation removed (`a\_b`), and
/// the trailing spaces of hard line breaks dropped. Fenced code blocks and inline code
/// spans are kept exactly, as Markdown itself treats them.
pub(crate) fn clean_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        let is_fence = marker.len() >= 3
            && marker
                .chars()
                .all(|c| c == marker.chars().next().unwrap_or('`'));
        match &fence {
            Some(open) => {
                out.push_str(line);
                if is_fence && marker.starts_with(open.as_str()) {
                    fence = None;
                }
                continue;
            }
            None if is_fence => {
                out.push_str(line);
                fence = Some(marker);
                continue;
            }
            None => {}
        }
        out.push_str(clean_line(line).trim_end());
    }
    out
}

/// One line outside fenced code: inline code spans kept, the rest cleaned.
fn clean_line(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '`' {
            // A code span: a run of backticks up to the same run again.
            let run = chars[i..].iter().take_while(|c| **c == '`').count();
            let close = (i + run..chars.len()).find(|&j| {
                chars[j..].iter().take_while(|c| **c == '`').count() == run
                    && (j == 0 || chars[j - 1] != '`')
            });
            match close {
                Some(j) => {
                    out.extend(&chars[i..j + run]);
                    i = j + run;
                }
                None => {
                    out.extend(&chars[i..i + run]);
                    i += run;
                }
            }
            continue;
        }
        if c == '\\' && chars.get(i + 1).is_some_and(char::is_ascii_punctuation) {
            out.push(chars[i + 1]);
            i += 2;
            continue;
        }
        if c == '&'
            && let Some((decoded, used)) = entity(&chars[i..])
        {
            out.push(decoded);
            i += used;
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// The character an HTML entity at the start of `chars` stands for, and its length.
fn entity(chars: &[char]) -> Option<(char, usize)> {
    let end = chars.iter().take(12).position(|c| *c == ';')?;
    let name: String = chars[1..end].iter().collect();
    let decoded = match name.as_str() {
        "nbsp" | "ensp" | "emsp" | "thinsp" => ' ',
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        "apos" => '\'',
        "#39" => '\'',
        _ => {
            let number = name.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            match char::from_u32(code)? {
                '\u{a0}' => ' ',
                c => c,
            }
        }
    };
    Some((decoded, end + 1))
}

/// A hierarchical outline.
pub(crate) fn document_symbols(
    symbols: &[DocumentSymbol],
    files: &mut Files,
    path: &Path,
) -> (String, usize) {
    fn walk(
        symbols: &[DocumentSymbol],
        depth: usize,
        files: &mut Files,
        path: &Path,
        out: &mut String,
        count: &mut usize,
    ) {
        let mut symbols: Vec<&DocumentSymbol> = symbols.iter().collect();
        symbols.sort_by_key(|s| {
            (
                s.selection_range.start.line,
                s.selection_range.start.character,
            )
        });
        for s in symbols {
            *count += 1;
            let place = files.place_in(path, s.selection_range.start);
            let detail = s
                .detail
                .as_deref()
                .filter(|d| !d.trim().is_empty())
                .map(|d| format!(": {}", d.trim()))
                .unwrap_or_default();
            out.push_str(&format!(
                "\n{}{} ({}){detail} - line {}",
                "  ".repeat(depth),
                s.name,
                kind_name(s.kind),
                place.line
            ));
            if let Some(children) = &s.children {
                walk(children, depth + 1, files, path, out, count);
            }
        }
    }
    let mut body = String::new();
    let mut count = 0;
    walk(symbols, 0, files, path, &mut body, &mut count);
    if count == 0 {
        return (format!("No symbols found in {}.", files.show(path)), 0);
    }
    (
        format!(
            "Found {} in {}:{body}",
            tool_core::plural(count, "symbol", "symbols"),
            files.show(path)
        ),
        count,
    )
}

/// One row of a flat symbol list.
#[derive(Debug)]
pub(crate) struct SymbolRow {
    pub name: String,
    pub kind: SymbolKind,
    /// The enclosing symbol's name, when the server gives one
    pub container: Option<String>,
    /// Where it is, when the server's location converts
    pub place: Option<Place>,
}

/// Flat symbols (a server without hierarchical symbols, or workspace symbols).
pub(crate) fn flat_symbols(symbols: &[SymbolRow], files: &Files, header: &str) -> String {
    let mut out = header.to_owned();
    for SymbolRow {
        name,
        kind,
        container,
        place,
    } in symbols
    {
        let container = container
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(|c| format!(" in {c}"))
            .unwrap_or_default();
        let at = place
            .as_ref()
            .map(|p| format!(" - {}", files.show_place(p)))
            .unwrap_or_default();
        out.push_str(&format!("\n{name} ({}){container}{at}", kind_name(*kind)));
    }
    out
}

/// Converts flat `SymbolInformation`s.
pub(crate) fn symbol_information(
    symbols: Vec<SymbolInformation>,
    files: &mut Files,
) -> Vec<SymbolRow> {
    symbols
        .into_iter()
        .map(|s| SymbolRow {
            place: files.place(&s.location.uri, s.location.range.start),
            name: s.name,
            kind: s.kind,
            container: s.container_name,
        })
        .collect()
}

/// `name (Kind) - path:line:col`.
pub(crate) fn item(files: &mut Files, item: &CallHierarchyItem) -> String {
    let at = files
        .place(&item.uri, item.selection_range.start)
        .map(|p| format!(" - {}", files.show_place(&p)))
        .unwrap_or_default();
    // `detail` is left out: pyright puts the file name and "· Workspace" there.
    format!("{} ({}){at}", item.name, kind_name(item.kind))
}

fn ranges(files: &mut Files, uri: &Uri, ranges: &[Range]) -> String {
    ranges
        .iter()
        .filter_map(|r| files.place(uri, r.start))
        .map(|p| format!("{}:{}", p.line, p.character))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Callers of `target`.
pub(crate) fn incoming(
    files: &mut Files,
    target: &CallHierarchyItem,
    calls: &[CallHierarchyIncomingCall],
) -> String {
    let name = &target.name;
    if calls.is_empty() {
        return format!("No calls to {name} found.");
    }
    let mut out = format!(
        "Found {} of {name}:",
        tool_core::plural(calls.len(), "caller", "callers")
    );
    for call in calls {
        let at = ranges(files, &call.from.uri, &call.from_ranges);
        let file = uri_to_path(call.from.uri.as_str())
            .map(|p| files.show(&p))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n{}\n  calls it at {file} {at}",
            item(files, &call.from)
        ));
    }
    out
}

/// What `source` calls.
pub(crate) fn outgoing(
    files: &mut Files,
    source: &CallHierarchyItem,
    calls: &[CallHierarchyOutgoingCall],
) -> String {
    let name = &source.name;
    if calls.is_empty() {
        return format!("No calls from {name} found.");
    }
    let mut out = format!(
        "Found {} from {name}:",
        tool_core::plural(calls.len(), "call", "calls")
    );
    let file = uri_to_path(source.uri.as_str())
        .map(|p| files.show(&p))
        .unwrap_or_default();
    for call in calls {
        let at = ranges(files, &source.uri, &call.from_ranges);
        out.push_str(&format!(
            "\n{}\n  called at {file} {at}",
            item(files, &call.to)
        ));
    }
    out
}

/// Locations of a `Location` list, dropping non-file URIs.
pub(crate) fn places(files: &mut Files, locations: &[Location]) -> Vec<Place> {
    let mut out: Vec<Place> = locations
        .iter()
        .filter_map(|l| files.place(&l.uri, l.range.start))
        .collect();
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hover_markdown_becomes_clean_text() {
        let cases = [
            ("Doubles &lt;x&gt; &amp; more", "Doubles <x> & more"),
            (
                "Args:  \n&nbsp;&nbsp;&nbsp;&nbsp;x: the value  ",
                "Args:\n    x: the value",
            ),
            ("a\\_b and \\*stars\\*", "a_b and *stars*"),
            ("&#60;&#x3E;&#39;&quot;&#xA0;x", "<>'\" x"),
            (
                "`code &lt;x&gt; a\\_b` and &lt;",
                "`code &lt;x&gt; a\\_b` and <",
            ),
            ("``a ` &lt;`` &gt;", "``a ` &lt;`` >"),
            (
                "```python\nx = \"&lt;\"  \n```\n&lt;",
                "```python\nx = \"&lt;\"  \n```\n<",
            ),
            ("~~~\n&nbsp;\n~~~", "~~~\n&nbsp;\n~~~"),
            (
                "no entity & here; &bogus; &#xZZ; \\d",
                "no entity & here; &bogus; &#xZZ; \\d",
            ),
            ("unclosed ` &lt;", "unclosed ` <"),
        ];
        for (input, expected) in cases {
            assert_eq!(clean_markdown(input), expected, "{input:?}");
        }
        let hover = Hover {
            contents: HoverContents::Markup(lsp_types::MarkupContent {
                kind: lsp_types::MarkupKind::Markdown,
                value: "```python\ndef f(x)\n```\n---\nDoubles a value &lt;x&gt;.\n\nArgs:  \n&nbsp;&nbsp;x: the value".to_owned(),
            }),
            range: None,
        };
        assert_eq!(
            super::hover(Some(hover)).unwrap_or_default(),
            "```python\ndef f(x)\n```\n---\nDoubles a value <x>.\n\nArgs:\n  x: the value"
        );
    }

    #[test]
    fn symbol_kinds_have_names() {
        assert_eq!(kind_name(SymbolKind::FUNCTION), "Function");
        assert_eq!(kind_name(SymbolKind::TYPE_PARAMETER), "TypeParameter");
        assert_eq!(kind_name(SymbolKind::FILE), "File");
    }

    #[test]
    fn places_convert_columns_and_show_previews() {
        let cwd = Path::new("/p");
        let mut files = Files::new(cwd, (Path::new("/p/a.py"), "x = 1\n  😀y = f(x)\n"));
        let place = files.place_in(Path::new("/p/a.py"), Position::new(1, 4));
        assert_eq!((place.line, place.character), (2, 4));
        assert_eq!(files.show_place(&place), "a.py:2:4");
        assert_eq!(files.preview(&place), "😀y = f(x)");
        let (text, count) = locations(&mut files, &[place], ("definition", "definitions"), "none");
        assert_eq!(text, "Found 1 definition:\na.py:2:4: 😀y = f(x)");
        assert_eq!(count, 1);
    }
}
