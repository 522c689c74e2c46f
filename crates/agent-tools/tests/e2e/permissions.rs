//! Permissions from flags (`--allow`, `--deny`, `--ask`, `--mode`) and settings files
//! (`--settings`, the project's `.agent-tools/settings.json`, the user's settings in
//! `AGENT_TOOLS_HOME`), and the headless denial that names what would allow a call.

use crate::{Project, Run, filenames, text};

/// Runs `FLAGS call Glob INPUT` in `project` and checks the exit status.
#[track_caller]
fn check(project: &Project, flags: &[&str], input: &str, code: i32) -> Run {
    let mut args = flags.to_vec();
    args.extend(["call", "Glob", input]);
    let run = project.run(&args, None);
    run.assert_code(code);
    run
}

/// The text of the one result line.
fn result_text(run: &Run) -> String {
    text(&run.result())
}

const ETC: &str = r#"{"pattern": "passwd", "path": "/etc"}"#;

#[test]
fn deny_glob_hides_it_from_list() {
    let p = Project::new(&[]);
    let run = p.run(&["--deny", "Glob", "list"], None);
    run.assert_code(0);
    assert!(!run.stdout.lines().any(|l| l == "Glob"), "{run:#?}");
}

#[test]
fn deny_glob_makes_call_an_unknown_tool() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &["--deny", "Glob"], r#"{"pattern": "*"}"#, 2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("unknown tool `Glob`"), "{run:#?}");
}

#[test]
fn deny_glob_hides_it_from_schema() {
    let p = Project::new(&[]);
    let run = p.run(&["--deny", "Glob", "schema"], None);
    run.assert_code(0);
    assert!(!run.stdout.contains("\"Glob\""), "{run:#?}");
}

#[test]
fn path_outside_the_working_dir_is_denied_headless() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &[], ETC, 1);
    let t = result_text(&run);
    assert!(t.contains("/etc"), "{t}");
    assert!(t.contains("--allow 'Read(//etc/**)'"), "{t}");
    assert!(t.contains("--mode bypassPermissions"), "{t}");
    assert_eq!(run.result()["is_error"], true);
}

#[test]
fn absolute_pattern_outside_the_working_dir_is_denied_headless() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &[], r#"{"pattern": "/etc/passwd*"}"#, 1);
    assert!(
        result_text(&run).contains("--allow 'Read(//etc/**)'"),
        "{run:#?}"
    );
}

#[test]
fn relative_path_escaping_the_working_dir_is_denied_headless() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &[], r#"{"pattern": "*", "path": ".."}"#, 1);
    assert!(
        result_text(&run).contains("outside allowed working directories"),
        "{run:#?}"
    );
}

#[test]
fn allow_rule_allows_the_outside_path() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &["--allow", "Read(//etc/**)"], ETC, 0);
    assert!(
        filenames(&run.result()).contains(&"/etc/passwd".to_owned()),
        "{run:#?}"
    );
}

#[test]
fn allow_rule_for_another_dir_does_not_allow() {
    let p = Project::new(&["a.rs"]);
    check(&p, &["--allow", "Read(//usr/**)"], ETC, 1);
}

#[test]
fn bypass_mode_allows_the_outside_path() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &["--mode", "bypassPermissions"], ETC, 0);
    assert!(
        filenames(&run.result()).contains(&"/etc/passwd".to_owned()),
        "{run:#?}"
    );
}

#[test]
fn dont_ask_mode_denies_the_outside_path() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &["--mode", "dontAsk"], ETC, 1);
    assert!(result_text(&run).contains("dontAsk"), "{run:#?}");
}

