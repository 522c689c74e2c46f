//! The `search` settings of the search index, and what `doctor` shows of it (on every
//! system; the index itself is Linux's, see `index/`).

use std::path::{Path, PathBuf};

use tool_core::{SettingsLayer, ToolError};

/// When the index is built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IndexMode {
    /// On the first Grep or Glob of a long-lived session, for trees of at least the
    /// threshold (`"auto"`, the default)
    #[default]
    Auto,
    /// Never: every query scans (`"off"`)
    Off,
    /// At session start, whatever the tree's size (`"eager"`)
    Eager,
}

/// The `search` settings: when to index and within what budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSettings {
    /// `search.index`
    pub mode: IndexMode,
    /// `search.autoThresholdMB`: in `auto` mode, trees with fewer bytes of searchable
    /// files are scanned (default 32 MB: below it a scan takes a few tens of milliseconds)
    pub auto_min_bytes: u64,
    /// `search.diskBudgetMB`: the saved index may take at most this much (default 4096)
    pub disk_budget_bytes: u64,
    /// `search.memoryBudgetMB`: building may hold at most about this much (default 2048);
    /// a larger tree is scanned
    pub memory_budget_bytes: u64,
    /// `search.notifications`: whether a long-lived session may keep its index fresh by
    /// file-system notifications (default true). False makes every query validate its
    /// scope first, as on the network and FUSE file systems that are recognised: for one
    /// that is not, whose changes made elsewhere send no notification
    pub notifications: bool,
}

pub(crate) const MB: u64 = 1024 * 1024;

impl Default for IndexSettings {
    fn default() -> Self {
        IndexSettings {
            mode: IndexMode::Auto,
            auto_min_bytes: 32 * MB,
            disk_budget_bytes: 4096 * MB,
            memory_budget_bytes: 2048 * MB,
            notifications: true,
        }
    }
}

/// The saved index takes about this share of the bytes it covers, building about this
/// much memory (measured on the Linux tree; the budgets are checked against them).
pub(crate) const DISK_SHARE: f64 = 0.35;
pub(crate) const MEMORY_SHARE: f64 = 0.45;

impl IndexSettings {
    /// The `search` section of the settings layers, later layers winning key by key.
    /// Errors name the file and the key.
    pub fn from_layers(layers: &[SettingsLayer]) -> Result<IndexSettings, ToolError> {
        let mut out = IndexSettings::default();
        for layer in layers {
            let Some(section) = layer.settings.other.get("search") else {
                continue;
            };
            let bad = |message: String| ToolError::Settings {
                path: layer.path.clone(),
                message,
            };
            let Some(map) = section.as_object() else {
                return Err(bad("`search` must be an object".to_owned()));
            };
            for (key, value) in map {
                match key.as_str() {
                    "index" => {
                        out.mode = match value.as_str() {
                            Some("auto") => IndexMode::Auto,
                            Some("off") => IndexMode::Off,
                            Some("eager") => IndexMode::Eager,
                            _ => {
                                return Err(bad(format!(
                                    "search.index must be \"auto\", \"off\" or \"eager\", not {value}"
                                )));
                            }
                        }
                    }
                    "autoThresholdMB" | "diskBudgetMB" | "memoryBudgetMB" => {
                        let Some(n) = value.as_u64() else {
                            return Err(bad(format!(
                                "search.{key} must be a whole number of megabytes, not {value}"
                            )));
                        };
                        let bytes = n.saturating_mul(MB);
                        match key.as_str() {
                            "autoThresholdMB" => out.auto_min_bytes = bytes,
                            "diskBudgetMB" => out.disk_budget_bytes = bytes,
                            _ => out.memory_budget_bytes = bytes,
                        }
                    }
                    "notifications" => {
                        let Some(on) = value.as_bool() else {
                            return Err(bad(format!(
                                "search.notifications must be true or false, not {value}"
                            )));
                        };
                        out.notifications = on;
                    }
                    other => {
                        return Err(bad(format!(
                            "unknown key search.{other} (known: index, autoThresholdMB, diskBudgetMB, memoryBudgetMB, notifications)"
                        )));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Where the index of a session stands, for `agent-tools doctor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStatus {
    /// `ready`, `loading`, `building`, `not started`, `not used` or `failed`
    pub state: String,
    /// What it covers, or why it is not used
    pub detail: String,
    /// Faults met (queue overflows, unreadable files, rebuilt files), most recent last
    pub notes: Vec<String>,
    /// The saved index file
    pub file: PathBuf,
    /// Queries this session answered from the index
    pub answered: u64,
}

/// The saved index of the project at `root` (canonical) under `state_dir`.
pub fn index_file(state_dir: &Path, root: &Path) -> PathBuf {
    let key = tool_core::sha256_hex(root.as_os_str().as_encoded_bytes());
    state_dir
        .join("search-index")
        .join(format!("{}.idx", &key[..32]))
}

#[cfg(not(target_os = "linux"))]
mod unsupported {
    //! Other systems: no index; every query scans.

    use std::path::Path;

    use tool_core::{ToolContext, ToolContextBuilder, ToolError};

    use super::{IndexSettings, IndexStatus, index_file};

    fn unsupported(state_dir: &Path, root: &Path) -> IndexStatus {
        IndexStatus {
            state: "not used".to_owned(),
            detail: "the search index is built on Linux only; the scan answers".to_owned(),
            notes: Vec::new(),
            file: index_file(state_dir, root),
            answered: 0,
        }
    }

    /// Installs nothing: the index is Linux's.
    pub fn install_index(
        builder: ToolContextBuilder,
        _root: &Path,
        _state_dir: &Path,
        _settings: IndexSettings,
        _long_lived: bool,
    ) -> ToolContextBuilder {
        builder
    }

    /// No index on this system.
    pub fn index_status(_ctx: &ToolContext) -> Option<IndexStatus> {
        None
    }

    /// No index on this system.
    pub fn rebuild_index(root: &Path, state_dir: &Path, _settings: IndexSettings) -> IndexStatus {
        unsupported(state_dir, root)
    }

    /// No index on this system.
    pub fn saved_index_status(root: &Path, state_dir: &Path) -> IndexStatus {
        unsupported(state_dir, root)
    }

    /// Removes a saved index if one was copied here.
    pub fn drop_index(root: &Path, state_dir: &Path) -> Result<bool, ToolError> {
        let file = index_file(state_dir, root);
        match std::fs::remove_file(&file) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(ToolError::io(&file, e)),
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub use unsupported::{drop_index, index_status, install_index, rebuild_index, saved_index_status};
