//! Writes against a racing symbolic-link swap: while a thread swaps `$WS/d` between a real
//! directory and a link to a directory outside the workspace (`renameat2(RENAME_EXCHANGE)`
//! in a tight loop), hundreds of Write, Edit, MultiEdit and NotebookEdit calls that create
//! or rename files under `$WS/d` run in acceptEdits mode. Nothing may land outside — no
//! file, no temporary file, no directory, no change to the files there — every success
//! must be in the real directory, and every failure must be a refusal the model can act on.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::race::EXPECTED_ERRORS;
use test_support::{Swapper, listing};
use tool_core::{CallResult, PermissionMode, ToolPool};

use crate::Fixture;

/// Calls per race.
const CALLS: usize = 300;

/// Files in the outside directory that a redirected call would change.
const DECOYS: &[(&str, &str)] = &[
    ("f.txt", "outside f\n"),
    ("m.txt", "outside m\n"),
    ("nb.ipynb", "{\"outside\": true}\n"),
];

/// The race: `$WS/d` (a real directory holding `files`) swapped with `$WS/d.alt` (a link to
/// an outside directory holding [`DECOYS`]) while `call(i)` runs for every `i` below
/// [`CALLS`], after `prepare` (run before the swapper starts). Returns the real directory
/// and each call's result.
fn race(
    files: &[(&str, &str)],
    prepare: &[(&str, Value)],
    call: impl Fn(usize) -> (&'static str, Value),
) -> (Fixture, PathBuf, Vec<CallResult>) {
    let f = Fixture::new(&["d/"]);
    let (outside, outside_path) = test_support::tempdir();
    for (name, content) in files {
        f.write(&format!("d/{name}"), content);
    }
    for (name, content) in DECOYS {
        std::fs::write(outside_path.join(name), content).unwrap();
    }
    std::os::unix::fs::symlink(&outside_path, f.path("d.alt")).unwrap();
    let ctx = f.context_with(PermissionMode::AcceptEdits, &[]);
    let pool = ToolPool::new(tools_fs::tools());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let expand = |v: &Value| -> Value { serde_json::from_str(&f.expand(&v.to_string())).unwrap() };
    for (tool, input) in prepare {
        let r = rt.block_on(pool.call(tool, expand(input), &ctx));
        assert!(!r.is_error, "{r:#?}");
    }
    let swapper = Swapper::start(f.path("d"), f.path("d.alt"));
    let results: Vec<CallResult> = (0..CALLS)
        .map(|i| {
            let (tool, input) = call(i);
            rt.block_on(pool.call(tool, expand(&input), &ctx))
        })
        .collect();
    let swaps = swapper.stop();
    // Nothing outside changed, and nothing was added there.
    let mut decoys: Vec<String> = DECOYS.iter().map(|(n, c)| format!("{n} = {c}")).collect();
    decoys.sort();
    assert_eq!(listing(&outside_path), decoys, "something landed outside");
    let real = ["d", "d.alt"]
        .iter()
        .map(|n| f.path(n))
        .find(|p| std::fs::symlink_metadata(p).unwrap().is_dir())
        .unwrap();
    // No temporary file anywhere in the workspace.
    let stray: Vec<String> = listing(f.root())
        .into_iter()
        .filter(|e| e.contains(".agent-tools-"))
        .collect();
    assert!(stray.is_empty(), "temporary files left: {stray:?}");
    let failed: Vec<&CallResult> = results.iter().filter(|r| r.is_error).collect();
    for r in &failed {
        let text = r.text();
        assert!(
            EXPECTED_ERRORS.iter().any(|e| text.contains(e)),
            "unexpected error: {text}"
        );
    }
    eprintln!(
        "{swaps} swaps, {} of {CALLS} calls succeeded, {} refused",
        CALLS - failed.len(),
        failed.len()
    );
    drop(outside);
    (f, real, results)
}

fn read(real: &Path, rel: &str) -> String {
    std::fs::read_to_string(real.join(rel)).unwrap()
}

#[test]
fn writes_never_land_outside() {
    let (_f, real, results) = race(&[], &[], |i| {
        // Every third call makes missing directories on the way.
        let rel = if i % 3 == 0 {
            format!("d/new{i}/sub/g{i}.txt")
        } else {
            format!("d/g{i}.txt")
        };
        (
            "Write",
            json!({"file_path": format!("{{root}}/{rel}"), "content": format!("g{i}")}),
        )
    });
    for (i, r) in results.iter().enumerate() {
        let rel = if i % 3 == 0 {
            format!("new{i}/sub/g{i}.txt")
        } else {
            format!("g{i}.txt")
        };
        if !r.is_error {
            assert_eq!(read(&real, &rel), format!("g{i}"), "{r:#?}");
        }
    }
}

#[test]
fn edits_that_create_never_land_outside() {
    let (_f, real, results) = race(&[], &[], |i| {
        let path = format!("{{root}}/d/e{i}.txt");
        if i % 2 == 0 {
            (
                "Edit",
                json!({"file_path": path, "old_string": "", "new_string": format!("e{i}")}),
            )
        } else {
            (
                "MultiEdit",
                json!({"file_path": path, "edits": [
                    {"old_string": "", "new_string": format!("e{i} multi")},
                ]}),
            )
        }
    });
    for (i, r) in results.iter().enumerate() {
        if !r.is_error {
            let expected = if i % 2 == 0 {
                format!("e{i}")
            } else {
                format!("e{i} multi")
            };
            assert_eq!(read(&real, &format!("e{i}.txt")), expected, "{r:#?}");
        }
    }
}

#[test]
fn edits_that_rename_over_a_file_never_land_outside() {
    let slots: String = (0..CALLS).map(|i| format!("<{i}>\n")).collect();
    let pairs: String = (0..CALLS).map(|i| format!("<{i}>\n{{{i}}}\n")).collect();
    let (_f, real, results) = race(
        &[("f.txt", &slots), ("m.txt", &pairs)],
        &[
            ("Read", json!({"file_path": "{root}/d/f.txt"})),
            ("Read", json!({"file_path": "{root}/d/m.txt"})),
        ],
        |i| {
            if i % 2 == 0 {
                (
                    "Edit",
                    json!({"file_path": "{root}/d/f.txt", "old_string": format!("<{i}>"), "new_string": format!("[{i}]")}),
                )
            } else {
                (
                    "MultiEdit",
                    json!({"file_path": "{root}/d/m.txt", "edits": [
                        {"old_string": format!("<{i}>"), "new_string": format!("[{i}]")},
                        {"old_string": format!("{{{i}}}"), "new_string": format!("({i})")},
                    ]}),
                )
            }
        },
    );
    // Exactly the successful edits are in the files.
    let done = |i: usize, odd: bool| i % 2 == usize::from(odd) && !results[i].is_error;
    let f: String = (0..CALLS)
        .map(|i| match done(i, false) {
            true => format!("[{i}]\n"),
            false => format!("<{i}>\n"),
        })
        .collect();
    let m: String = (0..CALLS)
        .map(|i| match done(i, true) {
            true => format!("[{i}]\n({i})\n"),
            false => format!("<{i}>\n{{{i}}}\n"),
        })
        .collect();
    assert_eq!(read(&real, "f.txt"), f);
    assert_eq!(read(&real, "m.txt"), m);
}

#[test]
fn notebook_edits_never_land_outside() {
    let notebook = json!({
        "cells": [{"cell_type": "code", "id": "first", "metadata": {}, "source": ["x = 1"],
                   "execution_count": null, "outputs": []}],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    })
    .to_string();
    let (_f, real, results) = race(
        &[("nb.ipynb", &notebook)],
        &[("Read", json!({"file_path": "{root}/d/nb.ipynb"}))],
        |i| {
            (
                "NotebookEdit",
                json!({"notebook_path": "{root}/d/nb.ipynb", "cell_id": "first",
                       "edit_mode": "insert", "cell_type": "markdown",
                       "new_source": format!("cell {i}")}),
            )
        },
    );
    let nb: Value = serde_json::from_str(&read(&real, "nb.ipynb")).unwrap();
    let sources: Vec<String> = nb["cells"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|c| match &c["source"] {
            Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect(),
            other => other.as_str().unwrap_or_default().to_owned(),
        })
        .collect();
    // Each insert goes right after the first cell: newest first.
    let expected: Vec<String> = (0..CALLS)
        .rev()
        .filter(|&i| !results[i].is_error)
        .map(|i| format!("cell {i}"))
        .collect();
    assert_eq!(sources, expected);
}
