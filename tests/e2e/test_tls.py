"""End to end: TLS is always verified, and HTTP/2 is used where offered (issue 4).

A TLS-terminating proxy on loopback, with a certificate made for the test,
stands in front of the fake. vx must trust it only when told to through
CURL_CA_BUNDLE or SSL_CERT_FILE, and refuse it otherwise; plain http:// is
refused for any host that is not loopback, before anything is sent.

Google's front ends speak HTTP/2. nghttpx (Debian's nghttp2-proxy) does too,
in front of the fake's HTTP/1.1: vx must negotiate h2 through ALPN and plan,
create and list over it.
"""
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import unittest
import unittest.mock

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
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

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
        # Close only once the accepting thread has ended. A thread still in accept() when the
        # socket closes can wake on the next socket given the same descriptor (the next test's
        # proxy) and answer its connections with this proxy's certificate: the create of
        # test_trusted_through_ssl_cert_file then failed "self-signed certificate" about one run
        # in fifteen when three of these files ran at once. shutdown() wakes the accept().
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(10)
        self.sock.close()


# Debian puts it in /usr/sbin, which a user's PATH may leave out.
NGHTTPX = shutil.which("nghttpx") or "/usr/sbin/nghttpx"


class H2Proxy:
    """nghttpx: TLS with ALPN h2 on 127.0.0.1, HTTP/1.1 to the fake; logs each request's protocol."""

    def __init__(self, cert, key, upstream_port, folder):
        self.access_log = os.path.join(folder, "nghttpx-access.log")
        self.error_log = os.path.join(folder, "nghttpx-error.log")
        # nghttpx cannot listen on port 0 and say which port it got, so it is given a port
        # that was free a moment ago. Tests run in parallel, so another process may take
        # that port first: nghttpx then fails to listen and exits, and we try another.
        # Ready is nghttpx's own "Listening on" line, not a successful connect, which
        # could reach whoever took the port.
        for _ in range(20):
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
            probe.close()
            if os.path.exists(self.error_log):
                os.remove(self.error_log)
            self.proc = subprocess.Popen(
                [NGHTTPX, "--conf=/dev/null", "--frontend=127.0.0.1,%d" % self.port,
                 "--backend=127.0.0.1,%d" % upstream_port, "--workers=1", "--no-ocsp", "--no-via",
                 "--accesslog-file=" + self.access_log,
                 "--accesslog-format=$alpn $method $path $status",
                 "--errorlog-file=" + self.error_log, key, cert],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            listening = "Listening on 127.0.0.1:%d," % self.port
            deadline = time.time() + 30
            while listening not in self.errors():
                if self.proc.poll() is not None:
                    break
                if time.time() > deadline:
                    self.proc.kill()
                    self.proc.wait()
                    raise AssertionError("nghttpx did not start: %s" % self.errors())
                time.sleep(0.05)
            else:
                return
            if "Address already in use" not in self.errors():
                raise AssertionError("nghttpx did not start: %s" % self.errors())
        raise AssertionError("nghttpx found no free port: %s" % self.errors())

    def errors(self):
        try:
            with open(self.error_log) as f:
                return f.read()
        except OSError:
            return ""

    def requests(self):
        with open(self.access_log) as f:
            return [line.split() for line in f if line.strip()]

    def close(self):
        self.proc.terminate()
        self.proc.wait(10)


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

    def test_http2_where_the_server_offers_it(self):
        port = int(self.fake.url.rsplit(":", 1)[1])
        h2 = H2Proxy(self.cert, self.key, port, self.tmp)
        try:
            self.repo.write({"j%d" % i: job_yaml("j%d" % i) for i in range(3)})
            env = {"CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": "https://127.0.0.1:%d/v1/" % h2.port,
                   "CURL_CA_BUNDLE": self.cert, "VX_LOG": "debug"}
            r = self.repo.apply(env=env)
            self.assertEqual(r.code, 0, r)
            for i in range(3):
                self.assertEqual(len(self.live_jobs("j%d" % i)), 1)
            self.assertEqual(self.repo.plan("-detailed-exitcode", env=env).code, 0)
            # vx says which protocol each call used, and the proxy agrees: h2 for all of them.
            lines = [l for l in r.err.splitlines() if "customJobs" in l and " -> " in l]
            self.assertGreaterEqual(len(lines), 4, r.err)
            for l in lines:
                self.assertIn("HTTP/2)", l)
            seen = h2.requests()
            self.assertEqual(sum(1 for q in seen if q[1] == "POST" and q[3] == "200"), 3, seen)
            self.assertEqual({q[0] for q in seen}, {"h2"}, seen)
        finally:
            h2.close()

    def test_plain_http_refused_off_loopback(self):
        r = self.repo.plan(env={"CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM": "http://10.0.0.1/v1/"})
        self.assertEqual(r.code, 1, r)
        self.assertIn("CLOUDSDK_API_ENDPOINT_OVERRIDES_AIPLATFORM", r.err)
        self.assertIn("loopback", r.err)


class H2ProxyPort(unittest.TestCase):
    """The e2e files run in parallel (tests/run_unittest.py): the port H2Proxy picks may be
    taken by another file's fake before nghttpx listens on it. H2Proxy must then use
    another port, and never take the other listener for nghttpx."""

    def test_port_taken_before_nghttpx_listens(self):
        tmp = tempfile.mkdtemp(prefix="vx-e2e-h2port-")
        self.addCleanup(shutil.rmtree, tmp, True)
        cert, key = os.path.join(tmp, "cert.pem"), os.path.join(tmp, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert],
                       check=True, capture_output=True)
        # Someone else's server, listening on the port the first probe will report.
        other = socket.socket()
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        self.addCleanup(other.close)
        taken = other.getsockname()[1]
        real = socket.socket
        probes = []

        class FirstProbe:
            def bind(self, addr):
                pass

            def getsockname(self):
                return ("127.0.0.1", taken)

            def close(self):
                pass

        def fake_socket(*a, **kw):
            if not probes:
                probes.append(1)
                return FirstProbe()
            return real(*a, **kw)

        with unittest.mock.patch.object(socket, "socket", fake_socket):
            h2 = H2Proxy(cert, key, 1, tmp)
        self.addCleanup(h2.close)
        self.assertNotEqual(h2.port, taken)
        self.assertIsNone(h2.proc.poll(), h2.errors())
        # nghttpx itself answers on its port: a TLS handshake offering h2 gets h2.
        ctx = ssl.create_default_context(cafile=cert)
        ctx.check_hostname = False
        ctx.set_alpn_protocols(["h2"])
        with socket.create_connection(("127.0.0.1", h2.port), timeout=10) as raw:
            with ctx.wrap_socket(raw) as tls:
                self.assertEqual(tls.selected_alpn_protocol(), "h2")


if __name__ == "__main__":
    unittest.main()
