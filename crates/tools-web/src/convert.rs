//! From response bytes to model text: what kind of body it is, its character set, HTML to
//! Markdown (readability first, the whole page as the fallback), and the length cap.

use encoding_rs::Encoding;

/// The most characters of content kept (the reference's cap before summarising).
pub const MAX_CONTENT_CHARS: usize = 100_000;
/// The marker appended when content is cut.
pub const TRUNCATION_MARKER: &str = "[Content truncated due to length...]";
/// Readability output shorter than this (in characters) is not trusted: the whole page is
/// converted instead.
const MIN_READABLE_CHARS: usize = 200;
/// Readability gives up on documents with more elements than this (bounds its work).
const MAX_READABILITY_ELEMENTS: usize = 200_000;

/// What a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// HTML or XHTML: converted to Markdown
    Html,
    /// Other text (plain, Markdown, JSON, XML, CSS, code...): passed through
    Text,
    /// Anything else: saved to a file
    Binary,
}

/// The media type of a `Content-Type` value, lowercase, without parameters.
pub fn media_type(content_type: Option<&str>) -> String {
    content_type
        .and_then(|ct| ct.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// The `charset` parameter of a `Content-Type` value.
fn charset_param(content_type: Option<&str>) -> Option<&'static Encoding> {
    content_type?.split(';').skip(1).find_map(|param| {
        let (k, v) = param.split_once('=')?;
        if k.trim().eq_ignore_ascii_case("charset") {
            Encoding::for_label(v.trim().trim_matches(['"', '\'']).as_bytes())
        } else {
            None
        }
    })
}

/// Classifies a body by its declared type, sniffing when there is none (or a generic one).
pub fn classify(content_type: Option<&str>, body: &[u8]) -> BodyKind {
    let media = media_type(content_type);
    if media == "text/html" || media == "application/xhtml+xml" {
        return BodyKind::Html;
    }
    let textual = media.starts_with("text/")
        || matches!(
            media.as_str(),
            "application/json"
                | "application/ld+json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-sh"
                | "application/toml"
                | "application/yaml"
                | "application/x-yaml"
                | "application/graphql"
                | "application/sql"
                | "image/svg+xml"
        )
        || media.ends_with("+json")
        || media.ends_with("+xml");
    if textual {
        return BodyKind::Text;
    }
    if media.is_empty() || media == "application/octet-stream" || media == "binary/octet-stream" {
        return sniff(body);
    }
    BodyKind::Binary
}

/// Text or binary by content: a NUL byte or invalid UTF-8 in the first 8 KB means binary;
/// `<!doctype html` or `<html` at the start means HTML.
fn sniff(body: &[u8]) -> BodyKind {
    let head = &body[..body.len().min(8192)];
    if head.contains(&0) {
        return BodyKind::Binary;
    }
    if let Err(e) = std::str::from_utf8(head) {
        // A multi-byte character cut at the 8 KB boundary is fine.
        if e.error_len().is_some() {
            return BodyKind::Binary;
        }
    }
    let start = String::from_utf8_lossy(&head[..head.len().min(512)]).to_ascii_lowercase();
    let start = start.trim_start_matches('\u{feff}').trim_start();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        BodyKind::Html
    } else {
        BodyKind::Text
    }
}

/// A `<meta charset>` or `<meta http-equiv content="...charset=...">` in the first 1024
/// bytes of an HTML document (the HTML prescan, simplified).
fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = String::from_utf8_lossy(&body[..body.len().min(1024)]).to_ascii_lowercase();
    let mut rest = head.as_str();
    while let Some(i) = rest.find("charset") {
        rest = &rest[i + "charset".len()..];
        let after = rest.trim_start();
        let Some(after) = after.strip_prefix('=') else {
            continue;
        };
        let value: String = after
            .trim_start()
            .trim_start_matches(['"', '\''])
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.'))
            .collect();
        if let Some(enc) = Encoding::for_label(value.as_bytes()) {
            return Some(enc);
        }
    }
    None
}

