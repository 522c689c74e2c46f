//! Tool profiles per model family: the same engine under the tool vocabulary each family's
//! models were trained on.
//!
//! A profile replaces built-ins with thin adapters ([`adapter::Adapter`]) that keep the
//! built-in's validation, permission check (a profile's tool answers to the rules of the
//! built-ins it stands for, see [`tool_core::Tool::checked_as`]), sandbox, read ledger,
//! output budget and spill; only names, input shapes and result texts change. Tools with no
//! counterpart in a family stay under their own names.

mod adapter;
mod codex;
mod gemini;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use tool_core::Tool;

pub(crate) use adapter::{Adapter, Mapping};

/// A model family's tool vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Profile {
    /// The reference agent's tools (Read, Edit, Bash, ...): the default.
    #[default]
    Claude,
    /// codex's tools for OpenAI's GPT-5 and codex models: `exec_command`, `write_stdin`,
    /// `update_plan`, `view_image`.
    Codex,
    /// Gemini CLI's tools for Gemini models: `read_file`, `replace`, `run_shell_command`, ...
    Gemini,
}
impl tool_core::ServiceType for Profile {}

impl Profile {
    /// Every profile, the default first.
    pub const ALL: [Profile; 3] = [Profile::Claude, Profile::Codex, Profile::Gemini];

    /// The name used by `--profile` and the `toolProfile` setting.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Claude => "claude",
            Profile::Codex => "codex",
            Profile::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Profile {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Profile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown tool profile `{s}`; use one of: claude, codex, gemini"))
    }
}

/// The built-ins taken out of a pool by `profile`, and the tools put in their place.
pub(crate) fn apply(profile: Profile, tools: Vec<Arc<dyn Tool>>) -> Vec<Arc<dyn Tool>> {
    let (removed, added): (&[&str], Vec<Arc<dyn Tool>>) = match profile {
        Profile::Claude => return tools,
        Profile::Codex => (codex::REPLACED, codex::tools(&tools)),
        Profile::Gemini => (gemini::REPLACED, gemini::tools(&tools)),
    };
    let mut out: Vec<Arc<dyn Tool>> = tools
        .into_iter()
        .filter(|t| !removed.contains(&t.name()))
        .collect();
    out.extend(added);
    out
}

/// The built-in named `name` among `tools`.
pub(crate) fn builtin<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> Option<&'a Arc<dyn Tool>> {
    tools.iter().find(|t| t.name() == name)
}

/// `mapping` over the built-in it names, when that built-in is compiled in.
pub(crate) fn adapt<M: Mapping>(
    tools: &[Arc<dyn Tool>],
    inner: &str,
    mapping: M,
) -> Option<Arc<dyn Tool>> {
    builtin(tools, inner).map(|t| Arc::new(Adapter::new(mapping, Arc::clone(t))) as Arc<dyn Tool>)
}
