"""Safe XML reading: bytes -> a small tree of elements that know their line.

The parser is defusedxml's expat reader with every dangerous feature refused: an
``<!ENTITY>`` declaration of any kind (internal ones make "billion laughs" bombs, external
ones read files or URLs), external entity references, and external DTDs and parameter
entities (expat's defaults, which defusedxml keeps, never load them).  A ``<!DOCTYPE>``
with nothing but a public/system id is harmless and accepted: servlet ``web.xml`` files
carry one.  Nothing is ever read from disk or the network while parsing.

Only what the loader needs is kept: namespace and local name, the attributes without a
namespace (``xsi:schemaLocation`` and friends are dropped), the text, the children, and
the line each element starts on.
"""

from __future__ import annotations

import io
import xml.sax
import xml.sax.handler
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from xml.parsers import expat
from xml.sax.xmlreader import InputSource

from defusedxml.common import DefusedXmlException, DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.expatreader import DefusedExpatParser

# The one size cap for every file a configuration reads (this one checks bytes given).
from config.files import MAX_BYTES

if TYPE_CHECKING:
    from xml.sax.xmlreader import AttributesNSImpl, Locator

#: Deeper than any real configuration, shallow enough for recursive walks.
MAX_DEPTH = 64

SPRING_BEANS = "http://www.springframework.org/schema/beans"
ACTIVEMQ_CORE = "http://activemq.apache.org/schema/core"


@dataclass(slots=True, eq=False)
class Node:
    ns: str | None
    tag: str
    line: int
    path: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    text: str = ""

    def child_elements(self, tag: str) -> list[Node]:
        return [child for child in self.children if child.tag == tag]


class XmlError(Exception):
    """The document is not safe or not well-formed XML; ``line`` and ``element`` say where."""

    def __init__(self, line: int | None, element: str, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.element = element
        self.reason = reason


class _TreeBuilder(xml.sax.handler.ContentHandler):
    def __init__(self) -> None:
        super().__init__()
        self.locator: Locator | None = None
        self.stack: list[Node] = []
        self.root: Node | None = None
        self._text: list[list[str]] = []

    def setDocumentLocator(self, locator: Locator) -> None:
        self.locator = locator

    def line(self) -> int | None:
        return self.locator.getLineNumber() if self.locator is not None else None

    def path(self) -> str:
        return self.stack[-1].path if self.stack else ""

    def startElementNS(
        self, name: tuple[str | None, str], qname: str | None, attrs: AttributesNSImpl
    ) -> None:
        ns, tag = name
        parent = self.stack[-1] if self.stack else None
        if len(self.stack) >= MAX_DEPTH:
            raise XmlError(self.line(), self.path(), f"elements nested deeper than {MAX_DEPTH} levels")
        node = Node(
            ns=ns,
            tag=tag,
            line=self.line() or 0,
            path=_child_path(parent, tag),
            attrs={key[1]: value for key, value in attrs.items() if key[0] is None},
        )
        if parent is None:
            self.root = node
        else:
            parent.children.append(node)
        self.stack.append(node)
        self._text.append([])

    def endElementNS(self, name: tuple[str | None, str], qname: str | None) -> None:
        node = self.stack.pop()
        node.text = "".join(self._text.pop()).strip()

    def characters(self, content: str) -> None:
        if self._text:
            self._text[-1].append(content)


class _SafeParser(DefusedExpatParser):
    def reset(self) -> None:
        super().reset()
        # The standard library asks expat to follow a DOCTYPE's external DTD (and calls
        # the external-entity handler for it, which defusedxml turns into an error).
        # Never: the DTD is not read, and a harmless DOCTYPE line parses.
        self._parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)  # type: ignore[attr-defined]


def _child_path(parent: Node | None, tag: str) -> str:
    # Spring's <beans> wrapper is in every file: paths start below it, at <broker>.
    if parent is None or (parent.tag == "beans" and parent.path == "beans"):
        return tag
    return f"{parent.path}/{tag}"


def parse(data: bytes) -> Node:
    """The document's root element; raises :class:`XmlError` naming the line."""
    if len(data) > MAX_BYTES:
        raise XmlError(None, "", f"file is larger than {MAX_BYTES >> 20} MiB: not a configuration file")
    if not data.strip():
        raise XmlError(None, "", "file is empty")
    builder = _TreeBuilder()
    parser = _SafeParser()
    parser.setFeature(xml.sax.handler.feature_namespaces, True)
    parser.setFeature(xml.sax.handler.feature_external_ges, False)
    parser.setFeature(xml.sax.handler.feature_external_pes, False)
    parser.setContentHandler(builder)
    source = InputSource()
    source.setByteStream(io.BytesIO(data))
    try:
        parser.parse(source)
    except EntitiesForbidden as exc:
        kind = "an external entity" if exc.sysid or exc.pubid else "an entity"
        raise XmlError(
            builder.line(),
            builder.path(),
            f"the document declares {kind} ({exc.name!r}): entity declarations are refused, "
            "as they can expand without bound or read files and URLs",
        ) from None
    except ExternalReferenceForbidden as exc:
        raise XmlError(
            builder.line(), builder.path(), f"external reference {exc.sysid!r} refused: nothing is fetched"
        ) from None
    except (DTDForbidden, DefusedXmlException) as exc:
        raise XmlError(builder.line(), builder.path(), f"refused: {exc}") from None
    except xml.sax.SAXParseException as exc:
        raise XmlError(
            exc.getLineNumber(), builder.path(), f"not well-formed XML: {exc.getMessage()}"
        ) from None
    except (xml.sax.SAXException, ValueError) as exc:
        raise XmlError(builder.line(), builder.path(), f"not readable XML: {exc}") from None
    if builder.root is None:
        raise XmlError(None, "", "no root element")
    return builder.root
