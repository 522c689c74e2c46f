//! Input schemas: generated once from the input type, inlined with an object root, and
//! lowered to what each model provider accepts.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// The JSON Schema of `T`, ready for every dialect: draft 2020-12, no `$schema`, no `$ref`
/// or `$defs` (subschemas inlined), no root title, non-standard integer formats removed, and
/// an object root.
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut value = generator.into_root_schema_for::<T>().to_value();
    normalize(&mut value);
    value
}

/// Cleans a schema in place: the root becomes an object schema with `properties`, and
/// titles and integer formats go.
pub fn normalize(schema: &mut Value) {
    if let Value::Object(root) = schema {
        root.remove("$schema");
        root.remove("title");
        // The tool's description says what the input struct's doc comment would.
        root.remove("description");
        root.remove("$defs");
        root.remove("definitions");
        root.insert("type".into(), Value::String("object".into()));
        root.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    } else {
        *schema = json!({"type": "object", "properties": {}});
    }
    walk(schema, &mut |obj| {
        if let Some(Value::String(f)) = obj.get("format")
            && (f.starts_with("int") || f.starts_with("uint"))
        {
            obj.remove("format");
        }
    });
}

/// Calls `f` on every object schema in `schema`, parents before children.
fn walk(schema: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    match schema {
        Value::Object(obj) => {
            f(obj);
            for (key, child) in obj.iter_mut() {
                match key.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions" => {
                        if let Value::Object(props) = child {
                            for sub in props.values_mut() {
                                walk(sub, f);
                            }
                        }
                    }
                    "items" | "additionalProperties" | "not" | "contains" => walk(child, f),
                    "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                        if let Value::Array(list) = child {
                            for sub in list {
                                walk(sub, f);
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        Value::Array(list) => {
            for sub in list {
                walk(sub, f);
            }
        }
        _ => {}
    }
}

/// A model provider's flavour of tool declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Anthropic Messages API: `{name, description, input_schema}`
    Anthropic,
    /// OpenAI function calling: `{type: "function", function: {name, description, parameters, strict}}`
    OpenAi,
    /// Gemini function declarations (OpenAPI 3.0 subset): `{name, description, parameters}`
    Gemini,
    /// MCP `tools/list` entries: `{name, description, inputSchema, annotations}`
    Mcp,
}

impl Dialect {
    /// Every dialect, in a stable order.
    pub const ALL: [Dialect; 4] = [
        Dialect::Anthropic,
        Dialect::OpenAi,
        Dialect::Gemini,
        Dialect::Mcp,
    ];

    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Anthropic => "anthropic",
            Dialect::OpenAi => "openai",
            Dialect::Gemini => "gemini",
            Dialect::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "anthropic" => Ok(Dialect::Anthropic),
            "openai" => Ok(Dialect::OpenAi),
            "gemini" => Ok(Dialect::Gemini),
            "mcp" => Ok(Dialect::Mcp),
            other => Err(format!(
                "unknown dialect `{other}`: expected one of anthropic, openai, gemini, mcp"
            )),
        }
    }
}

/// Hints about a tool that do not depend on the input, for MCP `annotations`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// The tool never changes its environment
    pub read_only: bool,
    /// The tool may destroy data (meaningful when not read-only)
    pub destructive: bool,
    /// Calling twice with the same input has no further effect
    pub idempotent: bool,
    /// The tool reaches outside this machine (the web, a remote service)
    pub open_world: bool,
}

/// The declaration of one tool in a dialect.
pub fn tool_declaration(
    name: &str,
    description: &str,
    schema: &Value,
    annotations: ToolAnnotations,
    dialect: Dialect,
) -> Value {
    match dialect {
        Dialect::Anthropic => json!({
            "name": name,
            "description": description,
            "input_schema": schema,
        }),
        Dialect::Mcp => json!({
            "name": name,
            "description": description,
            "inputSchema": schema,
            "annotations": {
                "readOnlyHint": annotations.read_only,
                "destructiveHint": annotations.destructive,
                "idempotentHint": annotations.idempotent,
                "openWorldHint": annotations.open_world,
            },
        }),
        Dialect::OpenAi => {
            let (parameters, strict) = match openai_strict(schema) {
                Some(strict) => (strict, true),
                None => (schema.clone(), false),
            };
            json!({
                "type": "function",
                "function": {
                    "name": name,
                    "description": description,
                    "parameters": parameters,
                    "strict": strict,
                },
            })
        }
        Dialect::Gemini => json!({
            "name": name,
            "description": description,
            "parameters": gemini_schema(schema),
        }),
    }
}

