# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_agui_translate_global_optspecs
    string join \n f/from= thread-id= run-id= tool-names= agui-version= raw= no-user-messages format= strict q/quiet stats= j/jobs= h/help V/version
end

function __fish_agui_translate_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_agui_translate_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_agui_translate_using_subcommand
    set -l cmd (__fish_agui_translate_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c agui-translate -n "__fish_agui_translate_needs_command" -s f -l from -d 'The CLI that wrote the input stream; `auto` tells it from the first records that only one CLI writes' -r -f -a "auto\t''
gemini\t''
codex\t''
claude\t''
codex-app-server\t''
qwen\t''
copilot\t''
opencode\t''
acp\t''"
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l thread-id -d 'Use this threadId instead of the session id found in the input' -r
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l run-id -d 'Use this runId instead of the derived one (later runs in the same output get `ID-2`, `ID-3`, ..., across FILEs too); `run` gives a live run a fresh UUID v7 without it' -r
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l tool-names -d 'Tool names on TOOL_CALL_START: each CLI\'s own (`Bash`, `run_shell_command`), or one vocabulary for all of them (`shell`, `file_read`, `file_edit`, `mcp`, ...; the native name goes into `metadata.nativeName`)' -r -f -a "native\t''
canonical\t''"
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l agui-version -d 'The AG-UI release to write for: `1.0`, or `0.0` for clients built on `@ag-ui/core` 0.0.x (CopilotKit), whose schemas refuse or strip some 1.0 shapes; the 1.0 values are kept in the event\'s metadata' -r -f -a "1.0\t''
0.0\t''"
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l raw -d 'Which RAW events to write: `all` (nothing in the input is lost), `unknown` (only records that RAW is the only trace of: a record also translated into AG-UI events is not echoed), or `none`' -r -f -a "all\t''
unknown\t''
none\t''"
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l format -d 'How events are framed on standard output: one JSON object per line, or server-sent events (`data: <json>` and a blank line)' -r -f -a "ndjson\t''
sse\t''"
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l stats -d 'At the end, print a summary on stderr: lines and bytes read, events written by type, unknown records, bad lines, runs, time; `json` prints it as one JSON object' -r -f -a "text\t''
json\t''"
complete -c agui-translate -n "__fish_agui_translate_needs_command" -s j -l jobs -d 'Translate up to N FILEs at once, on N threads (default: the processors available, at most 8). The output is the same as with `-j 1`: each FILE\'s events, in the order of the FILEs' -r
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l no-user-messages -d 'Do not turn the prompt that Gemini CLI and older Codex CLIs echo into a user TEXT_MESSAGE (a front end that sent the prompt would show it twice); it stays in the output as RAW'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -l strict -d 'Treat anything the translator does not know (a record type, a block type, a field shape) as an error: reported on stderr with its line number, exit status 1; an empty input is exit status 3. For CI runs against a new CLI version. Without it, such records go out as RAW events and are only counted'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -s q -l quiet -d 'Do not report bad lines on stderr (they still go out as RAW events and still make the exit status 1)'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -s V -l version -d 'Print version'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -a "run" -d 'Start a CLI in its headless streaming mode and translate its output'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -a "check" -d 'Check AG-UI 1.0 streams (NDJSON or SSE): the schema of every event and the sequence rules'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -a "serve" -d 'Serve a CLI as an AG-UI endpoint: each POSTed RunAgentInput is a run, streamed back as server-sent events'
complete -c agui-translate -n "__fish_agui_translate_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l cli -d 'The CLI\'s executable (default: its name on PATH, or the AGUI_<CLI>_CLI environment variable)' -r -F
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -s m -l model -d 'The model the CLI uses' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l effort -d 'The reasoning effort, one of the CLI\'s own levels: claude\'s `--effort`, codex\'s `-c model_reasoning_effort=`, copilot\'s `--reasoning-effort`, opencode\'s `--variant` (over ACP chosen in the session, among the levels it offers for the model). gemini and qwen have none' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l max-turns -d 'Stop after this many agent turns (claude and qwen only: the others have no such flag)' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l cwd -d 'Run the CLI in this directory' -r -F
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l resume -d 'Continue an earlier session (multi-turn)' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l allow-tool -d 'Allow this tool without asking (repeatable; all but codex)' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l deny-tool -d 'Forbid this tool (repeatable; all but codex)' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l approval -d 'How tool calls are approved: the CLI\'s own way, file edits without asking (`auto-edit`), everything without asking (`yolo`, never the default), or by the person at the other end (`ask`: claude, codex over its app-server, and the CLIs over ACP; the run ends with an interrupt, and a resume line on standard input answers it)' -r -f -a "default\t''
auto-edit\t''
yolo\t''
ask\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l transport -d 'How `run` talks to a CLI that has two ways. Codex: `app-server` streams text and command output as they come, `exec` (or `stream`) is `codex exec --json` (each message only when complete); `auto` uses the app-server when the installed version is 0.169.0 or later and the arguments after `--` are ones it takes (`-c key=value`). Gemini, Qwen, Copilot and OpenCode: `acp` speaks the Agent Client Protocol with them (`gemini --acp`, `opencode acp`), `stream` is their JSON mode; `auto` uses ACP with `--approval ask`, and for OpenCode 1.18.33 on unless given `--attach` or arguments after `--` (its text streams over ACP only)' -r -f -a "auto\t''
stream\t''
acp\t''
exec\t''
app-server\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l approval-timeout -d 'With `--approval ask`: how long the tool calls asked about wait for a decision before they are denied and the CLI is stopped (exit status 3)' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l start-timeout -d 'Over the Agent Client Protocol: how long the agent has to answer `initialize`, then `session/new` (or `session/load`), before the run ends with an error that names the request left unanswered' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l page-tools -d 'Offer the CLI the tools of a front end (claude, codex, qwen, copilot, opencode, gemini, and an ACP agent that reaches MCP servers over HTTP): FILE holds an AG-UI `tools` array (`[{name, description, parameters}]`). A call of one ends the run with the call pending (`pendingToolCallIds`), and the next input line answers it (`{"runId", "toolResults": [{"toolCallId", "content"}]}`); the prompt is the first input line, as with `--approval ask`. How `serve` passes a page\'s tools' -r -F
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l attach -d 'Give the CLI this file with the prompt (repeatable): an image (png, jpg, gif, webp), a PDF or WAV audio, its type told by its extension. Claude Code gets it as a content block of its stream-json user message, Codex (images only) in its app-server\'s turn input, Copilot CLI (images only) as `--attachment`, OpenCode as `--file`, Gemini and ACP agents (images and audio) as prompt blocks over ACP; audio goes over ACP only; Qwen refuses it. How `serve` passes a page\'s files' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l tool-timeout -d 'With `--page-tools`: how long a call waits for its answer before it is answered with an error the model reads and the CLI is stopped (exit status 3). Cut to 25s for Qwen Code on its control layer and to 9m for Gemini CLI and Qwen Code over ACP, which give up on a call sooner than that on their own (30s, 10m)' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l timeout -d 'End the run (as cancelled) after this long: `90s`, `10m`, `1h`, or plain seconds' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l thread-id -d 'Use this threadId instead of the session id found in the input' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l run-id -d 'Use this runId instead of the derived one (later runs in the same output get `ID-2`, `ID-3`, ..., across FILEs too); `run` gives a live run a fresh UUID v7 without it' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l tool-names -d 'Tool names on TOOL_CALL_START: each CLI\'s own (`Bash`, `run_shell_command`), or one vocabulary for all of them (`shell`, `file_read`, `file_edit`, `mcp`, ...; the native name goes into `metadata.nativeName`)' -r -f -a "native\t''
canonical\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l agui-version -d 'The AG-UI release to write for: `1.0`, or `0.0` for clients built on `@ag-ui/core` 0.0.x (CopilotKit), whose schemas refuse or strip some 1.0 shapes; the 1.0 values are kept in the event\'s metadata' -r -f -a "1.0\t''
0.0\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l raw -d 'Which RAW events to write: `all` (nothing in the input is lost), `unknown` (only records that RAW is the only trace of: a record also translated into AG-UI events is not echoed), or `none`' -r -f -a "all\t''
unknown\t''
none\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l format -d 'How events are framed on standard output: one JSON object per line, or server-sent events (`data: <json>` and a blank line)' -r -f -a "ndjson\t''
sse\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l check -d 'List the CLIs, each with its version and path or the npm command that installs it; exit status 0 when all are installed, 1 when one is missing'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -l no-user-messages -d 'Do not turn the prompt that Gemini CLI and older Codex CLIs echo into a user TEXT_MESSAGE (a front end that sent the prompt would show it twice); it stays in the output as RAW'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand check" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l listen -d 'Where to listen; port 0 picks a free one. The address is printed on standard error' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l token -d 'Require `Authorization: Bearer TOKEN` on every request (required when --listen is not a loopback address). Other local users can read a command line: prefer --token-file or AGUI_SERVE_TOKEN' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l token-file -d 'Read the token from FILE (its first line); a FILE that others may read or write is refused' -r -F
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l allow-origin -d 'Let web pages from ORIGIN (`scheme://host[:port]`, matched exactly) call the server; repeatable. Pages from any other origin are refused' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l allow-host -d 'Serve requests addressed to NAME (the Host header, as through a reverse proxy); repeatable. Besides these, only the listening address, localhost, 127.0.0.1 and [::1] are served' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l agui-version -d 'The AG-UI release to write for, whatever the client: without it, a request whose RunAgentInput has a `protocolVersion` of 1 or later gets AG-UI 1.0, and one without (a 0.0 client, such as CopilotKit\'s runtime) the 0.0 shapes. `--agui-version` among the run options forces it too' -r -f -a "1.0\t''
0.0\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l raw -d 'Which RAW events a client gets: only records that RAW is the only trace of (`unknown`: the CLI\'s records that became AG-UI events, its init with paths and tool lists, say, are not echoed to a browser), `all`, or `none`. `--raw` among the run options sets it too' -r -f -a "all\t''
unknown\t''
none\t''"
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l max-attachment -d 'The largest file a page may send with a message (decoded; `K`, `M` or `G` after the number: KiB, MiB, GiB): a larger one is refused (`400`). A request body may be 16 MiB more than one such file, base64' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l allow-fetch -d 'Fetch a page\'s `url` parts (an image, a PDF given by its URL) from HOST: `HOST` or `HOST:PORT` over HTTPS (port 443 unless given), `http://HOST[:PORT]` over plain HTTP; repeatable. A URL\'s scheme, host and port must be those of one named; no redirect is followed, no proxy taken, credentials in a URL are refused, the file\'s type must be the part\'s `mimeType` and the answer\'s Content-Type, and its size at most `--max-attachment`. Without it no URL is fetched (a `400`)' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l rejoin-grace -d 'How long a run goes on after its client has gone away (a page reloaded mid-run, an aborted run), for a request on its thread with no new message to rejoin it; with no one reading it that long, it ends as SIGTERM ends it. `0`: at once. `500ms`, `5s`, `1m`, or plain seconds; at most `10m`' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l keep-idle -d 'How long a thread\'s agent is kept between its turns over the Agent Client Protocol (gemini, qwen, copilot, opencode, acp): the next turn prompts the same session in the same process, with no `session/load`. An idle agent holds a run slot, and the one idle longest is ended first when a run needs its slot. `0`: a new process (and `session/load`) for each turn. `30s`, `5m`, or plain seconds; at most `1h`' -r
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l state-dir -d 'Where each thread\'s CLI session (and plan) is kept, so that threads survive a restart: one directory per CLI in it, private (0700), for the 10,000 most recent threads (default: `$XDG_STATE_HOME/agui-translate`, or `~/.local/state/agui-translate`)' -r -F
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -l no-token -d 'Require no token (loopback only): any local user\'s programs may then start runs, and approve their tool calls, as this user. Without a token given, the server makes one and keeps it in the state directory'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand serve" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand help; and not __fish_seen_subcommand_from run check serve help" -f -a "run" -d 'Start a CLI in its headless streaming mode and translate its output'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand help; and not __fish_seen_subcommand_from run check serve help" -f -a "check" -d 'Check AG-UI 1.0 streams (NDJSON or SSE): the schema of every event and the sequence rules'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand help; and not __fish_seen_subcommand_from run check serve help" -f -a "serve" -d 'Serve a CLI as an AG-UI endpoint: each POSTed RunAgentInput is a run, streamed back as server-sent events'
complete -c agui-translate -n "__fish_agui_translate_using_subcommand help; and not __fish_seen_subcommand_from run check serve help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
