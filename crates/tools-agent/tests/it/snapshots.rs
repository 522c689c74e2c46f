//! Snapshots of every tool's schema and description.

#[tokio::test]
async fn schemas_and_descriptions() {
    for tool in tools_agent::tools() {
        let description = tool.description(None).await;
        insta::assert_json_snapshot!(
            format!("schema-{}", tool.name()),
            serde_json::json!({
                "name": tool.name(),
                "aliases": tool.aliases(),
                "deferred": tool.is_deferred(),
                "description": description,
                "input_schema": tool.input_schema(),
            })
        );
    }
}
