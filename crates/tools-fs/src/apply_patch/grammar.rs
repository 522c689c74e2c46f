//! The apply_patch language parsed as codex parses it: `*** Begin Patch` … `*** End Patch`
//! around Add, Delete and Update sections, leniently (padded markers, CRLF patches, a
//! heredoc wrapper `<<'EOF'` … `EOF` left in the text).

use std::fmt;

pub(crate) const BEGIN_PATCH: &str = "*** Begin Patch";
pub(crate) const END_PATCH: &str = "*** End Patch";
const ADD_FILE: &str = "*** Add File: ";
const DELETE_FILE: &str = "*** Delete File: ";
const UPDATE_FILE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";
const CONTEXT: &str = "@@ ";
const EMPTY_CONTEXT: &str = "@@";

/// Why a patch does not parse; displayed as codex displays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// The envelope is wrong
    Patch(String),
    /// A section is wrong, at this line of the patch (1-based)
    Hunk { message: String, line: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Patch(message) => write!(f, "Invalid patch: {message}"),
            ParseError::Hunk { message, line } => {
                write!(f, "Invalid patch hunk on line {line}: {message}")
            }
        }
    }
}

/// One file section of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hunk {
    /// `*** Add File: path` and its `+` lines (each ended by a newline)
    Add { path: String, contents: String },
    /// `*** Delete File: path`
    Delete { path: String },
    /// `*** Update File: path`, an optional `*** Move to: dest` and the chunks
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

impl Hunk {
    /// The path the section names first.
    pub(crate) fn path(&self) -> &str {
        match self {
            Hunk::Add { path, .. } | Hunk::Delete { path } | Hunk::Update { path, .. } => path,
        }
    }
}

/// One `@@` chunk of an Update section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Chunk {
    /// The line after `@@ `, sought before the old lines
    pub context: Option<String>,
    /// The lines replaced (context and `-` lines)
    pub old_lines: Vec<String>,
    /// Their replacement (context and `+` lines)
    pub new_lines: Vec<String>,
    /// For each new line that is a context line, the index of its old line (the file's own
    /// text of that line is kept)
    pub kept: Vec<Option<usize>>,
    /// `*** End of File`: the old lines end the file
    pub end_of_file: bool,
}

/// Parses a patch into its sections.
pub(crate) fn parse(patch: &str) -> Result<Vec<Hunk>, ParseError> {
    let lines: Vec<&str> = patch.trim().lines().collect();
    let body = boundaries(&lines)?;
    let mut hunks = Vec::new();
    let mut rest = body;
    let mut line = 2;
    while !rest.is_empty() {
        let (hunk, used) = parse_hunk(rest, line)?;
        hunks.push(hunk);
        line += used;
        rest = &rest[used..];
    }
    Ok(hunks)
}

