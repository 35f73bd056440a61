"""User management over the wire: createUser, updateUser, dropUser, usersInfo,
dropAllUsersFromDatabase, grantRolesToUser and revokeRolesFromUser.

The users live in the deployment's :class:`~mongocore.sim.security.Security`, shared by
every member (a server replicates ``admin.system.users``; here there is one copy) and,
on a sharded cluster, by the routers. A user created this way logs in with
SCRAM-SHA-256 and SCRAM-SHA-1 (or the ``mechanisms`` given), with credentials derived
as a server stores them (usersInfo's ``showCredentials`` shows them). Creating a user
does not turn authentication on: as with mongod's ``--auth``, that is fixed when the
deployment starts (with ``users=``). Roles are recorded, checked against the built-in
role names, and reported; they are not enforced (any authenticated user may run any
command). Users given at startup report the ``root`` role, which is what they can do.
"""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from bson import Binary

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Reply
from mongocore.sim.diagnostic_commands import process_of
from mongocore.sim.security import EXTERNAL, SCRAM_MECHANISMS, Security, User

__all__ = [
    "BUILTIN_ROLES",
    "cmd_create_user",
    "cmd_drop_all_users",
    "cmd_drop_user",
    "cmd_grant_roles",
    "cmd_revoke_roles",
    "cmd_roles_info",
    "cmd_update_user",
    "cmd_users_info",
]

#: Built-in roles of any database, and those that exist only in admin (a 7.0 server's
#: role_graph_builtins: enableSharding is a role of every database, not of admin only).
BUILTIN_ROLES = frozenset(
    {"read", "readWrite", "dbAdmin", "dbOwner", "userAdmin", "enableSharding"}
)
ADMIN_ONLY_ROLES = frozenset(
    {
        "readAnyDatabase",
        "readWriteAnyDatabase",
        "userAdminAnyDatabase",
        "dbAdminAnyDatabase",
        "clusterAdmin",
        "clusterManager",
        "clusterMonitor",
        "hostManager",
        "backup",
        "restore",
        "root",
        "directShardOperations",
        "__system",
        "__queryableBackup",
    }
)
_MECHANISMS = (*SCRAM_MECHANISMS, "MONGODB-X509", "PLAIN", "GSSAPI")


@dataclass
class _UserInfo:
    """What usersInfo reports beyond the credentials."""

    user_id: Binary = field(default_factory=lambda: Binary(uuid.uuid4().bytes, 4))
    roles: list[dict[str, str]] = field(default_factory=lambda: [{"role": "root", "db": "admin"}])
    custom_data: Optional[dict[str, Any]] = None


_CATALOGS: weakref.WeakKeyDictionary[Security, dict[tuple[str, str], _UserInfo]] = (
    weakref.WeakKeyDictionary()
)


def _catalog(security: Security) -> dict[tuple[str, str], _UserInfo]:
    return _CATALOGS.setdefault(security, {})


def _info(security: Security, user: User) -> _UserInfo:
    return _catalog(security).setdefault((user.db, user.name), _UserInfo())


def _security(ctx: CommandContext) -> Security:
    return process_of(ctx).security


def _type_name(value: Any) -> str:
    names = {bool: "bool", int: "int", float: "double", str: "string", list: "array"}
    return names.get(type(value), "object" if isinstance(value, Mapping) else type(value).__name__)


def _wrong_type(command: str, field_name: str, value: Any, expected: str) -> CommandError:
    return CommandError(
        14,
        f"BSON field '{command}.{field_name}' is the wrong type '{_type_name(value)}',"
        f" expected type '{expected}'",
    )


def _roles(ctx: CommandContext, value: Any, command: str) -> list[dict[str, str]]:
    if value is None:
        raise CommandError(10065, "invalid parameter: expected an object (roles)")
    if not isinstance(value, list):
        raise _wrong_type(command, "roles", value, "array")
    roles = []
    for role in value:
        if isinstance(role, str):
            name, db = role, ctx.db
        elif isinstance(role, Mapping) and isinstance(role.get("role"), str):
            name, db = role["role"], str(role.get("db", ctx.db))
        else:
            raise CommandError(2, "Role names must be either strings or objects")
        if not (name in BUILTIN_ROLES or (name in ADMIN_ONLY_ROLES and db == "admin")):
            raise CommandError(31, f"Could not find role: {name}@{db}")
        if {"role": name, "db": db} not in roles:
            roles.append({"role": name, "db": db})
    return roles


def _user_name(ctx: CommandContext) -> str:
    name = ctx.target
    if not isinstance(name, str):
        raise _wrong_type(ctx.name, ctx.name, name, "string")
    if not name:
        raise CommandError(2, "User document needs 'user' field to be non-empty")
    return name


