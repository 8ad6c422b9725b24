//! Canonical tool names (`--tool-names canonical`): one vocabulary for the
//! tools of all the CLIs, so a UI can treat "read a file" the same
//! whoever did it. The native name is never lost: it goes into the
//! TOOL_CALL_START's `metadata.nativeName`. Each CLI's tools are listed here
//! with their canonical names (a dialect's table, in [`crate::dialect`],
//! names its list).

/// Every CLI's table, each a list of native names (and item types that are
/// tool calls) with their canonical names.
pub static ALL: &[&[(&str, &str)]] = &[GEMINI, CODEX, CLAUDE, QWEN, COPILOT, OPENCODE, ACP];

/// Gemini CLI's tools.
pub static GEMINI: &[(&str, &str)] = &[
    ("read_file", "file_read"),
    ("read_many_files", "file_read"),
    ("write_file", "file_write"),
    ("replace", "file_edit"),
    ("edit", "file_edit"),
    ("run_shell_command", "shell"),
    ("glob", "search_files"),
    ("grep_search", "search_text"),
    ("search_file_content", "search_text"),
    ("grep", "search_text"),
    ("list_directory", "list_dir"),
    ("ls", "list_dir"),
    ("google_web_search", "web_search"),
    ("web_fetch", "web_fetch"),
    ("write_todos", "todo"),
    ("invoke_agent", "subagent"),
    ("generalist", "subagent"),
    ("codebase_investigator", "subagent"),
    ("cli_help", "subagent"),
    ("save_memory", "memory"),
];

/// Codex's tool names and the item types that are tool calls (the
/// app-server dialect names its items the same way).
pub static CODEX: &[(&str, &str)] = &[
    ("view_image", "file_read"),
    ("apply_patch", "file_edit"),
    ("file_change", "file_edit"),
    ("shell", "shell"),
    ("local_shell", "shell"),
    ("exec_command", "shell"),
    ("command_execution", "shell"),
    ("web_search", "web_search"),
    ("update_plan", "todo"),
    ("todo_list", "todo"),
    ("spawn_agent", "subagent"),
];

/// Claude Code's tools.
pub static CLAUDE: &[(&str, &str)] = &[
    ("Read", "file_read"),
    ("NotebookRead", "file_read"),
    ("Write", "file_write"),
    ("Edit", "file_edit"),
    ("MultiEdit", "file_edit"),
    ("NotebookEdit", "file_edit"),
    ("Bash", "shell"),
    ("BashOutput", "shell"),
    ("KillShell", "shell"),
    ("KillBash", "shell"),
    ("Glob", "search_files"),
    ("Grep", "search_text"),
    ("LS", "list_dir"),
    ("WebSearch", "web_search"),
    ("WebFetch", "web_fetch"),
    ("TodoWrite", "todo"),
    ("TaskCreate", "todo"),
    ("TaskUpdate", "todo"),
    ("TaskList", "todo"),
    ("Task", "subagent"),
    ("Agent", "subagent"),
];

/// Qwen Code's tools (Gemini CLI's names, and its own).
pub static QWEN: &[(&str, &str)] = &[
    ("read_file", "file_read"),
    ("read_many_files", "file_read"),
    ("write_file", "file_write"),
    ("edit", "file_edit"),
    ("notebook_edit", "file_edit"),
    ("run_shell_command", "shell"),
    ("glob", "search_files"),
    ("grep_search", "search_text"),
    ("list_directory", "list_dir"),
    ("web_search", "web_search"),
    ("web_fetch", "web_fetch"),
    ("todo_write", "todo"),
    ("agent", "subagent"),
    ("task", "subagent"),
    ("save_memory", "memory"),
];

/// GitHub Copilot CLI's tools.
pub static COPILOT: &[(&str, &str)] = &[
    ("view", "file_read"),
    ("create", "file_write"),
    ("str_replace_editor", "file_edit"),
    ("bash", "shell"),
    ("read_bash", "shell"),
    ("write_bash", "shell"),
    ("stop_bash", "shell"),
    ("list_bash", "shell"),
    ("grep", "search_text"),
    ("glob", "search_files"),
    ("web_fetch", "web_fetch"),
    ("update_todo", "todo"),
    ("task", "subagent"),
];

/// OpenCode's tools.
pub static OPENCODE: &[(&str, &str)] = &[
    ("read", "file_read"),
    ("write", "file_write"),
    ("edit", "file_edit"),
    ("multiedit", "file_edit"),
    ("patch", "file_edit"),
    ("apply_patch", "file_edit"),
    ("bash", "shell"),
    ("glob", "search_files"),
    ("grep", "search_text"),
    ("list", "list_dir"),
    ("websearch", "web_search"),
    ("webfetch", "web_fetch"),
    ("todowrite", "todo"),
    ("todoread", "todo"),
    ("task", "subagent"),
];

/// The Agent Client Protocol's tool kinds (a tool call there is named by
/// its `kind`); `delete`, `move` and `think` keep their names, and `other`
/// is a word of the vocabulary: a tool nothing more is known of.
pub static ACP: &[(&str, &str)] = &[
    ("read", "file_read"),
    ("edit", "file_edit"),
    ("execute", "shell"),
    ("search", "search_text"),
    ("fetch", "web_fetch"),
    ("other", "other"),
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
    let known = ALL
        .iter()
        .flat_map(|table| table.iter())
        .find(|(name, _)| *name == native);
    if let Some((_, canon)) = known {
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
            ("TaskCreate", "todo"),
            ("TaskUpdate", "todo"),
            ("TaskList", "todo"),
            ("todo_list", "todo"),
            ("Task", "subagent"),
            ("invoke_agent", "subagent"),
            ("generalist", "subagent"),
            ("spawn_agent", "subagent"),
            ("todo_write", "todo"),
            ("agent", "subagent"),
            ("grep_search", "search_text"),
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
    fn a_native_tool_name_means_one_thing() {
        let all: Vec<(&str, &str)> = ALL.iter().flat_map(|t| t.iter().copied()).collect();
        for (native, canon) in &all {
            for (n, c) in &all {
                assert!(n != native || c == canon, "{native} is {canon} and {c}");
            }
        }
    }
}
