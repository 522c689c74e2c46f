"""Drives `agent-tools serve` with the Python `mcp` SDK's high-level `Client`, on either
protocol era, for the end-to-end tests.

Usage: python3 serve_client.py SCENARIO_JSON

SCENARIO_JSON:
  "transport": {"stdio": {"command", "args", "env"}} or {"http": URL, "token": TOKEN (optional)}
  "mode": "auto" (default: the SDK's default, protocol 2026-07-28 when the server has it)
          or "legacy" (the initialize handshake and a session)
  "elicit": "accept" | "decline" (optional: answer elicitation; without it the client
            declares no elicitation capability)
  "elicit_content": {..} (optional: the content of an accepted answer; default
            {"allow": true, "always": false})
  "sample": TEXT (optional: answer sampling with a model reply TEXT; without it the client
            declares no sampling capability)
  "steps": [
    {"op": "call", "tool": NAME, "args": {..}, "context": "new" | "last" | HANDLE (optional),
     "cancel_when_file": PATH (optional: cancel the call once PATH exists),
     "repeat": N (optional: run the call N times, print one line),
     "capture": {"name": NAME, "pattern": REGEX} (optional: keep group 1 of the first match
                in the result text; later args may say "{NAME}")},
    {"op": "list"},
    {"op": "listen"} (2026-07-28: open a subscriptions/listen stream for tool list changes),
    {"op": "wait_list_changed", "seconds": N} (wait for one more list change than before),
    {"op": "touch", "path": PATH},
    {"op": "wait_file", "path": PATH, "seconds": N},
    {"op": "wait_event", "event": KIND, "until": TEXT (optional), "seconds": N} (wait until
     the session events received as `notifications/message` from the logger
     `agent-tools/event` include one of KIND whose text contains TEXT)
  ]

Prints one JSON line per step: {"is_error", "text", "context", "progress", "cancelled"} for
call, {"tools": [names]} for list, {"list_changed": COUNT} for wait_list_changed, {"honored":
bool} for listen, {"events": [events of KIND so far]} for wait_event, {} otherwise; then {"elicited": [messages], "protocol":
VERSION}.
"""

import json
import os
import re
import sys

import anyio

from mcp import Client, StdioServerParameters, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CONTEXT_KEY = "agent-tools/context"


def out(value):
    print(json.dumps(value), flush=True)


def substitute(value, saved):
    """`value` with every "{NAME}" in its strings replaced by what was captured as NAME."""
    if isinstance(value, str):
        for name, text in saved.items():
            value = value.replace("{" + name + "}", text)
        return value
    if isinstance(value, list):
        return [substitute(v, saved) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, saved) for k, v in value.items()}
    return value


async def run(scenario):
    elicited = []

    async def on_elicit(context, params):
        elicited.append(params.message)
        if scenario.get("elicit") == "accept":
            content = scenario.get("elicit_content", {"allow": True, "always": False})
            return types.ElicitResult(action="accept", content=content)
        return types.ElicitResult(action="decline")

    transport = scenario["transport"]
    if "stdio" in transport:
        spec = transport["stdio"]
        server = StdioServerParameters(command=spec["command"], args=spec.get("args", []),
                                       env=spec.get("env"))
    else:
        headers = {}
        if transport.get("token"):
            headers["Authorization"] = "Bearer " + transport["token"]
        server = streamable_http_client(transport["http"],
                                        http_client=create_mcp_http_client(headers=headers))
    callback = on_elicit if "elicit" in scenario else None

    async def on_sample(context, params):
        elicited.append("sampled: " + params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(type="text", text=scenario["sample"]))

    sampling = on_sample if "sample" in scenario else None
    last_context = None
    saved = {}
    changes = {"seen": 0, "waited": 0}

    events = []

    async def on_log(params):
        if params.logger == "agent-tools/event":
            events.append(params.data)

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changes["seen"] += 1

    async with Client(server, mode=scenario.get("mode", "auto"), elicitation_callback=callback,
                      sampling_callback=sampling,
                      logging_callback=on_log, message_handler=on_message, cache=None) as client, \
            anyio.create_task_group() as background:

        async def listener(*, task_status=anyio.TASK_STATUS_IGNORED):
            async with client.listen(tools_list_changed=True) as subscription:
                task_status.started(bool(subscription.honored and subscription.honored.tools_list_changed))
                async for _ in subscription:
                    changes["seen"] += 1

        for step in scenario["steps"]:
            op = step["op"]
            if op == "list":
                listed = await client.list_tools()
                out({"tools": [t.name for t in listed.tools]})
            elif op == "listen":
                honored = await background.start(listener)
                out({"honored": honored})
            elif op == "wait_list_changed":
                with anyio.move_on_after(step.get("seconds", 20)):
                    while changes["seen"] <= changes["waited"]:
                        await anyio.sleep(0.02)
                changes["waited"] = changes["seen"]
                out({"list_changed": changes["seen"]})
            elif op == "wait_event":
                def matching():
                    return [e for e in events if isinstance(e, dict)
                            and e.get("event") == step["event"]]

                def done():
                    return any(step.get("until", "") in str(e.get("text", ""))
                               for e in matching())

                with anyio.move_on_after(step.get("seconds", 20)):
                    while not done():
                        await anyio.sleep(0.02)
                out({"events": matching()})
            elif op == "touch":
                open(step["path"], "w").close()
                out({})
            elif op == "wait_file":
                with anyio.move_on_after(step.get("seconds", 20)):
                    while not os.path.exists(step["path"]):
                        await anyio.sleep(0.05)
                out({"exists": os.path.exists(step["path"])})
            elif op == "call":
                meta = None
                wanted = step.get("context")
                if wanted == "last":
                    wanted = last_context
                if wanted is not None:
                    meta = {CONTEXT_KEY: wanted}
                progress = []

                async def on_progress(value, total, message):
                    progress.append({"progress": value, "total": total, "message": message})

                result = None
                cancelled = False
                async with anyio.create_task_group() as group:
                    async def call():
                        nonlocal result
                        for _ in range(step.get("repeat", 1)):
                            result = await client.call_tool(
                                step["tool"], substitute(step.get("args", {}), saved), meta=meta,
                                progress_callback=on_progress)
                        group.cancel_scope.cancel()

                    async def watch(path):
                        nonlocal cancelled
                        while not os.path.exists(path):
                            await anyio.sleep(0.05)
                        cancelled = True
                        group.cancel_scope.cancel()

                    group.start_soon(call)
                    if "cancel_when_file" in step:
                        group.start_soon(watch, step["cancel_when_file"])
                if result is None:
                    out({"cancelled": cancelled, "progress": progress})
                    continue
                text = "\n".join(c.text for c in result.content if c.type == "text")
                context = (result.meta or {}).get(CONTEXT_KEY)
                if context is not None:
                    last_context = context
                if "capture" in step:
                    found = re.search(step["capture"]["pattern"], text)
                    if found:
                        saved[step["capture"]["name"]] = found.group(1)
                out({"is_error": bool(result.is_error), "text": text, "context": context,
                     "progress": progress, "cancelled": False})
        out({"elicited": elicited, "protocol": client.protocol_version})
        background.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(run, json.loads(sys.argv[1]))
