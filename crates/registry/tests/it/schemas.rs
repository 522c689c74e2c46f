//! Every tool's declaration in every dialect, snapshotted; every schema has an object root
//! and no `$ref`; each dialect holds to what its provider accepts (OpenAI strict mode's
//! documented keywords, Gemini's subset without empty objects, `minimum: 1` on 1-based
//! fields), checked here and, where the peers are installed, by the providers' own SDKs.
//! Every profile's tools are covered, each name once, and each profile's pool is listed.
//! `cargo xtask schemas` regenerates the snapshots.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use std::collections::HashSet;
use std::sync::Arc;

use registry::{Profile, ToolRegistry};
use serde_json::{Map, Value, json};
use tool_core::{Dialect, GEMINI_KEYWORDS, OPENAI_FORMATS, OPENAI_STRICT_KEYWORDS, Tool, has_refs};

/// The built-ins of every profile, each name once: the default profile's first, then what
/// each other profile adds, in pool order.
fn every_profile_tools() -> Vec<Arc<dyn Tool>> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for profile in Profile::ALL {
        for tool in ToolRegistry::for_profile(profile).base_tools() {
            if seen.insert(tool.name().to_owned()) {
                out.push(Arc::clone(tool));
            }
        }
    }
    out
}

/// Every profile's built-ins declared in `dialect`, in pool order.
async fn declarations(dialect: Dialect) -> Vec<Value> {
    tool_core::declarations(&every_profile_tools(), dialect).await
}

#[tokio::test]
async fn schema_snapshots_every_tool_every_dialect() {
    for tool in every_profile_tools() {
        let schema = tool.input_schema();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        assert!(!has_refs(schema), "{} has $ref", tool.name());
        for dialect in Dialect::ALL {
            let decls = tool_core::declarations(std::slice::from_ref(&tool), dialect).await;
            for decl in &decls {
                assert!(!has_refs(decl), "{} {dialect}", tool.name());
                let name = match decl["type"].as_str() {
                    Some("custom") => format!("{}-{dialect}-custom", tool.name()),
                    _ => format!("{}-{dialect}", tool.name()),
                };
                insta::assert_json_snapshot!(name, decl);
            }
        }
    }
}

#[tokio::test]
async fn a_pool_declares_what_the_registry_declares() {
    for profile in Profile::ALL {
        let pool = ToolRegistry::for_profile(profile)
            .pool(&tool_core::PermissionEngine::new(Vec::new()), Vec::new());
        for dialect in Dialect::ALL {
            assert_eq!(
                pool.declarations(dialect).await,
                tool_core::declarations(pool.tools(), dialect).await,
                "{profile:?} {dialect}"
            );
        }
    }
}

#[test]
fn every_profile_names_its_pool() {
    for profile in Profile::ALL {
        let registry = ToolRegistry::for_profile(profile);
        let names: Vec<&str> = registry.base_tools().iter().map(|t| t.name()).collect();
        // The agent-triggers build (CI's all-features run) adds the cron tools and Monitor.
        let build = if cfg!(feature = "agent-triggers") {
            "-triggers"
        } else {
            ""
        };
        insta::assert_json_snapshot!(format!("pool-{profile}{build}"), names);
    }
}

/// Calls `f` on every schema object under `schema` (not on the maps of property names).
fn each_schema(schema: &Value, path: &str, f: &mut dyn FnMut(&Map<String, Value>, &str)) {
    let Value::Object(obj) = schema else { return };
    f(obj, path);
    for (key, child) in obj {
        let here = format!("{path}/{key}");
        match (key.as_str(), child) {
            ("properties" | "$defs" | "definitions", Value::Object(props)) => {
                for (name, sub) in props {
                    each_schema(sub, &format!("{here}/{name}"), f);
                }
            }
            ("items" | "additionalProperties" | "not", _) => each_schema(child, &here, f),
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(list)) => {
                for (i, sub) in list.iter().enumerate() {
                    each_schema(sub, &format!("{here}/{i}"), f);
                }
            }
            _ => {}
        }
    }
}

/// The problems of a strict OpenAI parameters schema: keywords strict mode does not
/// document, undocumented formats, open objects, optional properties.
fn strict_problems(parameters: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    each_schema(parameters, "", &mut |obj, path| {
        for (key, value) in obj {
            if !OPENAI_STRICT_KEYWORDS.contains(&key.as_str()) {
                problems.push(format!("{path}: `{key}` is not a strict-mode keyword"));
            }
            if key == "format" && !value.as_str().is_some_and(|f| OPENAI_FORMATS.contains(&f)) {
                problems.push(format!("{path}: format {value} is not documented"));
            }
        }
        let is_object = obj.get("type").is_some_and(|t| {
            t == "object"
                || t.as_array()
                    .is_some_and(|a| a.iter().any(|x| x == "object"))
        });
        if is_object {
            if obj.get("additionalProperties") != Some(&Value::Bool(false)) {
                problems.push(format!("{path}: object not closed"));
            }
            let props: Vec<&String> = obj
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().collect())
                .unwrap_or_default();
            let required: Vec<&str> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if props.len() != required.len()
                || props.iter().any(|p| !required.contains(&p.as_str()))
            {
                problems.push(format!("{path}: not every property is required"));
            }
        }
    });
    problems
}

