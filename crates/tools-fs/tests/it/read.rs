//! Read through the pool: the numbered format, offset and limit, the default page and its
//! continuation hint, cut lines, the reminders, "file unchanged", images, notebooks, PDFs,
//! binary and special files, missing paths and permissions (safety rows 17, 18, 21–26).

use std::io::Write as _;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_core::{CallResult, ContentBlock, PermissionMode, RuleBehavior};

use crate::Fixture;

fn read(f: &Fixture, input: Value) -> CallResult {
    f.call_tool(&f.context(), "Read", &input)
}

/// Reads `content` as `f.txt` with `extra` input fields and compares the text.
#[track_caller]
fn check(content: &str, extra: Value, expected: &str) {
    let f = Fixture::new(&[]);
    f.write("f.txt", content);
    let mut input = json!({"file_path": "{root}/f.txt"});
    if let (Some(obj), Some(more)) = (input.as_object_mut(), extra.as_object()) {
        obj.extend(more.clone());
    }
    let result = read(&f, input);
    assert!(!result.is_error, "{result:#?}");
    assert_eq!(result.text(), expected, "{result:#?}");
}

#[test]
fn numbered_lines_and_ranges() {
    check("a\nb\nc\n", json!({}), "1\ta\n2\tb\n3\tc");
    check("a\nb\nc", json!({}), "1\ta\n2\tb\n3\tc");
    check(
        "a\nb\nc\nd\n",
        json!({"offset": 2, "limit": 2}),
        "2\tb\n3\tc\n\n[Showing lines 2-3 of 4. To read more, call Read with offset: 4.]",
    );
    check("a\nb\n", json!({"offset": 2}), "2\tb");
    // offset is 1-based, as the schema says (`minimum: 1`): 0 is refused with the reason.
    let f = Fixture::new(&[]);
    f.write("f.txt", "a\nb\n");
    let r = read(&f, json!({"file_path": "{root}/f.txt", "offset": 0}));
    assert!(r.is_error, "{r:#?}");
    assert!(
        r.text().contains("`offset` must be at least 1 but was 0"),
        "{r:#?}"
    );
    check(
        "a\nb\n",
        json!({"offset": "1", "limit": "1"}),
        "1\ta\n\n[Showing lines 1-1 of 2. To read more, call Read with offset: 2.]",
    );
    // Tabs and indentation are kept exactly.
    check("\tx\n    y\n", json!({}), "1\t\tx\n2\t    y");
}

#[test]
fn bom_and_carriage_returns_are_not_shown() {
    check("\u{FEFF}a\r\nb\r\n", json!({}), "1\ta\n2\tb");
    // UTF-16 with a BOM is decoded.
    let f = Fixture::new(&[]);
    let mut bytes = vec![0xFF, 0xFE];
    for u in "hé\r\nyo\n".encode_utf16() {
        bytes.extend_from_slice(&u.to_le_bytes());
    }
    f.write("u16.txt", bytes);
    let r = read(&f, json!({"file_path": "{root}/u16.txt"}));
    assert_eq!(r.text(), "1\thé\n2\tyo", "{r:#?}");
}

#[test]
fn empty_and_past_the_end() {
    check(
        "",
        json!({}),
        "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
    );
    check(
        "a\nb\n",
        json!({"offset": 5}),
        "<system-reminder>Warning: the file exists but is shorter than the provided offset (5). The file has 2 lines.</system-reminder>",
    );
}

#[test]
fn default_page_is_2000_lines_with_a_hint() {
    let f = Fixture::new(&[]);
    let text: String = (1..=2500).map(|i| format!("l{i}\n")).collect();
    f.write("big.txt", &text);
    let r = read(&f, json!({"file_path": "{root}/big.txt"}));
    assert!(!r.is_error);
    let out = r.text();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "1\tl1");
    assert_eq!(lines[1999], "2000\tl2000");
    assert_eq!(
        lines.last().copied(),
        Some("[Showing lines 1-2000 of 2500. To read more, call Read with offset: 2001.]")
    );
    assert_eq!(r.data["type"], "text");
    assert_eq!(r.data["numLines"], 2000);
    assert_eq!(r.data["totalLines"], 2500);
    assert_eq!(r.data["truncated"], true);
    let r = read(&f, json!({"file_path": "{root}/big.txt", "offset": 2001}));
    assert!(r.text().starts_with("2001\tl2001\n"));
    assert!(r.text().ends_with("2500\tl2500"));
}

