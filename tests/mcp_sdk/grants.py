"""An agent asking `a3s-iso mcp` for more than it was granted, through the official MCP
Python SDK (`mcp`).

For every tool a fully granted server lists, every property of its `inputSchema` is tried with
a value that reaches past what a server started without that grant gives: a sandbox opt-out,
a host file, a path, a host, a port, a variable, a profile, or one of the user's sessions. The
ungranted server must refuse each (a JSON-RPC error whose data says `not_granted`, or a tool
error `session_not_granted`) and not list what it does not grant; a server started with the
matching flag must honour it (no refusal for want of a grant).

    python grants.py CONFIG.json PHASE

PHASE is `refuse` (only the ungranted server: nothing may change) or `honour` (one server per
property, with its grant). CONFIG names the binary, the source, the user's sessions and the
files the tests made. Prints one line per property; exits 1 on the first broken promise.
"""

import json
import os
import sys

import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

CONFIG = json.load(open(sys.argv[1]))
PHASE = sys.argv[2]
BIN = CONFIG["bin"]
SRC = CONFIG["src"]
HOME = CONFIG["home"]
OUT = CONFIG["out"]
DOC = CONFIG["document"]
DIGEST = CONFIG["digest"]
CALL_SECONDS = 120

# The flags every server here starts with: promote and land are offered (their arguments are
# what is tried), and runs are limited to 30 s (so a longer timeout is a widening).
BASE_FLAGS = ["--allow-promote", "--timeout", "30s"]

# Tools whose arguments name one session: a widening "session" value aims them at the user's.
MINE = "mine"

# (tool, property) -> (kind, arguments, grant flags).
#   grant:   the value needs a server flag; the call is aimed at the server's own session.
#   session: the value acts on one of the user's sessions; granted by --session ID.
#   scope:   the value acts on every session; the ungranted server acts on its own only.
RELEASE = "sha256:" + "a" * 64
WIDENING = {
    ("bind", "session_id"): ("session", {"session_id": MINE, "owner": "none"}, None),
    ("bind", "allow_dirty"): ("session", {"session_id": MINE, "allow_dirty": True}, None),
    ("bind", "carry_wip"): ("session", {"session_id": MINE, "carry_wip": True}, None),
    ("bind", "submodules"): ("session", {"session_id": MINE, "submodules": True}, None),
    ("bind", "read_only"): ("session", {"session_id": MINE, "read_only": True}, None),
    ("bind", "base_dir"): ("grant", {"base_dir": OUT, "owner": "none"}, ["--allow-base-dir", OUT]),
    ("bind", "resume"): ("session", {"session_id": MINE, "resume": True}, None),
    ("bind", "owner"): ("session", {"session_id": MINE, "owner": "none"}, None),
    ("bind", "copy_ignored"): ("session", {"session_id": MINE, "copy_ignored": ["*.log"]}, None),
    ("run", "session_id"): ("session", {"session_id": MINE, "command": ["true"]}, None),
    ("run", "command"): ("session", {"session_id": MINE, "command": ["sh", "-c", "echo x > X"]}, None),
    ("run", "run_id"): ("session", {"session_id": MINE, "command": ["true"], "run_id": "r-sdk"}, None),
    ("run", "timeout"): ("grant", {"command": ["true"], "timeout": "1h"}, ["--timeout", "2h"]),
    ("run", "allow_network"): ("grant", {"command": ["true"], "allow_network": True}, ["--allow-network"]),
    ("run", "allow_write"): ("grant", {"command": ["true"], "allow_write": [OUT]}, ["--allow-write", OUT]),
    ("run", "allow_read"): (
        "grant",
        {"command": ["sh", "-c", "cat ~/.ssh/id_rsa"], "allow_read": [HOME + "/.ssh"]},
        ["--allow-read", HOME + "/.ssh"],
    ),
    ("run", "env"): ("grant", {"command": ["true"], "env": ["GITHUB_TOKEN"]}, ["--env", "GITHUB_TOKEN"]),
    ("run", "allow_host"): ("grant", {"command": ["true"], "allow_host": ["example.com"]}, ["--allow-host", "example.com"]),
    ("run", "publish"): ("grant", {"command": ["true"], "publish": ["8080"]}, ["--publish", "8080"]),
    ("run", "profile"): ("grant", {"command": ["true"], "profile": "generic"}, ["--profile", "generic"]),
    ("run", "ignore_config"): ("session", {"session_id": MINE, "command": ["true"], "ignore_config": True}, None),
    ("run", "no_sandbox"): ("grant", {"command": ["true"], "no_sandbox": True}, ["--allow-no-sandbox"]),
    ("run", "release_identity"): ("session", {"session_id": MINE, "command": ["true"], "release_identity": RELEASE}, None),
    ("run", "output"): ("grant", {"command": ["true"], "output": OUT + "/run.log"}, ["--allow-output", OUT]),
    ("diff", "session_id"): ("session", {"session_id": MINE}, None),
    ("diff", "change_set"): ("grant", {"change_set": DOC}, ["--allow-input", os.path.dirname(DOC)]),
    ("diff", "digest"): ("session", {"digest": DIGEST}, None),
    ("diff", "cumulative"): ("session", {"session_id": MINE, "cumulative": True}, None),
    ("diff", "patch"): ("session", {"session_id": MINE, "patch": True}, None),
    ("show", "session_id"): ("session", {"session_id": MINE}, None),
    ("list", "all"): ("scope", {"all": True}, None),
    ("capture", "session_id"): ("session", {"session_id": MINE}, None),
    ("capture", "run_id"): ("session", {"session_id": MINE, "run_id": "c-sdk"}, None),
    ("capture", "output"): ("grant", {"output": OUT + "/cs.json"}, ["--allow-output", OUT]),
    ("capture", "release_identity"): ("session", {"session_id": MINE, "release_identity": RELEASE}, None),
    ("promote", "session_id"): ("session", {"session_id": MINE, "no_apply": True}, None),
    ("promote", "change_set"): ("grant", {"change_set": DOC, "no_apply": True}, ["--allow-input", os.path.dirname(DOC)]),
    ("promote", "mode"): ("session", {"session_id": MINE, "mode": "branch", "no_apply": True}, None),
    ("promote", "no_apply"): ("session", {"session_id": MINE, "no_apply": True}, None),
    ("promote", "artifacts"): ("grant", {"artifacts": OUT + "/artifacts", "no_apply": True}, ["--allow-output", OUT]),
    ("promote", "note"): ("grant", {"note": "sha256:" + "b" * 64}, ["--all-sessions"]),
    ("promote", "rebase"): ("session", {"session_id": MINE, "rebase": True, "no_apply": True}, None),
    ("promote", "reapply"): ("session", {"reapply": True, "digest": DIGEST}, None),
    ("promote", "digest"): ("session", {"reapply": True, "digest": DIGEST}, None),
    ("promote", "message"): ("session", {"session_id": MINE, "mode": "branch", "message": "m", "no_apply": True}, None),
    ("promote", "onto_head"): ("grant", {"change_set": DOC, "onto_head": True, "no_apply": True}, ["--allow-input", os.path.dirname(DOC)]),
    ("land", "sessions"): ("session", {"sessions": [MINE]}, None),
    ("land", "test"): ("session", {"sessions": [MINE], "test": "true"}, None),
    ("land", "mode"): ("session", {"sessions": [MINE], "mode": "squash"}, None),
    ("land", "message"): ("session", {"sessions": [MINE], "message": "m"}, None),
    ("land", "keep_going"): ("session", {"sessions": [MINE], "keep_going": True}, None),
    ("land", "keep"): ("session", {"sessions": [MINE], "keep": True}, None),
    ("land", "no_sandbox"): ("grant", {"test": "true", "no_sandbox": True}, ["--allow-no-sandbox"]),
    ("land", "all"): ("scope", {"all": True}, None),
    ("discard", "session_id"): ("session", {"session_id": "victim1"}, None),
    ("discard", "purge"): ("session", {"session_id": "victim2", "purge": True}, None),
    ("discard", "all"): ("scope", {"all": True, "purge": True}, None),
}

