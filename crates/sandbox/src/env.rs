//! The environment of sandboxed commands: an allow-list, not the host's whole environment.
//!
//! A command gets [`ALLOWED`] (and every `LC_*` locale variable) from the host, plus what
//! `sandbox.allowEnv` names: a name, or a prefix ending in `*`. A variable whose name looks
//! like a secret ([`is_secret_name`]: it contains `KEY`, `TOKEN`, `SECRET`, `PASSWORD` or
//! `CREDENTIAL`, or starts with `AGENT_TOOLS_`) passes only when `allowEnv` names it
//! exactly, never through a prefix. In the jail `TMPDIR` is `/tmp` (its private one).
//! Unsandboxed commands (a person approved running outside the sandbox) keep the host's
//! environment.

use std::ffi::OsString;

/// Variables every sandboxed command gets from the host, when set.
pub const ALLOWED: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
];

/// Parts of a name that mark a secret (compared case-insensitively).
const SECRET_PARTS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];

/// Whether a variable named `name` may hold a secret: it passes only when named exactly.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("AGENT_TOOLS_") || SECRET_PARTS.iter().any(|p| upper.contains(p))
}

/// Whether `name` passes `allow` (the settings' names and `PREFIX*` patterns).
fn allowed_by(name: &str, allow: &[String]) -> bool {
    allow.iter().any(|a| match a.strip_suffix('*') {
        Some(prefix) => !is_secret_name(name) && name.starts_with(prefix),
        None => a == name,
    })
}

/// The environment a sandboxed command gets from `vars` (the host's), sorted by name.
pub fn scrubbed(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    allow: &[String],
    jail: bool,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in vars {
        let (Ok(name), Ok(value)) = (name.into_string(), value.into_string()) else {
            continue;
        };
        let listed = ALLOWED.contains(&name.as_str()) || name.starts_with("LC_");
        if (!listed || is_secret_name(&name)) && !allowed_by(&name, allow) {
            continue;
        }
        out.push((name, value));
    }
    if jail {
        out.retain(|(n, _)| n != "TMPDIR");
        out.push(("TMPDIR".to_owned(), "/tmp".to_owned()));
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(host: &[(&str, &str)], allow: &[&str], jail: bool, expected: &[&str]) {
        let vars = host
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let allow: Vec<String> = allow.iter().map(|s| (*s).to_owned()).collect();
        let got: Vec<String> = scrubbed(vars, &allow, jail)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(got, expected, "{host:?} {allow:?}");
    }

    #[test]
    fn allow_list_and_secret_names() {
        let host = [
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("LC_ALL", "C"),
            ("ANTHROPIC_API_KEY", "k"),
            ("GITHUB_TOKEN", "t"),
            ("AGENT_TOOLS_SERVE_TOKEN", "s"),
            ("NODE_OPTIONS", "--x"),
            ("NODE_AUTH_TOKEN", "n"),
            ("db_password", "p"),
            ("AWS_SECRET_ACCESS_KEY", "a"),
            ("CARGO_HOME", "/c"),
        ];
        check(&host, &[], false, &["HOME=/h", "LC_ALL=C", "PATH=/bin"]);
        // A prefix never lets a secret-looking name through; an exact name does.
        check(
            &host,
            &["NODE_*", "CARGO_HOME"],
            false,
            &[
                "CARGO_HOME=/c",
                "HOME=/h",
                "LC_ALL=C",
                "NODE_OPTIONS=--x",
                "PATH=/bin",
            ],
        );
        check(
            &host,
            &["NODE_AUTH_TOKEN", "*"],
            false,
            &[
                "CARGO_HOME=/c",
                "HOME=/h",
                "LC_ALL=C",
                "NODE_AUTH_TOKEN=n",
                "NODE_OPTIONS=--x",
                "PATH=/bin",
            ],
        );
        check(
            &[("TMPDIR", "/var/t"), ("PATH", "/bin")],
            &[],
            true,
            &["PATH=/bin", "TMPDIR=/tmp"],
        );
        for name in [
            "api_key",
            "MY_TOKEN_FILE",
            "Secret",
            "PGPASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "AGENT_TOOLS_HOME",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "TERM", "NODE_OPTIONS", "LC_CTYPE"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }
}