#[test]
fn output_is_bounded_by_characters_too() {
    let f = Fixture::new(&[]);
    let line = "x".repeat(1500);
    let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
    f.write("wide.txt", &text);
    let r = read(&f, json!({"file_path": "{root}/wide.txt", "limit": 1000}));
    assert!(!r.is_error);
    let out = r.text();
    assert!(
        out.len() < tools_fs::limits::READ_MAX_OUTPUT_CHARS + 300,
        "{}",
        out.len()
    );
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("[Showing lines 1-")
            && last.contains("the page stopped at 100000 characters")
            && last.contains("call Read with offset:"),
        "{last}"
    );
}

#[test]
fn long_lines_are_cut_with_a_marker() {
    // Row 24: a 5 MB single-line minified file.
    let f = Fixture::new(&[]);
    f.write("min.js", "y".repeat(5 * 1024 * 1024));
    let r = read(&f, json!({"file_path": "{root}/min.js"}));
    assert!(!r.is_error);
    let out = r.text();
    let expected_tail = format!(
        "… [line truncated: {} more characters]",
        5 * 1024 * 1024 - 2000
    );
    assert!(out.starts_with(&format!("1\t{}", "y".repeat(2000))));
    assert!(out.ends_with(&expected_tail), "{}", &out[out.len() - 80..]);
}

#[test]
fn a_huge_file_gives_its_first_page() {
    // Row 23: a 2 GiB file (sparse after a text head) → the first page, bounded.
    let f = Fixture::new(&[]);
    let path = f.path("huge.log");
    let mut file = std::fs::File::create(&path).unwrap();
    for i in 1..=3000 {
        writeln!(file, "entry {i}").unwrap();
    }
    file.set_len(2 * 1024 * 1024 * 1024).unwrap();
    drop(file);
    let r = read(&f, json!({"file_path": "{root}/huge.log"}));
    assert!(!r.is_error, "{r:#?}");
    let out = r.text();
    assert!(out.starts_with("1\tentry 1\n"));
    assert!(out.contains("\n2000\tentry 2000\n"));
    assert!(
        out.ends_with("To read more, call Read with offset: 2001.]"),
        "{}",
        &out[out.len() - 100..]
    );
}

#[test]
fn identical_re_read_says_unchanged() {
    let f = Fixture::new(&[]);
    f.write("f.txt", "one\ntwo\n");
    let ctx = f.context();
    let input = json!({"file_path": "{root}/f.txt"});
    assert_eq!(f.call_tool(&ctx, "Read", &input).text(), "1\tone\n2\ttwo");
    let again = f.call_tool(&ctx, "Read", &input);
    assert_eq!(again.text(), tools_fs::FILE_UNCHANGED);
    assert_eq!(again.data["type"], "file_unchanged");
    // Another range is a new read.
    let part = f.call_tool(
        &ctx,
        "Read",
        &json!({"file_path": "{root}/f.txt", "offset": 2}),
    );
    assert_eq!(part.text(), "2\ttwo");
    // A change of content (same size) is seen even within one mtime tick.
    f.write("f.txt", "ONE\ntwo\n");
    assert_eq!(f.call_tool(&ctx, "Read", &input).text(), "1\tONE\n2\ttwo");
    // A touch without a change of content is still "unchanged".
    f.set_mtime("f.txt", Duration::from_secs(1_700_000_000));
    assert_eq!(
        f.call_tool(&ctx, "Read", &input).text(),
        tools_fs::FILE_UNCHANGED
    );
}

