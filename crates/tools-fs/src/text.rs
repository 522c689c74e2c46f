//! Text files as the editing tools see them: the encoding (UTF-8, or UTF-16 with a BOM), the
//! BOM, the line endings, and normalised views that map every match back to the original
//! bytes, so untouched bytes are written back exactly as they were.

/// How a file's text is stored on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-8, with or without a BOM
    Utf8,
    /// UTF-16 little-endian (always with its BOM)
    Utf16Le,
    /// UTF-16 big-endian (always with its BOM)
    Utf16Be,
}

impl Encoding {
    /// The name used in messages and outputs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf16Le => "utf-16le",
            Encoding::Utf16Be => "utf-16be",
        }
    }
}

/// A decoded text file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TextFile {
    /// The encoding on disk
    pub encoding: Encoding,
    /// Whether the file starts with a byte-order mark
    pub bom: bool,
    /// The text, without the BOM, with its line endings exactly as on disk
    pub text: String,
}

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// Why a file cannot be edited as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeError {
    /// A NUL byte where text should be
    Binary,
    /// Bytes that are not valid in the encoding, at this byte offset
    Invalid { encoding: Encoding, offset: usize },
}

impl DecodeError {
    /// The message for the model, naming the file.
    pub(crate) fn message(&self, shown: &str) -> String {
        match self {
            DecodeError::Binary => format!(
                "Cannot edit {shown}: it is a binary file (it contains NUL bytes). It was not modified."
            ),
            DecodeError::Invalid { encoding, offset } => format!(
                "Cannot edit {shown}: it is not valid {} text (invalid byte sequence at byte {offset}). It was not modified; only UTF-8 and UTF-16 (with a BOM) files can be edited, so that no byte is ever rewritten lossily.",
                encoding.name()
            ),
        }
    }
}

/// Whether `bytes` look binary: a NUL byte in the first 8 KiB (ripgrep's and git's test),
/// unless a UTF-16 BOM explains the NULs.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"\xFF\xFE") || bytes.starts_with(b"\xFE\xFF") {
        return false;
    }
    let head = &bytes[..bytes.len().min(8192)];
    memchr::memchr(0, head).is_some()
}

/// Decodes a file strictly: UTF-16 when it starts with a UTF-16 BOM, else UTF-8 (a UTF-8
/// BOM is remembered). Never lossy.
pub(crate) fn decode(bytes: &[u8]) -> Result<TextFile, DecodeError> {
    if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        return decode_utf16(rest, Encoding::Utf16Le);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        return decode_utf16(rest, Encoding::Utf16Be);
    }
    let (bom, body) = match bytes.strip_prefix(UTF8_BOM) {
        Some(rest) => (true, rest),
        None => (false, bytes),
    };
    if looks_binary(body) {
        return Err(DecodeError::Binary);
    }
    match std::str::from_utf8(body) {
        Ok(text) => Ok(TextFile {
            encoding: Encoding::Utf8,
            bom,
            text: text.to_owned(),
        }),
        Err(e) => Err(DecodeError::Invalid {
            encoding: Encoding::Utf8,
            offset: e.valid_up_to() + if bom { 3 } else { 0 },
        }),
    }
}

/// Like [`decode`], taking the bytes: a UTF-8 file without a BOM becomes its text without
/// a copy.
pub(crate) fn decode_vec(bytes: Vec<u8>) -> Result<TextFile, DecodeError> {
    if bytes.starts_with(b"\xFF\xFE")
        || bytes.starts_with(b"\xFE\xFF")
        || bytes.starts_with(UTF8_BOM)
    {
        return decode(&bytes);
    }
    if looks_binary(&bytes) {
        return Err(DecodeError::Binary);
    }
    String::from_utf8(bytes)
        .map(|text| TextFile {
            encoding: Encoding::Utf8,
            bom: false,
            text,
        })
        .map_err(|e| DecodeError::Invalid {
            encoding: Encoding::Utf8,
            offset: e.utf8_error().valid_up_to(),
        })
}

