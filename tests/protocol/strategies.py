"""Hypothesis strategies for STOMP frames that each version can express."""

from __future__ import annotations

from hypothesis import strategies as st

from protocol.frames import ALL_COMMANDS, SUPPORTED_VERSIONS, UNESCAPED_COMMANDS, V1_0, V1_1, Frame

COMMANDS = sorted(ALL_COMMANDS)
versions = st.sampled_from(SUPPORTED_VERSIONS)

# Characters the escaping rules care about, made likely; the rest is any unicode
# (hypothesis' text() already leaves out surrogates, which UTF-8 cannot encode).  No
# version can express a NUL in a header: it only ends a frame.
_SPECIAL = st.sampled_from([":", "\n", "\r", "\\", "\x01", "c", "n", "r"])
_any_char = st.one_of(_SPECIAL, st.characters(codec="utf-8", exclude_characters="\0"))


def _text(exclude: str) -> st.SearchStrategy[str]:
    return st.text(_any_char.filter(lambda c: c not in exclude), max_size=12)


def header_names(mode: str) -> st.SearchStrategy[str]:
    """Names ``mode`` can express ("1.0" also stands for never-escaped frames)."""
    return _text(":\n\r") if mode == V1_0 else _text("")


def header_values(mode: str) -> st.SearchStrategy[str]:
    if mode == V1_0:
        return _text("\n\r")
    if mode == V1_1:
        # 1.1 has no escape for CR; a raw CR survives except at the end of the line,
        # where it reads as half of a CRLF.
        return _text("").filter(lambda value: not value.endswith("\r"))
    return _text("")


@st.composite
def frames(draw: st.DrawFn, version: str, commands: list[str] | None = None) -> Frame:
    """A frame whose encoding for ``version`` parses back to an equal frame."""
    command = draw(st.sampled_from(commands or COMMANDS))
    mode = V1_0 if command in UNESCAPED_COMMANDS else version
    headers = draw(
        st.dictionaries(
            header_names(mode).filter(lambda name: name != "content-length"),
            header_values(mode),
            max_size=5,
        )
    )
    body = draw(st.binary(max_size=200))
    if b"\0" in body or draw(st.booleans()):
        headers["content-length"] = str(len(body))
    return Frame(command, headers, body)


@st.composite
def versioned_frames(draw: st.DrawFn) -> tuple[str, Frame]:
    version = draw(versions)
    return version, draw(frames(version))


eols = st.lists(st.sampled_from([b"\n", b"\r\n"]), max_size=3).map(b"".join)


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, list[tuple[Frame, bytes, bool]]]:
    """A version and frames, each with the heart-beat EOLs to send before it and
    whether to send its header lines with CRLF endings."""
    version = draw(versions)
    return version, draw(st.lists(st.tuples(frames(version), eols, st.booleans()), max_size=6))