#[test]
fn missing_files_and_directories() {
    let f = Fixture::new(&["src/main.rs = fn main() {}"]);
    let r = read(&f, json!({"file_path": "{root}/src/mian.rs"}));
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        f.expand("<tool_use_error>File does not exist. Note: your current working directory is {root}. Did you mean {root}/src/main.rs?</tool_use_error>")
    );
    let r = read(&f, json!({"file_path": "{root}/nothing/here.txt"}));
    assert_eq!(
        r.text(),
        f.expand("<tool_use_error>File does not exist. Note: your current working directory is {root}.</tool_use_error>")
    );
    let r = read(&f, json!({"file_path": "{root}/src"}));
    assert!(r.is_error);
    assert!(
        r.text()
            .contains("EISDIR: illegal operation on a directory, read"),
        "{r:#?}"
    );
    // Relative paths resolve against the working directory.
    let r = read(&f, json!({"file_path": "src/main.rs"}));
    assert_eq!(r.text(), "1\tfn main() {}");
}

#[test]
fn binary_files_are_refused() {
    let f = Fixture::new(&[]);
    f.write("tool.exe", "MZ");
    let r = read(&f, json!({"file_path": "{root}/tool.exe"}));
    assert_eq!(
        r.text(),
        "<tool_use_error>This tool cannot read binary files. The file appears to be a binary .exe file. Please use appropriate tools for binary file analysis.</tool_use_error>"
    );
    f.write("data.txt", b"abc\0def");
    let r = read(&f, json!({"file_path": "{root}/data.txt"}));
    assert!(r.is_error);
    assert!(
        r.text().contains("This tool cannot read binary files.")
            && r.text().contains("(7 bytes, NUL bytes in its first block)"),
        "{r:#?}"
    );
}

#[test]
fn devices_and_fifos_are_refused_at_once() {
    // Rows 21 and 22. Allowed by a rule so that only the file type decides.
    let f = Fixture::new(&[]);
    let ctx = f.context_with(PermissionMode::BypassPermissions, &[]);
    for dev in ["/dev/zero", "/dev/urandom"] {
        let r = f.call_tool(&ctx, "Read", &json!({"file_path": dev}));
        assert_eq!(
            r.text(),
            format!(
                "<tool_use_error>Cannot read '{dev}': this device file would block or produce infinite output.</tool_use_error>"
            )
        );
    }
    let status = std::process::Command::new("mkfifo")
        .arg(f.path("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    let r = f.call_tool(&ctx, "Read", &json!({"file_path": "{root}/pipe"}));
    assert!(r.is_error);
    assert!(
        r.text()
            .contains("it is a FIFO (named pipe), not a regular file"),
        "{r:#?}"
    );
    // Not a timing assertion on speed, only that it did not block on the FIFO forever.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn reads_outside_the_working_directory_need_permission() {
    // Rows 17 and 18: `../../etc/passwd` and a symlink to /etc are outside.
    let f = Fixture::new(&["link -> /etc"]);
    let r = read(&f, json!({"file_path": "../../../../../../etc/passwd"}));
    assert!(r.is_error);
    assert!(
        r.text()
            .contains("Path is outside allowed working directories"),
        "{r:#?}"
    );
    let r = read(&f, json!({"file_path": "{root}/link/passwd"}));
    assert!(r.is_error);
    assert!(
        r.text()
            .contains("Path is outside allowed working directories"),
        "{r:#?}"
    );
    // A deny rule wins even inside.
    f.write("secret/.env", "KEY=1");
    let ctx = f.context_with(
        PermissionMode::Default,
        &[(RuleBehavior::Deny, "Read(secret/**)")],
    );
    let r = f.call_tool(&ctx, "Read", &json!({"file_path": "{root}/secret/.env"}));
    assert!(r.text().contains("has been denied"), "{r:#?}");
}

#[test]
fn pages_only_for_pdfs_and_validated() {
    let f = Fixture::new(&["a.txt = x"]);
    let r = read(&f, json!({"file_path": "{root}/a.txt", "pages": "1-2"}));
    assert!(
        r.text()
            .contains("The pages parameter applies only to PDF files"),
        "{r:#?}"
    );
    let r = read(&f, json!({"file_path": "{root}/a.pdf", "pages": "x"}));
    assert_eq!(
        r.text(),
        "<tool_use_error>Invalid pages parameter: \"x\". Use formats like \"1-5\", \"3\", or \"10-20\". Pages are 1-indexed.</tool_use_error>"
    );
    let r = read(&f, json!({"file_path": "{root}/a.pdf", "pages": "1-30"}));
    assert_eq!(
        r.text(),
        "<tool_use_error>Page range \"1-30\" exceeds maximum of 20 pages per request. Please use a smaller range.</tool_use_error>"
    );
    let r = read(&f, json!({"file_path": "{root}/a.txt", "limit": 0}));
    assert!(r.is_error && r.text().contains("limit"), "{r:#?}");
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 128])
    });
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn image_block(r: &CallResult) -> (&str, &str) {
    r.content
        .iter()
        .find_map(|b| match b {
            ContentBlock::Image { media_type, data } => Some((media_type.as_str(), data.as_str())),
            ContentBlock::Text { .. } => None,
        })
        .expect("an image block")
}

