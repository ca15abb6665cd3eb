"""``relata workspaces create|list|invite|invitations|revoke-invitation`` and ``relata members
list|add|role|remove``.

The command line acts as an administrator on the local database (whoever can run it can read
the database file anyway): it may create a workspace for anyone and manage any workspace's
members, choosing it with ``--workspace``. The rules are the API's (``relata.auth.members``):
a taken slug is refused, the last owner can be neither demoted nor removed, and every change
is audited, as ``cli``. Adding a member by username stays here, an operator's act; people
join through the API and the web by invitation (``relata.auth.invitations``), which the
command line also creates (the code printed once), lists and revokes. It does not accept
one: accepting is the invited person's consent, given signed in as themselves
(docs/decisions/0028-workspace-invitations.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from relata.cli.common import CliError, add_workspace_option, open_container, server_url

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
    inv = wsub.add_parser(
        "invite",
        help="create an invitation to a workspace (code printed once)",
        description="Create an invitation to join SLUG with --role. The code and the link "
        "to accept it are printed once (only a hash is stored): hand them to the person, who "
        "signs in and accepts. It works once, until it expires or is revoked.",
    )
    inv.add_argument("slug", metavar="SLUG", help="the workspace")
    inv.add_argument("--role", choices=_ROLES, default="viewer", help="default: viewer")
    inv.add_argument(
        "--days", type=int, default=7, metavar="N", help="expires after N days (1-30, default 7)"
    )
    inv.set_defaults(handler=_invite)
    il = wsub.add_parser(
        "invitations",
        help="list a workspace's pending invitations (never a code)",
        description="List SLUG's invitations that can still be accepted: id, code prefix, "
        "role, who created it, expiry.",
    )
    il.add_argument("slug", metavar="SLUG", help="the workspace")
    il.add_argument("--json", action="store_true", help="one JSON array")
    il.set_defaults(handler=_invitations)
    ir = wsub.add_parser(
        "revoke-invitation",
        help="revoke a pending invitation",
        description="Revoke a pending invitation of SLUG: its code stops working at once.",
    )
    ir.add_argument("slug", metavar="SLUG", help="the workspace")
    ir.add_argument("invitation_id", metavar="ID", help="the invitation's id (from `invitations`)")
    ir.set_defaults(handler=_revoke_invitation)

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
        try:
            ws, owner = c.admin.create_workspace(
                args.slug, args.name, owner=args.owner, actor=CLI_ACTOR
            )
        except DuplicateKey:
            raise CliError(f"a workspace {args.slug!r} exists already") from None
    who = f", owned by {owner.username}" if owner else "; add members with `relata members add`"
    print(f"created workspace {ws.slug}{who}")
    return 0


def _list(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        rows: list[dict[str, Any]] = [
            {
                "id": e.workspace.id,
                "slug": e.workspace.slug,
                "name": e.workspace.name,
                "members": len(e.members),
                "owners": e.owners,
            }
            for e in c.admin.workspaces()
        ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        owners = ", ".join(r["owners"]) or "no owner"
        print(f"{r['slug']}  {r['name']}  {r['members']} member(s)  owner: {owners}")
    if not rows:
        print("no workspaces: `relata seed` creates the default one")
    return 0


def _invite(args: argparse.Namespace) -> int:
    from relata.auth.invitations import accept_path
    from relata.domain.models import CLI_ACTOR
    from relata.domain.vocabulary import Role

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.slug)
        code, invitation = c.invitations.create(
            ws.id, Role(args.role), days=args.days, created_by=None, actor=CLI_ACTOR
        )
        base = server_url(c.settings)
    print(f"{base}{accept_path(code)}")
    print(
        f"invitation {invitation.id} to {ws.slug} as {invitation.role.value}, until "
        f"{invitation.expires_at:%Y-%m-%d %H:%M} UTC; shown once. Hand the link (or the code "
        f"{code}) to the person: they sign in and accept it. Behind a proxy, use its "
        "public address instead.",
        file=sys.stderr,
    )
    return 0


def _invitations(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.slug)
        live = c.invitations.live(ws.id)
        names = c.invitations.creator_names(live)
        rows = [
            {
                "id": i.id,
                "prefix": i.prefix,
                "role": i.role.value,
                "created_by": names.get(i.created_by) if i.created_by else None,
                "created_at": i.created_at.isoformat(),
                "expires_at": i.expires_at.isoformat(),
            }
            for i in live
        ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        by = r["created_by"] or "cli"
        print(f"{r['id']}  ri_{r['prefix']}_…  {r['role']}  by {by}  until {r['expires_at']}")
    if not rows:
        print(f"workspace {ws.slug} has no pending invitations")
    return 0


def _revoke_invitation(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR

    with open_container(log=False) as c:
        ws = c.workspaces.resolve(args.slug)
        c.invitations.revoke(ws.id, args.invitation_id, actor=CLI_ACTOR)
    print(f"revoked invitation {args.invitation_id} to workspace {ws.slug}")
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