#[test]
fn ask_rule_is_denied_headless() {
    let p = Project::new(&["a.rs"]);
    let run = check(&p, &["--ask", "Glob"], r#"{"pattern": "*.rs"}"#, 1);
    assert!(result_text(&run).contains("Glob"), "{run:#?}");
}

#[test]
fn deny_read_rule_hides_files() {
    let p = Project::new(&["a.rs", "secret/key.rs", "secret/deep/more.rs", "src/b.rs"]);
    let run = check(
        &p,
        &["--deny", "Read(secret/**)"],
        r#"{"pattern": "**/*.rs"}"#,
        0,
    );
    assert_eq!(filenames(&run.result()), ["a.rs", "src/b.rs"]);
}

#[test]
fn deny_read_rule_beats_bypass_mode() {
    let p = Project::new(&["a.rs", "secret/key.rs"]);
    let run = check(
        &p,
        &["--mode", "bypassPermissions", "--deny", "Read(secret/**)"],
        r#"{"pattern": "**/*.rs"}"#,
        0,
    );
    assert_eq!(filenames(&run.result()), ["a.rs"]);
}

#[test]
fn deny_read_rule_on_the_search_root_denies_the_call() {
    let p = Project::new(&["a.rs", "secret/key.rs"]);
    let run = check(
        &p,
        &["--deny", "Read(secret/**)"],
        r#"{"pattern": "*.rs", "path": "secret"}"#,
        1,
    );
    assert!(result_text(&run).contains("denied"), "{run:#?}");
}

#[test]
fn settings_file_deny_hides_glob() {
    let p = Project::new(&[r#"conf/settings.json = {"permissions":{"deny":["Glob"]}}"#]);
    let settings = p.root().join("conf/settings.json");
    let settings = settings.to_str().expect("UTF-8");
    let run = p.run(&["--settings", settings, "list"], None);
    run.assert_code(0);
    assert!(!run.stdout.lines().any(|l| l == "Glob"), "{run:#?}");
    let run = check(&p, &["--settings", settings], r#"{"pattern": "*"}"#, 2);
    assert!(run.stderr.contains("unknown tool `Glob`"), "{run:#?}");
}

#[test]
fn settings_file_allow_allows_the_outside_path() {
    let p = Project::new(&[r#"conf/s.json = {"permissions":{"allow":["Read(//etc/**)"]}}"#]);
    let settings = p.root().join("conf/s.json");
    check(
        &p,
        &["--settings", settings.to_str().expect("UTF-8")],
        ETC,
        0,
    );
}

#[test]
fn settings_file_default_mode_is_used() {
    let p = Project::new(&[r#"s.json = {"permissions":{"defaultMode":"bypassPermissions"}}"#]);
    let settings = p.root().join("s.json");
    check(
        &p,
        &["--settings", settings.to_str().expect("UTF-8")],
        ETC,
        0,
    );
}

#[test]
fn project_settings_are_honoured() {
    let p = Project::new(&[
        "a.rs",
        r#".agent-tools/settings.json = {"permissions":{"deny":["Glob"]}}"#,
    ]);
    let run = p.run(&["list"], None);
    run.assert_code(0);
    assert!(!run.stdout.lines().any(|l| l == "Glob"), "{run:#?}");
    check(&p, &[], r#"{"pattern": "*"}"#, 2);
}

#[test]
fn project_settings_read_deny_hides_files() {
    let p = Project::new(&[
        "a.rs",
        "private/b.rs",
        r#".agent-tools/settings.json = {"permissions":{"deny":["Read(/private/**)"]}}"#,
    ]);
    let run = check(&p, &[], r#"{"pattern": "**/*.rs"}"#, 0);
    assert_eq!(filenames(&run.result()), ["a.rs"]);
}

#[test]
fn user_settings_in_agent_tools_home_are_honoured() {
    let p = Project::new(&["a.rs"]);
    std::fs::write(
        p.home().join("settings.json"),
        r#"{"permissions":{"deny":["Glob"]}}"#,
    )
    .expect("write user settings");
    let run = p.run(&["list"], None);
    run.assert_code(0);
    assert!(!run.stdout.lines().any(|l| l == "Glob"), "{run:#?}");
}

#[test]
fn invalid_settings_json_exits_2_naming_the_file() {
    let p = Project::new(&["bad.json = {\"permissions\": "]);
    let settings = p.root().join("bad.json");
    let settings = settings.to_str().expect("UTF-8");
    let run = p.run(&["--settings", settings, "list"], None);
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains(settings), "{run:#?}");
}

#[test]
fn invalid_project_settings_exit_2_naming_the_file() {
    let p = Project::new(&[".agent-tools/settings.json = [1,"]);
    let run = p.run(&["list"], None);
    run.assert_code(2);
    let path = p.root().join(".agent-tools/settings.json");
    assert!(
        run.stderr.contains(path.to_str().expect("UTF-8")),
        "{run:#?}"
    );
}

#[test]
fn unknown_mode_in_settings_exits_2() {
    let p = Project::new(&[r#"s.json = {"permissions":{"defaultMode":"yolo"}}"#]);
    let settings = p.root().join("s.json");
    let run = p.run(
        &["--settings", settings.to_str().expect("UTF-8"), "list"],
        None,
    );
    run.assert_code(2);
    assert!(run.stderr.contains("yolo"), "{run:#?}");
}

#[test]
fn missing_settings_file_exits_2() {
    let p = Project::new(&[]);
    let missing = p.root().join("missing.json");
    let missing = missing.to_str().expect("UTF-8");
    let run = p.run(&["--settings", missing, "list"], None);
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains(missing), "{run:#?}");
}

#[test]
fn disabled_bypass_mode_exits_2() {
    let p = Project::new(&[
        r#".agent-tools/settings.json = {"permissions":{"disableBypassPermissionsMode":"disable"}}"#,
    ]);
    let run = p.run(&["--mode", "bypassPermissions", "list"], None);
    run.assert_code(2);
    assert!(
        run.stderr.contains("disableBypassPermissionsMode"),
        "{run:#?}"
    );
}
