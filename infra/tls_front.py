"""TLS in front of the emulator, as AWS endpoints are: a throwaway CA made
with openssl, a certificate for localhost and 127.0.0.1 signed by it, and
one TLS port per service spliced to the emulator's plain port, so that a
function makes one handshake per service as it does in a region.

The function trusts the CA through the standard `SSL_CERT_FILE`, holding
the system's roots followed by the CA's: it loads as many roots as in
Lambda and no flag turns verification off.
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
            upstream = socket.create_connection(self.target)
        except (OSError, ssl.SSLError):
            client.close()
            return
        for sock in (tls, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_pump, args=(upstream, tls), daemon=True).start()
        _pump(tls, upstream)

    def close(self):
        self.listener.close()


def _pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.close()
            except OSError:
                pass