/// Decodes a text body: a byte-order mark wins, then the header's charset, then (for HTML)
/// a `<meta>` charset, then UTF-8. Invalid sequences become U+FFFD.
pub fn decode(body: &[u8], content_type: Option<&str>, kind: BodyKind) -> String {
    let declared = charset_param(content_type).or_else(|| {
        if kind == BodyKind::Html {
            meta_charset(body)
        } else {
            None
        }
    });
    // A page that claims UTF-16 in a <meta> is ASCII-compatible on the wire; the HTML
    // standard treats that claim as UTF-8.
    let encoding = match declared {
        Some(e) if e == encoding_rs::UTF_16LE || e == encoding_rs::UTF_16BE => {
            if charset_param(content_type).is_some() {
                e
            } else {
                encoding_rs::UTF_8
            }
        }
        Some(e) => e,
        None => encoding_rs::UTF_8,
    };
    let (text, _, _) = encoding.decode(body);
    text.into_owned()
}

/// Pages nesting elements deeper than this are converted to plain text: the HTML parsers
/// and converters walk the tree recursively, and a hostile page of a few thousand nested
/// `<div>`s would otherwise overflow the stack and abort the process.
pub const MAX_NESTING: usize = 400;

/// HTML to Markdown: the readable part of the page when readability finds one, else the
/// whole page with `head`, `script`, `style` and other non-content elements dropped. Pages
/// nested deeper than [`MAX_NESTING`] become plain text. Run it on a thread with a large
/// stack ([`CONVERT_STACK`]).
pub fn html_to_markdown(html: &str, url: &str) -> String {
    let depth = nesting_depth(html);
    if depth > MAX_NESTING {
        return format!(
            "[The page nests elements {depth} deep (more than {MAX_NESTING}), so it was converted to plain text.]\n\n{}",
            plain_text(html)
        );
    }
    if let Some(md) = readable_markdown(html, url) {
        return md;
    }
    let md = whole_page_markdown(html);
    match url::Url::parse(url) {
        Ok(base) => absolutize_links(&md, &base),
        Err(_) => md,
    }
}

