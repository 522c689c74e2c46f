//! Snapshots of what the model sees from Glob: its input schema, its description and a
//! rendered result.

use std::time::Duration;

use serde_json::json;
use tool_core::ToolPool;

use crate::{FIXED_MTIME, Fixture};

fn glob() -> std::sync::Arc<dyn tool_core::Tool> {
    ToolPool::new(tools_fs::tools())
        .get("Glob")
        .cloned()
        .expect("Glob is in the pool")
}

#[test]
fn glob_input_schema() {
    insta::assert_json_snapshot!(glob().input_schema());
}

#[test]
fn glob_description() {
    let description = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(glob().description(None));
    insta::assert_snapshot!(description);
}

#[test]
fn glob_output_for_a_small_tree() {
    let fixture = Fixture::new(&[
        "Cargo.toml",
        "README.md",
        "src/lib.rs",
        "src/main.rs",
        "src/util/mod.rs",
        "tests/it.rs",
    ]);
    fixture.set_mtime("src/main.rs", FIXED_MTIME + Duration::from_secs(60));
    let result = fixture.call(&fixture.context(), &json!({"pattern": "**/*.rs"}));
    insta::assert_json_snapshot!(result, {".data.durationMs" => "[duration]"});
}

#[test]
fn glob_output_when_nothing_matches() {
    let fixture = Fixture::new(&["a.txt"]);
    let result = fixture.call(&fixture.context(), &json!({"pattern": "*.rs"}));
    insta::assert_json_snapshot!(result, {".data.durationMs" => "[duration]"});
}

#[test]
fn glob_output_for_invalid_input() {
    let fixture = Fixture::new(&[]);
    let result = fixture.call(&fixture.context(), &json!({"pattern": 3, "extra": true}));
    insta::assert_json_snapshot!(result);
}
