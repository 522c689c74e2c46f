//! Programs steered by files in the project: git runs what a repository's configuration and
//! hooks name (`core.fsmonitor`, `core.pager`, textconv and filter drivers, `alias.*`,
//! `include.path`, `.git/hooks/*`), cargo and rustc run what `rust-toolchain.toml`
//! (`path`) and `.cargo/config.toml` (`runner`, `rustc-wrapper`, `[alias]`, …) name. A
//! command could have planted those files, so a line that runs such a program where they
//! name something is unresolved: refused under a deny rule naming Bash, asked otherwise
//! (the read-only jail contains what they run when a person has not been asked).
//!
//! What is read is bounded: the files of the nearest repository and the toolchain and cargo
//! configuration files of the working directory's ancestors, each at most 256 KiB.

use std::path::{Path, PathBuf};

use shell_analysis::{Analysis, Unresolved, base_name};

/// The largest configuration file read.
const MAX_FILE: u64 = 256 * 1024;

/// git configuration keys (lower case; `*` is any subsection) that never make git run a
/// program, as an ordinary repository's configuration holds them.
const INERT_GIT: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.safecrlf",
    "core.eol",
    "core.quotepath",
    "core.abbrev",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.untrackedcache",
    "core.commitgraph",
    "core.checkstat",
    "core.trustctime",
    "core.compression",
    "core.preloadindex",
    "core.whitespace",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.mirror",
    "remote.*.tagopt",
    "remote.*.prune",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "branch.*.description",
    "user.name",
    "user.email",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "fetch.prune",
    "merge.conflictstyle",
    "diff.renames",
    "diff.algorithm",
    "status.showuntrackedfiles",
    "submodule.*.active",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "extensions.refstorage",
    "gc.auto",
    "index.version",
    "feature.manyfiles",
    "lfs.repositoryformatversion",
    "commit.gpgsign",
    "tag.gpgsign",
];

/// Sections whose every key is inert.
const INERT_GIT_SECTIONS: &[&str] = &["color", "advice", "log", "column", "rerere", "pack"];

/// Configuration files of the package managers that can change what runs a script
/// (`script-shell` in `.npmrc`, `yarnPath` in `.yarnrc.yml`, pnpm's hooks).
const PACKAGE_CONFIG: &[&str] = &[".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs"];

/// Reads the package.json scripts the line runs (`npm test` runs `pretest`, `test` and
/// `posttest`) and adds them to the analysis as shell code, so deny rules see what they
/// run; a script that cannot be read that way stays unresolved.
pub fn package_scripts(analysis: &mut Analysis, cwd: &Path) {
    let scripts = analysis.take_package_scripts();
    if scripts.is_empty() || !analysis.cd_targets().is_empty() {
        return;
    }
    let mut manifest = None;
    for dir in cwd.ancestors() {
        if PACKAGE_CONFIG.iter().any(|f| dir.join(f).exists()) {
            // Configuration that may say what runs the scripts: leave them unresolved.
            return;
        }
        let p = dir.join("package.json");
        if p.exists() {
            manifest = Some(p);
            break;
        }
    }
    let parsed: Option<serde_json::Value> = match &manifest {
        None => None,
        Some(p) => match read_small(p).map(|t| serde_json::from_str(&t)) {
            Some(Ok(v)) => Some(v),
            // Unreadable, too large or not JSON: unresolved.
            _ => return,
        },
    };
    for p in scripts {
        let defined = |name: &str| -> Option<String> {
            parsed
                .as_ref()?
                .get("scripts")?
                .get(name)?
                .as_str()
                .map(str::to_owned)
        };
        let code: Vec<(String, String)> = match defined(&p.script) {
            // The package manager reports the missing script and runs nothing.
            None => Vec::new(),
            Some(main) => {
                let mut code = Vec::new();
                if let Some(pre) = defined(&format!("pre{}", p.script)) {
                    code.push((format!("pre{}", p.script), pre));
                }
                code.push((p.script.clone(), main));
                if let Some(post) = defined(&format!("post{}", p.script)) {
                    code.push((format!("post{}", p.script), post));
                }
                code
            }
        };
        analysis.include_package_script(&p, &code);
    }
}

/// Adds to `analysis` what files in the project make its programs run, for a line that
/// runs in `cwd`.
pub fn check(analysis: &mut Analysis, cwd: &Path) {
    let programs: Vec<String> = analysis
        .candidates()
        .iter()
        .filter_map(|c| {
            let first = c.command().words.first().filter(|w| w.known)?;
            Some(base_name(&first.text).to_owned())
        })
        .collect();
    let mut found: Vec<Unresolved> = Vec::new();
    if programs.iter().any(|n| n == "git")
        && let Some(why) = git_steered(cwd)
    {
        found.push(Unresolved::new(why, "git"));
    }
    for name in &programs {
        if matches!(
            name.as_str(),
            "cargo"
                | "rustc"
                | "rustup"
                | "rustfmt"
                | "rustdoc"
                | "cargo-clippy"
                | "clippy-driver"
                | "cargo-fmt"
                | "rust-analyzer"
                | "rust-gdb"
                | "rust-lldb"
        ) && let Some(why) = rust_steered(cwd, name)
        {
            found.push(Unresolved::new(why, name));
        }
    }
    for u in found {
        analysis.add_issue(u.why.clone());
        analysis.add_unresolved(u);
    }
}

fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The git directory git would use from `cwd` (the nearest `.git` directory, the one a
/// `.git` file points to, or a bare repository), if any.
fn git_dir(cwd: &Path) -> Option<PathBuf> {
    for dir in cwd.ancestors() {
        let dot = dir.join(".git");
        if dot.is_dir() {
            return Some(dot);
        }
        if dot.is_file() {
            let text = read_small(&dot)?;
            let target = text.trim().strip_prefix("gitdir:")?.trim();
            return Some(dir.join(target));
        }
        if dir.join("HEAD").is_file()
            && dir.join("objects").is_dir()
            && dir.join("config").is_file()
        {
            return Some(dir.to_path_buf());
        }
    }
    None
}

/// Why git, run in `cwd`, may run a program the repository names.
fn git_steered(cwd: &Path) -> Option<String> {
    let dir = git_dir(cwd)?;
    let mut files = vec![dir.join("config"), dir.join("config.worktree")];
    let mut hook_dirs = vec![dir.join("hooks")];
    // A linked worktree's git directory has a `commondir` holding the shared config, and
    // the hooks git runs there.
    if let Some(common) = read_small(&dir.join("commondir")) {
        let common = dir.join(common.trim());
        files.push(common.join("config"));
        files.push(common.join("config.worktree"));
        hook_dirs.push(common.join("hooks"));
    }
    for file in files {
        if !file.exists() {
            continue;
        }
        let Some(text) = read_small(&file) else {
            return Some(format!(
                "`git` reads {}, which the check cannot read whole",
                file.display()
            ));
        };
        if let Some(key) = git_config_keys(&text)
            .into_iter()
            .find(|(k, v)| !inert_git_key(k, v))
            .map(|(k, _)| k)
        {
            return Some(format!(
                "`git` runs in a repository whose configuration ({}) sets `{key}`, which can make git run a program",
                file.display()
            ));
        }
    }
    for entries in hook_dirs.iter().filter_map(|h| std::fs::read_dir(h).ok()) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".sample") {
                continue;
            }
            return Some(format!(
                "`git` runs in a repository with the hook {}, which git runs",
                e.path().display()
            ));
        }
    }
    None
}

fn inert_git_key(key: &str, value: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    let generic = match parts.as_slice() {
        [section, _, name] => format!("{section}.*.{name}"),
        _ => key.to_owned(),
    };
    if parts
        .first()
        .is_some_and(|s| INERT_GIT_SECTIONS.contains(s))
    {
        return true;
    }
    // A remote's URL runs a program when it names a command transport.
    if (generic == "remote.*.url" || generic == "remote.*.pushurl" || generic == "submodule.*.url")
        && !value.contains("::")
    {
        return true;
    }
    INERT_GIT.contains(&key) || INERT_GIT.contains(&generic.as_str())
}

/// The `section.subsection.key` names of a git configuration file (lower-cased, the
/// subsection as written) with their values.
fn git_config_keys(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let header = rest.split(']').next().unwrap_or_default().trim();
            section = match header.split_once(char::is_whitespace) {
                Some((s, sub)) => format!(
                    "{}.{}",
                    s.to_ascii_lowercase(),
                    sub.trim().trim_matches('"')
                ),
                None => header.to_ascii_lowercase(),
            };
            // `[section] key = value` on the header line.
            let after = rest
                .split_once(']')
                .map(|(_, a)| a.trim())
                .unwrap_or_default();
            if !after.is_empty() {
                let (k, v) = after.split_once('=').unwrap_or((after, ""));
                out.push((
                    format!("{section}.{}", k.trim().to_ascii_lowercase()),
                    v.trim().to_owned(),
                ));
            }
            continue;
        }
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        out.push((
            format!("{section}.{}", k.trim().to_ascii_lowercase()),
            v.trim().to_owned(),
        ));
    }
    out
}

/// Why a rustup proxy or cargo, run in `cwd`, may run a program of the project.
fn rust_steered(cwd: &Path, name: &str) -> Option<String> {
    for dir in cwd.ancestors() {
        for file in ["rust-toolchain.toml", "rust-toolchain"] {
            let p = dir.join(file);
            if !p.exists() {
                continue;
            }
            let Some(text) = read_small(&p) else {
                return Some(format!(
                    "`{name}` reads {}, which the check cannot read whole",
                    p.display()
                ));
            };
            if toolchain_names_a_path(&text) {
                return Some(format!(
                    "`{name}` runs the toolchain {} names by path, a program of the project",
                    p.display()
                ));
            }
        }
        if name == "cargo" {
            for file in [".cargo/config.toml", ".cargo/config"] {
                let p = dir.join(file);
                if !p.exists() {
                    continue;
                }
                let Some(text) = read_small(&p) else {
                    return Some(format!(
                        "`cargo` reads {}, which the check cannot read whole",
                        p.display()
                    ));
                };
                if let Some(key) = cargo_program_key(&text) {
                    return Some(format!(
                        "`cargo` reads {}, whose `{key}` names a program cargo runs",
                        p.display()
                    ));
                }
            }
        }
    }
    None
}

