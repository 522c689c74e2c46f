//! Snapshots of what the model sees from Glob: rendered results (its input schema and
//! description are snapshotted with every other tool's by the registry's tests).

use std::time::Duration;

use serde_json::json;

use crate::{FIXED_MTIME, Fixture};

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
