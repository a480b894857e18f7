"""Virtual topics, composite destinations and mirrored queues: where else a SEND goes.

ActiveMQ's destination interceptors (``org.apache.activemq.broker.region.virtual``), as
routes: ``Destinations.send_targets`` asks ``Interceptors.legs`` once per destination
name and caches the answer, so a SEND to a virtual topic costs a dict lookup, never a
scan over queues.  A route with no more than plain targets stays a plain tuple; one with
copies, or conditions on a message (a filtered destination's selector, a selector-aware
virtual topic, ``local``, ``dropOnResourceLimit``), is a ``Route``, a tuple of the
targets flow control waits for that also carries its ``Leg`` list.

- A virtual topic (``VirtualTopicInterceptor``): the topic publishes the message, and
  every queue ``prefix`` + topic + ``postfix`` that exists gets a copy whose
  ``original-destination`` is the topic.  The queues are indexed as they are made
  (``made``) under the topics they feed, as ActiveMQ's ``VirtualTopic.interceptMappedDestination``
  maps a queue back to its topic; a new one drops the cached routes through its topic.
- A composite (``CompositeDestinationFilter``): each ``forwardTo`` gets a copy (whose
  ``original-destination`` is the composite), a filtered one only where its selector
  matches; with ``forwardOnly="false"`` the composite's own destination gets the message.
  A copy goes through the interceptors of where it goes, as ActiveMQ sends it back
  through its region broker (a composite forwarding to a virtual topic feeds its queues).
- A mirrored queue (``MirroredQueue``): the message is published on the mirror topic too,
  which is itself a topic like any other (``VirtualTopic.Mirror.X`` feeds its consumer
  queues under the default virtual topic).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from broker.core.base import names
from broker.core.base.bridging import origin_of
from broker.core.base.message import header_block
from broker.core.base.selector import compile_selector
from wildcards import matches

if TYPE_CHECKING:
    from collections.abc import Callable

    from broker.core.base.message import Message
    from broker.core.base.selector import Selector
    from broker.core.base.settings import CompositeRule, VirtualTopicRule
    from broker.core.base.settings import Interceptors as Rules
    from broker.core.delivery.queue import Queue
    from broker.core.delivery.topic import Topic

    Resolve = Callable[[str, str], Queue | Topic]

ORIGINAL_DESTINATION: Final = "original-destination"
#: What a ``header_block`` holds where the sender gave one of its own.
ORIGINAL_LINE: Final = f"{ORIGINAL_DESTINATION}:".encode()
#: How deep copies of copies go (a composite forwarding to a composite ...): a loop in
#: the file stops here instead of growing without end.
_DEPTH: Final = 8


class Leg:
    """One target of a route, and what a message must be for it to go there."""

    __slots__ = ("aware", "droppable", "line", "local", "original", "selectors", "target", "unless")

    def __init__(
        self, target: Queue | Topic, original: str | None = None, selectors: tuple[Selector, ...] = ()
    ) -> None:
        self.target = target
        #: ``original-destination`` of the copy (None: it is the message itself, or a
        #: mirror's, which ActiveMQ gives none).
        self.original = original
        #: Its ``original-destination`` as a line of a ``header_block``.
        self.line = header_block({ORIGINAL_DESTINATION: original}) if original is not None else b""
        #: Every one must take the message (filtered destinations on its way).
        self.selectors = selectors
        #: Taken only where none of these does (``sendWhenNotMatched``).
        self.unless: tuple[Selector, ...] | None = None
        #: A selector-aware virtual topic's queue: one of its consumers must take it.
        self.aware = False
        #: A virtual topic's ``local``: not for a message that came over a bridge.
        self.local = False
        #: ``dropOnResourceLimit``: dropped where its queue has no room.
        self.droppable = False

    @property
    def plain(self) -> bool:
        return (
            self.original is None
            and not self.selectors
            and self.unless is None
            and not (self.aware or self.local or self.droppable)
        )

    def takes(self, message: Message) -> bool:
        for selector in self.selectors:
            if not selector(message):
                return False
        if self.unless is not None and any(selector(message) for selector in self.unless):
            return False
        if self.local and origin_of(message):
            return False
        target = self.target
        if self.aware and not any(c.accepts(message) for c in getattr(target, "consumers", ())):
            return False
        if self.droppable and not (message.persistent and getattr(target, "stores", False)):
            meter = target.meter
            if meter is not None and not meter.fits(message.size):
                return False
        return True


class Route(tuple["Queue | Topic", ...]):
    """The targets flow control and the producers' gauge see (a droppable copy's queue is
    not one: no producer waits for it), and every leg to route to."""

    legs: tuple[Leg, ...]

    @classmethod
    def of(cls, legs: list[Leg]) -> Route:
        route = cls(leg.target for leg in legs if not leg.droppable)
        route.legs = tuple(legs)
        return route


class _Consumers:
    """One virtual topic's consumer queues: the queue name back to its topic's name."""

    __slots__ = ("pattern", "rule")

    def __init__(self, rule: VirtualTopicRule) -> None:
        self.rule = rule
        # As ActiveMQ's VirtualTopic.getRegex: "." literal, "*" one element.
        self.pattern = re.compile(_regex(rule.prefix) + "(.+)" + _regex(rule.postfix))

    def topic_of(self, queue_bare: str) -> str | None:
        found = self.pattern.fullmatch(queue_bare)
        if found is None:
            return None
        topic = found.group(1)
        return topic if matches(self.rule.pattern, topic) else None


class Interceptors:
    """The rules, compiled, and the consumer queues of each virtual topic."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self._virtual = [_Consumers(rule) for rule in rules.virtual_topics]
        #: (rule index, topic bare name) -> its consumer queues, in the order made.
        self._queues: dict[tuple[int, str], list[Queue]] = {}
        self._selectors: dict[str, Selector] = {}
        for composite in rules.composites:
            for forward in composite.forwards:
                if forward.selector is not None:
                    self.selector(forward.selector)

    def __bool__(self) -> bool:
        rules = self.rules
        return bool(rules.virtual_topics or rules.composites or rules.mirror)

    def selector(self, text: str) -> Selector:
        selector = self._selectors.get(text)
        if selector is None:
            selector = self._selectors[text] = compile_selector(text)
        return selector

    # -- consumer queues ---------------------------------------------------------

    def made(self, queue: Queue) -> list[str]:
        """``queue`` is new: the full names of the topics it is a consumer queue of."""
        if not queue.name.startswith(names.QUEUE):
            return []
        bare = queue.name[len(names.QUEUE) :]
        fed: list[str] = []
        for index, consumers in enumerate(self._virtual):
            topic = consumers.topic_of(bare)
            if topic is not None:
                self._queues.setdefault((index, topic), []).append(queue)
                fed.append(names.TOPIC + topic)
        return fed

    def gone(self, queue: Queue) -> None:
        if not queue.name.startswith(names.QUEUE):
            return
        bare = queue.name[len(names.QUEUE) :]
        for index, consumers in enumerate(self._virtual):
            topic = consumers.topic_of(bare)
            queues = self._queues.get((index, topic)) if topic is not None else None
            if queues is not None and queue in queues:
                queues.remove(queue)
                if not queues:
                    del self._queues[(index, topic)]  # type: ignore[arg-type]

    # -- routes ------------------------------------------------------------------

    def route(self, parts: list[tuple[str, str]], resolve: Resolve) -> tuple[Queue | Topic, ...]:
        """Where a SEND to ``parts`` goes: a plain tuple, or a ``Route`` with its legs."""
        walk = _Walk(self, resolve)
        for kind, name in parts:
            walk.legs(kind, name, _Hop(None, (), 0))
        legs = walk.out
        if all(leg.plain for leg in legs):
            return tuple(leg.target for leg in legs)
        return Route.of(legs)

    def consumer_queues(self, topic: str) -> list[tuple[VirtualTopicRule, list[Queue]]]:
        """Each virtual topic rule ``topic`` (bare) falls under, and its consumer queues."""
        found = []
        for index, consumers in enumerate(self._virtual):
            if matches(consumers.rule.pattern, topic):
                found.append((consumers.rule, self._queues.get((index, topic), [])))
        return found

    def composite(self, kind: str, name: str) -> CompositeRule | None:
        for composite in self.rules.composites:
            if composite.kind == kind and matches(composite.pattern, name):
                return composite
        return None