def _build_user(ctx: CommandContext, name: str, password: Any, mechanisms: Any) -> User:
    if ctx.db == EXTERNAL:
        if password is not None:
            raise CommandError(
                2, "Cannot set the password for users defined on the '$external' database"
            )
        return User.x509(name)
    if password is None:
        raise CommandError(
            2,
            "Must provide a 'pwd' field for all user documents, except those with"
            " '$external' as the user's source db",
        )
    if not isinstance(password, str):
        raise _wrong_type(ctx.name, "pwd", password, "string")
    if not password:
        raise CommandError(
            50687, "Error preflighting UTF-8 conversion: U_STRING_NOT_TERMINATED_WARNING"
        )
    if ctx.cmd.get("digestPassword") is False:
        raise CommandError(238, "digestPassword: false is not supported by the simulator")
    chosen: tuple[str, ...] = SCRAM_MECHANISMS
    if mechanisms is not None:
        if not isinstance(mechanisms, list):
            raise _wrong_type(ctx.name, "mechanisms", mechanisms, "array")
        if not mechanisms:
            raise CommandError(2, "mechanisms field must not be empty")
        for mechanism in mechanisms:
            if mechanism not in _MECHANISMS:
                raise CommandError(2, f"Unknown auth mechanism '{mechanism}'")
            if mechanism not in SCRAM_MECHANISMS:
                raise CommandError(2, f"Cannot use mechanism '{mechanism}' with a password")
        chosen = tuple(m for m in SCRAM_MECHANISMS if m in mechanisms)
    return User(name, password, ctx.db, chosen)


def cmd_create_user(ctx: CommandContext) -> Reply:
    name = _user_name(ctx)
    if "roles" not in ctx.cmd:
        raise CommandError(40414, "BSON field 'createUser.roles' is missing but a required field")
    roles = _roles(ctx, ctx.cmd["roles"], "createUser")
    custom_data = ctx.cmd.get("customData")
    if custom_data is not None and not isinstance(custom_data, Mapping):
        raise _wrong_type("createUser", "customData", custom_data, "object")
    security = _security(ctx)
    if security.user(ctx.db, name) is not None:
        raise CommandError(51003, f'User "{name}@{ctx.db}" already exists')
    user = _build_user(ctx, name, ctx.cmd.get("pwd"), ctx.cmd.get("mechanisms"))
    security.add_user(user)
    _catalog(security)[(ctx.db, name)] = _UserInfo(
        roles=roles, custom_data=dict(custom_data) if custom_data is not None else None
    )
    return {"ok": 1.0}


def _existing(ctx: CommandContext, name: str, message: str) -> User:
    user = _security(ctx).user(ctx.db, name)
    if user is None:
        raise CommandError(11, message)
    return user


def cmd_update_user(ctx: CommandContext) -> Reply:
    name = _user_name(ctx)
    updates = [k for k in ("pwd", "customData", "roles", "mechanisms") if k in ctx.cmd]
    if not updates:
        raise CommandError(2, "Must specify at least one field to update in updateUser")
    security = _security(ctx)
    user = _existing(ctx, name, f'Could not find user "{name}@{ctx.db}"')
    info = _info(security, user)
    roles = _roles(ctx, ctx.cmd["roles"], "updateUser") if "roles" in ctx.cmd else info.roles
    if "pwd" in ctx.cmd or "mechanisms" in ctx.cmd:
        password = ctx.cmd.get("pwd", user.password)
        mechanisms = ctx.cmd.get(
            "mechanisms", list(user.mechanisms) if "pwd" not in ctx.cmd else None
        )
        replacement = _build_user(ctx, name, password, mechanisms)
        security.remove_user(ctx.db, name)
        security.add_user(replacement)
    info.roles = roles
    if "customData" in ctx.cmd:
        custom_data = ctx.cmd["customData"]
        if not isinstance(custom_data, Mapping):
            raise _wrong_type("updateUser", "customData", custom_data, "object")
        info.custom_data = dict(custom_data)
    return {"ok": 1.0}


def cmd_drop_user(ctx: CommandContext) -> Reply:
    name = _user_name(ctx)
    security = _security(ctx)
    if not security.remove_user(ctx.db, name):
        raise CommandError(11, f"User '{name}@{ctx.db}' not found")
    _catalog(security).pop((ctx.db, name), None)
    return {"ok": 1.0}


def cmd_drop_all_users(ctx: CommandContext) -> Reply:
    security = _security(ctx)
    names = [user.name for user in security.users if user.db == ctx.db]
    for name in names:
        security.remove_user(ctx.db, name)
        _catalog(security).pop((ctx.db, name), None)
    return {"n": len(names), "ok": 1.0}


def _change_roles(ctx: CommandContext, grant: bool) -> Reply:
    name = _user_name(ctx)
    if "roles" not in ctx.cmd:
        raise CommandError(40414, f"BSON field '{ctx.name}.roles' is missing but a required field")
    roles = _roles(ctx, ctx.cmd["roles"], ctx.name)
    security = _security(ctx)
    info = _info(security, _existing(ctx, name, f'Could not find user "{name}@{ctx.db}"'))
    if grant:
        info.roles += [role for role in roles if role not in info.roles]
    else:
        info.roles = [role for role in info.roles if role not in roles]
    return {"ok": 1.0}


