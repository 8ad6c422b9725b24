# Codex CLI `exec --json` -> AG-UI events, both formats, as a jq user would
# write it: jq -c --unbuffered -f codex.jq. Stateless: one record at a time.
if .type == "thread.started" then
  {type: "RUN_STARTED", threadId: .thread_id, runId: .thread_id}
elif .type == "item.started" and .item.type != "agent_message" and .item.type != "reasoning" then
  {type: "TOOL_CALL_START", toolCallId: .item.id, toolCallName: .item.type},
  {type: "TOOL_CALL_ARGS", toolCallId: .item.id, delta: (.item | del(.id, .type, .status, .aggregated_output, .exit_code) | tojson)}
elif .type == "item.completed" and .item.type == "agent_message" then
  {type: "TEXT_MESSAGE_START", messageId: .item.id, role: "assistant"},
  {type: "TEXT_MESSAGE_CONTENT", messageId: .item.id, delta: .item.text},
  {type: "TEXT_MESSAGE_END", messageId: .item.id}
elif .type == "item.completed" and .item.type == "reasoning" then
  {type: "REASONING_MESSAGE_CHUNK", messageId: .item.id, delta: .item.text}
elif .type == "item.completed" then
  {type: "TOOL_CALL_END", toolCallId: .item.id},
  {type: "TOOL_CALL_RESULT", messageId: (.item.id + "-result"), toolCallId: .item.id,
   content: (.item.aggregated_output // (.item | tojson)), role: "tool"}
elif .type == "turn.completed" then
  {type: "RUN_FINISHED", threadId: "", runId: "",
   usage: [{inputTokens: .usage.input_tokens, outputTokens: .usage.output_tokens,
            cachedInputTokens: .usage.cached_input_tokens, reasoningTokens: .usage.reasoning_output_tokens}]}
elif .type == "turn.failed" then
  {type: "RUN_ERROR", message: .error.message}
elif .msg.type == "agent_message" then
  {type: "TEXT_MESSAGE_CHUNK", messageId: .id, role: "assistant", delta: .msg.message}
elif .msg.type == "agent_reasoning" then
  {type: "REASONING_MESSAGE_CHUNK", messageId: .id, delta: .msg.text}
elif .msg.type == "exec_command_begin" then
  {type: "TOOL_CALL_START", toolCallId: .msg.call_id, toolCallName: "shell"},
  {type: "TOOL_CALL_ARGS", toolCallId: .msg.call_id, delta: ({command: .msg.command, cwd: .msg.cwd} | tojson)}
elif .msg.type == "exec_command_output_delta" then
  {type: "CUSTOM", name: "tool_output", value: {toolCallId: .msg.call_id, stream: .msg.stream, text: (.msg.chunk | @base64d)}}
elif .msg.type == "exec_command_end" then
  {type: "TOOL_CALL_END", toolCallId: .msg.call_id},
  {type: "TOOL_CALL_RESULT", messageId: (.msg.call_id + "-result"), toolCallId: .msg.call_id,
   content: .msg.aggregated_output, role: "tool"}
elif .msg.type == "error" or .msg.type == "stream_error" then
  {type: "RUN_ERROR", message: .msg.message}
elif .msg then
  {type: "RAW", event: ., source: "codex"}
else
  empty
end