/// Makes the relative targets of Markdown links and images (`](/docs)`) absolute against
/// `base`, as readability does, so the model can fetch them. Fragments (`](#top)`) stay.
pub fn absolutize_links(md: &str, base: &url::Url) -> String {
    let mut out = String::with_capacity(md.len());
    let mut rest = md;
    while let Some(at) = rest.find("](") {
        let (before, after) = rest.split_at(at + 2);
        out.push_str(before);
        let end = after
            .find(|c: char| c == ')' || c.is_whitespace())
            .unwrap_or(after.len());
        let target = &after[..end];
        let relative = !target.is_empty()
            && !target.starts_with('#')
            && url::Url::parse(target) == Err(url::ParseError::RelativeUrlWithoutBase);
        match base.join(target) {
            Ok(absolute) if relative => out.push_str(absolute.as_str()),
            _ => out.push_str(target),
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The stack size of the conversion thread.
pub const CONVERT_STACK: usize = 64 * 1024 * 1024;

/// Elements that never nest (void) or whose end tag the parser supplies itself: they do not
/// count towards the depth.
const NON_NESTING: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "thead",
    "tbody", "tfoot", "colgroup", "rb", "rt", "rp", "!doctype",
];
/// Elements whose content is raw text up to their end tag.
const RAW_TEXT: &[&str] = &["script", "style", "textarea", "title", "xmp", "noscript"];

/// The tag name at the start of `rest` (after `<` or `</`), lowercase.
fn tag_name(rest: &str) -> String {
    rest.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '!' | ':'))
        .take(32)
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The byte offset just past the end tag `</name` ... `>` in `html` from `from`, or the end.
fn skip_raw(html: &str, from: usize, name: &str) -> usize {
    let lower_pat = format!("</{name}");
    let bytes = html.as_bytes();
    let mut i = from;
    while let Some(off) = html[i..].find("</") {
        let at = i + off;
        let candidate = &bytes[at..(at + lower_pat.len()).min(bytes.len())];
        if candidate.eq_ignore_ascii_case(lower_pat.as_bytes()) {
            return html[at..].find('>').map_or(html.len(), |e| at + e + 1);
        }
        i = at + 2;
    }
    html.len()
}

/// The deepest element nesting of `html`, estimated by a lexical scan (no recursion, no
/// tree): start tags push, end tags pop, void and optional-end elements do not count.
pub fn nesting_depth(html: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut i = 0;
    while let Some(off) = html[i..].find('<') {
        let at = i + off;
        let rest = &html[at + 1..];
        if rest.starts_with("!--") {
            i = rest.find("-->").map_or(html.len(), |e| at + 1 + e + 3);
            continue;
        }
        let end = rest.find('>').map_or(html.len(), |e| at + 1 + e + 1);
        if let Some(closing) = rest.strip_prefix('/') {
            if !NON_NESTING.contains(&tag_name(closing).as_str()) {
                depth = depth.saturating_sub(1);
            }
        } else {
            let name = tag_name(rest);
            let self_closing = html[at..end].ends_with("/>");
            if RAW_TEXT.contains(&name.as_str()) {
                i = skip_raw(html, end, &name);
                continue;
            }
            if !name.is_empty()
                && !name.starts_with('!')
                && !self_closing
                && !NON_NESTING.contains(&name.as_str())
            {
                depth += 1;
                max = max.max(depth);
            }
        }
        i = end.max(at + 1);
    }
    max
}

/// The text of `html` without tags, scripts and styles, whitespace collapsed (the fallback
/// for pathological pages; iterative).
pub fn plain_text(html: &str) -> String {
    let mut out = String::new();
    let mut i = 0;
    let mut last_space = true;
    let mut push_text = |text: &str, out: &mut String| {
        for c in text.chars() {
            if c.is_whitespace() {
                if !last_space {
                    out.push(' ');
                    last_space = true;
                }
            } else {
                out.push(c);
                last_space = false;
            }
        }
    };
    while let Some(off) = html[i..].find('<') {
        let at = i + off;
        push_text(&html[i..at], &mut out);
        let rest = &html[at + 1..];
        if rest.starts_with("!--") {
            i = rest.find("-->").map_or(html.len(), |e| at + 1 + e + 3);
            continue;
        }
        let end = rest.find('>').map_or(html.len(), |e| at + 1 + e + 1);
        let name = tag_name(rest);
        i = if RAW_TEXT.contains(&name.as_str()) && name != "title" && name != "textarea" {
            skip_raw(html, end, &name)
        } else {
            end.max(at + 1)
        };
        push_text(" ", &mut out);
    }
    push_text(&html[i.min(html.len())..], &mut out);
    out.trim().to_owned()
}

fn readable_markdown(html: &str, url: &str) -> Option<String> {
    let config = dom_smoothie::Config {
        text_mode: dom_smoothie::TextMode::Markdown,
        max_elements_to_parse: MAX_READABILITY_ELEMENTS,
        ..dom_smoothie::Config::default()
    };
    let mut readability = dom_smoothie::Readability::new(html, Some(url), Some(config)).ok()?;
    let article = readability.parse().ok()?;
    let body = article.text_content.trim();
    if body.chars().count() < MIN_READABLE_CHARS {
        return None;
    }
    let title = article.title.trim();
    Some(if title.is_empty() || body.starts_with("# ") {
        body.to_owned()
    } else {
        format!("# {title}\n\n{body}")
    })
}

/// The whole page through htmd, without the elements that are never content.
pub fn whole_page_markdown(html: &str) -> String {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "head", "script", "style", "noscript", "template", "iframe", "object", "embed", "svg",
            "canvas",
        ])
        .build();
    match converter.convert(html) {
        Ok(md) => md.trim().to_owned(),
        // htmd only fails on I/O errors of its writer; fall back to tag-free text.
        Err(_) => html.to_owned(),
    }
}

