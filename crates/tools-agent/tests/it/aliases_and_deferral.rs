//! What the model sees of each tool beside its schema and description (which the registry's
//! tests snapshot in every dialect): its aliases and whether it is deferred (announced by
//! name only, its schema loaded through ToolSearch).

/// Every tool of the crate: name, aliases, deferred.
const EXPECTED: &[(&str, &[&str], bool)] = &[
    ("Agent", &["Task"], false),
    ("AskUserQuestion", &[], true),
    ("Config", &[], true),
    ("CronCreate", &[], true),
    ("CronDelete", &[], true),
    ("CronList", &[], true),
    ("EnterPlanMode", &[], true),
    ("EnterWorktree", &[], true),
    ("ExitPlanMode", &[], false),
    ("ExitWorktree", &[], true),
    ("SendMessage", &[], true),
    ("SendUserMessage", &["Brief"], false),
    ("Skill", &[], false),
    ("TaskCreate", &[], true),
    ("TaskGet", &[], true),
    ("TaskList", &[], true),
    ("TaskUpdate", &[], true),
    ("TeamCreate", &[], true),
    ("TeamDelete", &[], true),
    ("TodoWrite", &[], true),
    ("ToolSearch", &[], false),
];

#[test]
fn aliases_and_deferral() {
    for tool in tools_agent::tools() {
        let (_, aliases, deferred) = EXPECTED
            .iter()
            .find(|(name, _, _)| *name == tool.name())
            .unwrap_or_else(|| panic!("{} is missing from EXPECTED", tool.name()));
        assert_eq!(tool.aliases(), *aliases, "{}", tool.name());
        assert_eq!(tool.is_deferred(), *deferred, "{}", tool.name());
    }
}
