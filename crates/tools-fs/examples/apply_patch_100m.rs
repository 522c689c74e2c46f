//! Times apply_patch against Read + Edit on one line of a 100 MB file (no assertions: a
//! quick look while the binary's `--profile codex` is not there; `cargo xtask bench
//! apply-patch-100m` is the benchmark).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::io::Write as _;
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tool_core::{PermissionMode, ToolContext, ToolPool, Typed};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine.txt");
    let work = dir.path().join("work.txt");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&pristine).unwrap());
    let (mut n, mut written) = (0_u64, 0_usize);
    while written < 100 * 1024 * 1024 {
        n += 1;
        let line = if n == 250_000 {
            "    let marker = \"EDIT ME\";\n".to_owned()
        } else {
            format!("    let value_{n} = compute({n}, \"some text to make it longer\");\n")
        };
        written += line.len();
        w.write_all(line.as_bytes()).unwrap();
    }
    w.flush().unwrap();
    drop(w);
    let mut tools = tools_fs::tools();
    tools.push(Arc::new(Typed::new(tools_fs::ApplyPatch)));
    let pool = ToolPool::new(tools);
    let (mut edit, mut patch) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        for which in ["edit", "patch"] {
            std::fs::copy(&pristine, &work).unwrap();
            let state = tempfile::tempdir().unwrap();
            let ctx = ToolContext::builder(dir.path())
                .state_dir(state.path())
                .mode(PermissionMode::AcceptEdits)
                .build();
            let start = Instant::now();
            let r = if which == "edit" {
                let read = json!({"file_path": work, "limit": 1});
                assert!(!pool.call("Read", read, &ctx).await.is_error);
                let input = json!({"file_path": work, "old_string": "let marker = \"EDIT ME\";", "new_string": "let marker = \"EDITED\";"});
                pool.call("Edit", input, &ctx).await
            } else {
                let input = json!({"input": "*** Begin Patch\n*** Update File: work.txt\n@@\n-    let marker = \"EDIT ME\";\n+    let marker = \"EDITED\";\n*** End Patch"});
                pool.call("apply_patch", input, &ctx).await
            };
            let took = start.elapsed();
            assert!(!r.is_error, "{}", r.text());
            if which == "edit" {
                edit.push(took)
            } else {
                patch.push(took)
            }
        }
    }
    edit.sort();
    patch.sort();
    let (e, p) = (edit[2], patch[2]);
    println!(
        "Read+Edit {e:?}, apply_patch {p:?}, ratio {:.2}",
        p.as_secs_f64() / e.as_secs_f64()
    );
}
