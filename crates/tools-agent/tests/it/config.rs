//! Config through the pool: validation messages, reading and writing the project file, and
//! never writing the sandbox or the permission mode.

use serde_json::{Value, json};
use tool_core::PermissionMode;

use crate::{Fixture, approver, assert_error, call, with_prompter};

#[tokio::test]
async fn config_validation_messages() {
    let f = Fixture::new();
    let ctx = f.ctx();
    let check = |input: Value, needle: &'static str| {
        let ctx = ctx.clone();
        async move { assert_error(&call(&ctx, "Config", input).await, needle) }
    };
    check(json!({"setting": "theme"}), "Unknown setting: \"theme\"").await;
    // Person-only keys are refused whatever the value, before the value is checked.
    check(
        json!({"setting": "sandbox.enabled", "value": "maybe"}),
        "sandbox.enabled can only be changed by a person",
    )
    .await;
    check(
        json!({"setting": "permissions.defaultMode", "value": "yolo"}),
        "permissions.defaultMode can only be changed by a person",
    )
    .await;
    check(
        json!({"setting": "model", "value": "two words"}),
        "model requires a non-empty name",
    )
    .await;
    // Writes ask; headless they are denied.
    check(
        json!({"setting": "model", "value": "opus"}),
        "Set model to \"opus\"",
    )
    .await;
    assert!(!f.path(".agent-tools/settings.json").exists());
}

#[tokio::test]
async fn config_reads_and_writes_the_project_file() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path(".agent-tools")).unwrap();
    std::fs::write(
        f.path(".agent-tools/settings.json"),
        r#"{"permissions": {"allow": ["Bash(ls)"]}, "lsp": {"py": "pyright"}, "sandbox": {"enabled": true}}"#,
    )
    .unwrap();
    let ctx = f.ctx();
    let r = call(
        &ctx,
        "Config",
        json!({"setting": "permissions.defaultMode"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "permissions.defaultMode is not set");
    // Reading a person-only key is allowed.
    let r = call(&ctx, "Config", json!({"setting": "sandbox.enabled"})).await;
    assert!(
        r.text().starts_with("sandbox.enabled = true (from "),
        "{}",
        r.text()
    );
    let prompter = approver(true);
    let ctx = with_prompter(&f, prompter.clone(), PermissionMode::Default);
    let r = call(&ctx, "Config", json!({"setting": "model", "value": "opus"})).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "Set model to \"opus\"");
    assert_eq!(
        prompter.asked.lock().unwrap().as_slice(),
        ["Set model to \"opus\""]
    );
    let text = std::fs::read_to_string(f.path(".agent-tools/settings.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["model"], "opus");
    assert_eq!(v["permissions"]["allow"], json!(["Bash(ls)"]));
    assert_eq!(v["lsp"]["py"], "pyright");
    let r = call(&ctx, "Config", json!({"setting": "model"})).await;
    assert!(
        r.text().starts_with("model = \"opus\" (from "),
        "{}",
        r.text()
    );
    // A model in bypassPermissions mode may change ordinary settings alone.
    let bypass = f.builder().mode(PermissionMode::BypassPermissions).build();
    let r = call(
        &bypass,
        "Config",
        json!({"setting": "model", "value": "haiku"}),
    )
    .await;
    assert!(!r.is_error, "{}", r.text());
    // A broken file is reported, not overwritten.
    std::fs::write(f.path(".agent-tools/settings.json"), "{ nope").unwrap();
    let r = call(&ctx, "Config", json!({"setting": "model", "value": "opus"})).await;
    assert_error(&r, "is not valid JSON");
    assert_eq!(
        std::fs::read_to_string(f.path(".agent-tools/settings.json")).unwrap(),
        "{ nope"
    );
}

/// The sandbox and the permission mode are a person's to change: Config refuses to write
/// them in every mode, with or without a person to approve the call, and the project file
/// stays as it was (or absent).
#[tokio::test]
async fn config_never_writes_the_sandbox_or_the_mode() {
    let keys_and_values = [
        ("sandbox.enabled", json!(false)),
        ("sandbox.enabled", json!("false")),
        ("sandbox.enabled", json!(true)),
        ("permissions.defaultMode", json!("bypassPermissions")),
        ("permissions.defaultMode", json!("acceptEdits")),
        ("permissions.defaultMode", json!("plan")),
        ("permissions.disableBypassPermissionsMode", json!("disable")),
        (" sandbox.enabled ", json!(false)),
    ];
    let original = r#"{"sandbox": {"enabled": true}}"#;
    let mut cases = 0;
    for existing in [None, Some(original)] {
        for mode in PermissionMode::ALL {
            for person in [None, Some(true), Some(false)] {
                for (key, value) in &keys_and_values {
                    let f = Fixture::new();
                    if let Some(text) = existing {
                        std::fs::create_dir_all(f.path(".agent-tools")).unwrap();
                        std::fs::write(f.path(".agent-tools/settings.json"), text).unwrap();
                    }
                    let prompter = person.map(approver);
                    let ctx = match &prompter {
                        Some(p) => with_prompter(&f, p.clone(), mode),
                        None => f.builder().mode(mode).build(),
                    };
                    let r = call(&ctx, "Config", json!({"setting": key, "value": value})).await;
                    let label = format!("{key}={value} in {mode}, person {person:?}");
                    assert!(r.is_error, "{label}: {}", r.text());
                    assert!(
                        r.text()
                            .contains(&format!("{} can only be changed by a person", key.trim())),
                        "{label}: {}",
                        r.text()
                    );
                    assert!(r.retryable, "{label}");
                    let on_disk =
                        std::fs::read_to_string(f.path(".agent-tools/settings.json")).ok();
                    assert_eq!(on_disk.as_deref(), existing, "{label}");
                    if let Some(p) = prompter {
                        assert!(
                            p.asked.lock().unwrap().is_empty(),
                            "{label}: a person was asked"
                        );
                    }
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, 2 * 5 * 3 * 8);
}
