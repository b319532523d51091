"""End to end: TLS is always verified (issue 4).

A TLS-terminating proxy on loopback, with a certificate made for the test,
stands in front of the fake. vx must trust it only when told to through
CURL_CA_BUNDLE or SSL_CERT_FILE, and refuse it otherwise; plain http:// is
refused for any host that is not loopback, before anything is sent.
"""
import os
import socket
import ssl
import subprocess
import threading
import unittest

from harness import FakeTestCase, job_yaml


class TLSProxy:
    """Accepts TLS on 127.0.0.1 and pipes the bytes to the fake's plain HTTP port."""

    def __init__(self, cert, key, upstream_port):
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.upstream = upstream_port
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.port = self.sock.getsockname()[1]
        self.handshakes_failed = 0
        self.stopping = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def handle(self, conn):
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError):
            self.handshakes_failed += 1
            conn.close()
            return
        up = socket.create_connection(("127.0.0.1", self.upstream))

        def pipe(src, dst):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        t = threading.Thread(target=pipe, args=(up, tls), daemon=True)
        t.start()
        pipe(tls, up)
        t.join(5)
        tls.close()
        up.close()

    def close(self):
        self.stopping = True
        self.sock.close()


class TLS(FakeTestCase):

    def setUp(self):
        super().setUp()
        self.cert = os.path.join(self.tmp, "cert.pem")
        self.key = os.path.join(self.tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", self.key, "-out", self.cert], check=True, capture_output=True)
        port = int(self.fake.url.rsplit(":", 1)[1])
        self.proxy = TLSProxy(self.cert, self.key, port)
        self.https = "https://127.0.0.1:%d" % self.proxy.port
        self.repo.write({"a": job_yaml("a")})

    def tearDown(self):
        self.proxy.close()
        super().tearDown()

    def env(self, **extra):
        e = {"CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": self.https + "/v1/",
             "CURL_CA_BUNDLE": "", "SSL_CERT_FILE": ""}
        e.update(extra)
        return e

    def test_trusted_through_curl_ca_bundle(self):
        r = self.repo.plan(env=self.env(CURL_CA_BUNDLE=self.cert))
        self.assertEqual(r.code, 0, r)
        self.assertIn("+   job.a create", r.out)
        self.assertEqual(self.fake.rpc_count("ListCustomJobs"), 1)

    def test_trusted_through_ssl_cert_file(self):
        r = self.repo.apply(env=self.env(SSL_CERT_FILE=self.cert))
        self.assertEqual(r.code, 0, r)
        self.assertEqual(len(self.live_jobs("a")), 1)

    def test_unknown_certificate_refused(self):
        r = self.repo.plan(env=self.env())
        self.assertEqual(r.code, 1, r)
        self.assertRegex(r.err.lower(), "certificate|ssl|tls")
        self.assertEqual(self.fake.rpc_count("ListCustomJobs"), 0)
        self.assertGreaterEqual(self.proxy.handshakes_failed, 1)

    def test_plain_http_refused_off_loopback(self):
        r = self.repo.plan(env={"CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": "http://10.0.0.1/v1/"})
        self.assertEqual(r.code, 1, r)
        self.assertIn("CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM", r.err)
        self.assertIn("loopback", r.err)


if __name__ == "__main__":
    unittest.main()
