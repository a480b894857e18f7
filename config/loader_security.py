"""``<plugins>`` (authentication, authorization, redelivery) and ``<sslContext>``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from config import loader_plugins, passwords
from config.loader_policies import destination, load_redelivery
from config.model import (
    Authentication,
    Authorization,
    AuthorizationEntry,
    BrokerConfig,
    RedeliveryPlugin,
    SslContext,
    StatisticsPlugin,
    User,
)
from config.reader import Context, Fields, boolean, groups, nonempty, path

if TYPE_CHECKING:
    from config.xmltree import Node


def load_plugins(
    ctx: Context, node: Node
) -> tuple[Authentication | None, Authorization | None, RedeliveryPlugin | None]:
    authentication: Authentication | None = None
    authorization: Authorization | None = None
    redelivery: RedeliveryPlugin | None = None
    for child in node.children:
        if child.tag == "simpleAuthenticationPlugin":
            authentication = _authentication(ctx, child)
        elif child.tag == "authorizationPlugin":
            authorization = _authorization(ctx, child)
        elif child.tag == "redeliveryPlugin":
            redelivery = load_redelivery(ctx, child)
        elif child.tag == "statisticsBrokerPlugin" or child.tag in loader_plugins.TAGS:
            continue  # statistics_plugin, loader_plugins
        else:
            ctx.unexpected(child, "plugins")
    if authorization is not None and authentication is None:
        ctx.warn(
            node,
            "authorizationPlugin without simpleAuthenticationPlugin: no user is authenticated, so "
            "ActiveMQ refuses every operation, and so does stompd",
        )
    return authentication, authorization, redelivery


def statistics_plugin(ctx: Context, node: Node) -> StatisticsPlugin | None:
    """``<plugins>``' ``<statisticsBrokerPlugin/>`` (the last, if several), or None."""
    found = None
    for child in node.children:
        if child.tag == "statisticsBrokerPlugin":
            Fields(ctx, child, "statisticsBrokerPlugin").finish()
            for grandchild in child.children:
                ctx.unexpected(grandchild, "statisticsBrokerPlugin")
            found = StatisticsPlugin(source=ctx.origin(child))
    return found


def _authentication(ctx: Context, node: Node) -> Authentication:
    fields = Fields(ctx, node, "simpleAuthenticationPlugin")
    fields.get("anonymousAccessAllowed", "anonymous_access_allowed", boolean)
    fields.get("anonymousUser", "anonymous_user", nonempty)
    fields.get("anonymousGroup", "anonymous_group", nonempty)
    fields.finish()
    users: dict[str, User] = {}
    for child in node.children:
        if child.tag != "users":
            ctx.unexpected(child, "simpleAuthenticationPlugin")
            continue
        for user_node in child.children:
            if user_node.tag != "authenticationUser":
                ctx.unexpected(user_node, "users")
                continue
            user = _user(ctx, user_node)
            if user is None:
                continue
            if user.username in users:
                ctx.error(
                    user_node,
                    f"user {user.username!r} is already defined on line {users[user.username].source.line}",
                )
            users.setdefault(user.username, user)
    return Authentication(users=tuple(users.values()), **fields.values, origins=fields.origins)


def _user(ctx: Context, node: Node) -> User | None:
    fields = Fields(ctx, node, "authenticationUser")
    name = fields.get("username", "username", nonempty)
    secret = fields.raw("password")
    member_of = fields.get("groups", "groups", groups)
    fields.finish()
    if name is None:
        if "username" not in node.attrs:
            ctx.error(node, "an authenticationUser needs a username")
        return None
    password = None
    if secret is not None:
        try:
            password = passwords.parse(secret[0])
        except passwords.InvalidHash as exc:
            ctx.error(node, f"password of {name!r}: {exc}")
            return None
    elif "password" in node.attrs:
        ctx.warn(node, f"user {name!r} has no usable password and cannot log in")
    else:
        ctx.error(node, f"user {name!r} needs a password (plain, or made by `stompd hash-password`)")
        return None
    return User(name, password, member_of or frozenset(), source=ctx.origin(node))


def _authorization(ctx: Context, node: Node) -> Authorization | None:
    Fields(ctx, node, "authorizationPlugin").finish()
    result: Authorization | None = None
    for holder in node.children:
        if holder.tag != "map":
            ctx.unexpected(holder, "authorizationPlugin")
            continue
        for map_node in holder.children:
            if map_node.tag == "authorizationMap":
                result = _authorization_map(ctx, map_node)
            else:
                ctx.unexpected(map_node, "map")
    if result is None:
        ctx.error(node, "needs <map><authorizationMap>...</authorizationMap></map>")
    return result


