"""Drives an MCP server with the Python `mcp` client for the tests.

Usage: python3 mcp_client.py SCENARIO_JSON

SCENARIO_JSON: {"transport": {"stdio": {"command": .., "args": [..], "env": {..}}} or
{"http": "http://127.0.0.1:PORT/mcp"}, "elicit": "accept" | "decline" (optional), "sample": TEXT (optional: answer sampling
requests with TEXT plus the length of the prompt it got),
"steps": [{"op": "list"} | {"op": "call", "tool": .., "args": {..},
"cancel_when_file": PATH (optional: cancel the call once PATH exists)} |
{"op": "wait_list_changed", "seconds": N (default 20)} |
{"op": "wait_tool", "tool": NAME, "seconds": N (default 20)} (lists the tools until NAME is
among them and, when it joined later, its notifications/tools/list_changed arrived; then
counts notifications from zero again) |
{"op": "touch", "path": PATH (creates PATH, to tell a test this client is ready)}],
"capabilities": true (optional: print the server's capabilities first)}

Prints one JSON line per step: {"tools": [{"name", "annotations", "description",
"outputSchema"}]} for list, {"is_error", "text", "progress": [..], "cancelled", "structured"}
for call, {"found": BOOL} for wait_tool, and {"list_changed": COUNT} for
wait_list_changed (how many notifications/tools/list_changed arrived so far; it waits for
one more than the previous wait saw). Also prints {"elicited": [..]} at the end with the
messages of every elicitation it answered.
"""

import json
import os
import sys

import anyio

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


def out(value):
    print(json.dumps(value), flush=True)


async def run(scenario):
    elicited = []

    async def on_elicit(context, params):
        elicited.append(params.message)
        if scenario.get("elicit") == "accept":
            content = scenario.get("elicit_content", {"allow": True, "always": False})
            return types.ElicitResult(action="accept", content=content)
        return types.ElicitResult(action="decline")

    callback = on_elicit if "elicit" in scenario else None
    sampled = []

    async def on_sample(context, params):
        prompt = "\n".join(m.content.text for m in params.messages if m.content.type == "text")
        sampled.append({"system": params.system_prompt, "prompt_chars": len(prompt),
                        "max_tokens": params.max_tokens})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=scenario["sample"]),
            model="test-model")

    sampling = on_sample if "sample" in scenario else None
    list_changes = {"seen": 0, "waited": 0}

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            list_changes["seen"] += 1

    async def steps(session):
        initialized = await session.initialize()
        if scenario.get("capabilities"):
            out({"capabilities": initialized.capabilities.model_dump(by_alias=True, exclude_none=True)})
        for step in scenario["steps"]:
            if step["op"] == "list":
                listed = await session.list_tools()
                out({"tools": [
                    {"name": t.name, "description": t.description,
                     "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                     if t.annotations else {},
                     "outputSchema": t.output_schema}
                    for t in listed.tools
                ]})
            elif step["op"] == "wait_tool":
                # A tool that joins later is announced: wait for that notification too, so
                # the next wait_list_changed waits for a new one.
                found = False
                announced = True
                with anyio.move_on_after(step.get("seconds", 20)):
                    while not (found and announced):
                        listed = await session.list_tools()
                        found = any(t.name == step["tool"] for t in listed.tools)
                        if not found:
                            announced = False
                        else:
                            announced = announced or list_changes["seen"] > list_changes["waited"]
                        if not (found and announced):
                            await anyio.sleep(0.05)
                list_changes["seen"] = list_changes["waited"] = 0
                out({"found": found})
            elif step["op"] == "touch":
                open(step["path"], "w").close()
            elif step["op"] == "wait_list_changed":
                with anyio.move_on_after(step.get("seconds", 20)):
                    while list_changes["seen"] <= list_changes["waited"]:
                        await anyio.sleep(0.02)
                list_changes["waited"] = list_changes["seen"]
                out({"list_changed": list_changes["seen"]})
            elif step["op"] == "call":
                progress = []

                async def on_progress(value, total, message):
                    progress.append({"progress": value, "total": total, "message": message})

                result = None
                cancelled = False
                async with anyio.create_task_group() as group:
                    async def call():
                        nonlocal result
                        result = await session.call_tool(
                            step["tool"], step.get("args", {}), progress_callback=on_progress)
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
                else:
                    text = "\n".join(c.text for c in result.content if c.type == "text")
                    out({"is_error": bool(result.is_error), "text": text,
                         "progress": progress, "cancelled": False,
                         "types": [c.type for c in result.content],
                         "structured": result.structured_content})
        out({"elicited": elicited, "sampled": sampled})

    transport = scenario["transport"]
    if "stdio" in transport:
        spec = transport["stdio"]
        params = StdioServerParameters(command=spec["command"], args=spec.get("args", []),
                                       env=spec.get("env"))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=callback,
                                     sampling_callback=sampling,
                                     message_handler=on_message) as session:
                await steps(session)
    else:
        async with streamable_http_client(transport["http"]) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, elicitation_callback=callback,
                                     sampling_callback=sampling,
                                     message_handler=on_message) as session:
                await steps(session)


if __name__ == "__main__":
    anyio.run(run, json.loads(sys.argv[1]))