/// The schema in OpenAI's strict form, or `None` when it does not qualify.
///
/// Strict mode needs every object closed (`additionalProperties: false`) and every property
/// listed in `required`; optional properties are expressed as nullable, which the input
/// parser reads back as "not given". Open maps (`additionalProperties` a schema or `true`)
/// disqualify the schema, and then it is sent non-strict.
pub fn openai_strict(schema: &Value) -> Option<Value> {
    let mut out = schema.clone();
    let mut qualifies = true;
    walk(&mut out, &mut |obj| {
        obj.remove("default");
        obj.remove("format");
        if let Some(one_of) = obj.remove("oneOf") {
            obj.insert("anyOf".into(), one_of);
        }
        let is_object = obj.get("type").is_some_and(|t| {
            t == "object"
                || t.as_array()
                    .is_some_and(|a| a.iter().any(|x| x == "object"))
        });
        if !is_object {
            return;
        }
        if !matches!(obj.get("additionalProperties"), Some(Value::Bool(false))) {
            qualifies = false;
            return;
        }
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let Some(Value::Object(props)) = obj.get_mut("properties") else {
            return;
        };
        let mut all = Vec::new();
        for (key, prop) in props.iter_mut() {
            all.push(Value::String(key.clone()));
            if !required.contains(key) {
                make_nullable(prop);
            }
        }
        obj.insert("required".into(), Value::Array(all));
    });
    qualifies.then_some(out)
}

fn make_nullable(prop: &mut Value) {
    let Value::Object(obj) = prop else { return };
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type") == Some(&json!("null")))
        {
            branches.push(json!({"type": "null"}));
        }
        return;
    }
    match obj.get_mut("type") {
        Some(Value::String(t)) => {
            let t = t.clone();
            obj.insert("type".into(), json!([t, "null"]));
        }
        Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
            types.push(json!("null"));
        }
        _ => {}
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

/// Keys Gemini's OpenAPI 3.0 subset understands; everything else is dropped.
const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "properties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
];

/// The schema in Gemini's OpenAPI 3.0 subset: no type arrays (`nullable` instead), no
/// `const` (`enum` instead), no `additionalProperties`, `default` or `$`-keywords.
pub fn gemini_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    gemini_lower(&mut out);
    out
}

