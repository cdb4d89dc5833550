"""A client in another language: the official Python SDK (mcp 2.x) against switchboard-mcp.

It connects in the SDK's default mode (which probes server/discover and should land on the
2026-07-28 revision), lists the tools, calls one, and follows a build as a task. Not part of
`npm test`: PyPI is not one of this machine's registries. See README.md beside this file.

    python client.py --url http://127.0.0.1:3000/mcp      # a server started with --transport http --sandbox
    python client.py --stdio                              # spawns `node dist/cli.js --sandbox`
"""
import argparse
import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client


async def run(session: ClientSession) -> None:
    info = await session.initialize()
    version = getattr(info, "protocolVersion", None) or getattr(session, "protocol_version", None)
    print(f"negotiated protocol revision: {version}")
    if str(version) != "2026-07-28":
        sys.exit(f"expected 2026-07-28, got {version}")

    tools = await session.list_tools()
    print(f"{len(tools.tools)} tools, e.g. {', '.join(t.name for t in tools.tools[:5])}")

    balance = await session.call_tool("build_get_account", {})
    print("build_get_account:", balance.content[0].text)

    launch = await session.call_tool(
        "build_launch_project",
        {"projectId": "python-client-demo", "prompt": "A landing page [minutes=5]"},
    )
    print("build_launch_project:", launch.content[0].text.splitlines()[0])

    # build_wait becomes a task when the client supports the tasks extension; the SDK follows it
    # (tasks/get until terminal) and hands back the final result.
    result = await session.call_tool("build_wait", {"projectId": "python-client-demo", "until": "agent"})
    print("build_wait:", result.content[0].text.splitlines()[0])
    print(json.dumps(result.structuredContent, indent=2)[:400])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="the server's /mcp URL")
    parser.add_argument("--stdio", action="store_true", help="spawn node dist/cli.js --sandbox")
    args = parser.parse_args()
    if args.stdio:
        params = StdioServerParameters(command="node", args=["../../dist/cli.js", "--sandbox"], env={"SANDBOX_TIME_SCALE": "3000"})
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await run(session)
    else:
        async with streamablehttp_client(args.url or "http://127.0.0.1:3000/mcp") as (read, write, _):
            async with ClientSession(read, write) as session:
                await run(session)


if __name__ == "__main__":
    asyncio.run(main())