/// The lines between the markers; a heredoc wrapper (`<<EOF`, `<<'EOF'`, `<<"EOF"` … a
/// last line ending in `EOF`) is looked through when the markers are not outermost.
fn boundaries<'a>(lines: &'a [&'a str]) -> Result<&'a [&'a str], ParseError> {
    let error = match strict_boundaries(lines) {
        Ok(body) => return Ok(body),
        Err(e) => e,
    };
    if let [first, .., last] = lines
        && matches!(*first, "<<EOF" | "<<'EOF'" | "<<\"EOF\"")
        && last.ends_with("EOF")
        && lines.len() >= 4
    {
        return strict_boundaries(&lines[1..lines.len() - 1]);
    }
    Err(error)
}

fn strict_boundaries<'a>(lines: &'a [&'a str]) -> Result<&'a [&'a str], ParseError> {
    let first = lines.first().map(|l| l.trim());
    let last = lines.last().map(|l| l.trim());
    match (first, last) {
        (Some(BEGIN_PATCH), Some(END_PATCH)) if lines.len() >= 2 => Ok(&lines[1..lines.len() - 1]),
        (Some(first), _) if first != BEGIN_PATCH => Err(ParseError::Patch(
            "The first line of the patch must be '*** Begin Patch'".to_owned(),
        )),
        _ => Err(ParseError::Patch(
            "The last line of the patch must be '*** End Patch'".to_owned(),
        )),
    }
}

/// One section from the start of `lines` (line `line` of the patch): it and the lines used.
fn parse_hunk(lines: &[&str], line: usize) -> Result<(Hunk, usize), ParseError> {
    let first = lines[0].trim();
    if let Some(path) = first.strip_prefix(ADD_FILE) {
        let mut contents = String::new();
        let mut used = 1;
        for l in &lines[1..] {
            let Some(text) = l.strip_prefix('+') else {
                break;
            };
            contents.push_str(text);
            contents.push('\n');
            used += 1;
        }
        let path = path.to_owned();
        return Ok((Hunk::Add { path, contents }, used));
    }
    if let Some(path) = first.strip_prefix(DELETE_FILE) {
        let path = path.to_owned();
        return Ok((Hunk::Delete { path }, 1));
    }
    let Some(path) = first.strip_prefix(UPDATE_FILE) else {
        return Err(ParseError::Hunk {
            message: format!(
                "'{first}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', '*** Delete File: {{path}}', '*** Update File: {{path}}'"
            ),
            line,
        });
    };
    let mut rest = &lines[1..];
    let mut used = 1;
    let move_to = rest
        .first()
        .and_then(|l| l.trim().strip_prefix(MOVE_TO))
        .map(str::to_owned);
    if move_to.is_some() {
        rest = &rest[1..];
        used += 1;
    }
    let mut chunks = Vec::new();
    while let Some(head) = rest.first() {
        // Blank lines may separate chunks.
        if head.trim().is_empty() {
            used += 1;
            rest = &rest[1..];
            continue;
        }
        if head.starts_with('*') {
            break;
        }
        let (chunk, n) = parse_chunk(rest, line + used, chunks.is_empty())?;
        chunks.push(chunk);
        used += n;
        rest = &rest[n..];
    }
    if chunks.is_empty() {
        return Err(ParseError::Hunk {
            message: format!("Update file hunk for path '{path}' is empty"),
            line,
        });
    }
    let path = path.to_owned();
    Ok((
        Hunk::Update {
            path,
            move_to,
            chunks,
        },
        used,
    ))
}

const NO_LINES: &str = "Update hunk does not contain any lines";

/// One chunk from the start of `lines`: it and the lines used. The first chunk of a
/// section may omit its `@@` line.
fn parse_chunk(
    lines: &[&str],
    line: usize,
    first_of_section: bool,
) -> Result<(Chunk, usize), ParseError> {
    let (context, start) = if lines[0] == EMPTY_CONTEXT {
        (None, 1)
    } else if let Some(context) = lines[0].strip_prefix(CONTEXT) {
        (Some(context.to_owned()), 1)
    } else if first_of_section {
        (None, 0)
    } else {
        return Err(ParseError::Hunk {
            message: format!(
                "Expected update hunk to start with a @@ context marker, got: '{}'",
                lines[0]
            ),
            line,
        });
    };
    if start >= lines.len() {
        return Err(ParseError::Hunk {
            message: NO_LINES.to_owned(),
            line: line + 1,
        });
    }
    let mut chunk = Chunk {
        context,
        ..Chunk::default()
    };
    let mut parsed = 0;
    for l in &lines[start..] {
        if l.trim() == END_OF_FILE {
            if parsed == 0 {
                return Err(ParseError::Hunk {
                    message: NO_LINES.to_owned(),
                    line: line + 1,
                });
            }
            chunk.end_of_file = true;
            parsed += 1;
            break;
        }
        match l.chars().next() {
            None | Some(' ') => {
                let text = l.get(1..).unwrap_or_default();
                chunk.kept.push(Some(chunk.old_lines.len()));
                chunk.old_lines.push(text.to_owned());
                chunk.new_lines.push(text.to_owned());
            }
            Some('+') => {
                chunk.kept.push(None);
                chunk.new_lines.push(l[1..].to_owned());
            }
            Some('-') => chunk.old_lines.push(l[1..].to_owned()),
            Some(_) if parsed == 0 => {
                return Err(ParseError::Hunk {
                    message: format!(
                        "Unexpected line found in update hunk: '{l}'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"
                    ),
                    line: line + start,
                });
            }
            // The start of the next chunk.
            Some(_) => break,
        }
        parsed += 1;
    }
    Ok((chunk, parsed + start))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(path: &str, chunks: Vec<Chunk>) -> Hunk {
        Hunk::Update {
            path: path.to_owned(),
            move_to: None,
            chunks,
        }
    }

    fn chunk(context: Option<&str>, old: &[&str], new: &[&str], eof: bool) -> Chunk {
        Chunk {
            context: context.map(str::to_owned),
            old_lines: old.iter().map(|s| (*s).to_owned()).collect(),
            new_lines: new.iter().map(|s| (*s).to_owned()).collect(),
            kept: Vec::new(),
            end_of_file: eof,
        }
    }

    fn strip(mut hunks: Vec<Hunk>) -> Vec<Hunk> {
        for h in &mut hunks {
            if let Hunk::Update { chunks, .. } = h {
                chunks.iter_mut().for_each(|c| c.kept.clear());
            }
        }
        hunks
    }

    #[test]
    fn sections_and_chunks() {
        let got = strip(parse(
            "*** Begin Patch\n*** Add File: a.txt\n+x\n+\n*** Delete File: b.txt\n*** Update File: c.txt\n*** Move to: d/c.txt\n@@ fn main\n ctx\n-old\n+new\n\n@@\n-z\n*** End of File\n*** End Patch\n",
        )
        .unwrap());
        assert_eq!(
            got,
            vec![
                Hunk::Add {
                    path: "a.txt".into(),
                    contents: "x\n\n".into()
                },
                Hunk::Delete {
                    path: "b.txt".into()
                },
                Hunk::Update {
                    path: "c.txt".into(),
                    move_to: Some("d/c.txt".into()),
                    chunks: vec![
                        chunk(
                            Some("fn main"),
                            &["ctx", "old", ""],
                            &["ctx", "new", ""],
                            false
                        ),
                        chunk(None, &["z"], &[], true),
                    ],
                },
            ]
        );
        // The first chunk may omit its @@ line; CRLF patches and padded markers parse.
        let got = strip(
            parse("  *** Begin Patch \r\n*** Update File: f\r\n x\r\n+y\r\n *** End Patch")
                .unwrap(),
        );
        assert_eq!(
            got,
            vec![update("f", vec![chunk(None, &["x"], &["x", "y"], false)])]
        );
    }

    #[test]
    fn errors_say_what_and_where() {
        let e = |p: &str| parse(p).unwrap_err().to_string();
        assert_eq!(
            e("bad"),
            "Invalid patch: The first line of the patch must be '*** Begin Patch'"
        );
        assert_eq!(
            e(""),
            "Invalid patch: The last line of the patch must be '*** End Patch'"
        );
        assert_eq!(
            e("*** Begin Patch\n*** Update File: f\n@@\n-x\n"),
            "Invalid patch: The last line of the patch must be '*** End Patch'"
        );
        assert_eq!(
            e("*** Begin Patch\n*** Frob: f\n*** End Patch"),
            "Invalid patch hunk on line 2: '*** Frob: f' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
        );
        assert_eq!(
            e("*** Begin Patch\n*** Update File: f\n*** End Patch"),
            "Invalid patch hunk on line 2: Update file hunk for path 'f' is empty"
        );
        assert_eq!(
            e("*** Begin Patch\n*** Update File: f\n@@\n-x\nbad\n*** End Patch"),
            "Invalid patch hunk on line 5: Expected update hunk to start with a @@ context marker, got: 'bad'"
        );
        assert_eq!(
            e("*** Begin Patch\n*** Update File: f\nbad\n*** End Patch"),
            "Invalid patch hunk on line 3: Unexpected line found in update hunk: 'bad'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"
        );
        assert_eq!(
            e("*** Begin Patch\n*** Update File: f\n@@\n*** End Patch"),
            "Invalid patch hunk on line 4: Update hunk does not contain any lines"
        );
        assert!(parse("*** Begin Patch\n*** End Patch").unwrap().is_empty());
    }

    #[test]
    fn a_heredoc_wrapper_is_looked_through() {
        let got =
            parse("<<'EOF'\n*** Begin Patch\n*** Delete File: x\n*** End Patch\nEOF\n").unwrap();
        assert_eq!(got, vec![Hunk::Delete { path: "x".into() }]);
        assert!(parse("<<'EOF'\n*** Begin Patch\n*** End Patch\n").is_err());
    }
}
