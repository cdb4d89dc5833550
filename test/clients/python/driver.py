"""The official Python MCP SDK (mcp 2.x) as a driver of the client matrix (test/clients/drivers.ts).

It connects with the SDK's high-level Client and its defaults (mode "auto": server/discover first,
the initialize handshake as fallback), accepts every elicitation it is asked, and then answers one
JSON line on stdin with one JSON line on stdout:

    {"op": "tools"} | {"op": "call", "name": ..., "args": {...}} | {"op": "read", "uri": ...}
    | {"op": "prompt", "name": ..., "args": {...}} | {"op": "close"}

Each answer is {"ok": ...} or {"error": "..."}; elicitation messages come as {"asked": "..."} lines
before the answer. Started as `python driver.py '<target JSON>'`, the target as drivers.ts has it.
"""
import json
import sys

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters


def emit(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def text_of(blocks) -> str:
    return "\n".join(getattr(b, "text", "") or "" for b in blocks or [])


async def elicit(_context, params):
    emit({"asked": params.message})
    return types.ElicitResult(action="accept", content={"confirm": True})


async def serve(client: Client) -> None:
    emit({"ok": {"protocolVersion": client.protocol_version}})
    stdin = anyio.wrap_file(sys.stdin)
    async for line in stdin:
        req = json.loads(line)
        op = req["op"]
        try:
            if op == "tools":
                emit({"ok": [t.name for t in (await client.list_tools()).tools]})
            elif op == "call":
                r = await client.call_tool(req["name"], req.get("args") or {})
                emit({"ok": {"text": text_of(r.content), "isError": bool(r.is_error)}})
            elif op == "read":
                r = await client.read_resource(req["uri"])
                emit({"ok": getattr(r.contents[0], "text", "") if r.contents else ""})
            elif op == "prompt":
                r = await client.get_prompt(req["name"], req.get("args") or {})
                first = r.messages[0].content if r.messages else None
                emit({"ok": getattr(first, "text", "") if first is not None else ""})
            elif op == "close":
                emit({"ok": None})
                return
        except Exception as err:  # the matrix shows what failed; it does not stop the driver
            emit({"error": f"{type(err).__name__}: {err}"})


async def main() -> None:
    target = json.loads(sys.argv[1])
    if target["kind"] == "stdio":
        server = StdioServerParameters(command=target["command"], args=target["args"], env=target["env"])
    else:
        server = target["url"]
    async with Client(server, elicitation_callback=elicit) as client:
        await serve(client)


if __name__ == "__main__":
    anyio.run(main)
