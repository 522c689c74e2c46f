//! Base-protocol framing: `Content-Length` headers, a blank line, then exactly that many
//! bytes of JSON. Blocking, used by the reader thread and the writer.

use std::io::{self, BufRead, Read, Write};

/// Messages larger than this are read and dropped (a stuck request then times out).
pub(crate) const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// What the reader got.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A message body
    Message(Vec<u8>),
    /// A message over the cap, skipped, with its length
    TooLarge(usize),
    /// The stream ended cleanly between messages
    Eof,
}

/// Reads one framed message.
pub(crate) fn read_frame(reader: &mut impl BufRead, cap: usize) -> io::Result<Frame> {
    let mut length: Option<usize> = None;
    let mut line = String::new();
    let mut any_header = false;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            if any_header {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the stream ended inside a message header",
                ));
            }
            return Ok(Frame::Eof);
        }
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            if !any_header {
                continue;
            }
            break;
        }
        any_header = true;
        if let Some((name, value)) = header.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            length = Some(value.trim().parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("invalid Content-Length header: {header}"),
                )
            })?);
        }
    }
    let length = length.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "a message without Content-Length",
        )
    })?;
    if length > cap {
        io::copy(&mut reader.take(length as u64), &mut io::sink())?;
        return Ok(Frame::TooLarge(length));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Frame::Message(body))
}

/// Writes one framed message and flushes.
pub(crate) fn write_frame(writer: &mut impl Write, body: &[u8]) -> io::Result<()> {
    write!(writer, "Content-Length: {}\r\n\r\n", body.len())?;
    writer.write_all(body)?;
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, br#"{"a":1}"#).unwrap_or_default();
        write_frame(&mut buf, "{\"é\":2}".as_bytes()).unwrap_or_default();
        let mut reader = io::Cursor::new(buf);
        assert_eq!(
            read_frame(&mut reader, 100).ok(),
            Some(Frame::Message(br#"{"a":1}"#.to_vec()))
        );
        assert_eq!(
            read_frame(&mut reader, 100).ok(),
            Some(Frame::Message("{\"é\":2}".as_bytes().to_vec()))
        );
        assert_eq!(read_frame(&mut reader, 100).ok(), Some(Frame::Eof));
    }

    #[test]
    fn other_headers_are_ignored_and_oversize_skipped() {
        let text = "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: 5\r\n\r\nhelloContent-Length: 2\r\n\r\n{}";
        let mut reader = io::Cursor::new(text.as_bytes().to_vec());
        assert_eq!(read_frame(&mut reader, 4).ok(), Some(Frame::TooLarge(5)));
        assert_eq!(
            read_frame(&mut reader, 4).ok(),
            Some(Frame::Message(b"{}".to_vec()))
        );
    }

    #[test]
    fn broken_headers_are_errors() {
        for text in [
            "Content-Length: x\r\n\r\n",
            "X: 1\r\n\r\n{}",
            "Content-Length: 2\r\n",
        ] {
            let mut reader = io::Cursor::new(text.as_bytes().to_vec());
            assert!(read_frame(&mut reader, 100).is_err(), "{text:?}");
        }
    }
}
