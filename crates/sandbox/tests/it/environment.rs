//! The environment of sandboxed commands: a variable that looks like a secret, set in the
//! host's environment, is absent in the jail and in the workspace sandbox, whichever way a
//! command looks for it; an allow-listed one is there; `sandbox.allowEnv` passes what it
//! names (a secret-looking name only when named exactly).

use sandbox::{Profile, SandboxSettings};

use crate::{Site, in_child, mechanisms};

/// Secret-looking variables the host has (set in the child run).
const SECRETS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "GITHUB_TOKEN",
    "AGENT_TOOLS_SERVE_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "DB_PASSWORD",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "npm_config__authToken",
    "SLACK_BOT_TOKEN",
    "x_api_key",
    "MY_SECRET",
    "NODE_AUTH_TOKEN",
];

/// Ways to look at the environment (`{N}` a variable's name).
const LOOKS: &[&str] = &[
    "env",
    "printenv",
    "printenv {N}",
    "cat /proc/self/environ | tr '\\0' '\\n'",
    "tr '\\0' '\\n' < /proc/$$/environ",
    "set",
    "declare -p",
    "export -p",
    "echo \"${{N}-}\"",
    "/usr/bin/python3 -c \"import os; print(dict(os.environ))\"",
    "perl -e 'print join(\"\\n\", map { \"$_=$ENV{$_}\" } keys %ENV)'",
    "sh -c 'env'",
];

fn value_of(name: &str) -> String {
    format!("value-of-{name}-7c1e")
}

#[tokio::test]
async fn secret_variables_do_not_reach_commands() {
    let vars: Vec<(String, String)> = SECRETS
        .iter()
        .map(|n| ((*n).to_owned(), value_of(n)))
        .collect();
    let env: Vec<(&str, &str)> = vars
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain([("LC_MESSAGES", "C"), ("NODE_OPTIONS", "--no-warnings")])
        .collect();
    if !in_child("environment::secret_variables_do_not_reach_commands", &env) {
        return;
    }
    let mut variants = 0;
    for (label, settings) in mechanisms() {
        let site = Site::new();
        for profile in [Profile::Jail, Profile::Workspace] {
            let launch = site.prepare(profile, &settings);
            for name in SECRETS {
                for look in LOOKS {
                    let command = look.replace("{N}", name);
                    let ran = site.run(&launch, &command).await;
                    variants += 1;
                    assert!(
                        !ran.text().contains(&value_of(name)),
                        "{label} {profile:?}: `{command}` saw {name}: {}",
                        ran.text()
                    );
                }
            }
            // What is allow-listed is there; what is not, is not.
            let ran = site.run(&launch, "env").await;
            assert!(
                ran.text().contains("LC_MESSAGES=C"),
                "{label}: {}",
                ran.text()
            );
            assert!(ran.text().contains("PATH="), "{label}: {}", ran.text());
            assert!(
                !ran.text().contains("NODE_OPTIONS"),
                "{label}: {}",
                ran.text()
            );
        }
        // allowEnv: a prefix passes ordinary names only; an exact name passes a secret.
        let allowing = SandboxSettings {
            allow_env: vec![
                "NODE_*".to_owned(),
                "GITHUB_TOKEN".to_owned(),
                "*".to_owned(),
            ],
            ..settings.clone()
        };
        let launch = site.prepare(Profile::Workspace, &allowing);
        let ran = site.run(&launch, "env").await;
        let text = ran.text();
        assert!(
            text.contains("NODE_OPTIONS=--no-warnings"),
            "{label}: {text}"
        );
        assert!(text.contains(&value_of("GITHUB_TOKEN")), "{label}: {text}");
        for name in SECRETS.iter().filter(|n| **n != "GITHUB_TOKEN") {
            assert!(
                !text.contains(&value_of(name)),
                "{label}: {name} passed: {text}"
            );
        }
    }
    assert!(variants >= 50, "{variants}");
}

#[tokio::test]
async fn the_jail_has_its_own_tmpdir() {
    if !in_child(
        "environment::the_jail_has_its_own_tmpdir",
        &[("TMPDIR", "/var/tmp")],
    ) {
        return;
    }
    for (label, settings) in mechanisms() {
        let site = Site::new();
        let jail = site.prepare(Profile::Jail, &settings);
        let ran = site.run(&jail, "echo \"$TMPDIR\"").await;
        assert_eq!(ran.text(), "/tmp\n", "{label}");
        let workspace = site.prepare(Profile::Workspace, &settings);
        let ran = site.run(&workspace, "echo \"$TMPDIR\"").await;
        assert_eq!(ran.text(), "/var/tmp\n", "{label}");
    }
}
