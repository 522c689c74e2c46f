//! Every tool's declaration in every dialect, snapshotted; every schema has an object root
//! and no `$ref`. `cargo xtask schemas` regenerates the snapshots.

use registry::ToolRegistry;
use tool_core::{Dialect, has_refs, tool_declaration};

#[tokio::test]
async fn schema_snapshots_every_tool_every_dialect() {
    let registry = ToolRegistry::new();
    for tool in registry.base_tools() {
        let description = tool.description(None).await;
        let schema = tool.input_schema();
        assert_eq!(schema["type"], "object", "{}", tool.name());
        assert!(!has_refs(schema), "{} has $ref", tool.name());
        for dialect in Dialect::ALL {
            let decl = tool_declaration(
                tool.name(),
                &description,
                schema,
                tool.annotations(),
                dialect,
            );
            assert!(!has_refs(&decl), "{} {dialect}", tool.name());
            insta::assert_json_snapshot!(format!("{}-{dialect}", tool.name()), decl);
        }
    }
}