def _authorization_map(ctx: Context, node: Node) -> Authorization:
    Fields(ctx, node, "authorizationMap").finish()
    entries: list[AuthorizationEntry] = []
    default_entry: AuthorizationEntry | None = None
    temp_entry: AuthorizationEntry | None = None
    for child in node.children:
        if child.tag == "authorizationEntries":
            for entry_node in child.children:
                if entry_node.tag != "authorizationEntry":
                    ctx.unexpected(entry_node, "authorizationEntries")
                    continue
                entry = _acl(ctx, entry_node, need_destination=True)
                if entry is not None:
                    entries.append(entry)
        elif child.tag in ("defaultEntry", "tempDestinationAuthorizationEntry"):
            for entry_node in child.children:
                if entry_node.tag not in ("authorizationEntry", "tempDestinationAuthorizationEntry"):
                    ctx.unexpected(entry_node, child.tag)
                    continue
                entry = _acl(ctx, entry_node, need_destination=False)
                if child.tag == "defaultEntry":
                    default_entry = entry
                else:
                    temp_entry = entry
        else:
            ctx.unexpected(child, "authorizationMap")
    return Authorization(entries=tuple(entries), default_entry=default_entry, temp_entry=temp_entry)


def _acl(ctx: Context, node: Node, need_destination: bool) -> AuthorizationEntry | None:
    fields = Fields(ctx, node, node.tag)
    for attr in ("read", "write", "admin"):
        fields.get(attr, attr, groups)
    if need_destination:
        where = destination(ctx, fields)
        fields.finish()
        if where is None:
            return None
        kind, pattern = where
        return AuthorizationEntry(kind, pattern, **fields.values, source=ctx.origin(node))
    fields.skip("queue", "topic", "tempQueue", "tempTopic")
    fields.finish()
    return AuthorizationEntry(**fields.values, source=ctx.origin(node))


_STORE_TYPES = ("pkcs12", "p12", "pfx")


def load_ssl(ctx: Context, node: Node, config: BrokerConfig) -> SslContext | None:
    """The ``<sslContext>``, its files checked.  A problem is an error when a TLS listener
    needs the files, a warning when none does (ActiveMQ's own ssl:// is OpenWire)."""
    beans = [child for child in node.children if child.tag == "sslContext"]
    for child in node.children:
        if child.tag != "sslContext":
            ctx.unexpected(child, "sslContext")
    target = beans[0] if beans else node
    fields = Fields(ctx, target, "sslContext")
    for attr, name in (
        ("keyStore", "key_store"),
        ("trustStore", "trust_store"),
        ("certificateFile", "certificate_file"),
        ("keyFile", "key_file"),
        ("caFile", "ca_file"),
    ):
        fields.get(attr, name, path)
    for attr, name in (
        ("keyStorePassword", "key_store_password"),
        ("trustStorePassword", "trust_store_password"),
        ("keyPassword", "key_password"),
    ):
        found = fields.raw(attr)
        if found is not None:
            fields.values[name], fields.origins[name] = found
    used = any(connector.tls for connector in config.connectors)
    report = ctx.error if used else ctx.warn
    suffix = "" if used else " (no TLS listener uses this sslContext, so stompd runs without it)"
    for attr in ("keyStoreType", "trustStoreType"):
        found = fields.raw(attr)
        if found is not None and found[0].strip().lower() not in _STORE_TYPES:
            report(
                target,
                f'{attr}="{found[0]}": stompd reads PKCS12 stores; convert with keytool -importkeystore ... '
                f"-deststoretype PKCS12{suffix}",
            )
    fields.finish()
    ssl = SslContext(**fields.values, origins=fields.origins)
    if ssl.key_store is not None and (ssl.certificate_file is not None or ssl.key_file is not None):
        ctx.error(target, "give keyStore or certificateFile/keyFile, not both")
        return ssl
    if (ssl.certificate_file is None) != (ssl.key_file is None):
        ctx.error(target, "certificateFile and keyFile go together")
        return ssl
    # cryptography is imported only where TLS is configured: it is ~14 MB of a broker's
    # RSS, and most brokers have no <sslContext> (bench_memory's bound counts every MB).
    from config.tls import TlsFileError, read_key_material

    try:
        read_key_material(ssl)
    except TlsFileError as exc:
        report(target, f"{exc}{suffix}")
    return ssl
