"""A small HTTP/1.1 file server for the remote tests (test_remote.py), on
127.0.0.1 only, with faults switched on by the test: it serves one file's
bytes with Range support and an ETag, logs every request (range, status,
bytes sent), and can ignore Range (200), send a wrong Content-Range, cut a
body short, answer 403/404/503, or replace the object (new ETag); it can
delay each answer and counts the requests answered at once."""
import http.server
import re
import threading
import time


class State:
    def __init__(self, data):
        self.data = data
        self.etag = '"v1"'
        self.mode = "ok"          # ok|ignore_range|bad_range|truncate|status
        self.status = 200         # for mode "status"
        self.fail_next = 0        # this many requests answer 503 first
        self.log = []             # (range header, status, body bytes)
        self.delay = 0.0          # seconds before each answer (latency)
        self.last_modified = None  # an HTTP-date sent as Last-Modified, if set
        self.active = 0           # requests being answered now
        self.max_active = 0       # the most at once
        self.lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, code, body, headers=()):
        st = self.server.state
        with st.lock:
            st.log.append((self.headers.get("Range"), code, len(body)))
        self.send_response(code)
        if st.last_modified:
            self.send_header("Last-Modified", st.last_modified)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        st = self.server.state
        with st.lock:
            st.active += 1
            st.max_active = max(st.max_active, st.active)
        try:
            if st.delay:
                time.sleep(st.delay)
            self._get()
        finally:
            with st.lock:
                st.active -= 1

    def _get(self):
        st = self.server.state
        with st.lock:
            mode, data, etag = st.mode, st.data, st.etag
            fail = st.fail_next > 0
            if fail:
                st.fail_next -= 1
        if fail:
            return self._send(503, b"busy")
        if mode == "status":
            return self._send(st.status, b"no")
        im = self.headers.get("If-Match")
        if im is not None and im != etag:
            return self._send(412, b"")
        rng = self.headers.get("Range")
        m = re.match(r"bytes=(\d+)-(\d+)$", rng or "")
        if mode == "ignore_range" or not m:
            return self._send(200, data, [("ETag", etag)])
        a, b = int(m.group(1)), min(int(m.group(2)), len(data) - 1)
        if a >= len(data):
            return self._send(416, b"", [("Content-Range", "bytes */%d" % len(data))])
        body = data[a:b + 1]
        first = a + 1 if mode == "bad_range" else a
        cr = "bytes %d-%d/%d" % (first, b, len(data))
        if mode == "truncate":
            # promise the whole range, send half, close the connection
            with st.lock:
                st.log.append((rng, 206, len(body) // 2))
            self.send_response(206)
            self.send_header("Content-Range", cr)
            self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self._send(206, body, [("Content-Range", cr), ("ETag", etag)])


class Server:
    """Serve data at http://127.0.0.1:PORT/f.h5 from a thread until stop()."""

    def __init__(self, data, port=0):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.state = State(data)
        self.state = self.httpd.state
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d/f.h5" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


if __name__ == "__main__":
    # python3 remote_server.py FILE PORT [DELAY_S]: serve FILE until killed
    # (a server process a test can kill by its PID, connections and all)
    import sys
    s = Server(open(sys.argv[1], "rb").read(), int(sys.argv[2]))
    s.state.delay = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    print(s.port, flush=True)
    s.thread.join()