fn gemini_lower(schema: &mut Value) {
    let Value::Object(obj) = schema else { return };
    if let Some(Value::Array(branches)) = obj.remove("oneOf") {
        obj.insert("anyOf".into(), Value::Array(branches));
    }
    // Lower the branches first, so a nested union of constants is already an enum when
    // this level merges a single non-null branch into itself.
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        for branch in branches.iter_mut() {
            gemini_lower(branch);
        }
    }
    // A union of constants is an enum.
    if let Some(Value::Array(branches)) = obj.get("anyOf") {
        let consts: Option<Vec<Value>> = branches
            .iter()
            .map(|b| match b.get("enum") {
                Some(Value::Array(one)) if one.len() == 1 => Some(one[0].clone()),
                _ => b.get("const").cloned(),
            })
            .collect();
        if let Some(values) = consts {
            obj.remove("anyOf");
            obj.insert("type".into(), json!("string"));
            obj.insert("enum".into(), Value::Array(values));
        }
    }
    // A union with null is a nullable schema.
    if let Some(Value::Array(branches)) = obj.get("anyOf") {
        let non_null: Vec<Value> = branches
            .iter()
            .filter(|b| b.get("type") != Some(&json!("null")))
            .cloned()
            .collect();
        if non_null.len() < branches.len() {
            obj.insert("nullable".into(), Value::Bool(true));
            if non_null.len() == 1 {
                obj.remove("anyOf");
                if let Value::Object(inner) = &non_null[0] {
                    for (k, v) in inner {
                        obj.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
            } else {
                obj.insert("anyOf".into(), Value::Array(non_null));
            }
        }
    }
    if let Some(c) = obj.remove("const") {
        obj.insert("enum".into(), json!([c]));
        obj.entry("type").or_insert_with(|| json!("string"));
    }
    if let Some(Value::Array(types)) = obj.get("type").cloned() {
        let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if non_null.len() < types.len() {
            obj.insert("nullable".into(), Value::Bool(true));
        }
        match non_null.first() {
            Some(t) => obj.insert("type".into(), (*t).clone()),
            None => obj.insert("type".into(), json!("string")),
        };
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::String(f)) = obj.get("format")
        && f != "enum"
        && f != "date-time"
    {
        obj.remove("format");
    }
    obj.retain(|k, _| GEMINI_KEYS.contains(&k.as_str()));
    for (key, child) in obj.iter_mut() {
        match key.as_str() {
            "properties" => {
                if let Value::Object(props) = child {
                    for sub in props.values_mut() {
                        gemini_lower(sub);
                    }
                }
            }
            "items" => gemini_lower(child),
            _ => {}
        }
    }
}

/// True when `schema` (or any subschema) contains a `$ref`, `$defs` or `definitions`.
pub fn has_refs(schema: &Value) -> bool {
    match schema {
        Value::Object(obj) => obj
            .iter()
            .any(|(k, v)| k == "$ref" || k == "$defs" || k == "definitions" || has_refs(v)),
        Value::Array(list) => list.iter().any(has_refs),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;

    /// An example input
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// A pattern
        pattern: String,
        /// How many
        limit: Option<u32>,
        /// Nested items
        items: Vec<Item>,
        /// A mode
        mode: Option<Mode>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        #[serde(default)]
        all: bool,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mode {
        /// First
        Content,
        /// Second
        FilesWithMatches,
    }

    #[test]
    fn generated_schema_is_inline_object() {
        let s = schema_for::<Example>();
        assert_eq!(s["type"], "object");
        assert!(!has_refs(&s), "{s:#}");
        assert!(s.get("$schema").is_none());
        assert!(s.get("title").is_none());
        assert!(s["properties"]["limit"].get("format").is_none());
        insta::assert_json_snapshot!(s);
    }

    #[test]
    fn dialects_lower() {
        let s = schema_for::<Example>();
        for d in Dialect::ALL {
            let decl = tool_declaration("Example", "An example", &s, ToolAnnotations::default(), d);
            assert!(!has_refs(&decl));
            insta::assert_json_snapshot!(format!("example-{d}"), decl);
        }
    }

    #[test]
    fn openai_strict_needs_closed_objects() {
        let open = json!({"type": "object", "properties": {"m": {"type": "object"}}});
        assert!(openai_strict(&open).is_none());
        let closed = json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 3}},
            "required": ["a"],
            "additionalProperties": false
        });
        let strict = openai_strict(&closed).unwrap_or_default();
        assert_eq!(strict["required"], json!(["a", "b"]));
        assert_eq!(
            strict["properties"]["b"]["type"],
            json!(["integer", "null"])
        );
        assert!(strict["properties"]["b"].get("default").is_none());
    }

    #[test]
    fn gemini_has_no_type_arrays_or_additional_properties() {
        let s = schema_for::<Example>();
        let g = gemini_schema(&s);
        let text = g.to_string();
        assert!(!text.contains("additionalProperties"), "{g:#}");
        assert!(!text.contains("\"const\""), "{g:#}");
        assert!(!text.contains("[\"integer\",\"null\"]"), "{g:#}");
    }

    #[test]
    fn dialect_names_round_trip() {
        for d in Dialect::ALL {
            assert_eq!(d.as_str().parse::<Dialect>(), Ok(d));
        }
        assert!("klingon".parse::<Dialect>().is_err());
    }
}
