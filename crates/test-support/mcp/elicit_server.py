"""An MCP server built with the Python SDK (`mcp` 2.x, MCPServer) whose tools ask the client:
`book(date)` asks the person for the booking's details (elicitation, a form with an integer,
an enum and a boolean, with defaults) and answers what they chose; `summarize(text)` asks the
client's model (sampling) and answers its text, or the error it got.

Usage: python3 elicit_server.py   (over stdio)
"""

import warnings
from typing import Literal

from pydantic import BaseModel, Field

from mcp import types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("shop")


class Booking(BaseModel):
    guests: int = Field(default=2, description="How many people")
    seating: Literal["indoor", "outdoor"] = Field(default="indoor", description="Where to sit")
    confirm: bool = Field(default=False, description="Book it now")


@server.tool(description="Books a table, asking the person for the details")
async def book(date: str, ctx: Context) -> str:
    answer = await ctx.elicit(f"Booking a table on {date}: how many guests, and where?", Booking)
    if answer.action != "accept":
        return f"not booked: the person chose {answer.action}"
    data = answer.data
    return f"booked for {data.guests} guests, {data.seating}, confirmed={data.confirm}"


@server.tool(description="Summarises text with the client's model")
async def summarize(text: str, ctx: Context) -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = await ctx.session.create_message(
                messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))],
                max_tokens=50,
            )
    except Exception as e:  # the client's refusal is the answer
        return f"sampling failed: {e}"
    content = result.content
    return f"summary: {getattr(content, 'text', content)}"


if __name__ == "__main__":
    server.run("stdio")
