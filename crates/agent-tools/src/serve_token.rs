//! The bearer token `serve --http` requires when no `--token-file` or `--token-env` names
//! one: a random token kept in `<state dir>/serve-token`, readable by its owner only. A local
//! listener without a token would let every account on the machine act as the person who
//! started it (read their files, run commands as them), so there is none unless a person
//! passes `--no-auth`.
//!
//! The file is made once, with mode 0600 from its creation (never widened, then narrowed),
//! and reused by later servers so that a client's configuration keeps working; deleting it
//! rotates the token. A file another account owns or could write, or that others can read,
//! is never used: it is refused, or replaced when only its permissions are wrong.

use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};

/// The token file's name in the state directory.
pub const TOKEN_FILE: &str = "serve-token";

/// Bytes of randomness in a token (printed as twice as many hex digits).
const TOKEN_BYTES: usize = 32;

/// The token of `<state_dir>/serve-token`, made when the file is missing or unusable, and
/// the file's path.
pub fn token(state_dir: &Path) -> Result<(String, PathBuf)> {
    let path = state_dir.join(TOKEN_FILE);
    tool_core::check_private(&path, "the serve token").map_err(|e| anyhow!(e))?;
    if let Some(token) = existing(&path)? {
        return Ok((token, path));
    }
    std::fs::create_dir_all(state_dir)
        .with_context(|| format!("cannot create the state directory {}", state_dir.display()))?;
    let token = random_hex(TOKEN_BYTES)?;
    write_private(&path, &format!("{token}\n"))?;
    Ok((token, path))
}

/// The token in `path` when the file is this account's, readable by it alone, and holds
/// one token; `None` when it is missing or must be replaced.
fn existing(path: &Path) -> Result<Option<String>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(anyhow!("{}: {e}", path.display())),
    };
    if !meta.is_file() || meta.mode() & 0o077 != 0 || meta.uid() != tool_core::path::current_uid() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the serve token {}", path.display()))?;
    let token = text.trim();
    Ok(
        (token.len() >= 2 * TOKEN_BYTES && token.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| token.to_owned()),
    )
}

/// Writes `text` to a new file beside `path`, created with mode 0600, then renames it over
/// `path`.
fn write_private(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(tool_core::temp_file_name(std::ffi::OsStr::new(TOKEN_FILE)));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow!(
            "cannot write the serve token {}: {e}",
            path.display()
        ));
    }
    Ok(())
}

/// `bytes` random bytes from the kernel, as lowercase hex.
fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .context("cannot read random bytes from /dev/urandom for the serve token")?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn made_private_reused_and_replaced_when_others_can_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let (first, path) = token(&state).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let (again, _) = token(&state).unwrap();
        assert_eq!(again, first);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let (third, _) = token(&state).unwrap();
        assert_ne!(third, first);
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let err = token(&state).unwrap_err().to_string();
        assert!(err.contains("writable by"), "{err}");
    }
}