def cmd_grant_roles(ctx: CommandContext) -> Reply:
    return _change_roles(ctx, grant=True)


def cmd_revoke_roles(ctx: CommandContext) -> Reply:
    return _change_roles(ctx, grant=False)


def _wanted(ctx: CommandContext) -> Optional[set[tuple[str, str]]]:
    """The (db, user) names usersInfo asks for; None for every user of every database."""
    spec = ctx.target
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        return {(u.db, u.name) for u in _security(ctx).users if u.db == ctx.db}
    if isinstance(spec, Mapping) and list(spec) == ["forAllDBs"]:
        return None
    entries = spec if isinstance(spec, list) else [spec]
    if isinstance(spec, list) and not spec:
        raise CommandError(2, "$and/$or/$nor must be a nonempty array")
    wanted = set()
    for entry in entries:
        if isinstance(entry, str):
            wanted.add((ctx.db, entry))
        elif isinstance(entry, Mapping):
            for key in entry:
                if key not in ("user", "db"):
                    raise CommandError(2, f"UserName contains an unknown field named: '{key}")
            for key in ("user", "db"):
                if key not in entry:
                    raise CommandError(2, f"UserName must contain a field named: {key}")
                if not isinstance(entry[key], str):
                    raise CommandError(
                        2,
                        f"UserName must contain a string field named: {key}. But, has type"
                        f" {_type_name(entry[key])}",
                    )
            wanted.add((entry["db"], entry["user"]))
        else:
            raise CommandError(2, "UserName must be either a string or an object")
    return wanted


def cmd_users_info(ctx: CommandContext) -> Reply:
    if ctx.cmd.get("showPrivileges"):
        raise CommandError(238, "usersInfo showPrivileges is not supported by the simulator")
    wanted = _wanted(ctx)
    security = _security(ctx)
    docs = []
    for user in sorted(security.users, key=lambda u: (u.db, u.name)):
        if wanted is not None and (user.db, user.name) not in wanted:
            continue
        info = _info(security, user)
        doc: dict[str, Any] = {
            "_id": f"{user.db}.{user.name}",
            "userId": info.user_id,
            "user": user.name,
            "db": user.db,
        }
        if info.custom_data is not None and ctx.cmd.get("showCustomData", True):
            doc["customData"] = dict(info.custom_data)
        if ctx.cmd.get("showCredentials"):
            doc["credentials"] = security.stored_credentials(user)
        doc["roles"] = [dict(role) for role in info.roles]
        doc["mechanisms"] = sorted(m for m in user.mechanisms if m in SCRAM_MECHANISMS) or [
            "external"
        ]
        docs.append(doc)
    return {"users": docs, "ok": 1.0}


def _builtin_roles(db: str) -> list[str]:
    names = set(BUILTIN_ROLES) | (set(ADMIN_ONLY_ROLES) if db == "admin" else set())
    return sorted(names)


def _role_document(ctx: CommandContext, name: str, db: str) -> Reply:
    doc: Reply = {"role": name, "db": db, "isBuiltin": True, "roles": [], "inheritedRoles": []}
    if ctx.cmd.get("showAuthenticationRestrictions"):
        doc["authenticationRestrictions"] = []
        doc["inheritedAuthenticationRestrictions"] = []
    return doc


def _asked_roles(ctx: CommandContext, value: Any) -> list[tuple[str, str]]:
    entries = value if isinstance(value, list) else [value]
    asked = []
    for entry in entries:
        if isinstance(entry, str):
            asked.append((entry, ctx.db))
        elif isinstance(entry, Mapping) and isinstance(entry.get("role"), str):
            asked.append((str(entry["role"]), str(entry.get("db", ctx.db))))
        else:
            raise CommandError(
                2, "rolesInfo argument should be an integer of 1, a string, a document or an array"
            )
    return asked


def cmd_roles_info(ctx: CommandContext) -> Reply:
    """rolesInfo (``show roles``): the built-in roles; the simulator has no user-defined
    roles (createRole is not simulated), so a database's own roles are none."""
    if ctx.cmd.get("showPrivileges"):
        raise CommandError(238, "rolesInfo with showPrivileges is not supported by the simulator")
    target = ctx.target
    if isinstance(target, (int, float)) and not isinstance(target, bool):
        if target != 1:
            raise CommandError(
                2, "rolesInfo argument should be an integer of 1, a string, a document or an array"
            )
        names = _builtin_roles(ctx.db) if ctx.cmd.get("showBuiltinRoles") else []
        return {"roles": [_role_document(ctx, name, ctx.db) for name in names], "ok": 1.0}
    roles = [
        _role_document(ctx, name, db)
        for name, db in _asked_roles(ctx, target)
        if name in _builtin_roles(db)
    ]
    return {"roles": roles, "ok": 1.0}
