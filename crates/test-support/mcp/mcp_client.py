"""Drives an MCP server with the Python `mcp` SDK's client, for the tests: the one test client
of the workspace.

Usage: python3 mcp_client.py SCENARIO_JSON

SCENARIO_JSON:
  "transport": {"stdio": {"command", "args", "env"}} or {"http": URL, "token": TOKEN (optional)}
  "mode": absent: the SDK's `ClientSession` (the `initialize` handshake, as third-party
          clients speak it); "auto": the SDK's high-level `Client` with its default (protocol
          2026-07-28 when the server has it, no sessions); "legacy": the high-level `Client`
          on the handshake and a session
  "capabilities": true (optional: print the server's capabilities first)
  "elicit": "accept" | "decline" (optional: answer elicitation; without it the client
            declares no elicitation capability)
  "elicit_content": {..} (optional: the content of an accepted answer; default
            {"allow": true, "always": false})
  "sample": TEXT (optional: answer sampling with a model reply TEXT; without it the client
            declares no sampling capability)
  "steps": [
    {"op": "call", "tool": NAME, "args": {..},
     "context": "new" | "last" | HANDLE (optional, high-level client: the request's context),
     "cancel_when_file": PATH (optional: cancel the call once PATH exists),
     "repeat": N (optional: run the call N times, print one line),
     "capture": {"name": NAME, "pattern": REGEX} (optional: keep group 1 of the first match
                in the result text; later args may say "{NAME}")},
    {"op": "list"},
    {"op": "listen"} (high-level client on 2026-07-28: open a subscriptions/listen stream
     for tool list changes),
    {"op": "wait_list_changed", "seconds": N (default 20)} (wait for one more
     notifications/tools/list_changed than the previous wait saw),
    {"op": "wait_tool", "tool": NAME, "seconds": N (default 20)} (list the tools until NAME
     is among them and, when it joined later, its list change arrived; then count list
     changes from zero again),
    {"op": "touch", "path": PATH} (create PATH, to tell a test this client is ready),
    {"op": "wait_file", "path": PATH, "seconds": N},
    {"op": "wait_event", "event": KIND, "until": TEXT (optional), "seconds": N} (wait until
     the session events received as `notifications/message` from the logger
     `agent-tools/event` include one of KIND whose text contains TEXT)
  ]

Prints one JSON line per step but `touch`: {"is_error", "text", "types", "structured",
"context", "progress", "cancelled"} for call ({"cancelled", "progress"} when it was
cancelled), {"tools": [{"name", "description", "annotations", "outputSchema"}]} for list,
{"honored": BOOL} for listen, {"list_changed": COUNT} for wait_list_changed, {"found": BOOL}
for wait_tool, {"exists": BOOL} for wait_file, {"events": [events of KIND]} for wait_event;
then {"elicited": [messages], "sampled": [{"system", "prompt", "prompt_chars",
"max_tokens"}], "protocol": VERSION}.
"""

import contextlib
import json
import os
import re
import sys

import anyio

from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
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


def described(tool):
    return {"name": tool.name, "description": tool.description,
            "annotations": tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if tool.annotations else {},
            "outputSchema": tool.output_schema}


class Recorder:
    """What the server asked of the client and told it, and the callbacks that record it."""

    def __init__(self, scenario):
        self.scenario = scenario
        self.elicited = []
        self.sampled = []
        self.events = []
        self.changes = {"seen": 0, "waited": 0}

    async def on_elicit(self, context, params):
        self.elicited.append(params.message)
        if self.scenario.get("elicit") == "accept":
            content = self.scenario.get("elicit_content", {"allow": True, "always": False})
            return types.ElicitResult(action="accept", content=content)
        return types.ElicitResult(action="decline")

    async def on_sample(self, context, params):
        prompt = "\n".join(m.content.text for m in params.messages if m.content.type == "text")
        self.sampled.append({"system": params.system_prompt, "prompt": prompt,
                             "prompt_chars": len(prompt), "max_tokens": params.max_tokens})
        return types.CreateMessageResult(
            role="assistant", model="test-model",
            content=types.TextContent(type="text", text=self.scenario["sample"]))

    async def on_log(self, params):
        if params.logger == "agent-tools/event":
            self.events.append(params.data)

    async def on_message(self, message):
        if isinstance(message, types.ToolListChangedNotification):
            self.changes["seen"] += 1

    def callbacks(self):
        return {
            "elicitation_callback": self.on_elicit if "elicit" in self.scenario else None,
            "sampling_callback": self.on_sample if "sample" in self.scenario else None,
            "logging_callback": self.on_log,
            "message_handler": self.on_message,
        }


