//! Read-only classification of simple commands (reference §3.5): the commands that change
//! nothing and may run without asking and alongside other calls.

use crate::parse::{SimpleCommand, Word};

/// Commands that are read-only with any arguments.
const ANY_ARGS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "wc",
    "stat",
    "strings",
    "hexdump",
    "od",
    "nl",
    "id",
    "uname",
    "free",
    "df",
    "du",
    "locale",
    "groups",
    "nproc",
    "basename",
    "dirname",
    "realpath",
    "cut",
    "paste",
    "tr",
    "column",
    "tac",
    "rev",
    "fold",
    "expand",
    "unexpand",
    "fmt",
    "comm",
    "cmp",
    "numfmt",
    "readlink",
    "diff",
    "true",
    "false",
    "sleep",
    "which",
    "type",
    "expr",
    "test",
    "[",
    "[[",
    "getconf",
    "seq",
    "tsort",
    "pr",
    "cal",
    "uptime",
    "echo",
    "pwd",
    "whoami",
    "ls",
    "cd",
    "file",
    "grep",
    "egrep",
    "fgrep",
    "sha256sum",
    "sha1sum",
    "sha512sum",
    "md5sum",
    "base64",
    "ps",
    "pgrep",
    "lsof",
    "netstat",
    "ss",
    "man",
    "help",
    "printf",
];

/// git subcommands that only read (first word after `git`).
const GIT_READ: &[&str] = &[
    "diff",
    "log",
    "show",
    "shortlog",
    "status",
    "blame",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge-base",
    "rev-parse",
    "rev-list",
    "describe",
    "cat-file",
    "for-each-ref",
    "grep",
    "count-objects",
    "name-rev",
    "check-ignore",
    "var",
    "whatchanged",
];

/// git options that run programs or write files whatever the subcommand.
const GIT_BAD_FLAGS: &[&str] = &[
    "-c",
    "--config-env",
    "--exec-path",
    "--git-dir",
    "--work-tree",
    "--output",
    "-o",
    "--ext-diff",
    "--upload-pack",
    "--exec",
    "--open-files-in-pager",
    "-O",
];

/// `gh` read-only subcommand pairs.
const GH_READ: &[(&str, &[&str])] = &[
    ("pr", &["view", "list", "diff", "checks", "status"]),
    ("issue", &["view", "list", "status"]),
    ("repo", &["view"]),
    ("run", &["list", "view"]),
    ("auth", &["status"]),
    ("release", &["list", "view"]),
    ("workflow", &["list", "view"]),
    ("label", &["list"]),
    ("search", &["repos", "issues", "prs", "commits", "code"]),
];

fn flag_is(arg: &str, names: &[&str]) -> bool {
    names.iter().any(|n| {
        arg == *n
            || (n.starts_with("--") && arg.starts_with(&format!("{n}=")))
            || (n.len() == 2
                && n.starts_with('-')
                && !n.starts_with("--")
                && arg.starts_with(n)
                && !arg.starts_with("--"))
    })
}

fn any_flag(args: &[&str], names: &[&str]) -> bool {
    args.iter().any(|a| flag_is(a, names))
}

