"""``relata workspaces create|list`` and ``relata members list|add|role|remove``.

The command line acts as an administrator on the local database (whoever can run it can read
the database file anyway): it may create a workspace for anyone and manage any workspace's
members, choosing it with ``--workspace``. The rules are the API's (``relata.auth.members``):
a taken slug is refused, the last owner can be neither demoted nor removed, and every change
is audited, as ``cli``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from relata.cli.common import CliError, add_workspace_option, open_container

_ROLES = ("owner", "editor", "viewer")


def register(sub: Any) -> None:
    ws = sub.add_parser(
        "workspaces",
        help="create and list workspaces",
        description="Create workspaces (optionally with an owner) and list every workspace "
        "with its members' count.",
    )
    wsub = ws.add_subparsers(dest="workspaces_command", required=True, metavar="COMMAND")
    c = wsub.add_parser(
        "create",
        help="create a workspace, with --owner as its owner",
        description="Create a workspace. --owner makes that user its owner; without it the "
        "workspace has no member until `relata members add`.",
    )
    c.add_argument("slug", metavar="SLUG", help="1-63 lowercase letters, digits or '-'")
    c.add_argument("--name", help="for people (default: the slug)")
    c.add_argument("--owner", metavar="USERNAME", help="the user who owns it")
    c.set_defaults(handler=_create)
    ls = wsub.add_parser(
        "list",
        help="list every workspace",
        description="List every workspace: slug, name, members, owners.",
    )
    ls.add_argument("--json", action="store_true", help="one JSON array")
    ls.set_defaults(handler=_list)

    members = sub.add_parser(
        "members",
        help="list, add, re-role and remove a workspace's members",
        description="A workspace's members and their roles (owner, editor, viewer). "
        "The last owner can be neither demoted nor removed.",
    )
    msub = members.add_subparsers(dest="members_command", required=True, metavar="COMMAND")
    ml = msub.add_parser(
        "list", help="list the members", description="List the workspace's members."
    )
    add_workspace_option(ml)
    ml.add_argument("--json", action="store_true", help="one JSON array")
    ml.set_defaults(handler=_members_list)
    ma = msub.add_parser(
        "add", help="add a user with a role", description="Add an existing user as a member."
    )
    ma.add_argument("username", metavar="USERNAME", help="an existing user")
    ma.add_argument("--role", choices=_ROLES, default="editor", help="default: editor")
    add_workspace_option(ma)
    ma.set_defaults(handler=_members_add)
    mr = msub.add_parser(
        "role", help="change a member's role", description="Change a member's role."
    )
    mr.add_argument("username", metavar="USERNAME", help="the member")
    mr.add_argument("role", choices=_ROLES, metavar="ROLE", help="owner, editor or viewer")
    add_workspace_option(mr)
    mr.set_defaults(handler=_members_role)
    mrm = msub.add_parser(
        "remove",
        help="remove a member",
        description="Remove a member; their API tokens for the workspace stop working.",
    )
    mrm.add_argument("username", metavar="USERNAME", help="the member")
    add_workspace_option(mrm)
    mrm.set_defaults(handler=_members_remove)


def _create(args: argparse.Namespace) -> int:
    from relata.domain.errors import DuplicateKey
    from relata.domain.models import CLI_ACTOR

    with open_container(log=False, schema="migrate") as c:
        owner = c.accounts.get_by_username(args.owner) if args.owner else None
        try:
            ws = c.members.create_workspace(
                args.slug, args.name, owner_id=owner.id if owner else None, actor=CLI_ACTOR
            )
        except DuplicateKey:
            raise CliError(f"a workspace {args.slug!r} exists already") from None
    who = f", owned by {owner.username}" if owner else "; add members with `relata members add`"
    print(f"created workspace {ws.slug}{who}")
    return 0


def _list(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        rows: list[dict[str, Any]] = []
        for ws in c.repos.workspaces.list():
            members = c.members.members(ws.id)
            rows.append(
                {
                    "id": ws.id,
                    "slug": ws.slug,
                    "name": ws.name,
                    "members": len(members),
                    "owners": [m.username for m in members if m.role.value == "owner"],
                }
            )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        owners = ", ".join(r["owners"]) or "no owner"
        print(f"{r['slug']}  {r['name']}  {r['members']} member(s)  owner: {owners}")
    if not rows:
        print("no workspaces: `relata seed` creates the default one")
    return 0


def _members_list(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        rows = [
            {
                "user_id": m.user_id,
                "username": m.username,
                "role": m.role.value,
                "added_at": m.added_at.isoformat(),
            }
            for m in c.members.members(ws.id)
        ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        print(f"{r['username']}  {r['role']}")
    if not rows:
        print(f"workspace {ws.slug} has no members")
    return 0


def _members_add(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR
    from relata.domain.vocabulary import Role

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        m = c.members.add(ws.id, args.username, Role(args.role), actor=CLI_ACTOR)
    print(f"{m.username} is now {m.role.value} of workspace {ws.slug}")
    return 0


def _members_role(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR
    from relata.domain.vocabulary import Role

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        m = c.members.set_role(ws.id, args.username, Role(args.role), actor=CLI_ACTOR)
    print(f"{m.username} is now {m.role.value} of workspace {ws.slug}")
    return 0


def _members_remove(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.workspace)
        c.members.remove(ws.id, args.username, actor=CLI_ACTOR)
    print(f"removed {args.username.strip().lower()} from workspace {ws.slug}")
    return 0
