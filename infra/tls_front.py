"""TLS in front of the emulator, as AWS endpoints are: a throwaway CA made
with openssl, a certificate for localhost and 127.0.0.1 signed by it, and
one TLS port per service in front of the emulator's plain port, so that a
function makes one handshake per service as it does in a region.

The emulator closes its connection after every answer (`Connection:
close`); AWS endpoints keep theirs open. So the front keeps the function's
connection open across requests, as AWS does, and takes each request to the
emulator on a connection of its own: without that every AWS call of a warm
function would pay a TCP and TLS handshake that it does not pay in a region.

A function trusts the CA through the standard `SSL_CERT_FILE`, and no flag
turns verification off: `make_ca` writes the CA alone and a bundle of the
system's roots followed by the CA's, so that a function that reads the
system's store loads as many roots as in Lambda (the bench gives each
function the one it takes as it would on Lambda).
"""

import pathlib
import socket
import ssl
import subprocess
import threading

SYSTEM_ROOTS = pathlib.Path("/etc/ssl/certs/ca-certificates.crt")


def make_ca(directory):
    """(bundle, certificate, key) paths: a fresh CA and a leaf it signed."""
    d = pathlib.Path(directory)
    d.mkdir(parents=True, exist_ok=True)

    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=bench throwaway CA", "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"),
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
            "-keyout", str(d / "leaf.key"), "-out", str(d / "leaf.csr"))
    (d / "leaf.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(d / "leaf.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
            "-CAcreateserial", "-days", "2", "-extfile", str(d / "leaf.ext"), "-out", str(d / "leaf.pem"))
    roots = SYSTEM_ROOTS.read_text() if SYSTEM_ROOTS.exists() else ""
    bundle = d / "bundle.pem"
    bundle.write_text(roots + (d / "ca.pem").read_text())
    return bundle, d / "leaf.pem", d / "leaf.key"


class TlsFront:
    """127.0.0.1:<port> with TLS, each connection spliced to `target`."""

    def __init__(self, target, certificate, key):
        self.target = target
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(certificate, key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            tls = self.context.wrap_socket(client, server_side=True)
            tls.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            requests = tls.makefile("rb")
            while (request := read_message(requests)) is not None:
                with socket.create_connection(self.target) as upstream:
                    upstream.sendall(request)
                    # By its length, not to the close: the emulator closes
                    # some milliseconds after its last byte.
                    answer = read_message(upstream.makefile("rb"), unsized_to_end=True)
                tls.sendall(kept_alive(answer or b""))
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            client.close()

    def close(self):
        self.listener.close()


def read_message(stream, unsized_to_end=False):
    """One HTTP/1.1 message, head and body (by Content-Length or chunked),
    as bytes; None at the end of the connection. A body of neither kind is
    empty (a request) or runs to the end of the stream (`unsized_to_end`,
    an answer)."""
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        line = stream.readline(65537)
        if not line:
            if head:
                raise ValueError("connection closed inside a request's head")
            return None
        head += line
    fields = {k.strip().lower(): v.strip() for k, _, v in (l.partition(b":") for l in head.split(b"\r\n")[1:] if l)}
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = b""
        while True:
            size_line = stream.readline(65537)
            size = int(size_line.split(b";")[0], 16)
            body += size_line
            if size == 0:
                # Trailers, if any, then the blank line ending the message.
                while (line := stream.readline(65537)) not in (b"", b"\r\n"):
                    body += line
                return head + body + b"\r\n"
            body += stream.read(size + 2)
    if b"content-length" in fields:
        return head + stream.read(int(fields[b"content-length"]))
    return head + (stream.read() if unsized_to_end else b"")


def kept_alive(answer):
    """The emulator's answer without its `Connection: close`, its length
    stated so the connection can go on."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"connection:")]
    if not any(l.lower().startswith((b"content-length:", b"transfer-encoding:")) for l in lines[1:]):
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body
