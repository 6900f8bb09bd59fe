"""Reading ``.osim`` files safely: bounded size, no entities, no DTD; values with XML paths.

An ``.osim`` file is untrusted input. :func:`parse_osim_bytes` refuses files of more than
:data:`MAX_OSIM_BYTES` bytes before parsing, parses with :mod:`defusedxml`'s SAX parser (a document
type declaration, entity declarations and external references are refused, so "billion laughs" and
external-entity attacks cannot run) and refuses elements nested deeper than :data:`MAX_DEPTH` while
parsing. The parser is not namespace-aware: OpenSim writes element names such as
``HuntCrossleyForce::ContactParametersSet`` (contact forces), which are well-formed XML 1.0 but not
namespace-well-formed, and ``.osim`` files use no namespaces.

:class:`XmlReader` reads values out of the parsed tree; every problem is recorded with the file's
XML path of the element (``/OpenSimDocument/Model/JointSet/objects/CustomJoint[@name='hip_r']/…``)
and what was expected, so that one pass reports all of them in a single
:class:`~mbkron.core.errors.ModelError`.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
import xml.sax
import xml.sax.handler

import defusedxml.sax
from defusedxml import DefusedXmlException

from mbkron.core.errors import ModelError

__all__ = ["MAX_DEPTH", "MAX_OSIM_BYTES", "VISUAL", "XmlReader", "parse_osim_bytes", "read_osim_bytes"]

#: Largest ``.osim`` file read, bytes (64 MiB; gait2392 with 92 muscles has 0.6 MB).
MAX_OSIM_BYTES = 64 * 1024 * 1024
#: Deepest element nesting accepted (OpenSim 4 files nest about 12 levels).
MAX_DEPTH = 64
#: Children without effect on the mechanics (geometry, appearance, wrap objects of bodies: the paths
#: that use wrap objects are handled by the muscles); skipped wherever they appear.
VISUAL = ("FrameGeometry", "attached_geometry", "Appearance", "WrapObjectSet", "frame_geometry")


def read_osim_bytes(path, source: str) -> bytes:
    """The file's bytes, refusing (ModelError) unreadable files and files over :data:`MAX_OSIM_BYTES`."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_OSIM_BYTES + 1)
    except OSError as exc:
        raise ModelError([exc.strerror or str(exc)], source, unreadable=True) from None
    if len(data) > MAX_OSIM_BYTES:
        raise ModelError([f"the file has more than {MAX_OSIM_BYTES:,} bytes; .osim files of at most "
                          f"{MAX_OSIM_BYTES:,} bytes are read (see docs/opensim.md)"], source)
    return data


class _TooDeep(Exception):
    """Raised by :class:`_TreeHandler` when elements nest deeper than :data:`MAX_DEPTH`."""


class _TreeHandler(xml.sax.handler.ContentHandler):
    """Builds an ElementTree from SAX events (element names as written, ``::`` included)."""

    def __init__(self):
        super().__init__()
        self.builder = ET.TreeBuilder()
        self.depth = 0

    def startElement(self, name, attrs):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _TooDeep
        self.builder.start(name, dict(attrs.items()))

    def endElement(self, name):
        self.depth -= 1
        self.builder.end(name)

    def characters(self, content):
        self.builder.data(content)