@dataclass(frozen=True, slots=True)
class _Hop:
    """How a walk came to a destination: the copy's ``original-destination`` (None: the
    message itself), the filters on its way, how many copies of copies deep."""

    original: str | None
    selectors: tuple[Selector, ...]
    depth: int


class _Walk:
    """One route worked out: the legs from a destination name, depth first."""

    __slots__ = ("interceptors", "out", "resolve")

    def __init__(self, interceptors: Interceptors, resolve: Resolve) -> None:
        self.interceptors = interceptors
        self.resolve = resolve
        self.out: list[Leg] = []

    def legs(self, kind: str, name: str, hop: _Hop) -> None:
        composite = self.interceptors.composite(kind, name) if hop.depth < _DEPTH else None
        if composite is not None:
            self.forward(composite, kind, name, hop)
        else:
            self.own(kind, name, hop)

    def forward(self, composite: CompositeRule, kind: str, name: str, hop: _Hop) -> None:
        # The composite is a destination of its own, made as ActiveMQ makes it (a SEND
        # needs write on it, and admin to make it), though it holds nothing forwardOnly.
        here = self.resolve(kind, name).name
        filters: list[Selector] = []
        for forward in composite.forwards:
            (to_kind, to_name), *_ = names.split_destination(forward.destination)
            selectors = hop.selectors
            if forward.selector is not None:
                selector = self.interceptors.selector(forward.selector)
                filters.append(selector)
                selectors = (*selectors, selector)
            self.legs(to_kind, to_name, _Hop(here, selectors, hop.depth + 1))
        if not composite.forward_only:
            self.own(kind, name, hop)
        elif composite.send_when_not_matched and len(filters) == len(composite.forwards):
            start = len(self.out)
            self.own(kind, name, hop)
            for leg in self.out[start:]:
                leg.unless = tuple(filters)

    def own(self, kind: str, name: str, hop: _Hop) -> None:
        """``kind`` + ``name`` itself, its mirror topic, its virtual topics' queues."""
        target = self.resolve(kind, name)
        out = self.out
        out.append(Leg(target, hop.original, hop.selectors))
        if hop.depth >= _DEPTH:
            return
        interceptors = self.interceptors
        mirror = interceptors.rules.mirror
        if mirror is not None and kind == names.QUEUE:
            # The mirror's copy says the mirror topic, with no original-destination (ActiveMQ's).
            mirrored = mirror.prefix + name + mirror.postfix
            self.own(names.TOPIC, mirrored, _Hop(None, hop.selectors, hop.depth + 1))
        if kind == names.TOPIC:
            for rule, queues in interceptors.consumer_queues(name):
                for queue in queues:
                    copy = Leg(queue, target.name if rule.set_original_destination else None, hop.selectors)
                    copy.aware = rule.selector_aware
                    copy.local = rule.local
                    copy.droppable = rule.drop_on_resource_limit
                    out.append(copy)


def _regex(part: str) -> str:
    return "".join("\\." if c == "." else "[^.]*" if c == "*" else re.escape(c) for c in part)
