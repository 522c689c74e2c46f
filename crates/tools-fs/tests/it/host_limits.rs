//! Limits a host sets with `tools_fs::install`: Read's default page, Glob's result count and
//! Grep's default head limit follow them, and a call's own `limit`/`head_limit` still wins.

use serde_json::json;
use tool_core::ToolContext;
use tools_fs::FsLimits;

use crate::Fixture;

fn limited(fx: &Fixture, limits: FsLimits) -> ToolContext {
    tools_fs::install(
        ToolContext::builder(fx.root()).state_dir(fx.root().join(".state")),
        limits,
    )
    .build()
}

#[test]
fn host_limits_bound_what_read_glob_and_grep_return() {
    let lines: String = (1..=50).map(|i| format!("line {i}\\n")).collect();
    let fx = Fixture::new(&[
        &format!("big.txt = {lines}"),
        "a.rs = fn a() {}",
        "b.rs = fn b() {}",
        "c.rs = fn c() {}",
    ]);
    let ctx = limited(
        &fx,
        FsLimits {
            read_lines: 5,
            glob_max_results: 2,
            grep_head_limit: 1,
        },
    );

    let read = fx.call_tool(&ctx, "Read", &json!({"file_path": "{root}/big.txt"}));
    assert!(!read.is_error, "{}", read.text());
    assert!(read.text().contains("line 5"), "{}", read.text());
    assert!(!read.text().contains("line 6\n"), "{}", read.text());
    // The call's own limit wins over the host's default.
    let more = fx.call_tool(
        &ctx,
        "Read",
        &json!({"file_path": "{root}/big.txt", "offset": 1, "limit": 8}),
    );
    assert!(more.text().contains("line 8"), "{}", more.text());

    let glob = fx.call(&ctx, &json!({"pattern": "*.rs"}));
    assert_eq!(glob.data["numFiles"], 2, "{}", glob.text());
    assert_eq!(glob.data["truncated"], true, "{}", glob.text());

    let grep = fx.call_tool(&ctx, "Grep", &json!({"pattern": "fn"}));
    assert_eq!(grep.data["numFiles"], 1, "{}", grep.text());
    let all = fx.call_tool(&ctx, "Grep", &json!({"pattern": "fn", "head_limit": 0}));
    assert_eq!(all.data["numFiles"], 3, "{}", all.text());

    // Zero counts as one; without `install` the defaults hold.
    let zero = limited(
        &fx,
        FsLimits {
            glob_max_results: 0,
            ..FsLimits::default()
        },
    );
    assert_eq!(
        fx.call(&zero, &json!({"pattern": "*.rs"})).data["numFiles"],
        1
    );
    assert_eq!(
        fx.call(&fx.context(), &json!({"pattern": "*.rs"})).data["numFiles"],
        3
    );
    assert_eq!(FsLimits::default().read_lines, 2000);
}
