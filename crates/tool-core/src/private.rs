//! The state directory and the files in it that decide what sessions may do (the user
//! settings, the approvals of project files, the serve token) must be the person's own: a
//! file another account owns or can write could have been planted to widen a session (a
//! `bypassPermissions` mode, the sandbox off). As ssh does with its `StrictModes`,
//! [`check_private`] refuses such a path, and one whose parent directories another account
//! could replace, with an error that names the path, the problem and the fix.
//!
//! The rule, per entry: owned by this account or by root, and not writable by group or
//! others. Parent directories are checked up to the home directory when the path lies in it
//! (as ssh does), else up to `/`; a parent writable by others passes when its sticky bit is
//! set (`/tmp`): there, no other account can rename or remove what this account owns. A path
//! that does not exist yet is judged by its nearest existing ancestor and the parents above.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::ToolError;

/// The sticky bit of a directory's mode.
const STICKY: u32 = 0o1000;

/// Refuses `path` (described as `what`, such as "the state directory") when it, or a
/// directory above it, could have been planted by another account (see the module
/// documentation). A missing path passes when its existing ancestors do.
pub fn check_private(path: &Path, what: &str) -> Result<(), ToolError> {
    let uid = crate::path::current_uid();
    let home = crate::path::home_dir().map(|h| crate::path::canonicalize_lenient(&h));
    let full = crate::path::canonicalize_lenient(path);
    let mut first = true;
    for dir in full.ancestors() {
        let meta = match std::fs::metadata(dir) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(ToolError::io(dir, e)),
        };
        let role = if first && dir == full {
            what.to_owned()
        } else {
            format!("a directory above {what} {}", path.display())
        };
        first = false;
        check_entry(dir, &meta, uid, &role)?;
        if home.as_deref() == Some(dir) {
            break;
        }
    }
    Ok(())
}

/// Checks one existing entry against the rule.
fn check_entry(
    path: &Path,
    meta: &std::fs::Metadata,
    uid: u32,
    role: &str,
) -> Result<(), ToolError> {
    let owner = meta.uid();
    if owner != uid && owner != 0 {
        return Err(ToolError::fatal(format!(
            "{} ({role}) belongs to the account with uid {owner}, not to this one (uid {uid}): another account could have planted what it holds, so agent-tools does not use it. Remove it, or set AGENT_TOOLS_HOME to a directory of your own",
            path.display()
        )));
    }
    let mode = meta.mode();
    let writable = mode & 0o022;
    if writable != 0 && !(meta.is_dir() && mode & STICKY != 0) {
        let who = match writable {
            0o020 => "its group",
            0o002 => "every account",
            _ => "its group and every account",
        };
        return Err(ToolError::fatal(format!(
            "{} ({role}) is writable by {who} (mode {:o}): whoever can write it could change what agent-tools sessions may do, so agent-tools does not use it. Run `chmod go-w {}` if its content is yours, or remove it",
            path.display(),
            mode & 0o7777,
            crate::shell_quote(&path.to_string_lossy())
        )));
    }
    Ok(())
}

/// The state directory's files that must be private: the directory itself and
/// the user settings and the approvals (`state_config_files`).
pub fn check_state_dir(state_dir: &Path) -> Result<(), ToolError> {
    check_private(state_dir, "the state directory")?;
    let [settings, trust] = crate::trust::state_config_files(state_dir);
    check_private(&settings, "the user settings")?;
    check_private(&trust, "the approvals of project files")
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[track_caller]
    fn check(path: &Path, expected: Option<&str>) {
        match (check_private(path, "the state directory"), expected) {
            (Ok(()), None) => {}
            (Err(e), Some(needle)) => assert!(e.to_string().contains(needle), "{e}"),
            (got, _) => panic!("{}: {got:?}, expected {expected:?}", path.display()),
        }
    }

    #[test]
    fn writable_by_others_is_refused_and_sticky_parents_pass() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        chmod(&root, 0o700);
        let state = root.join("state");
        std::fs::create_dir(&state).unwrap();
        chmod(&state, 0o700);
        check(&state, None);
        check(&state.join("missing/deeper"), None);
        let settings = state.join("settings.json");
        std::fs::write(&settings, "{}").unwrap();
        chmod(&settings, 0o600);
        check(&settings, None);
        chmod(&settings, 0o666);
        check(
            &settings,
            Some("writable by its group and every account (mode 666)"),
        );
        chmod(&settings, 0o620);
        check(&settings, Some("writable by its group (mode 620)"));
        chmod(&settings, 0o644);
        chmod(&state, 0o777);
        check(&settings, Some("a directory above the state directory"));
        check(&state, Some("chmod go-w"));
        // A sticky directory writable by everyone (as /tmp) is a safe parent.
        chmod(&state, 0o1777);
        check(&settings, None);
        check(&state.join("new"), None);
        chmod(&state, 0o700);
    }

    #[test]
    fn another_owner_is_refused() {
        if crate::path::current_uid() != 0 {
            eprintln!("skipped: changing a file's owner needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().canonicalize().unwrap().join("state");
        std::fs::create_dir(&state).unwrap();
        chmod(&state, 0o700);
        std::os::unix::fs::chown(&state, Some(65534), Some(65534)).unwrap();
        check(&state, Some("belongs to the account with uid 65534"));
        check(&state.join("settings.json"), Some("a directory above"));
    }
}
