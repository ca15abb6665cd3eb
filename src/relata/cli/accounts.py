"""``relata users create|reset-password|list`` and ``relata tokens create|list|revoke`` (``relata
createadmin`` is in ``relata.cli.admin``).

The command line acts as an administrator on the local database (whoever can run it can read
the database file anyway). Passwords come from a prompt (asked twice) or, with
``--password-stdin``, from the first line of standard input; never from an argument, which
other users of the machine could read in the process list. A token's secret is printed once.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from typing import TYPE_CHECKING, Any

from relata.cli.common import CliError, add_workspace_option, open_container

if TYPE_CHECKING:
    from relata.bootstrap import Container
    from relata.domain.models import Workspace

_ROLES = ("owner", "editor", "viewer")


def register(sub: Any) -> None:
    users = sub.add_parser(
        "users",
        help="create and list user accounts, reset a password",
        description="Create user accounts, reset a user's password, and list users with "
        "their workspaces and roles.",
    )
    usub = users.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    c = usub.add_parser(
        "create",
        help="create a user with a private workspace, or as a member of --workspace",
        description="Create a user. Without --join the user gets a private workspace "
        "(owner) with a random slug, never their username (slugs are visible to everyone "
        "signed in); with it, they join that workspace with --role. The password is asked "
        "twice, or read from standard input with --password-stdin.",
    )
    c.add_argument("--username", required=True, help="the account's name (lowercase)")
    c.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    c.add_argument("--join", metavar="SLUG", help="join this existing workspace instead")
    c.add_argument("--role", choices=_ROLES, default="editor", help="role in --join's workspace")
    c.add_argument("--admin", action="store_true", help="an administrator")
    c.set_defaults(handler=_users_create)
    rp = usub.add_parser(
        "reset-password",
        help="set a user's new password and end their sessions",
        description="Set a new password for USERNAME (asked twice, or read from standard "
        "input with --password-stdin) and end every session they have. Audited in each of "
        "their workspaces.",
    )
    rp.add_argument("username", metavar="USERNAME", help="an existing user")
    rp.add_argument("--password-stdin", action="store_true", help="read the password from stdin")
    rp.set_defaults(handler=_users_reset_password)
    ls = usub.add_parser(
        "list",
        help="list users and their workspaces",
        description="List every user with their workspaces and roles.",
    )
    ls.add_argument("--json", action="store_true", help="one JSON array")
    ls.set_defaults(handler=_users_list)

    tokens = sub.add_parser(
        "tokens",
        help="create, list and revoke API tokens",
        description="API tokens for `Authorization: Bearer` on /api/v1: create (the secret "
        "is printed once), list (never a secret), revoke (refused at once).",
    )
    tsub = tokens.add_subparsers(dest="tokens_command", required=True, metavar="COMMAND")
    t = tsub.add_parser(
        "create",
        help="create an API token for a user in a workspace (printed once)",
        description="Create an API token for --user in the workspace, with --role (at most "
        "the user's role there). The secret is printed once; only its hash is stored.",
    )
    t.add_argument("--user", required=True, metavar="USERNAME", help="the token's owner")
    t.add_argument("--name", default="cli", help="what the token is for")
    t.add_argument("--role", choices=_ROLES, help="default: the user's role in the workspace")
    t.add_argument(
        "--expires",
        metavar="ISO",
        help="expiry date or date-time (UTC if naive; a bare date: through that day)",
    )
    add_workspace_option(t)
    t.set_defaults(handler=_tokens_create)
    tl = tsub.add_parser(
        "list",
        help="list a workspace's tokens (never a secret)",
        description="List a workspace's tokens: id, public prefix, owner, role, state.",
    )
    add_workspace_option(tl)
    tl.add_argument("--json", action="store_true", help="one JSON array")
    tl.set_defaults(handler=_tokens_list)
    tr = tsub.add_parser(
        "revoke",
        help="revoke a token at once",
        description="Revoke a token: every later request with it is refused.",
    )
    tr.add_argument("token_id", metavar="ID", help="the token's id (from `tokens list`)")
    add_workspace_option(tr)
    tr.set_defaults(handler=_tokens_revoke)


def _password(from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline().rstrip("\r\n")
        if not line:
            raise CliError("no password on standard input")
        return line
    first = getpass.getpass("password: ")
    if getpass.getpass("again: ") != first:
        raise CliError("the passwords differ")
    return first


def _workspace(c: Container, slug: str | None) -> Workspace:
    return c.workspaces.resolve(slug)


def _users_create(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR
    from relata.domain.vocabulary import Role

    password = _password(args.password_stdin)
    with open_container(log=False, schema="migrate") as c:
        made = c.admin.create_user(
            args.username,
            password,
            join=args.join,
            role=Role(args.role),
            is_admin=args.admin,
            actor=CLI_ACTOR,
        )
    print(
        f"created user {made.user.username} ({made.role.value} of workspace {made.workspace.slug})"
    )
    return 0


def _users_reset_password(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR

    password = _password(args.password_stdin)
    with open_container(log=False) as c:
        ended = c.admin.reset_password(args.username, password, actor=CLI_ACTOR)
    print(f"new password set for {args.username.strip().lower()}; {ended} session(s) ended")
    return 0


def _users_list(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        rows: list[dict[str, Any]] = [
            {
                "id": e.user.id,
                "username": e.user.username,
                "is_admin": e.user.is_admin,
                "disabled": e.user.disabled,
                "workspaces": {m.workspace.slug: m.role.value for m in e.memberships},
            }
            for e in c.admin.users()
        ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        spaces = ", ".join(f"{k} ({v})" for k, v in r["workspaces"].items()) or "no workspace"
        flags = " admin" if r["is_admin"] else ""
        print(f"{r['username']}{flags}  {spaces}")
    if not rows:
        print("no users: create the first with `relata createadmin --username NAME`")
    return 0


def _tokens_create(args: argparse.Namespace) -> int:
    from relata.domain.instants import parse_instant
    from relata.domain.models import CLI_ACTOR
    from relata.domain.vocabulary import Role

    expires = parse_instant(args.expires, "--expires", end_of_day=True)
    with open_container(log=False) as c:
        ws = _workspace(c, args.workspace)
        user = c.accounts.get_by_username(args.user)
        member = c.accounts.role_in(user.id, ws.id)
        if member is None:
            raise CliError(f"{user.username} is not a member of workspace {ws.slug}")
        secret, token = c.tokens.create(
            user_id=user.id,
            workspace_id=ws.id,
            name=args.name,
            role=Role(args.role) if args.role else member,
            creator_role=member,
            expires_at=expires,
            actor=CLI_ACTOR,
        )
    print(secret)
    print(
        f"token {token.id} ({token.role.value} in {ws.slug}); shown once: "
        "send it as Authorization: Bearer <token>",
        file=sys.stderr,
    )
    return 0


def _tokens_list(args: argparse.Namespace) -> int:
    with open_container(log=False) as c:
        ws = _workspace(c, args.workspace)
        names = {u.id: u.username for u in c.accounts.users()}
        rows = [
            {
                "id": t.id,
                "name": t.name,
                "prefix": t.prefix,
                "user": names.get(t.user_id, t.user_id),
                "role": t.role.value,
                "created_at": t.created_at.isoformat(),
                "expires_at": t.expires_at.isoformat() if t.expires_at else None,
                "last_used_at": t.last_used_at.isoformat() if t.last_used_at else None,
                "revoked_at": t.revoked_at.isoformat() if t.revoked_at else None,
            }
            for t in c.tokens.list(ws.id)
        ]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        state = "revoked" if r["revoked_at"] else "active"
        print(f"{r['id']}  rl_{r['prefix']}_…  {r['user']} {r['role']}  {r['name']}  {state}")
    if not rows:
        print("no tokens")
    return 0


def _tokens_revoke(args: argparse.Namespace) -> int:
    from relata.domain.models import CLI_ACTOR

    with open_container(log=False) as c:
        ws = _workspace(c, args.workspace)
        token = c.tokens.revoke(ws.id, args.token_id, actor=CLI_ACTOR)
    print(f"revoked token {token.id}")
    return 0
