"""Path decoding as aiohttp/yarl does it (values observed on the 0.19.0 oracle)."""

import pytest

from hermes_server.http.paths import path_safe, segment_value


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("/api/sessions/plain", "/api/sessions/plain"),
        ("/api/%73essions", "/api/sessions"),
        ("/api/sessions/a%2Fb", "/api/sessions/a%2Fb"),
        ("/api/sessions/x%2fy", "/api/sessions/x%2Fy"),  # kept escaped, normalised to upper case
        ("/api/sessions/%25%32%46", "/api/sessions/%252F"),
        ("/api/sessions/sp%20ace%25", "/api/sessions/sp ace%25"),
        ("/api/sessions/a%2Bb", "/api/sessions/a+b"),
        ("/api/sessions/%FF%FE", "/api/sessions/%FF%FE"),  # not UTF-8: kept as written
        ("/api/sessions/%ff", "/api/sessions/%ff"),
        ("/api/sessions/%C3%A9%FF", "/api/sessions/\u00e9%FF"),
        ("/api/sessions/%C3", "/api/sessions/%C3"),
        ("/api/sessions/%C3%41", "/api/sessions/%C3A"),
        ("/api/sessions/%ED%A0%80", "/api/sessions/%ED%A0%80"),  # an encoded surrogate is invalid UTF-8
        ("/api/sessions/%C0%AF", "/api/sessions/%C0%AF"),  # overlong
        ("/api/sessions/%zz%", "/api/sessions/%zz%"),
        ("/api/sessions/%00", "/api/sessions/\x00"),
        ("/api/sessions/%F0%9F%98%80", "/api/sessions/\U0001f600"),
    ],
)
def test_path_safe(raw: str, safe: str) -> None:
    assert path_safe(raw) == safe


@pytest.mark.parametrize(
    ("segment", "value"),
    [("a%2Fb", "a/b"), ("sp ace%25", "sp ace%"), ("%252F", "%2F"), ("%FF", "%FF"), ("x%2F..%2Fy", "x/../y")],
)
def test_segment_value(segment: str, value: str) -> None:
    assert segment_value(segment) == value