fn decode_utf16(body: &[u8], encoding: Encoding) -> Result<TextFile, DecodeError> {
    if !body.len().is_multiple_of(2) {
        return Err(DecodeError::Invalid {
            encoding,
            offset: body.len() + 1,
        });
    }
    let units = body.chunks_exact(2).map(|pair| match encoding {
        Encoding::Utf16Be => u16::from_be_bytes([pair[0], pair[1]]),
        _ => u16::from_le_bytes([pair[0], pair[1]]),
    });
    let mut text = String::with_capacity(body.len() / 2);
    let mut offset = 2;
    for ch in char::decode_utf16(units) {
        match ch {
            Ok(c) => {
                offset += 2 * c.len_utf16();
                text.push(c);
            }
            Err(_) => return Err(DecodeError::Invalid { encoding, offset }),
        }
    }
    Ok(TextFile {
        encoding,
        bom: true,
        text,
    })
}

/// Decodes for display (Read): like [`decode`] but lossy, never failing.
pub(crate) fn decode_lossy(bytes: &[u8]) -> String {
    match decode(bytes) {
        Ok(file) => file.text,
        Err(_) => {
            let body = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
            String::from_utf8_lossy(body).into_owned()
        }
    }
}

impl TextFile {
    /// A new UTF-8 file without a BOM.
    pub(crate) fn utf8(text: String) -> Self {
        TextFile {
            encoding: Encoding::Utf8,
            bom: false,
            text,
        }
    }

    /// The bytes to write for `text` in this file's encoding and BOM (borrowed when they
    /// are the text itself).
    pub(crate) fn encode<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, [u8]> {
        if self.encoding == Encoding::Utf8 && !self.bom {
            return std::borrow::Cow::Borrowed(text.as_bytes());
        }
        std::borrow::Cow::Owned(self.encode_owned(text))
    }

    fn encode_owned(&self, text: &str) -> Vec<u8> {
        match self.encoding {
            Encoding::Utf8 => {
                let mut out = Vec::with_capacity(text.len() + 3);
                if self.bom {
                    out.extend_from_slice(UTF8_BOM);
                }
                out.extend_from_slice(text.as_bytes());
                out
            }
            Encoding::Utf16Le | Encoding::Utf16Be => {
                let le = self.encoding == Encoding::Utf16Le;
                let mut out = Vec::with_capacity(text.len() * 2 + 2);
                out.extend_from_slice(if le { b"\xFF\xFE" } else { b"\xFE\xFF" });
                for unit in text.encode_utf16() {
                    out.extend_from_slice(&if le {
                        unit.to_le_bytes()
                    } else {
                        unit.to_be_bytes()
                    });
                }
                out
            }
        }
    }
}

/// The line-ending style of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineEnding {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
}

/// The dominant line ending: CRLF when CRLF lines outnumber LF-only lines.
pub(crate) fn dominant_ending(text: &str) -> LineEnding {
    let bytes = text.as_bytes();
    let mut crlf = 0_usize;
    let mut lf = 0_usize;
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf += 1;
        } else {
            lf += 1;
        }
    }
    if crlf > lf {
        LineEnding::CrLf
    } else {
        LineEnding::Lf
    }
}

/// Rewrites every line break of `text` (`\r\n` or `\n`) as `ending`.
pub(crate) fn with_ending(text: &str, ending: LineEnding) -> String {
    let lf = text.replace("\r\n", "\n");
    match ending {
        LineEnding::Lf => lf,
        LineEnding::CrLf => lf.replace('\n', "\r\n"),
    }
}

/// Curly quotes and the straight quote each stands for.
const CURLY: [(char, char); 4] = [('‘', '\''), ('’', '\''), ('“', '"'), ('”', '"')];