# The servers that together list every argument (the whole network and a list of hosts
# exclude each other).
FULL_FLAGS = [
    BASE_FLAGS + ["--all-sessions", "--allow-network", "--allow-no-sandbox", "--allow-output", OUT,
                  "--allow-input", os.path.dirname(DOC), "--allow-base-dir", OUT,
                  "--allow-write", OUT, "--allow-read", HOME + "/.ssh", "--profile", "generic",
                  "--env", "GITHUB_TOKEN"],
    BASE_FLAGS + ["--allow-host", "example.com", "--publish", "8080"],
]


# Arguments every server lists, whose values are checked against the grant (a variable set
# by the call, a shorter timeout are the call's own).
VALUE_CHECKED = {("run", "env"), ("run", "timeout")}


class Broken(Exception):
    pass


def broken_in(error):
    """The broken promise inside the task groups' exception groups, if any."""
    if isinstance(error, Broken):
        return error
    for inner in getattr(error, "exceptions", ()):
        found = broken_in(inner)
        if found:
            return found
    return None


def server(flags):
    env = dict(os.environ)
    return StdioServerParameters(command=BIN, args=["mcp", *flags], cwd=SRC, env=env)


async def connect(flags, work):
    async with stdio_client(server(flags)) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await work(session)


def schemas(listed):
    return {tool.name: tool.input_schema for tool in listed.tools}


async def call(session, tool, args):
    """('refused', data) for a protocol error, ('error', document) for a tool error, else
    ('ok', document)."""
    try:
        with anyio.fail_after(CALL_SECONDS):
            result = await session.call_tool(tool, args)
    except MCPError as e:
        return "refused", {"rpc": e.code, **(e.data or {})}
    document = json.loads(result.content[0].text)
    return ("error" if result.is_error else "ok"), document


