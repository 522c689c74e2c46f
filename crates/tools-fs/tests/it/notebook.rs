//! NotebookEdit through the pool: replace, insert and delete, addressing by id and by
//! `cell-N`, read-before-edit, and every error message NotebookEdit gives.

use serde_json::{Value, json};
use tool_core::{CallResult, PermissionMode, ToolContext};

use crate::Fixture;

fn notebook(minor: u64, ids: bool) -> Value {
    let cell = |id: &str, kind: &str, src: Value| {
        let mut c = json!({"cell_type": kind, "metadata": {}, "source": src});
        if ids {
            c["id"] = json!(id);
        }
        if kind == "code" {
            c["execution_count"] = json!(7);
            c["outputs"] = json!([{"output_type": "stream", "name": "stdout", "text": "old\n"}]);
        }
        c
    };
    json!({
        "cells": [
            cell("aaa", "markdown", json!(["# Title\n", "intro"])),
            cell("bbb", "code", json!("x = 1")),
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": minor,
    })
}

/// A fixture with `n.ipynb` written and read in an acceptEdits context.
fn setup(nb: &Value) -> (Fixture, ToolContext) {
    let f = Fixture::new(&[]);
    f.write("n.ipynb", serde_json::to_vec_pretty(nb).unwrap());
    let ctx = f.context_with(PermissionMode::AcceptEdits, &[]);
    let r = f.call_tool(&ctx, "Read", &json!({"file_path": "{root}/n.ipynb"}));
    assert!(!r.is_error, "{r:#?}");
    (f, ctx)
}

fn nb_edit(f: &Fixture, ctx: &ToolContext, input: Value) -> CallResult {
    let mut input = input;
    input["notebook_path"] = json!("{root}/n.ipynb");
    f.call_tool(ctx, "NotebookEdit", &input)
}

fn cells(f: &Fixture) -> Vec<Value> {
    let nb: Value = serde_json::from_slice(&f.read("n.ipynb")).unwrap();
    nb["cells"].as_array().unwrap().clone()
}

#[test]
fn replace_resets_outputs_and_keeps_the_source_form() {
    let (f, ctx) = setup(&notebook(5, true));
    let r = nb_edit(
        &f,
        &ctx,
        json!({"cell_id": "bbb", "new_source": "x = 2\nprint(x)"}),
    );
    assert_eq!(r.text(), "Updated cell bbb with x = 2\nprint(x)");
    let c = cells(&f);
    assert_eq!(c[1]["source"], "x = 2\nprint(x)");
    assert_eq!(c[1]["execution_count"], Value::Null);
    assert_eq!(c[1]["outputs"], json!([]));
    let r = nb_edit(
        &f,
        &ctx,
        json!({"cell_id": "aaa", "new_source": "# New\ntext"}),
    );
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(cells(&f)[0]["source"], json!(["# New\n", "text"]));
    // One-space indentation, as Jupyter writes.
    let text = String::from_utf8(f.read("n.ipynb")).unwrap();
    assert!(text.starts_with("{\n \"cells\": [\n  {\n"), "{text}");
    // Changing the type to markdown drops outputs.
    let r = nb_edit(
        &f,
        &ctx,
        json!({"cell_id": "bbb", "new_source": "*md*", "cell_type": "markdown"}),
    );
    assert!(!r.is_error);
    assert!(cells(&f)[1].get("outputs").is_none());
}

#[test]
fn insert_and_delete() {
    let (f, ctx) = setup(&notebook(5, true));
    let r = nb_edit(
        &f,
        &ctx,
        json!({"cell_id": "aaa", "new_source": "y = 3", "cell_type": "code", "edit_mode": "insert"}),
    );
    assert!(!r.is_error, "{r:#?}");
    let id = r.data["cellId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 8);
    assert_eq!(r.text(), format!("Inserted cell {id} with y = 3"));
    let c = cells(&f);
    assert_eq!(c.len(), 3);
    assert_eq!(c[1]["id"], id.as_str());
    assert_eq!(c[1]["source"], json!(["y = 3"]));
    // Without an id: at the start.
    let r = nb_edit(
        &f,
        &ctx,
        json!({"new_source": "first", "cell_type": "markdown", "edit_mode": "insert"}),
    );
    assert!(!r.is_error, "{r:#?}");
    assert_eq!(cells(&f)[0]["source"], json!(["first"]));
    let r = nb_edit(
        &f,
        &ctx,
        json!({"cell_id": "bbb", "new_source": "", "edit_mode": "delete"}),
    );
    assert_eq!(r.text(), "Deleted cell bbb");
    assert_eq!(cells(&f).len(), 3);
}

#[test]
fn cells_by_index_and_ids_only_from_4_5() {
    let (f, ctx) = setup(&notebook(4, false));
    let r = nb_edit(&f, &ctx, json!({"cell_id": "cell-1", "new_source": "z"}));
    assert_eq!(r.text(), "Updated cell cell-1 with z");
    assert_eq!(cells(&f)[1]["source"], "z");
    let r = nb_edit(
        &f,
        &ctx,
        json!({"cell_id": "cell-0", "new_source": "n", "cell_type": "code", "edit_mode": "insert"}),
    );
    assert_eq!(r.text(), "Inserted cell cell-1 with n");
    assert!(cells(&f)[1].get("id").is_none());
    // Replacing one past the end appends.
    let r = nb_edit(&f, &ctx, json!({"cell_id": "cell-3", "new_source": "end"}));
    assert!(r.text().starts_with("Inserted cell"), "{r:#?}");
    assert_eq!(cells(&f).len(), 4);
    let r = nb_edit(&f, &ctx, json!({"cell_id": "cell-9", "new_source": "x"}));
    assert_eq!(
        r.text(),
        "<tool_use_error>Cell with index 9 does not exist in notebook.</tool_use_error>"
    );
}

#[test]
fn messages() {
    let (f, ctx) = setup(&notebook(5, true));
    let check = |input: Value, expected: &str| {
        let r = nb_edit(&f, &ctx, input);
        assert_eq!(
            r.text(),
            format!("<tool_use_error>{expected}</tool_use_error>"),
            "{r:#?}"
        );
    };
    check(
        json!({"cell_id": "zzz", "new_source": "x"}),
        "Cell with ID \"zzz\" not found in notebook.",
    );
    check(
        json!({"new_source": "x"}),
        "Cell ID must be specified when not inserting a new cell.",
    );
    check(
        json!({"new_source": "x", "edit_mode": "insert"}),
        "Cell type is required when using edit_mode=insert.",
    );
    let r = nb_edit(&f, &ctx, json!({"new_source": "x", "edit_mode": "move"}));
    assert!(r.text().contains("edit_mode"), "{r:#?}");
    let r = f.call_tool(
        &ctx,
        "NotebookEdit",
        &json!({"notebook_path": "{root}/a.py", "new_source": "x", "cell_id": "a"}),
    );
    assert_eq!(
        r.text(),
        "<tool_use_error>File must be a Jupyter notebook (.ipynb file). For editing other file types, use the Edit tool.</tool_use_error>"
    );
    let r = f.call_tool(
        &ctx,
        "NotebookEdit",
        &json!({"notebook_path": "{root}/none.ipynb", "new_source": "x", "cell_id": "a"}),
    );
    assert_eq!(
        r.text(),
        "<tool_use_error>Notebook file does not exist.</tool_use_error>"
    );
    // Not read, and modified since read.
    f.write(
        "other.ipynb",
        serde_json::to_vec(&notebook(5, true)).unwrap(),
    );
    let r = f.call_tool(
        &ctx,
        "NotebookEdit",
        &json!({"notebook_path": "{root}/other.ipynb", "new_source": "x", "cell_id": "aaa"}),
    );
    assert_eq!(
        r.text(),
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    );
    f.write("n.ipynb", "{\"cells\": []}");
    let r = nb_edit(&f, &ctx, json!({"cell_id": "aaa", "new_source": "x"}));
    assert!(
        r.text().contains("File has been modified since read"),
        "{r:#?}"
    );
    let r = f.call_tool(&ctx, "Read", &json!({"file_path": "{root}/n.ipynb"}));
    assert!(!r.is_error);
    f.write("bad.ipynb", "{broken");
    let r = f.call_tool(&ctx, "Read", &json!({"file_path": "{root}/bad.ipynb"}));
    assert!(r.is_error);
}

#[test]
fn invalid_json_is_refused() {
    let f = Fixture::new(&[]);
    let ctx = f.context_with(PermissionMode::AcceptEdits, &[]);
    // Written by Write, so the ledger knows this (broken) content.
    let r = f.call_tool(
        &ctx,
        "Write",
        &json!({"file_path": "{root}/n.ipynb", "content": "{not json"}),
    );
    assert!(!r.is_error, "{r:#?}");
    let r = nb_edit(&f, &ctx, json!({"cell_id": "a", "new_source": "x"}));
    assert!(
        r.text()
            .starts_with("<tool_use_error>Notebook is not valid JSON:"),
        "{r:#?}"
    );
    assert_eq!(f.read("n.ipynb"), b"{not json");
}
