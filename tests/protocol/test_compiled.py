"""The compiled codec (setup.py, issue 41) against its own pure-Python source: the same
frames, bytes and errors for the same input, however the input is cut.

``pure`` is the codec loaded from its ``.py`` files beside the extensions (its own
``Frame``, escaping and errors), which is what a machine without a compiler runs.  Where
the build is pure the two are the same source, and this checks the loader alone.
"""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
from pathlib import Path
from types import ModuleType, SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

import protocol.encoder
import protocol.escaping
import protocol.frames
import protocol.parser
from protocol.frames import SUPPORTED_VERSIONS
from tests.compiled_build import load_script
from tests.protocol.strategies import eols, frames, streams, versions

ROOT = Path(__file__).resolve().parent.parent.parent
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
CODEC = ("frames", "errors", "escaping", "encoder", "parser")


def load_pure_codec() -> SimpleNamespace:
    """protocol's codec modules from their sources, each importing the others' sources:
    under their own names while they load, then the compiled ones put back."""
    saved = {name: sys.modules[f"protocol.{name}"] for name in CODEC}
    loaded: dict[str, ModuleType] = {}
    try:
        for name in CODEC:
            spec = importlib.util.spec_from_file_location(
                f"protocol.{name}", ROOT / "protocol" / f"{name}.py"
            )
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[f"protocol.{name}"] = module
            spec.loader.exec_module(module)
            loaded[name] = module
    finally:
        sys.modules.update({f"protocol.{name}": module for name, module in saved.items()})
    return SimpleNamespace(**loaded)


pure = load_pure_codec()
compiled = SimpleNamespace(
    frames=protocol.frames, escaping=protocol.escaping, encoder=protocol.encoder, parser=protocol.parser
)


def test_the_pure_codec_is_its_source_and_imports_only_its_source() -> None:
    for name in CODEC:
        module = getattr(pure, name)
        assert module.__file__ == str(ROOT / "protocol" / f"{name}.py")
    assert pure.parser.Frame is pure.frames.Frame
    assert pure.parser.unescape is pure.escaping.unescape


def test_the_hot_path_runs_compiled_where_it_can_be() -> None:
    """Where a compiler and mypyc are there (CI), the suite runs on the compiled build:
    scripts/setup-tests.sh made it, tests/compiled_build.py kept it current."""
    script = load_script()
    reason = script.why_pure()
    for name in script.modules():
        module = importlib.import_module(name)
        assert module.__file__ is not None
        assert module.__file__.endswith(SUFFIX) == (reason is None), (name, module.__file__, reason)
    if reason is None:
        assert script.state() == "compiled"


def parse_all(codec: SimpleNamespace, version: str, data: bytes, cut: int) -> list[object]:
    """Every frame (as plain values) and, if one comes, the error, feeding ``cut`` bytes a time."""
    parser = codec.parser.FrameParser(max_frame_size=4096, max_headers=8, max_header_length=64)
    parser.version = version
    out: list[object] = []
    try:
        for i in range(0, len(data), cut):
            parser.feed(data[i : i + cut])
            while (frame := parser.next_frame()) is not None:
                out.append((frame.command, frame.headers, frame.body))
    except Exception as exc:
        out.append((type(exc).__name__, str(exc)))
    out.append(("buffered", parser.buffered, parser.incoming))
    return out


# Two parsers over every input, a byte at a time at worst: fewer examples than the
# profile's, so that a loaded machine stays far from the test timeout.
@settings(max_examples=40)
@given(stream=streams(), cut=st.integers(1, 64), crlf=st.booleans())
def test_the_same_stream_parses_to_the_same_frames(
    stream: tuple[str, list[tuple[object, bytes, bool]]], cut: int, crlf: bool
) -> None:
    version, items = stream
    wire = b""
    for frame, before, _ in items:
        wire += before + compiled.encoder.encode_frame(frame, version)
    if crlf:
        wire = wire.replace(b"\n", b"\r\n")
    assert parse_all(pure, version, wire, cut) == parse_all(compiled, version, wire, cut)


# Bytes that are mostly frame-like: commands, separators, escapes, NULs, digits.
_PIECES = st.sampled_from(
    [b"SEND", b"MESSAGE", b"CONNECT", b"\n", b"\r\n", b":", b"\\", b"\\c", b"\\n", b"\\r", b"\\t", b"\0",
     b"content-length:", b"3", b"99999999999999999", b"destination:/queue/a", b"\xff", b"\xc3\xa9", b"x" * 70]
)  # fmt: skip


@settings(max_examples=60)
@given(
    version=versions,
    data=st.lists(st.one_of(_PIECES, st.binary(max_size=8)), max_size=40).map(b"".join),
    cut=st.integers(1, 32),
)
def test_any_bytes_give_the_same_frames_or_the_same_error(version: str, data: bytes, cut: int) -> None:
    assert parse_all(pure, version, data, cut) == parse_all(compiled, version, data, cut)


@given(version=st.sampled_from(SUPPORTED_VERSIONS), data=st.data())
def test_the_same_frame_encodes_to_the_same_bytes(version: str, data: st.DataObject) -> None:
    frame = data.draw(frames(version))
    twin = pure.frames.Frame(frame.command, dict(frame.headers), frame.body)
    assert pure.encoder.encode_frame(twin, version) == compiled.encoder.encode_frame(frame, version)
    items = list(frame.headers.items())
    assert pure.encoder.encode_headers(items, version) == compiled.encoder.encode_headers(items, version)


@given(version=versions, text=st.text(max_size=20), before=eols)
def test_escaping_is_the_same_both_ways(version: str, text: str, before: bytes) -> None:
    value = before.decode() + text
    assert pure.escaping.escape(value, version) == compiled.escaping.escape(value, version)
    assert pure.escaping.escape_name(value, version) == compiled.escaping.escape_name(value, version)

    def unescaped(escaping: ModuleType) -> tuple[str, str]:
        try:
            return "ok", escaping.unescape(value, version)
        except Exception as exc:
            return type(exc).__name__, str(exc)

    assert unescaped(pure.escaping) == unescaped(compiled.escaping)


class _Reversing(pure.parser.FrameParser):  # type: ignore[misc,name-defined]
    """The pure parser with every body reversed: a codec that differs."""

    def next_frame(self) -> object:
        frame = super().next_frame()
        if frame is not None:
            frame.body = frame.body[::-1]
        return frame


def test_a_difference_would_be_seen() -> None:
    """The comparison is not vacuous: a parser that differs is told apart."""
    wire = b"SEND\ndestination:/queue/a\n\nhi\0"
    other = SimpleNamespace(parser=SimpleNamespace(FrameParser=_Reversing))
    assert parse_all(other, "1.2", wire, 3) != parse_all(compiled, "1.2", wire, 3)
