//! What a placeholder is: an empty directory, or a file with the content whoever loads it
//! expects. The `protect` module records each missing protected name with its shape (on
//! every system); the `placeholder` module (Linux, for bubblewrap) makes them.

use tool_core::path::EntryKind;

/// What a placeholder is: a file with this content, or an empty directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// File or directory
    pub kind: EntryKind,
    /// A file's content
    pub content: &'static [u8],
}

impl Shape {
    /// An empty file or directory.
    pub const fn empty(kind: EntryKind) -> Shape {
        Shape { kind, content: b"" }
    }

    /// The shape of a missing protected name: empty, except the JSON files, which hold an
    /// empty configuration, so that whoever loads them while the placeholder exists reads
    /// "nothing configured" rather than invalid JSON.
    pub fn name(name: &str, kind: EntryKind) -> Shape {
        let content: &'static [u8] = match name {
            ".mcp.json" => b"{\"mcpServers\": {}}\n",
            ".claude.json" => b"{}\n",
            _ => b"",
        };
        Shape { kind, content }
    }

    /// The shape of a missing entry of a git directory named `name`.
    pub fn git_entry(name: &str, kind: EntryKind) -> Shape {
        if name == "commondir" {
            Shape {
                kind,
                content: b".\n",
            }
        } else {
            Shape::empty(kind)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_read_as_nothing_configured() {
        for name in [".mcp.json", ".claude.json"] {
            let shape = Shape::name(name, EntryKind::File);
            let value: serde_json::Value =
                serde_json::from_slice(shape.content).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(value.is_object(), "{name}");
        }
        let mcp: serde_json::Value =
            serde_json::from_slice(Shape::name(".mcp.json", EntryKind::File).content)
                .unwrap_or_default();
        assert_eq!(mcp["mcpServers"], serde_json::json!({}));
        assert_eq!(Shape::name(".bashrc", EntryKind::File).content, b"");
        assert_eq!(
            Shape::git_entry("commondir", EntryKind::File).content,
            b".\n"
        );
    }
}