#[test]
fn images_are_sent_as_image_blocks() {
    use base64::Engine as _;
    let f = Fixture::new(&[]);
    let bytes = png(30, 20);
    f.write("shot.png", &bytes);
    let r = read(&f, json!({"file_path": "{root}/shot.png"}));
    assert!(!r.is_error, "{r:#?}");
    let (mime, data) = image_block(&r);
    assert_eq!(mime, "image/png");
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap(),
        bytes
    );
    assert!(r.text().contains("30x20 pixels"), "{}", r.text());
    assert_eq!(r.data["type"], "image");
    assert_eq!(r.data["dimensions"]["displayWidth"], 30);
    // Above 2000 px: scaled down, keeping the aspect ratio.
    f.write("wide.png", png(3000, 300));
    let r = read(&f, json!({"file_path": "{root}/wide.png"}));
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(r.data["dimensions"]["originalWidth"], 3000);
    assert_eq!(r.data["dimensions"]["displayWidth"], 2000);
    assert_eq!(r.data["dimensions"]["displayHeight"], 200);
    let (_, data) = image_block(&r);
    let sent = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let decoded = image::load_from_memory(&sent).unwrap();
    assert_eq!((decoded.width(), decoded.height()), (2000, 200));
    // Empty and broken images.
    f.write("empty.png", "");
    assert!(
        read(&f, json!({"file_path": "{root}/empty.png"}))
            .text()
            .contains("Image file is empty")
    );
    f.write("broken.jpg", "not an image at all");
    assert!(
        read(&f, json!({"file_path": "{root}/broken.jpg"}))
            .text()
            .contains("Cannot read the image")
    );
}