#[tokio::test]
async fn openai_strict_declarations_use_only_documented_keywords() {
    let mut strict_tools = Vec::new();
    for (dialect, parameters, strict) in [
        (Dialect::OpenAi, "/function/parameters", "/function/strict"),
        (Dialect::OpenAiResponses, "/parameters", "/strict"),
    ] {
        for decl in declarations(dialect).await {
            let name = decl
                .pointer("/function/name")
                .or(decl.get("name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if decl.pointer(strict) != Some(&Value::Bool(true)) {
                continue;
            }
            let problems = strict_problems(decl.pointer(parameters).unwrap_or(&Value::Null));
            assert!(problems.is_empty(), "{name} ({dialect}): {problems:#?}");
            if dialect == Dialect::OpenAi {
                strict_tools.push(name);
            }
        }
    }
    // The tools that carried `minLength` are strict, with the limit in words instead.
    if !cfg!(all(feature = "agent", feature = "web")) {
        return;
    }
    for name in [
        "Agent",
        "SendUserMessage",
        "TodoWrite",
        "ToolSearch",
        "WebSearch",
    ] {
        assert!(
            strict_tools.iter().any(|t| t == name),
            "{name}: {strict_tools:?}"
        );
    }
    let agent = declarations(Dialect::OpenAi)
        .await
        .into_iter()
        .find(|d| d["function"]["name"] == "Agent")
        .unwrap_or_default();
    assert_eq!(
        agent["function"]["parameters"]["properties"]["prompt"]["description"],
        "The task for the agent to perform (constraint: at least 1 character)"
    );
}

#[tokio::test]
async fn gemini_declarations_have_no_empty_objects_or_unknown_keywords() {
    let mut without = Vec::new();
    for decl in declarations(Dialect::Gemini).await {
        let name = decl["name"].as_str().unwrap_or_default().to_owned();
        let Some(parameters) = decl.get("parameters") else {
            without.push(name);
            continue;
        };
        let properties = parameters["properties"].as_object();
        assert!(properties.is_some_and(|p| !p.is_empty()), "{name}: {decl}");
        each_schema(parameters, "", &mut |obj, path| {
            for key in obj.keys() {
                assert!(
                    GEMINI_KEYWORDS.contains(&key.as_str()),
                    "{name}{path}: `{key}` is not in Gemini's subset"
                );
            }
            if let Some(Value::Object(props)) = obj.get("properties") {
                assert!(!props.is_empty(), "{name}{path}: empty properties");
            }
        });
    }
    let expected: &[&str] = if cfg!(all(feature = "agent", feature = "v2-todo")) {
        &["EnterPlanMode", "TaskList", "TeamDelete"]
    } else {
        &[]
    };
    for name in expected {
        assert!(without.iter().any(|t| t == name), "{name}: {without:?}");
    }
}

#[cfg(all(feature = "fs", feature = "lsp"))]
#[tokio::test]
async fn one_based_fields_say_minimum_1() {
    let fields = [("LSP", "line"), ("LSP", "character"), ("Read", "offset")];
    for (dialect, pointer) in [
        (Dialect::Anthropic, "/input_schema"),
        (Dialect::Mcp, "/inputSchema"),
        (Dialect::OpenAi, "/function/parameters"),
        (Dialect::OpenAiResponses, "/parameters"),
        (Dialect::Gemini, "/parameters"),
    ] {
        let decls = declarations(dialect).await;
        for (tool, field) in fields {
            let decl = decls
                .iter()
                .find(|d| d.pointer("/function/name").or(d.get("name")) == Some(&json!(tool)))
                .unwrap_or_else(|| panic!("no {tool} in {dialect}"));
            let schema = decl
                .pointer(&format!("{pointer}/properties/{field}"))
                .unwrap_or_else(|| panic!("no {field} in {tool} ({dialect}): {decl}"));
            assert_eq!(schema["minimum"], 1, "{tool}.{field} ({dialect}): {schema}");
        }
    }
}

/// The peers directory when the provider SDKs are installed in it (`cargo xtask peers`);
/// `None` after saying why, or a failure with `AGENT_TOOLS_REQUIRE_PEERS=1`.
fn sdk_peers() -> Option<PathBuf> {
    let dir = test_support::peers::dir()?;
    let missing: Vec<&str> = ["openai", "google/genai", "anthropic", "mcp"]
        .into_iter()
        .filter(|p| !dir.join("py").join(p).join("__init__.py").is_file())
        .collect();
    let what = format!(
        "the Python SDKs {missing:?} in {} (run `cargo xtask peers`)",
        dir.join("py").display()
    );
    test_support::peers::require(&what, missing.is_empty()).then_some(dir)
}

#[tokio::test]
async fn provider_sdks_accept_every_declaration() {
    let Some(peers) = sdk_peers() else { return };
    let mut all = Map::new();
    for dialect in Dialect::ALL {
        all.insert(
            dialect.to_string(),
            Value::Array(declarations(dialect).await),
        );
    }
    // Beside them, what each provider refuses, to show the check can fail.
    let reject = json!({
        "anthropic": [{"name": "T", "input_schema": {"type": "object"}, "inputSchema": {}}],
        "openai": [{"type": "function", "function": {"name": "T", "parameters": {}, "strictly": true}}],
        "openai-responses": [{"type": "function", "function": {"name": "T"}},
                             {"type": "custom", "name": "T",
                              "format": {"type": "grammar", "syntax": "peg", "definition": "x"}}],
        "gemini": [{"name": "T", "parameters": {"type": "object", "properties": {}}},
                   {"name": "U", "parameters": {"type": "object", "properties": {"a": {"type": "string", "const": "x"}}}}],
        "mcp": [{"name": "T", "inputSchema": {"type": "string"}}],
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/provider_sdks.py");
    let mut child = Command::new("python3")
        .arg(&script)
        .env("PYTHONPATH", peers.join("py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(
            json!({"accept": all, "reject": reject})
                .to_string()
                .as_bytes(),
        )
        .expect("write the declarations");
    let output = child.wait_with_output().expect("python3 output");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.trim().is_empty(),
        "declarations the SDKs judged otherwise:\n{stdout}"
    );
}
