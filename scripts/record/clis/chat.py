"""A scripted OpenAI Chat Completions API, for the CLIs that talk to any
OpenAI-compatible server (Qwen Code, Copilot CLI, OpenCode).

The conversation goes through `POST {base}/chat/completions` (server-sent
events when `stream` is true); its turn is the number of assistant messages
the request's `messages` already hold. A subagent's conversation is told
apart by scenarios.SUB_MARK in one of its user texts. Requests without
tools (titles, summaries) are auxiliary, as is `GET /models`.

A CLI's module passes `calls`: a function (kind, args, tools, ctx) -> (name,
arguments) that maps an abstract call to one of the CLI's tools, chosen from
`tools` (the names the request offers).
"""

import json
import threading
import time

import sys

import mock
import pagehttp
from scenarios import EFFORT_USED, MODEL_USED, PAGE_ANSWERS, SUB_MARK

# Per-turn token counts, the same for every turn so totals are easy to check.
USAGE = {"prompt": 1200, "cached": 1024, "completion": 45, "reasoning": 12}


def _text(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def tool_names(body):
    out = []
    for t in (body or {}).get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and fn.get("name"):
            out.append(fn["name"])
    return out


def classify(method, path, headers, body, ctx, preamble=()):
    """`preamble`: texts of assistant messages the CLI puts into the
    conversation itself (not model turns)."""
    p = path.split("?")[0].rstrip("/")
    if method != "POST" or not p.endswith("/chat/completions") or not isinstance(body, dict):
        return "aux", None
    if not body.get("tools"):
        return "aux", None
    messages = body.get("messages") or []
    users = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
    who = "sub" if SUB_MARK in users else "main"
    return who, sum(1 for m in messages if m.get("role") == "assistant" and _text(m.get("content")) not in preamble)


def wait_for_helper(who, index, ctx):
    """The parent's turns after the spawn wait until the helper's last
    scripted turn has been served, so the helper really runs."""
    done = ctx.state.setdefault("helper_done", threading.Event())
    if who == "sub" and index >= len(ctx.scenario.sub_turns) - 1:
        done.set()
    elif who == "main" and ctx.scenario.sub_turns and index >= 1:
        if done.wait(30):
            time.sleep(1.0)


def _usage():
    return {
        "prompt_tokens": USAGE["prompt"],
        "completion_tokens": USAGE["completion"],
        "total_tokens": USAGE["prompt"] + USAGE["completion"],
        "prompt_tokens_details": {"cached_tokens": USAGE["cached"]},
        "completion_tokens_details": {"reasoning_tokens": USAGE["reasoning"]},
    }


def reply(turn, body, who, index, ctx, calls, tag=None):
    """The scripted turn as a chat completion (streamed if asked); `tag`
    marks its call ids (default: "m" for the main agent, "s" for a
    subagent)."""
    wait_for_helper(who, index, ctx)
    tools = tool_names(body)
    ctx.state["responses"] = ctx.state.get("responses", 0) + 1
    cid = f"chatcmpl-scripted-{ctx.state['responses']:02d}-{who}{index}"
    model = body.get("model") or "scripted-model"
    tag = tag or ("s" if who == "sub" else "m")
    if turn["text"] and PAGE_ANSWERS in turn["text"]:
        got = pagehttp.tool_results(body)
        want = list(ctx.scenario.page_answers)
        if any(w not in got for w in want):
            print(f"  the model's request carries {got!r}, not the page's answers {want!r}", file=sys.stderr)
        turn = dict(turn, text=turn["text"].replace(PAGE_ANSWERS, "; ".join(got)))
    if turn["text"] and MODEL_USED in turn["text"]:
        turn = dict(turn, text=turn["text"].replace(MODEL_USED, str(body.get("model"))))
    if turn["text"] and EFFORT_USED in turn["text"]:
        turn = dict(turn, text=turn["text"].replace(EFFORT_USED, str(body.get("reasoning_effort") or "none")))
    tool_calls = []
    for k, (kind, args) in enumerate(turn["calls"]):
        name, arguments = calls(kind, args, tools, ctx)
        tool_calls.append({"id": f"call_{tag}{index:02d}{k:02d}scripted", "type": "function",
                           "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}})
    finish = "tool_calls" if tool_calls else "stop"
    if not body.get("stream"):
        message = {"role": "assistant", "content": turn["text"]}
        if turn["thinking"]:
            message["reasoning_content"] = turn["thinking"]
        if tool_calls:
            message["tool_calls"] = tool_calls
        return mock.json_response({"id": cid, "object": "chat.completion", "created": 1767225600, "model": model,
                                   "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                   "usage": _usage()})

    def chunk(delta, finish_reason=None, usage=None):
        data = {"id": cid, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
        if usage is not None:
            data["usage"] = usage
        return mock.sse(data)

    events = [chunk({"role": "assistant", "content": ""})]
    for piece in mock.pieces(turn["thinking"] or "") if turn["thinking"] else []:
        events.append(chunk({"reasoning_content": piece}))
    for piece in mock.pieces(turn["text"] or "") if turn["text"] else []:
        events.append(chunk({"content": piece}))
    for k, tc in enumerate(tool_calls):
        events.append(chunk({"tool_calls": [{"index": k, "id": tc["id"], "type": "function",
                                             "function": {"name": tc["function"]["name"], "arguments": ""}}]}))
        for piece in mock.pieces_keeping(tc["function"]["arguments"], [str(ctx.work), str(ctx.home)]):
            events.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}))
    events.append(chunk({}, finish))
    # The usage chunk that `stream_options.include_usage` asks for: no choices.
    events.append(mock.sse({"id": cid, "object": "chat.completion.chunk", "created": 1767225600, "model": model,
                            "choices": [], "usage": _usage()}))
    events.append(b"data: [DONE]\n\n")
    return mock.sse_response(events)


ERRORS = {
    400: ("invalid_request_error", "invalid_request", "The request was rejected by the scripted server."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    429: ("rate_limit_error", "rate_limit_exceeded", "Rate limit reached for requests. Please try again in 1s."),
    500: ("server_error", "server_error", "The server had an error while processing your request."),
    503: ("server_error", "server_overloaded", "The server is overloaded."),
}


def error(status, ctx):
    kind, code, message = ERRORS.get(status, ("server_error", None, f"HTTP {status} from the scripted server."))
    headers = {"retry-after": "1"} if status == 429 else None
    return mock.json_response({"error": {"message": message, "type": kind, "param": None, "code": code}},
                              status=status, headers=headers)


def aux(method, path, body, ctx):
    p = path.split("?")[0].rstrip("/")
    if method == "GET" and p.endswith("/models"):
        return mock.json_response({"object": "list", "data": [{"id": "scripted-model", "object": "model",
                                                               "created": 1767225600, "owned_by": "scripted"}]})
    if method == "POST" and p.endswith("/chat/completions") and isinstance(body, dict):
        # A side request (a title, a summary, a check): a short answer.
        return reply({"text": "Scripted", "thinking": None, "calls": []}, body, "aux", 0, ctx,
                     lambda *a: None)
    return mock.json_response({"error": {"message": "not found", "type": "invalid_request_error"}}, status=404)
