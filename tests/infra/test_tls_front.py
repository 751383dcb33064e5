"""infra/tls_front.py, the cold-start bench's TLS in front of the emulator:
requests read whole off a kept-alive connection, and the emulator's
answers made fit to keep it alive."""

import io
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "infra"))

import tls_front  # noqa: E402


def test_requests_are_read_one_after_another_by_length_and_by_chunks():
    first = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
    second = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    stream = io.BufferedReader(io.BytesIO(first + second))
    assert tls_front.read_message(stream) == first
    assert tls_front.read_message(stream) == second
    assert tls_front.read_message(stream) is None


def test_a_connection_cut_inside_a_head_is_refused():
    try:
        tls_front.read_message(io.BufferedReader(io.BytesIO(b"POST / HTTP/1.1\r\nHost")))
    except ValueError:
        return
    raise AssertionError("a truncated head was taken as a request")


def test_an_answer_loses_its_close_and_states_its_length():
    answer = b"HTTP/1.1 200 OK\r\nServer: W\r\nConnection: close\r\n\r\n{\"a\":1}"
    assert tls_front.kept_alive(answer) == b"HTTP/1.1 200 OK\r\nServer: W\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
    sized = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
    assert tls_front.kept_alive(sized) == b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def test_an_answer_is_read_by_its_length_and_without_one_to_the_end():
    sized = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    assert tls_front.read_message(io.BufferedReader(io.BytesIO(sized + b"later")), unsized_to_end=True) == sized
    unsized = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it"
    assert tls_front.read_message(io.BufferedReader(io.BytesIO(unsized)), unsized_to_end=True) == unsized