def parse_osim_bytes(data: bytes, source: str) -> ET.Element:
    """The root element of an ``.osim`` document (``<OpenSimDocument>``); ModelError if it is not one."""
    if len(data) > MAX_OSIM_BYTES:
        raise ModelError([f"the document has {len(data):,} bytes; at most {MAX_OSIM_BYTES:,} are read"], source)
    handler = _TreeHandler()
    try:
        defusedxml.sax.parseString(data, handler, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise ModelError([f"refused: the XML declares a DTD, entities or external references ({type(exc).__name__}); "
                          ".osim files need none"], source) from None
    except _TooDeep:
        raise ModelError([f"elements are nested more than {MAX_DEPTH} levels deep; .osim files nest about 12"], source) from None
    except xml.sax.SAXParseException as exc:
        raise ModelError([f"not well-formed XML: {exc.getMessage()}: line {exc.getLineNumber()}, "
                          f"column {exc.getColumnNumber()}"], source) from None
    except (RecursionError, MemoryError, ValueError, xml.sax.SAXException) as exc:
        raise ModelError([f"the XML cannot be parsed: {type(exc).__name__}"], source) from None
    root = handler.builder.close()
    if root.tag != "OpenSimDocument":
        raise ModelError([f"/{root.tag}: expected the root element <OpenSimDocument> of an OpenSim model file"], source)
    return root


def _label(element: ET.Element) -> str:
    name = element.get("name")
    return f"{element.tag}[@name={name!r}]" if name is not None else str(element.tag)


class XmlReader:
    """Values of an ``.osim`` tree, with problems collected under the elements' XML paths.

    Parameters
    ----------
    root : Element
        The ``<OpenSimDocument>``.
    source : str
        The file name, for messages.
    """

    def __init__(self, root: ET.Element, source: str):
        self.root = root
        self.source = source
        self.problems: list[str] = []
        self.unsupported: list[str] = []
        self.legacy: dict[str, int] = {}
        """Legacy elements skipped as OpenSim 4.6 skips them: a description → how many."""
        self._parents = {child: parent for parent in root.iter() for child in parent}

    # ------------------------------------------------------------------ paths and problems
    def path(self, element: ET.Element, tag: str | None = None) -> str:
        """The XML path of ``element`` (and of its child ``tag``, which may be missing)."""
        parts = [] if tag is None else [tag]
        node: ET.Element | None = element
        while node is not None:
            parts.append(_label(node))
            node = self._parents.get(node)
        return "/" + "/".join(reversed(parts))

    def problem(self, element: ET.Element, message: str, tag: str | None = None) -> None:
        self.problems.append(f"{self.path(element, tag)}: {message}")

    def unsupported_element(self, element: ET.Element, instead: str) -> None:
        """Record an element mbkron cannot import, with what is supported instead."""
        self.unsupported.append(f"{self.path(element)}: <{element.tag}> is not supported; supported: {instead}")

    def raise_problems(self) -> None:
        """Raise one ModelError with every unsupported element and problem found so far, if any."""
        if self.unsupported or self.problems:
            raise ModelError(self.unsupported + self.problems, self.source)

    def known_children(self, element: ET.Element, read: tuple[str, ...], legacy: tuple[str, ...] = ()) -> None:
        """Record every child of ``element`` that is neither ``read`` nor :data:`VISUAL` (nor an empty
        ``<components/>``) as unsupported: nothing in a file is dropped silently. Children in ``legacy``
        (elements of older formats that OpenSim 4.6 reads past) are counted in :attr:`legacy` instead."""
        for child in element:
            if child.tag in legacy:
                what = f"<{child.tag}> inside <{element.tag}>"
                self.legacy[what] = self.legacy.get(what, 0) + 1
            elif child.tag not in read and child.tag not in VISUAL and not (child.tag == "components" and not len(child)):
                self.unsupported_element(child, f"inside <{element.tag}>: " + ", ".join(read) + " (and geometry)")

    # ------------------------------------------------------------------ values
    def child(self, element: ET.Element, tag: str, *, required: bool = True) -> ET.Element | None:
        found = element.find(tag)
        if found is None and required:
            self.problem(element, f"missing <{tag}>")
        return found

    def text(self, element: ET.Element, tag: str, default: str | None = None) -> str | None:
        """The stripped text of child ``tag``; ``default`` if it is missing (a problem if no default)."""
        found = self.child(element, tag, required=default is None)
        if found is None:
            return default
        return (found.text or "").strip()

    def numbers(self, element: ET.Element, tag: str, count: int | None = None, *, minimum: int = 0,
                default: list[float] | None = None) -> list[float] | None:
        """The finite numbers of child ``tag`` (``count`` of them, or at least ``minimum``)."""
        found = element.find(tag)
        if found is None:
            if default is None:
                self.problem(element, f"missing <{tag}>")
            return default
        text = (found.text or "").strip()
        tokens = text.split()
        expected = f"{count} numbers" if count is not None else f"at least {minimum} numbers"
        if (count is not None and len(tokens) != count) or len(tokens) < minimum:
            self.problem(element, f"expected {expected} separated by spaces, got {len(tokens)} value(s)", tag)
            return None
        values = []
        for token in tokens:
            try:
                value = float(token)
            except ValueError:
                shown = token if len(token) <= 40 else token[:40] + "…"
                self.problem(element, f"expected {expected}, got {shown!r}", tag)
                return None
            if not math.isfinite(value):
                self.problem(element, f"expected finite numbers, got {token[:40]!r}", tag)
                return None
            values.append(value)
        return values

    def number(self, element: ET.Element, tag: str, default: float | None = None) -> float | None:
        values = self.numbers(element, tag, 1, default=None if default is None else [default])
        return None if values is None else values[0]

    def boolean(self, element: ET.Element, tag: str, default: bool) -> bool:
        text = self.text(element, tag, "true" if default else "false")
        if text not in ("true", "false"):
            self.problem(element, f"expected true or false, got {text[:40]!r}", tag)
            return default
        return text == "true"

    def name(self, element: ET.Element) -> str | None:
        """The ``name`` attribute (required, non-empty)."""
        name = element.get("name")
        if not name:
            self.problem(element, "expected a non-empty `name` attribute")
            return None
        return name

    def only_child(self, element: ET.Element, what: str) -> ET.Element | None:
        """The single child element of ``element`` (e.g. the function inside ``<x_location>``)."""
        children = list(element)
        if len(children) != 1:
            self.problem(element, f"expected exactly one {what} element inside, got {len(children)}")
            return None
        return children[0]
