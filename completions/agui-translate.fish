complete -c agui-translate -s f -l from -d 'The CLI that wrote the input stream; `auto` tells it from the first records that only one CLI writes' -r -f -a "auto\t'Tell the CLI from the stream itself'
gemini\t'Gemini CLI: `gemini -p … --output-format stream-json`'
codex\t'OpenAI Codex CLI: `codex exec --json …` (current and legacy formats)'
claude\t'Claude Code: `claude -p … --output-format stream-json --verbose`'"
complete -c agui-translate -l format -d 'How events are framed on standard output' -r -f -a "ndjson\t'One JSON object per line'
sse\t'Server-sent events: `data: <json>` and a blank line, as the official AG-UI encoder frames them'"
complete -c agui-translate -l thread-id -d 'Use this threadId instead of the session id found in the input' -r
complete -c agui-translate -l run-id -d 'Use this runId instead of the derived one (later runs in the same output get `ID-2`, `ID-3`, ...)' -r
complete -c agui-translate -l tool-names -d 'Tool names on TOOL_CALL_START: each CLI\'s own, or one vocabulary for all of them (`shell`, `file_read`, `file_edit`, `mcp`, …; the native name goes into `metadata.nativeName`)' -r -f -a "native\t'Each CLI\'s own names (`Bash`, `run_shell_command`, `command_execution`)'
canonical\t'One vocabulary for all CLIs (`shell`, `file_read`, `mcp`, …); the native name goes into `metadata.nativeName`'"
complete -c agui-translate -l stats -d 'At the end, print a summary on stderr: lines and bytes read, events written by type, unknown records, bad lines, runs, time' -r -f -a "text\t'Lines for people'
json\t'One JSON object'"
complete -c agui-translate -l strict -d 'Treat anything the translator does not know (a record type, a block type, a field shape) as an error: reported on stderr with its line number, exit status 1. For CI runs against a new CLI version. Without it, such records go out as RAW events and are only counted'
complete -c agui-translate -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agui-translate -s V -l version -d 'Print version'
