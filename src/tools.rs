//! Canonical tool names (`--tool-names canonical`): one vocabulary for the
//! tools of all three CLIs, so a UI can treat "read a file" the same
//! whoever did it. The native name is never lost: it goes into the
//! TOOL_CALL_START's `metadata.nativeName`.

/// Native names by canonical name. One table for every CLI: Claude Code
/// names first, then Gemini CLI, then Codex CLI (tool and item names).
pub const TABLE: &[(&str, &[&str])] = &[
    (
        "file_read",
        &[
            "Read",
            "NotebookRead",
            "read_file",
            "read_many_files",
            "view_image",
        ],
    ),
    ("file_write", &["Write", "write_file"]),
    (
        "file_edit",
        &[
            "Edit",
            "MultiEdit",
            "NotebookEdit",
            "replace",
            "edit",
            "apply_patch",
            "file_change",
        ],
    ),
    (
        "shell",
        &[
            "Bash",
            "BashOutput",
            "KillShell",
            "KillBash",
            "run_shell_command",
            "shell",
            "local_shell",
            "exec_command",
            "command_execution",
        ],
    ),
    ("search_files", &["Glob", "glob"]),
    (
        "search_text",
        &["Grep", "grep_search", "search_file_content", "grep"],
    ),
    ("list_dir", &["LS", "list_directory", "ls"]),
    (
        "web_search",
        &["WebSearch", "google_web_search", "web_search"],
    ),
    ("web_fetch", &["WebFetch", "web_fetch"]),
    (
        "todo",
        &["TodoWrite", "write_todos", "update_plan", "todo_list"],
    ),
    (
        "subagent",
        &[
            "Task",
            "Agent",
            "invoke_agent",
            "generalist",
            "codebase_investigator",
            "cli_help",
            "spawn_agent",
        ],
    ),
    ("memory", &["save_memory"]),
];

/// A tool name in the canonical vocabulary.
#[derive(Debug, PartialEq, Eq)]
pub struct Canonical<'a> {
    /// The canonical name; a name the table does not know stays as it is.
    pub name: &'a str,
    /// For MCP tools: the server and the tool's own name.
    pub mcp: Option<(&'a str, &'a str)>,
}

/// Map a native tool name. MCP tools are `mcp__SERVER__TOOL` (Claude Code),
/// `mcp:SERVER/TOOL` (as the Codex translator names them) or
/// `SERVER__TOOL` (Gemini CLI's names for MCP tools).
pub fn canonical(native: &str) -> Canonical<'_> {
    if let Some((canon, _)) = TABLE.iter().find(|(_, names)| names.contains(&native)) {
        return Canonical {
            name: canon,
            mcp: None,
        };
    }
    let mcp = native
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .or_else(|| {
            native
                .strip_prefix("mcp:")
                .and_then(|rest| rest.split_once('/'))
        })
        .or_else(|| native.split_once("__"))
        .filter(|(server, tool)| !server.is_empty() && !tool.is_empty());
    match mcp {
        Some(pair) => Canonical {
            name: "mcp",
            mcp: Some(pair),
        },
        None => Canonical {
            name: native,
            mcp: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_across_clis() {
        for (native, want) in [
            ("Read", "file_read"),
            ("read_file", "file_read"),
            ("Bash", "shell"),
            ("run_shell_command", "shell"),
            ("command_execution", "shell"),
            ("replace", "file_edit"),
            ("file_change", "file_edit"),
            ("google_web_search", "web_search"),
            ("TodoWrite", "todo"),
            ("todo_list", "todo"),
            ("Task", "subagent"),
            ("invoke_agent", "subagent"),
            ("generalist", "subagent"),
            ("spawn_agent", "subagent"),
        ] {
            assert_eq!(
                canonical(native),
                Canonical {
                    name: want,
                    mcp: None
                },
                "{native}"
            );
        }
    }

    #[test]
    fn mcp_tools_keep_server_and_tool() {
        for native in [
            "mcp__files__read_doc",
            "mcp:files/read_doc",
            "files__read_doc",
        ] {
            assert_eq!(
                canonical(native),
                Canonical {
                    name: "mcp",
                    mcp: Some(("files", "read_doc"))
                },
                "{native}"
            );
        }
    }

    #[test]
    fn unknown_names_stay() {
        assert_eq!(canonical("ExitPlanMode").name, "ExitPlanMode");
        assert_eq!(canonical("__x").name, "__x");
    }

    #[test]
    fn no_native_name_is_listed_twice() {
        let mut all: Vec<&str> = TABLE.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        let len = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), len);
    }
}
