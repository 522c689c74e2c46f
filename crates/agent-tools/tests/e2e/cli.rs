//! The command line itself: `list`, `schema`, `--help`, and mistakes that exit with 2.

use serde_json::Value;

use crate::{Project, Run};

/// Runs `agent-tools ARGS` in an empty project and checks the exit status.
#[track_caller]
fn check(args: &[&str], code: i32) -> Run {
    let project = Project::new(&[]);
    let run = project.run(args, None);
    run.assert_code(code);
    run
}

/// Checks `schema --dialect DIALECT`: a JSON array of declarations whose schema (at
/// `pointer` in each) has an object root and no `$ref`.
#[track_caller]
fn check_schema(dialect: &str, name_pointer: &str, schema_pointer: &str) {
    let run = check(&["schema", "--dialect", dialect], 0);
    let decls: Value = serde_json::from_str(&run.stdout).expect("schema prints JSON");
    let decls = decls.as_array().expect("a JSON array");
    assert!(!decls.is_empty(), "no declarations: {run:#?}");
    let mut names = Vec::new();
    for decl in decls {
        // Gemini refuses an empty object schema: a tool without parameters has none.
        if dialect == "gemini" && decl.pointer(schema_pointer).is_none() {
            names.push(decl.pointer(name_pointer).and_then(Value::as_str));
            continue;
        }
        let schema = decl
            .pointer(schema_pointer)
            .unwrap_or_else(|| panic!("no {schema_pointer} in {decl}"));
        let root_type = schema["type"].as_str().unwrap_or_default();
        assert!(
            root_type.eq_ignore_ascii_case("object"),
            "root is not an object: {decl}"
        );
        assert!(schema["properties"].is_object(), "no properties: {decl}");
        assert!(
            !schema.to_string().contains("\"$ref\""),
            "$ref in {dialect} schema: {decl}"
        );
        names.push(decl.pointer(name_pointer).and_then(Value::as_str));
    }
    assert!(names.contains(&Some("Glob")), "{names:?}");
}

#[test]
fn list_names_glob() {
    let run = check(&["list"], 0);
    assert!(run.stdout.lines().any(|l| l == "Glob"), "{run:#?}");
    assert!(run.stderr.is_empty(), "{run:#?}");
}

#[test]
fn list_is_sorted_by_name() {
    let run = check(&["list"], 0);
    let names: Vec<&str> = run.stdout.lines().collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
}

#[test]
fn list_json_lines_parse() {
    let run = check(&["list", "--json"], 0);
    let lines = run.lines();
    let glob = lines
        .iter()
        .find(|l| l["name"] == "Glob")
        .unwrap_or_else(|| panic!("no Glob line: {run:#?}"));
    assert_eq!(glob["read_only"], true, "{glob}");
    assert_eq!(glob["category"], "FileSystem", "{glob}");
    assert!(glob["aliases"].is_array(), "{glob}");
    assert!(glob["deferred"].is_boolean(), "{glob}");
    assert_eq!(lines.len(), run.stdout.lines().count());
}

#[test]
fn list_json_has_the_same_names_as_list() {
    let plain = check(&["list"], 0);
    let json = check(&["list", "--json"], 0);
    let names: Vec<String> = json
        .lines()
        .iter()
        .map(|l| l["name"].as_str().expect("a name").to_owned())
        .collect();
    let plain: Vec<&str> = plain.stdout.lines().collect();
    assert_eq!(names, plain);
}

#[test]
fn schema_anthropic() {
    check_schema("anthropic", "/name", "/input_schema");
}

#[test]
fn schema_openai() {
    check_schema("openai", "/function/name", "/function/parameters");
}

#[test]
fn schema_openai_responses() {
    check_schema("openai-responses", "/name", "/parameters");
}

#[test]
fn schema_gemini() {
    check_schema("gemini", "/name", "/parameters");
}

#[test]
fn schema_mcp() {
    check_schema("mcp", "/name", "/inputSchema");
}

#[test]
fn schema_default_dialect_is_anthropic() {
    let default = check(&["schema"], 0);
    let anthropic = check(&["schema", "--dialect", "anthropic"], 0);
    assert_eq!(default.stdout, anthropic.stdout);
}

#[test]
fn schema_of_one_tool() {
    let run = check(&["schema", "Glob"], 0);
    let decls: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(decls.as_array().map(Vec::len), Some(1), "{decls}");
    assert_eq!(decls[0]["name"], "Glob");
    assert_eq!(decls[0]["input_schema"]["required"][0], "pattern");
}

#[test]
fn schema_unknown_tool_exits_2() {
    let run = check(&["schema", "Nope"], 2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("unknown tool `Nope`"), "{run:#?}");
    assert!(run.stderr.contains("Glob"), "{run:#?}");
}

#[test]
fn schema_unknown_dialect_exits_2() {
    let run = check(&["schema", "--dialect", "cobol"], 2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("cobol"), "{run:#?}");
}

#[test]
fn help_top_level() {
    let run = check(&["--help"], 0);
    for command in [
        "list",
        "schema",
        "call",
        "batch",
        "--cwd",
        "--mode",
        "--settings",
    ] {
        assert!(run.stdout.contains(command), "{command} missing: {run:#?}");
    }
}

#[test]
fn help_list() {
    let run = check(&["list", "--help"], 0);
    assert!(run.stdout.contains("--json"), "{run:#?}");
}

#[test]
fn help_schema() {
    let run = check(&["schema", "--help"], 0);
    assert!(run.stdout.contains("--dialect"), "{run:#?}");
}

#[test]
fn help_call() {
    let run = check(&["call", "--help"], 0);
    assert!(run.stdout.contains("TOOL"), "{run:#?}");
    assert!(run.stdout.contains("--allow"), "{run:#?}");
}

#[test]
fn help_batch() {
    let run = check(&["batch", "--help"], 0);
    assert!(run.stdout.contains("JSON lines"), "{run:#?}");
}

#[test]
fn help_subcommand() {
    let run = check(&["help", "call"], 0);
    assert!(run.stdout.contains("TOOL"), "{run:#?}");
}

#[test]
fn bad_mode_exits_2() {
    let run = check(&["--mode", "yolo", "list"], 2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("yolo"), "{run:#?}");
    assert!(run.stderr.contains("bypassPermissions"), "{run:#?}");
}

#[test]
fn mode_is_case_insensitive() {
    check(&["--mode", "PLAN", "list"], 0);
}

#[test]
fn no_subcommand_exits_2() {
    let run = check(&[], 2);
    assert!(run.stdout.is_empty(), "{run:#?}");
}

#[test]
fn unknown_subcommand_exits_2() {
    check(&["frobnicate"], 2);
}

#[test]
fn missing_cwd_exits_2() {
    let project = Project::new(&[]);
    let missing = project.root().join("nowhere");
    let run = project.run_in(&missing, &["list"], None);
    run.assert_code(2);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("nowhere"), "{run:#?}");
}

#[test]
fn cwd_that_is_a_file_exits_2() {
    let project = Project::new(&["file.txt"]);
    let file = project.root().join("file.txt");
    let run = project.run_in(&file, &["list"], None);
    run.assert_code(2);
    assert!(run.stderr.contains("not a directory"), "{run:#?}");
}

#[test]
fn bad_rule_flag_exits_2() {
    let run = check(&["--allow", " ", "list"], 2);
    assert!(run.stderr.contains("--allow"), "{run:#?}");
}
