# Checks tool declarations with the providers' own Python SDKs, offline: each declaration
# is validated as the SDK's request type for that dialect, and nothing in it may be a key
# the type does not know. Reads {"accept": {"dialect": [declaration, ...]}, "reject": {...}}
# as JSON on stdin and prints one JSON line per declaration of "accept" that an SDK
# refused, and per declaration of "reject" that it took; nothing when all went as expected.
import json
import sys

from pydantic import TypeAdapter

from anthropic.types import ToolParam
from google.genai import types as genai
from mcp import types as mcp
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import CustomToolParam, FunctionToolParam


def unknown_keys(given, kept, path=""):
    """Keys of `given` that validation dropped from `kept` (TypedDicts ignore unknown keys)."""
    out = []
    if isinstance(given, dict) and isinstance(kept, dict):
        for key, value in given.items():
            if key not in kept:
                out.append(path + "/" + key)
            else:
                out.extend(unknown_keys(value, kept[key], path + "/" + key))
    return out


def typed_dict(kind):
    adapter = TypeAdapter(kind)

    def check(decl):
        kept = adapter.validate_python(decl)
        dropped = unknown_keys(decl, kept)
        if dropped:
            raise ValueError("keys the SDK does not know: " + ", ".join(dropped))

    return check


def gemini(decl):
    # The SDK's models forbid unknown fields at every level of the schema.
    genai.FunctionDeclaration.model_validate(decl)
    params = decl.get("parameters")
    if params is not None and params.get("type") == "object" and not params.get("properties"):
        raise ValueError("an OBJECT parameters schema without properties")


def mcp_tool(decl):
    tool = mcp.Tool.model_validate(decl)
    if tool.input_schema.get("type") != "object":
        raise ValueError("inputSchema is not an object schema")


def responses(decl):
    # A tool with a free-form grammar is also declared as a custom tool.
    if decl.get("type") == "custom":
        typed_dict(CustomToolParam)(decl)
    else:
        typed_dict(FunctionToolParam)(decl)


CHECKS = {
    "anthropic": typed_dict(ToolParam),
    "openai": typed_dict(ChatCompletionFunctionToolParam),
    "openai-responses": responses,
    "gemini": gemini,
    "mcp": mcp_tool,
}


def problem(dialect, decl, error):
    name = decl.get("name") or decl.get("function", {}).get("name")
    print(json.dumps({"dialect": dialect, "tool": name, "error": error[:2000]}))


request = json.load(sys.stdin)
for expect in ("accept", "reject"):
    for dialect, decls in request.get(expect, {}).items():
        check = CHECKS[dialect]
        for decl in decls:
            try:
                check(decl)
            except Exception as e:  # noqa: BLE001 - every failure is reported the same way
                if expect == "accept":
                    problem(dialect, decl, str(e))
            else:
                if expect == "reject":
                    problem(dialect, decl, "accepted, but should have been refused")