/// Cuts `text` to [`MAX_CONTENT_CHARS`] characters with the reference's marker.
pub fn truncate(text: String) -> (String, bool) {
    match text.char_indices().nth(MAX_CONTENT_CHARS) {
        None => (text, false),
        Some((at, _)) => {
            let mut cut = text[..at].to_owned();
            cut.push_str("\n\n");
            cut.push_str(TRUNCATION_MARKER);
            (cut, true)
        }
    }
}

/// A file extension for a media type (for saved binary bodies).
pub fn extension_for(media: &str) -> &'static str {
    match media {
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/bmp" => "bmp",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "application/zip" => "zip",
        "application/gzip" | "application/x-gzip" => "gz",
        "application/x-tar" => "tar",
        "application/wasm" => "wasm",
        "audio/mpeg" => "mp3",
        "video/mp4" => "mp4",
        _ => "bin",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_kind(content_type: Option<&str>, body: &[u8], expected: BodyKind) {
        assert_eq!(classify(content_type, body), expected, "{content_type:?}");
    }

    #[test]
    fn kinds() {
        check_kind(Some("text/html; charset=utf-8"), b"", BodyKind::Html);
        check_kind(Some("APPLICATION/XHTML+XML"), b"", BodyKind::Html);
        check_kind(Some("text/plain"), b"\0", BodyKind::Text);
        check_kind(Some("application/json"), b"{}", BodyKind::Text);
        check_kind(Some("application/vnd.api+json"), b"{}", BodyKind::Text);
        check_kind(Some("image/png"), b"\x89PNG", BodyKind::Binary);
        check_kind(Some("application/pdf"), b"%PDF", BodyKind::Binary);
        check_kind(None, b"hello", BodyKind::Text);
        check_kind(None, b"<!DOCTYPE html><p>x", BodyKind::Html);
        check_kind(Some("application/octet-stream"), b"a\0b", BodyKind::Binary);
        check_kind(None, b"\xff\xfe\xfd\xfc", BodyKind::Binary);
    }

    #[test]
    fn charsets() {
        // "café" in Latin-1 and Shift_JIS "日本"
        assert_eq!(
            decode(
                b"caf\xe9",
                Some("text/plain; charset=ISO-8859-1"),
                BodyKind::Text
            ),
            "café"
        );
        assert_eq!(
            decode(
                b"\x93\xfa\x96\x7b",
                Some("text/plain; charset=\"shift_jis\""),
                BodyKind::Text
            ),
            "日本"
        );
        let html = b"<html><head><meta charset=\"windows-1251\"></head><body>\xcf\xf0\xe8\xe2\xe5\xf2</body></html>";
        assert!(decode(html, Some("text/html"), BodyKind::Html).contains("Привет"));
        let http_equiv = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=koi8-r\"><p>\xf0\xd2\xc9\xd7\xc5\xd4";
        assert!(decode(http_equiv, None, BodyKind::Html).contains("Привет"));
        // A BOM beats the header.
        assert_eq!(
            decode(
                b"\xef\xbb\xbfok",
                Some("text/plain; charset=latin1"),
                BodyKind::Text
            ),
            "ok"
        );
        assert_eq!(decode(b"a\xffb", None, BodyKind::Text), "a\u{fffd}b");
    }

    #[test]
    fn html_drops_head_scripts_and_styles() {
        let html = "<html><head><title>T</title><style>p{color:red}</style></head><body><script>alert(1)</script><h1>Hello</h1><p>World <a href=\"/x\">link</a></p></body></html>";
        let md = html_to_markdown(html, "https://example.com/");
        assert!(md.contains("# Hello"), "{md}");
        assert!(md.contains("World [link](https://example.com/x)"), "{md}");
        assert!(!md.contains("alert"), "{md}");
        assert!(!md.contains("color:red"), "{md}");
        assert!(!md.starts_with('T'), "{md}");
    }

    #[test]
    fn relative_links_become_absolute() {
        let base = url::Url::parse("https://example.com/docs/page.html").unwrap();
        assert_eq!(
            absolutize_links(
                "[a](/x) [b](y.html \"t\") ![i](../img.png) [c](#top) [d](https://other.org/) [e]() x](",
                &base
            ),
            "[a](https://example.com/x) [b](https://example.com/docs/y.html \"t\") ![i](https://example.com/img.png) [c](#top) [d](https://other.org/) [e]() x]("
        );
    }

    #[test]
    fn readability_picks_the_article() {
        let para = "This paragraph is part of the article body and it is long enough to count, with commas, many words, and real sentences. ".repeat(4);
        let html = format!(
            "<html><head><title>The Title</title></head><body><nav><a href=\"/a\">Home</a> <a href=\"/b\">About</a></nav><article><h2>Section</h2><p>{para}</p><p>{para}</p></article><footer>Copyright footer</footer></body></html>"
        );
        let md = html_to_markdown(&html, "https://example.com/post");
        assert!(md.starts_with("# The Title"), "{md}");
        assert!(md.contains("part of the article body"), "{md}");
        assert!(!md.contains("Copyright footer"), "{md}");
    }

    #[test]
    fn depth_is_estimated_without_recursion() {
        assert_eq!(
            nesting_depth("<html><body><div><p>a<p>b<br><img src=x></div></body></html>"),
            3
        );
        assert_eq!(
            nesting_depth(
                "<div><!-- <div><div> --><script>if (a<b) { x = '<div>' }</script></div>"
            ),
            1
        );
        assert_eq!(nesting_depth(&"<ul><li>x".repeat(10)), 10);
        assert_eq!(nesting_depth("<svg><path/><path/></svg>"), 1);
        assert_eq!(nesting_depth("text < 3 and 4 > 2"), 0);
    }

    #[test]
    fn hostile_nesting_becomes_plain_text_without_overflowing() {
        let n = 100_000;
        let html = format!(
            "<html><head><style>p{{}}</style></head><body>{}deep <b>text</b>{}<script>x()</script></body></html>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        );
        // The default 2 MB stack of a spawned thread: the fallback never recurses.
        let md = std::thread::spawn(move || html_to_markdown(&html, "https://e.com/"))
            .join()
            .unwrap();
        assert_eq!(
            md,
            "[The page nests elements 100003 deep (more than 400), so it was converted to plain text.]\n\ndeep text"
        );
    }

    #[test]
    fn nesting_up_to_the_limit_converts_on_the_conversion_stack() {
        let n = MAX_NESTING - 4;
        let html = format!(
            "<html><body>{}<b>deep</b>{}</body></html>",
            "<div><span>".repeat(n / 2),
            "</span></div>".repeat(n / 2)
        );
        let md = std::thread::Builder::new()
            .stack_size(CONVERT_STACK)
            .spawn(move || html_to_markdown(&html, "https://e.com/"))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(md, "**deep**");
    }

    #[test]
    fn truncation_keeps_the_cap_and_marks_it() {
        let (short, cut) = truncate("abc".to_owned());
        assert_eq!((short.as_str(), cut), ("abc", false));
        let (long, cut) = truncate("é".repeat(MAX_CONTENT_CHARS + 5));
        assert!(cut);
        assert!(long.ends_with(TRUNCATION_MARKER));
        assert_eq!(
            long.chars().count(),
            MAX_CONTENT_CHARS + 2 + TRUNCATION_MARKER.chars().count()
        );
    }
}
