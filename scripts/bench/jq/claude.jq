# Claude Code stream-json -> AG-UI events, with or without partial messages,
# as a jq user would write it: jq -c --unbuffered -f claude.jq. Stateless:
# with partial messages the text is taken from the deltas only.
if .type == "system" and .subtype == "init" then
  {type: "RUN_STARTED", threadId: .session_id, runId: .uuid}
elif .type == "stream_event" and .event.type == "content_block_delta" and .event.delta.type == "text_delta" then
  {type: "TEXT_MESSAGE_CHUNK", messageId: "msg", role: "assistant", delta: .event.delta.text}
elif .type == "stream_event" and .event.type == "content_block_delta" and .event.delta.type == "thinking_delta" then
  {type: "REASONING_MESSAGE_CHUNK", messageId: "thinking", delta: .event.delta.thinking}
elif .type == "stream_event" then
  empty
elif .type == "assistant" then
  .message.content[] |
  if .type == "text" then {type: "TEXT_MESSAGE_CHUNK", messageId: "msg", role: "assistant", delta: .text}
  elif .type == "tool_use" then
    {type: "TOOL_CALL_START", toolCallId: .id, toolCallName: .name},
    {type: "TOOL_CALL_ARGS", toolCallId: .id, delta: (.input | tojson)},
    {type: "TOOL_CALL_END", toolCallId: .id}
  elif .type == "thinking" then {type: "REASONING_MESSAGE_CHUNK", messageId: "thinking", delta: .thinking}
  else empty end
elif .type == "user" then
  .message.content[]? | select(type == "object" and .type == "tool_result") |
  {type: "TOOL_CALL_RESULT", messageId: (.tool_use_id + "-result"), toolCallId: .tool_use_id,
   content: (if (.content | type) == "string" then .content else (.content | tojson) end), role: "tool"}
elif .type == "result" and (.is_error | not) and .subtype == "success" then
  {type: "RUN_FINISHED", threadId: .session_id, runId: "", result: .result,
   usage: [{inputTokens: (.usage.input_tokens + .usage.cache_read_input_tokens + .usage.cache_creation_input_tokens),
            outputTokens: .usage.output_tokens, cachedInputTokens: .usage.cache_read_input_tokens,
            cacheWriteInputTokens: .usage.cache_creation_input_tokens}]}
elif .type == "result" then
  {type: "RUN_ERROR", message: (.result // .subtype)}
else
  {type: "RAW", event: ., source: "claude"}
end