#[test]
fn notebooks_show_cells_and_outputs() {
    let f = Fixture::new(&[]);
    let nb = json!({
        "cells": [
            {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n", "text"]},
            {"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": 3,
             "source": "print(1)", "outputs": [
                {"output_type": "stream", "name": "stdout", "text": ["1\n"]},
                {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": ["\u{1b}[31mTrace\u{1b}[0m"]}
             ]},
            {"cell_type": "code", "metadata": {}, "execution_count": null, "source": "x", "outputs": [
                {"output_type": "execute_result", "data": {"text/plain": "'big'", "image/png": "aGk="}, "metadata": {}}
            ]}
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4, "nbformat_minor": 4
    });
    f.write("n.ipynb", serde_json::to_vec(&nb).unwrap());
    let r = read(&f, json!({"file_path": "{root}/n.ipynb"}));
    assert!(!r.is_error, "{r:#?}");
    let text = r.text();
    assert!(text.starts_with("<cell id=\"intro\"><cell_type>markdown</cell_type># Title\ntext</cell id=\"intro\">\n<cell id=\"c1\">print(1)</cell id=\"c1\">\n1\nValueError: bad\nTrace"), "{text}");
    assert!(
        text.contains("<cell id=\"cell-2\">x</cell id=\"cell-2\">\n'big'"),
        "{text}"
    );
    assert_eq!(image_block(&r), ("image/png", "aGk="));
    assert_eq!(r.data["type"], "notebook");
    assert_eq!(r.data["cells"][1]["executionCount"], 3);
    // Outputs over 10,000 characters become a jq hint.
    let big = json!({"cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [
        {"output_type": "stream", "text": "z".repeat(12_000)}]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4});
    f.write("big.ipynb", serde_json::to_vec(&big).unwrap());
    let r = read(&f, json!({"file_path": "{root}/big.ipynb"}));
    assert!(r.text().contains("Outputs are too large to include (12000 characters). Use Bash with: jq '.cells[0].outputs'"), "{}", r.text());
    f.write("bad.ipynb", "{not json");
    assert!(
        read(&f, json!({"file_path": "{root}/bad.ipynb"}))
            .text()
            .contains("is not valid JSON")
    );
}

/// A PDF with `pages` pages, page N saying "Hello page N".
fn pdf(pages: u32) -> Vec<u8> {
    use lopdf::content::{Content, Operation};
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier",
    });
    let resources_id = doc.add_object(dictionary! {"Font" => dictionary! {"F1" => font_id}});
    let mut kids: Vec<Object> = Vec::new();
    for i in 1..=pages {
        let content = Content {
            operations: vec![
                Operation::new("BT", vec![]),
                Operation::new("Tf", vec!["F1".into(), 24.into()]),
                Operation::new("Td", vec![100.into(), 600.into()]),
                Operation::new(
                    "Tj",
                    vec![Object::string_literal(format!("Hello page {i}"))],
                ),
                Operation::new("ET", vec![]),
            ],
        };
        let content_id = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content_id,
        });
        kids.push(page_id.into());
    }
    let count = i64::from(pages);
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).unwrap();
    out
}

#[test]
fn pdfs_are_read_as_text_by_page() {
    let f = Fixture::new(&[]);
    f.write("small.pdf", pdf(3));
    let r = read(&f, json!({"file_path": "{root}/small.pdf"}));
    assert!(!r.is_error, "{r:#?}");
    let text = r.text();
    assert!(text.contains("--- Page 1 ---\nHello page 1"), "{text}");
    assert!(text.contains("--- Page 3 ---\nHello page 3"), "{text}");
    assert_eq!(r.data["totalPages"], 3);
    f.write("long.pdf", pdf(12));
    let r = read(&f, json!({"file_path": "{root}/long.pdf"}));
    assert_eq!(
        r.text(),
        "<tool_use_error>This PDF has 12 pages, which is too many to read at once. Use the pages parameter to read specific page ranges (e.g., pages: \"1-5\"). Maximum 20 pages per request.</tool_use_error>"
    );
    let r = read(
        &f,
        json!({"file_path": "{root}/long.pdf", "pages": "11-12"}),
    );
    assert!(!r.is_error, "{r:#?}");
    assert!(
        r.text().contains("--- Page 11 ---\nHello page 11"),
        "{}",
        r.text()
    );
    assert!(!r.text().contains("Page 10 "), "{}", r.text());
    assert_eq!(r.data["pages"], json!([11, 12]));
    let r = read(&f, json!({"file_path": "{root}/long.pdf", "pages": "13"}));
    assert!(r.text().contains("is beyond the end of the PDF"), "{r:#?}");
    f.write("broken.pdf", "%PDF-1.5 garbage");
    assert!(
        read(&f, json!({"file_path": "{root}/broken.pdf"}))
            .text()
            .contains("Cannot read the PDF")
    );
}
