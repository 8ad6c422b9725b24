# Gemini CLI stream-json -> AG-UI events, as a jq user would write it:
#   jq -c --unbuffered -f gemini.jq
# One input record at a time, no state across records (jq has none without
# slurping), so message ids come from timestamps and text is not closed
# before tool calls: this is the mapping people write instead of a tool.
def ms: (.timestamp // "1970-01-01T00:00:00Z") | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601 * 1000 | floor;
if .type == "init" then
  {type: "RUN_STARTED", threadId: .session_id, runId: ("run-" + (ms | tostring)), timestamp: ms}
elif .type == "message" and .role == "assistant" then
  {type: "TEXT_MESSAGE_CHUNK", messageId: "msg", role: "assistant", delta: .content, timestamp: ms}
elif .type == "message" then
  {type: "TEXT_MESSAGE_CHUNK", messageId: ("user-" + (ms | tostring)), role: "user", delta: .content, timestamp: ms}
elif .type == "tool_use" then
  {type: "TOOL_CALL_START", toolCallId: .tool_id, toolCallName: .tool_name, timestamp: ms},
  {type: "TOOL_CALL_ARGS", toolCallId: .tool_id, delta: (.parameters | tojson), timestamp: ms}
elif .type == "tool_result" then
  {type: "TOOL_CALL_END", toolCallId: .tool_id, timestamp: ms},
  {type: "TOOL_CALL_RESULT", messageId: (.tool_id + "-result"), toolCallId: .tool_id,
   content: (.output // .error.message // ""), role: "tool", timestamp: ms}
elif .type == "result" and .status == "success" then
  {type: "RUN_FINISHED", threadId: "", runId: "", result: ., timestamp: ms,
   usage: [{inputTokens: .stats.input_tokens, outputTokens: .stats.output_tokens,
            totalTokens: .stats.total_tokens, cachedInputTokens: .stats.cached}]}
elif .type == "result" then
  {type: "RUN_ERROR", message: (.error.message // "error"), timestamp: ms}
else
  {type: "RAW", event: ., source: "gemini"}
end