class Driver:
    """Runs the steps on either client: `call_tool(name, args, meta, on_progress)`,
    `list_tools()` and, for the high-level client, `listen()`."""

    def __init__(self, scenario, recorder, call_tool, list_tools, listen=None):
        self.scenario = scenario
        self.rec = recorder
        self.call_tool = call_tool
        self.list_tools = list_tools
        self.listen = listen
        self.last_context = None
        self.saved = {}

    async def run(self):
        """The steps, then the last line; what a step left running in the background (a
        listen stream) ends before the client does."""
        async with anyio.create_task_group() as background:
            for step in self.scenario["steps"]:
                await getattr(self, "op_" + step["op"])(step, background)
            background.cancel_scope.cancel()

    async def op_list(self, step, background):
        listed = await self.list_tools()
        out({"tools": [described(t) for t in listed.tools]})

    async def op_listen(self, step, background):
        changes = self.rec.changes

        async def listener(*, task_status=anyio.TASK_STATUS_IGNORED):
            async with self.listen(tools_list_changed=True) as subscription:
                task_status.started(bool(subscription.honored
                                         and subscription.honored.tools_list_changed))
                async for _ in subscription:
                    changes["seen"] += 1

        out({"honored": await background.start(listener)})

    async def op_wait_list_changed(self, step, background):
        changes = self.rec.changes
        with anyio.move_on_after(step.get("seconds", 20)):
            while changes["seen"] <= changes["waited"]:
                await anyio.sleep(0.02)
        changes["waited"] = changes["seen"]
        out({"list_changed": changes["seen"]})

    async def op_wait_tool(self, step, background):
        # A tool that joins later is announced: wait for that notification too, so the next
        # wait_list_changed waits for a new one.
        changes = self.rec.changes
        found = False
        announced = True
        with anyio.move_on_after(step.get("seconds", 20)):
            while not (found and announced):
                listed = await self.list_tools()
                found = any(t.name == step["tool"] for t in listed.tools)
                if not found:
                    announced = False
                else:
                    announced = announced or changes["seen"] > changes["waited"]
                if not (found and announced):
                    await anyio.sleep(0.05)
        changes["seen"] = changes["waited"] = 0
        out({"found": found})

    async def op_wait_event(self, step, background):
        def matching():
            return [e for e in self.rec.events if isinstance(e, dict)
                    and e.get("event") == step["event"]]

        def done():
            return any(step.get("until", "") in str(e.get("text", "")) for e in matching())

        with anyio.move_on_after(step.get("seconds", 20)):
            while not done():
                await anyio.sleep(0.02)
        out({"events": matching()})

    async def op_touch(self, step, background):
        open(step["path"], "w").close()

    async def op_wait_file(self, step, background):
        with anyio.move_on_after(step.get("seconds", 20)):
            while not os.path.exists(step["path"]):
                await anyio.sleep(0.05)
        out({"exists": os.path.exists(step["path"])})

    async def op_call(self, step, background):
        meta = None
        wanted = step.get("context")
        if wanted == "last":
            wanted = self.last_context
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
                    result = await self.call_tool(
                        step["tool"], substitute(step.get("args", {}), self.saved), meta,
                        on_progress)
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
            return
        text = "\n".join(c.text for c in result.content if c.type == "text")
        context = (result.meta or {}).get(CONTEXT_KEY)
        if context is not None:
            self.last_context = context
        if "capture" in step:
            found = re.search(step["capture"]["pattern"], text)
            if found:
                self.saved[step["capture"]["name"]] = found.group(1)
        out({"is_error": bool(result.is_error), "text": text,
             "types": [c.type for c in result.content],
             "structured": result.structured_content, "context": context,
             "progress": progress, "cancelled": False})


async def with_session(scenario, recorder):
    """The SDK's `ClientSession` over the scenario's transport; returns the protocol."""
    transport = scenario["transport"]
    async with contextlib.AsyncExitStack() as stack:
        if "stdio" in transport:
            spec = transport["stdio"]
            params = StdioServerParameters(command=spec["command"], args=spec.get("args", []),
                                           env=spec.get("env"))
            read, write = await stack.enter_async_context(stdio_client(params))
        else:
            streams = await stack.enter_async_context(streamable_http_client(transport["http"]))
            read, write = streams[0], streams[1]
        session = await stack.enter_async_context(
            ClientSession(read, write, **recorder.callbacks()))
        initialized = await session.initialize()
        if scenario.get("capabilities"):
            out({"capabilities": initialized.capabilities.model_dump(by_alias=True,
                                                                      exclude_none=True)})

        async def call_tool(name, args, meta, on_progress):
            return await session.call_tool(name, args, progress_callback=on_progress, meta=meta)

        await Driver(scenario, recorder, call_tool, session.list_tools).run()
        return initialized.protocol_version


async def with_client(scenario, recorder):
    """The SDK's high-level `Client` in the scenario's mode; returns the protocol."""
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
    async with Client(server, mode=scenario["mode"], cache=None,
                      **recorder.callbacks()) as client:
        if scenario.get("capabilities"):
            out({"capabilities": client.server_capabilities.model_dump(by_alias=True,
                                                                        exclude_none=True)})

        async def call_tool(name, args, meta, on_progress):
            return await client.call_tool(name, args, meta=meta, progress_callback=on_progress)

        driver = Driver(scenario, recorder, call_tool, client.list_tools, client.listen)
        await driver.run()
        return client.protocol_version


async def run(scenario):
    recorder = Recorder(scenario)
    drive = with_client if "mode" in scenario else with_session
    protocol = await drive(scenario, recorder)
    out({"elicited": recorder.elicited, "sampled": recorder.sampled, "protocol": protocol})


if __name__ == "__main__":
    anyio.run(run, json.loads(sys.argv[1]))