def refusal_code(kind, document):
    if kind == "refused":
        return document.get("code")
    if kind == "error":
        return document["error"]["code"]
    return None


def aimed(tool, args, own):
    """Grant-kind arguments act on the server's own session, where the tool takes one."""
    args = dict(args)
    takes_session = tool in ("run", "diff", "capture", "promote")
    if takes_session and "session_id" not in args and "change_set" not in args \
            and "note" not in args:
        args["session_id"] = own
    if tool == "land" and "sessions" not in args and "all" not in args:
        args["sessions"] = [own]
    return args


async def bind_own(session):
    kind, document = await call(session, "bind", {"owner": "none"})
    if kind != "ok":
        raise Broken(f"the server could not bind its own session: {document}")
    return document["session_id"]


def ids_in(document, key="sessions"):
    return sorted(s["session_id"] for s in document.get(key, []))


async def every_property(session_flags_list):
    """Every (tool, property) the fully granted servers list."""
    found = set()
    for flags in session_flags_list:
        async def listing(session):
            return schemas(await session.list_tools())
        for tool, schema in (await connect(flags, listing)).items():
            found.update((tool, prop) for prop in schema.get("properties", {}))
    return found


async def refuse():
    listed = await every_property(FULL_FLAGS)
    missing = sorted(listed - set(WIDENING))
    extra = sorted(set(WIDENING) - listed)
    if missing or extra:
        raise Broken(f"properties without a widening value: {missing}; not listed: {extra}")

    async def work(session):
        offered = schemas(await session.list_tools())
        own = await bind_own(session)
        for (tool, prop) in in_order():
            kind, args, flags = WIDENING[(tool, prop)]
            listed = prop in offered.get(tool, {}).get("properties", {})
            if kind == "grant" and listed and (tool, prop) not in VALUE_CHECKED:
                raise Broken(f"{tool}.{prop} is listed by a server that does not grant it")
            result, document = await call(session, tool, aimed(tool, args, own) if kind == "grant" else args)
            code = refusal_code(result, document)
            if kind == "grant" and code != "not_granted":
                raise Broken(f"{tool}.{prop}: honoured without {flags}: {result} {document}")
            if kind == "grant" and flags[0] not in document.get("grant", "") + " ".join(flags):
                raise Broken(f"{tool}.{prop}: the refusal names {document.get('grant')}, not {flags[0]}")
            if kind == "session" and code != "session_not_granted":
                raise Broken(f"{tool}.{prop}: acted on the user's session: {result} {document}")
            if kind == "scope":
                if result != "ok":
                    raise Broken(f"{tool}.{prop}: {result} {document}")
                touched = set(ids_in(document)) - {own}
                if touched:
                    raise Broken(f"{tool}.{prop}: reached the user's sessions {sorted(touched)}")
            print(f"refused {tool}.{prop}: {code or 'own sessions only'}")
        return len(WIDENING)

    return await connect(BASE_FLAGS, work)


async def honour_one(tool, prop, kind, args, flags):
    if kind == "session":
        session_ids = set()
        for value in [args.get("session_id"), *args.get("sessions", [])]:
            if value:
                session_ids.add(value)
        if "digest" in args:
            session_ids.add(MINE)
        flags = [flag for sid in sorted(session_ids) for flag in ("--session", sid)]
    elif kind == "scope":
        flags = ["--all-sessions"]

    async def work(session):
        sent = aimed(tool, args, await bind_own(session)) if kind == "grant" else args
        result, document = await call(session, tool, sent)
        code = refusal_code(result, document)
        if code in ("not_granted", "session_not_granted"):
            raise Broken(f"{tool}.{prop}: refused although granted ({flags}): {document}")
        if kind == "scope" and tool == "list" and MINE not in ids_in(document):
            raise Broken(f"list.all with --all-sessions does not list the user's session: {document}")
        print(f"honoured {tool}.{prop} with {' '.join(flags)}: {result} {code or ''}".rstrip())

    # A granted timeout replaces the base one (the flag is given once).
    base = BASE_FLAGS[:1] if "--timeout" in flags else BASE_FLAGS
    await connect(base + flags, work)


# Calls that change or remove sessions go last, in this order.
LAST = [("land", "all"), ("discard", "session_id"), ("discard", "purge"), ("discard", "all")]


def in_order():
    return [key for key in sorted(WIDENING) if key not in LAST] + LAST


async def honour():
    for key in in_order():
        kind, args, flags = WIDENING[key]
        await honour_one(*key, kind, args, flags)
    return len(WIDENING)


async def main():
    try:
        count = await (refuse() if PHASE == "refuse" else honour())
    except BaseException as error:
        broken = broken_in(error)
        if broken is None:
            raise
        print(f"BROKEN: {broken}")
        sys.exit(1)
    print(f"{PHASE}: {count} properties")


anyio.run(main)