/// Whether one simple command (wrappers already stripped) only reads.
pub fn is_read_only_command(cmd: &SimpleCommand) -> bool {
    if !cmd.assignments.is_empty()
        || cmd.redirects.iter().any(|r| r.writes_file())
        || cmd.words.iter().any(|w: &Word| !w.literal || w.glob)
    {
        return false;
    }
    let words: Vec<&str> = cmd.words.iter().map(|w| w.text.as_str()).collect();
    let Some((&name, args)) = words.split_first() else {
        return false;
    };
    match name {
        "find" => !any_flag(
            args,
            &[
                "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ],
        ),
        "sort" => !any_flag(args, &["-o", "--output", "--compress-program"]),
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        "tree" => !any_flag(args, &["-o"]),
        "date" => !any_flag(args, &["-s", "--set"]),
        "hostname" => args.iter().all(|a| a.starts_with('-')),
        "jq" => !any_flag(
            args,
            &["-f", "--from-file", "--rawfile", "--slurpfile", "-L"],
        ),
        "rg" => !any_flag(args, &["--pre", "--pre-glob", "-z", "--search-zip"]),
        "fd" | "fdfind" => !any_flag(args, &["-x", "--exec", "-X", "--exec-batch"]),
        "xargs" => false,
        "node" | "python" | "python3" | "cargo" | "rustc" | "go" | "npm" => {
            matches!(args, ["--version"] | ["-v"] | ["-V"] | ["version"])
                && !(name == "npm" && args == ["version"])
        }
        "docker" => matches!(args.first(), Some(&"ps") | Some(&"images")),
        "git" => git_read_only(args),
        "gh" => {
            args.len() >= 2
                && GH_READ
                    .iter()
                    .any(|(group, subs)| *group == args[0] && subs.contains(&args[1]))
        }
        _ => ANY_ARGS.contains(&name),
    }
}

fn git_read_only(args: &[&str]) -> bool {
    // Global options before the subcommand: only harmless ones.
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        if !matches!(
            *a,
            "--no-pager" | "--no-optional-locks" | "-P" | "--literal-pathspecs"
        ) {
            return false;
        }
        i += 1;
    }
    let Some(&sub) = args.get(i) else {
        return false;
    };
    let rest = &args[i + 1..];
    if any_flag(rest, GIT_BAD_FLAGS) {
        return false;
    }
    let positional: Vec<&&str> = rest.iter().filter(|a| !a.starts_with('-')).collect();
    match sub {
        s if GIT_READ.contains(&s) => true,
        "reflog" => matches!(positional.first(), None | Some(&&"show")),
        "stash" => matches!(positional.first(), Some(&&"list") | Some(&&"show")),
        "worktree" => matches!(positional.first(), Some(&&"list")),
        "remote" => matches!(
            positional.first(),
            None | Some(&&"show") | Some(&&"get-url")
        ),
        "config" => {
            any_flag(
                rest,
                &["--get", "--get-all", "--get-regexp", "--list", "-l"],
            ) && !any_flag(
                rest,
                &[
                    "--add",
                    "--unset",
                    "--unset-all",
                    "--replace-all",
                    "--edit",
                    "-e",
                    "--rename-section",
                    "--remove-section",
                ],
            )
        }
        "branch" => {
            !any_flag(
                rest,
                &[
                    "-d",
                    "-D",
                    "--delete",
                    "-m",
                    "-M",
                    "--move",
                    "-c",
                    "-C",
                    "--copy",
                    "-f",
                    "--force",
                    "-u",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                ],
            ) && (positional.is_empty() || any_flag(rest, &["--list", "-l"]))
        }
        "tag" => {
            !any_flag(
                rest,
                &[
                    "-d", "--delete", "-a", "-s", "-u", "-f", "--force", "-m", "-F",
                ],
            ) && (positional.is_empty() || any_flag(rest, &["--list", "-l"]))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn check(cmd: &str, expected: bool) {
        let script = parse(cmd).unwrap_or_default();
        let got = !script.commands.is_empty()
            && script.issues.is_empty()
            && script.commands.iter().all(is_read_only_command);
        assert_eq!(got, expected, "{cmd}");
    }

    #[test]
    fn classifies_commands() {
        for ro in [
            "ls -la",
            "cat a b | grep x | wc -l",
            "git status",
            "git diff HEAD~1 -- src",
            "git log --oneline -5",
            "git --no-pager show HEAD",
            "git branch",
            "git branch -a",
            "git tag --list 'v*'",
            "git config --get user.name",
            "git stash list",
            "gh pr view 12",
            "find . -name '*.rs'",
            "echo hello",
            "docker ps",
            "node --version",
            "sort -u file",
            "rg foo src",
            "ls 2>&1",
            "ls > /dev/null",
        ] {
            check(ro, true);
        }
        for rw in [
            "rm -rf x",
            "git commit -m x",
            "git push",
            "git -c core.pager='sh -c id' diff",
            "git diff --output=/tmp/x",
            "git branch -D main",
            "git branch newbranch",
            "git tag v1",
            "find . -delete",
            "find . -name '*.o' -exec rm {} +",
            "sort -o out in",
            "cat README > ~/.bashrc",
            "echo $HOME",
            "ls *.rs",
            "FOO=bar ls",
            "echo $(id)",
            "xargs rm",
            "npm install",
            "npm version",
            "hostname evil",
            "sed -i s/a/b/ f",
            "rg --pre sh x",
            "gh pr merge 1",
            "uniq in out",
            "echo hi & echo bye",
        ] {
            check(rw, false);
        }
    }
}