/// Whether a `rust-toolchain.toml` (or `rust-toolchain`) names a toolchain by path, read
/// as rustup reads it (inline tables, quoted and escaped keys included). A legacy
/// `rust-toolchain` holding only a channel name is not TOML and names none; anything else
/// that does not parse counts as naming one: a wrong guess then costs a question.
fn toolchain_names_a_path(text: &str) -> bool {
    match text.parse::<toml::Table>() {
        Ok(doc) => match doc.get("toolchain") {
            None => false,
            Some(toml::Value::Table(t)) => t.contains_key("path"),
            // Not a table: rustup refuses the file; count it.
            Some(_) => true,
        },
        Err(_) => {
            let line = text.trim();
            !(line.lines().count() <= 1
                && line
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_')))
        }
    }
}

/// A key of a cargo configuration file that names a program (or an alias, which can run
/// one), found by parsing the file as cargo does: inline tables, dotted, quoted and
/// escaped keys all reach the same names. A file that does not parse counts as naming one
/// (cargo would refuse it anyway; a wrong guess then costs a question).
fn cargo_program_key(text: &str) -> Option<String> {
    const KEYS: &[&str] = &[
        "runner",
        "rustc",
        "rustc-wrapper",
        "rustc-workspace-wrapper",
        "rustdoc",
        "linker",
        "credential-provider",
        "global-credential-providers",
        "path",
    ];
    fn walk(table: &toml::Table, prefix: &str) -> Option<String> {
        for (key, value) in table {
            let name = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            if (prefix.is_empty() && key == "alias") || KEYS.contains(&key.as_str()) {
                return Some(name);
            }
            if let Some(inner) = value.as_table()
                && let Some(found) = walk(inner, &name)
            {
                return Some(found);
            }
        }
        None
    }
    match text.parse::<toml::Table>() {
        Ok(doc) => walk(&doc, ""),
        Err(_) => Some("(a file that does not parse as TOML)".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_repositories_are_inert() {
        let text = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n[remote \"origin\"]\n\turl = https://example.invalid/r.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n";
        assert!(
            git_config_keys(text)
                .iter()
                .all(|(k, v)| inert_git_key(k, v))
        );
        for planted in [
            "[core]\n\tfsmonitor = rm v\n",
            "[core]\n\tpager = sh\n",
            "[core]\n\thooksPath = .h\n",
            "[include]\n\tpath = x\n",
            "[diff \"x\"]\n\ttextconv = sh\n",
            "[alias]\n\tst = !rm v\n",
            "[remote \"o\"]\n\turl = ext::sh -c rm%20v\n",
            "[core] sshCommand = rm v\n",
        ] {
            assert!(
                git_config_keys(planted)
                    .iter()
                    .any(|(k, v)| !inert_git_key(k, v)),
                "{planted}"
            );
        }
    }

    #[test]
    fn cargo_keys_that_name_programs() {
        assert_eq!(cargo_program_key("[build]\njobs = 2\n"), None);
        assert!(cargo_program_key("[build]\nrustc-wrapper = \"./w\"\n").is_some());
        assert!(
            cargo_program_key("[target.x86_64-unknown-linux-gnu]\nrunner = \"./r\"\n").is_some()
        );
        assert!(cargo_program_key("[alias]\nb = \"build\"\n").is_some());
        assert!(cargo_program_key("build.rustc = \"./r\"\n").is_some());
        // Spellings cargo reads the same way.
        for planted in [
            "build = { rustc-wrapper = \"/tmp/w.sh\" }\n",
            "target = { x = { runner = \"./r\" } }\n",
            "alias = { b = \"build\" }\n",
            "[alias] # c\nfmt = \"run\"\n",
            "[\"alias\"]\nfmt = \"run\"\n",
            "[build]\n\"rustc\\u002dwrapper\" = \"./w\"\n",
            "[build\njobs = 2\n",
        ] {
            assert!(cargo_program_key(planted).is_some(), "{planted}");
        }
        assert_eq!(
            cargo_program_key("[build]\njobs = 2\n[term]\ncolor = \"always\"\n"),
            None
        );
    }

    #[test]
    fn toolchain_paths_in_every_spelling() {
        for plain in [
            "stable\n",
            "1.95.0",
            "[toolchain]\nchannel = \"stable\"\ncomponents = [\"clippy\"]\n",
        ] {
            assert!(!toolchain_names_a_path(plain), "{plain}");
        }
        for planted in [
            "[toolchain]\npath = \"/p\"\n",
            "toolchain = { path = \"/p\" }\n",
            "toolchain.path = \"/p\"\n",
            "[toolchain]\n\"p\\u0061th\" = \"/p\"\n",
            "[toolchain] # c\npath = \"/p\"\n",
            "[toolchain\npath = \"/p\"\n",
        ] {
            assert!(toolchain_names_a_path(planted), "{planted}");
        }
    }
}