/// Replaces curly quotes by straight ones.
pub(crate) fn straighten_quotes(text: &str) -> String {
    text.chars()
        .map(|c| {
            CURLY
                .iter()
                .find(|(curly, _)| *curly == c)
                .map_or(c, |(_, s)| *s)
        })
        .collect()
}

/// A normalised view of a text (CRLF as LF, and optionally curly quotes as straight ones)
/// that maps positions back to the original.
#[derive(Debug)]
pub(crate) struct View {
    /// The normalised text
    pub text: String,
    /// `(end of a shortened segment in the view, bytes the original is ahead from there)`
    shifts: Vec<(usize, usize)>,
}

impl View {
    /// Builds the view of `original`.
    pub(crate) fn new(original: &str, quotes: bool) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut shifts = Vec::new();
        let mut ahead = 0_usize;
        let mut chars = original.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\r' && chars.peek() == Some(&'\n') {
                chars.next();
                text.push('\n');
                ahead += 1;
                shifts.push((text.len(), ahead));
                continue;
            }
            if quotes && let Some((curly, straight)) = CURLY.iter().find(|(q, _)| *q == c) {
                text.push(*straight);
                ahead += curly.len_utf8() - 1;
                shifts.push((text.len(), ahead));
                continue;
            }
            text.push(c);
        }
        View { text, shifts }
    }

    /// The original byte position of view position `pos` (a segment boundary).
    pub(crate) fn to_original(&self, pos: usize) -> usize {
        let i = self.shifts.partition_point(|(end, _)| *end <= pos);
        match i {
            0 => pos,
            _ => pos + self.shifts[i - 1].1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_and_encode_round_trip() {
        for bytes in [
            b"plain\n".to_vec(),
            b"\xEF\xBB\xBFbom\r\n".to_vec(),
            b"\xFF\xFEh\0i\0\n\0".to_vec(),
            b"\xFE\xFF\0h\0i".to_vec(),
        ] {
            let file = decode(&bytes).unwrap();
            assert_eq!(file.encode(&file.text).as_ref(), bytes.as_slice());
            assert_eq!(decode_vec(bytes.clone()).unwrap(), file);
        }
        assert_eq!(decode(b"\xFF\xFEh\0i\0").unwrap().text, "hi");
        assert_eq!(decode(b"a\0b"), Err(DecodeError::Binary));
        assert_eq!(
            decode(b"caf\xe9\n"),
            Err(DecodeError::Invalid {
                encoding: Encoding::Utf8,
                offset: 3
            })
        );
        assert!(matches!(
            decode(b"\xFF\xFE\x00\xD8"),
            Err(DecodeError::Invalid { .. })
        ));
        assert_eq!(decode_lossy(b"caf\xe9"), "caf\u{FFFD}");
    }

    #[test]
    fn endings() {
        assert_eq!(dominant_ending("a\r\nb\r\nc\n"), LineEnding::CrLf);
        assert_eq!(dominant_ending("a\r\nb\nc\n"), LineEnding::Lf);
        assert_eq!(with_ending("a\nb\r\n", LineEnding::CrLf), "a\r\nb\r\n");
        assert_eq!(with_ending("a\r\nb\n", LineEnding::Lf), "a\nb\n");
    }

    #[test]
    fn views_map_back_to_the_original() {
        let original = "x = ‘a’;\r\ny\r\n";
        let view = View::new(original, true);
        assert_eq!(view.text, "x = 'a';\ny\n");
        let start = view.text.find("'a'").unwrap();
        let end = start + 3;
        assert_eq!(
            &original[view.to_original(start)..view.to_original(end)],
            "‘a’"
        );
        let nl = view.text.find("\ny").unwrap();
        assert_eq!(
            &original[view.to_original(nl)..view.to_original(nl + 2)],
            "\r\ny"
        );
        assert_eq!(view.to_original(view.text.len()), original.len());
        let plain = View::new("a\r\nb", false);
        assert_eq!(plain.text, "a\nb");
        assert_eq!(straighten_quotes("“q”"), "\"q\"");
    }
}
