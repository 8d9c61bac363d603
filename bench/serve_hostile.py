#!/usr/bin/env python3
"""Hostile load on a running `ltfit serve`: good answers stay right, bad requests get a 4xx.

Sends --requests (10000) requests over --clients (32) threads, each thread on its own keep-alive
connection. A fraction --hostile (0.10) of them, placed at random (--seed), are hostile:

  truncated_jpeg          the first 40 % of a real JPEG                         expect 400
  png_bomb                a valid small PNG (zlib, right CRCs) whose IHDR says
                          60000x60000                                           expect 400
  jpeg_bomb               a real JPEG whose SOF says 65000x65000                expect 400
  random_bytes            random bytes (half behind a JPEG SOI) as image/jpeg   expect 400
  wrong_type              a real JPEG as text/plain                             expect 415
  over_limit              a header with Content-Length: 2000000000, no body     expect 413
  multipart_bad_boundary  a form whose boundary is not the header's, or none    expect 400
  multipart_unclosed      a form part with no closing boundary                  expect 400
  path_trick              GET /../../etc/passwd, /%2e%2e/%2e%2e/etc/passwd,
                          //etc/passwd, /index.html/../../x                     expect 404
  not_http                bytes that are not HTTP (binary, a TLS hello, junk)   expect 400 or close
  big_header              a header of 17 KB                                     expect 431
  slow_client             one byte a second (at most --slow, 5: each holds a
                          thread for the server's --request-timeout-s)          expect 408
  big_png                 only with --big-pngs N (default 0): a valid 9000x9000
                          black PNG of 240 KB, 81 M pixels (under data.max_pixels:
                          decoded, 243 MB); a fair request that costs the
                          server a second and most of its decode budget        expect 200, a
                                                                                4xx or 503

Well-formed ones go over the thread's keep-alive connection (so the connection must survive
them), the others over a socket of their own. Good requests POST one of the images given
(--images: files or folders of .jpg/.jpeg/.png; ~8 are used) as the raw body; each answer must
be 200 with the expected top class and every probability within --tolerance (1e-6) of the
expected ones: those the server gave for the image once at the start, or those of
`ltfit predict --json --top 1000` in --expected. Every hostile request must get a 4xx (not_http:
a 400 or a closed connection; big_png: also a 200), never a 5xx other than 503 with
Retry-After; a path trick must never show a file. Other 4xx than the expected are accepted
and counted ("unexpected" per kind). The server must still answer /healthz at the end, its
process (--pid) must be alive, and its resident memory, sampled every 0.2 s (VmRSS, and VmHWM
at the end), must stay under --rss-bound-mb when given.

Prints a JSON summary (counts per kind and status, wrong answers, peak RSS, duration,
requests/s) on stdout; exits 0 when everything held, 1 with the failures on stderr otherwise
(and when the server cannot be used at all). Python's standard library only.

  ltfit serve --checkpoint C --port 0 --request-timeout-s 3 &     # logs http://127.0.0.1:PORT/
  bench/serve_hostile.py --base http://127.0.0.1:PORT --pid $! --images data/valid \\
      --requests 10000 --clients 32 --rss-bound-mb 1500
  bench/serve_hostile.py --write-pngs DIR     # two noise PNGs to add to the good images
bench/serve_hostile.sh runs it on a fixture of its own.
"""
import argparse
import http.client
import json
import math
import os
import random
import select
import socket
import struct
import sys
import threading
import time
import zlib
from urllib.parse import urlsplit

KINDS = {  # hostile kind -> the statuses expected (any 4xx passes; others are counted apart)
    "truncated_jpeg": {400}, "png_bomb": {400}, "jpeg_bomb": {400}, "random_bytes": {400},
    "wrong_type": {415}, "over_limit": {413}, "multipart_bad_boundary": {400},
    "multipart_unclosed": {400}, "path_trick": {404}, "not_http": {400, "closed"},
    "big_header": {431}, "slow_client": {408}, "big_png": {200, 503},
}
RATIONED = ("slow_client", "big_png")  # placed --slow and --big-pngs times, not drawn
PATH_TRICKS = ["/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "//etc/passwd",
               "/index.html/../../x"]
NOT_HTTP = [b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(32)) * 4,
            b"GARBAGE GARBAGE GARBAGE\r\n\r\n", b"\x00\xff\xfe\x01" * 128]
IMAGE_TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png"}


# --- payloads ---------------------------------------------------------------------------------

def png_file(width, height, rows):
    """A PNG (8-bit RGB) with this IHDR and `rows` (each with its filter byte) in its IDAT."""
    def chunk(tag, data):
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for row in rows) + packer.flush()
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) +
            chunk(b"IEND", b""))


def noise_png(width, height, rng):
    return png_file(width, height, (b"\x00" + rng.randbytes(width * 3) for _ in range(height)))


def png_bomb():
    """60000x60000 says the header; 8 rows of zeros follow (1.4 MB raw, a few KB compressed)."""
    return png_file(60000, 60000, [b"\x00" * (1 + 60000 * 3)] * 8)


def big_png(side=9000):
    """A whole, valid side x side black PNG: 81 M pixels (under data.max_pixels' 89 M, so the
    server decodes it: 243 MB of pixels) in about 240 KB."""
    return png_file(side, side, [b"\x00" * (1 + side * 3)] * side)


def jpeg_bomb(jpeg):
    """`jpeg` with its frame header (SOFn) saying 65000x65000."""
    data, i = bytearray(jpeg), 2
    while i + 9 < len(data) and data[i] == 0xFF:
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE,
                      0xCF):
            data[i + 5:i + 9] = struct.pack(">HH", 65000, 65000)  # height, width
            return bytes(data)
        i += 2 + length
    raise ValueError("no SOF marker found in the JPEG")


def multipart(boundary_header, boundary_body, jpeg, close):
    """(body, content type) of a form with one image part; `close`: whether the closing
    delimiter is there."""
    body = (f"--{boundary_body}\r\nContent-Disposition: form-data; name=\"image\"; "
            f"filename=\"a.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n").encode() + jpeg
    body += f"\r\n--{boundary_body}--\r\n".encode() if close else b""
    kind = "multipart/form-data" + (f"; boundary={boundary_header}" if boundary_header else "")
    return body, kind


def good_images(paths, limit=8):
    """[(name, bytes, content type)] of at most `limit` images from files and folders, PNGs
    and JPEGs mixed."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, _, names in sorted(os.walk(path)):
                found += [os.path.join(root, n) for n in sorted(names)]
        else:
            found.append(path)
    found = [f for f in found if os.path.splitext(f)[1].lower() in IMAGE_TYPES]
    pngs = [f for f in found if f.lower().endswith(".png")][:limit // 4]
    jpegs = [f for f in found if not f.lower().endswith(".png")]
    chosen = pngs + jpegs[:limit - len(pngs)]
    return [(f, open(f, "rb").read(), IMAGE_TYPES[os.path.splitext(f)[1].lower()])
            for f in chosen]


class Payloads:
    """Every hostile body, made once from the first good JPEG."""

    def __init__(self, images, rng, big=False):
        jpeg = next((data for _, data, t in images if t == "image/jpeg"), None)
        if jpeg is None:
            raise SystemExit("serve_hostile: the hostile payloads need one JPEG among --images")
        self.jpeg = jpeg
        self.truncated = jpeg[:int(len(jpeg) * 0.4)]
        self.png_bomb = png_bomb()
        self.jpeg_bomb = jpeg_bomb(jpeg)
        soi = b"\xff\xd8\xff\xe0"  # half of them start as a JPEG does
        self.random = [(soi if i % 2 else b"") + rng.randbytes(rng.randint(100, 20000))
                       for i in range(8)]
        self.bad_forms = [multipart("AaB03x", "ZzY98w", jpeg, True),
                          multipart("", "ZzY98w", jpeg, True)]
        self.unclosed_form = multipart("AaB03x", "AaB03x", jpeg, False)
        self.big_png = big_png() if big else None


# --- sending ----------------------------------------------------------------------------------

def outcome_of(response):
    body = response.read()
    return {"status": response.status, "retry_after": response.getheader("Retry-After"),
            "body": body}


def over_connection(conn, method, target, body=None, headers=None):
    """A request over the thread's keep-alive connection; reconnects after an error."""
    try:
        conn.request(method, target, body=body, headers=headers or {})
        return outcome_of(conn.getresponse())
    except (OSError, http.client.HTTPException) as e:
        conn.close()
        return {"status": None, "error": type(e).__name__, "body": b""}


def raw_exchange(base, data, timeout, drip=False):
    """Sends `data` on a socket of its own (a byte a second with `drip`) and reads the answer;
    a connection closed with no answer is status "closed"."""
    try:
        sock = socket.create_connection(base, timeout=timeout)
    except OSError as e:
        return {"status": None, "error": type(e).__name__, "body": b""}
    try:
        if drip:
            drip_until_answer(sock, data)
        else:
            sock.sendall(data)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return outcome_of(response)
    except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
        return {"status": "closed", "body": b""}
    except (OSError, http.client.HTTPException) as e:
        return {"status": None, "error": type(e).__name__, "body": b""}
    finally:
        sock.close()


def drip_until_answer(sock, data):
    """One byte a second until the server starts answering (or `data` runs out)."""
    for i in range(len(data)):
        sock.sendall(data[i:i + 1])
        readable, _, _ = select.select([sock], [], [], 1.0)
        if readable:
            return i + 1
    return len(data)


def send_hostile(kind, conn, base, payloads, rng, timeout):
    """One hostile request of `kind`; its outcome."""
    bodies = {  # the well-formed ones: (body, content type)
        "truncated_jpeg": lambda: (payloads.truncated, "image/jpeg"),
        "png_bomb": lambda: (payloads.png_bomb, "image/png"),
        "jpeg_bomb": lambda: (payloads.jpeg_bomb, "image/jpeg"),
        "random_bytes": lambda: (rng.choice(payloads.random), "image/jpeg"),
        "wrong_type": lambda: (payloads.jpeg, "text/plain"),
        "multipart_bad_boundary": lambda: rng.choice(payloads.bad_forms),
        "multipart_unclosed": lambda: payloads.unclosed_form,
        "big_png": lambda: (payloads.big_png, "image/png"),
    }
    if kind in bodies:
        body, content_type = bodies[kind]()
        return over_connection(conn, "POST", "/v1/predict", body, {"Content-Type": content_type})
    if kind == "path_trick":
        return over_connection(conn, "GET", rng.choice(PATH_TRICKS))
    return send_raw_hostile(kind, base, rng, timeout)


def send_raw_hostile(kind, base, rng, timeout):
    """The hostile kinds that break HTTP itself, each on a socket of its own."""
    host = f"Host: {base[0]}:{base[1]}\r\n".encode()
    if kind == "over_limit":
        return raw_exchange(base, b"POST /v1/predict HTTP/1.1\r\n" + host +
                            b"Content-Type: image/jpeg\r\nContent-Length: 2000000000\r\n\r\n",
                            timeout)
    if kind == "not_http":
        return raw_exchange(base, rng.choice(NOT_HTTP), timeout)
    if kind == "big_header":
        return raw_exchange(base, b"GET /healthz HTTP/1.1\r\n" + host + b"X-Filler: " +
                            b"a" * 17000 + b"\r\n\r\n", timeout)
    if kind == "slow_client":
        return raw_exchange(base, b"POST /v1/predict HTTP/1.1\r\n" + host +
                            b"Content-Type: image/jpeg\r\nContent-Length: 1000\r\n\r\n" +
                            b"\xff" * 1000, timeout, drip=True)
    raise ValueError(kind)


# --- judging ----------------------------------------------------------------------------------

def probabilities(body):
    """{class: probability} and the top class of a one-image answer."""
    top = json.loads(body)["predictions"][0]["top"]
    return {t["class"]: t["probability"] for t in top}, top[0]["class"]


def judge_good(name, outcome, expected, tolerance):
    """The failures of a good request's answer, and its largest probability difference."""
    if outcome["status"] != 200:
        detail = outcome.get("error") or outcome["body"][:200].decode("utf-8", "replace")
        return [f"good {name}: status {outcome['status']} ({detail})"], None
    try:
        probs, top = probabilities(outcome["body"])
    except (ValueError, KeyError, IndexError) as e:
        return [f"good {name}: unreadable answer ({e})"], None
    want_probs, want_top = expected[name]
    diff = max((abs(probs.get(c, math.inf) - p) for c, p in want_probs.items()), default=0.0)
    failures = []
    if top != want_top:
        failures.append(f"good {name}: top class {top}, expected {want_top}")
    if diff > tolerance:
        failures.append(f"good {name}: a probability differs by {diff:.3g} (> {tolerance:g})")
    return failures, diff


def judge_hostile(kind, outcome):
    """The failures of a hostile request's answer."""
    status = outcome["status"]
    if status == "closed":
        return [] if "closed" in KINDS[kind] else [f"{kind}: connection closed with no answer"]
    if status is None:
        return [f"{kind}: {outcome.get('error')} instead of an answer"]
    if status == 503 and outcome.get("retry_after"):
        return []
    if not 400 <= status < 500 and not (kind == "big_png" and status == 200):
        return [f"{kind}: status {status} ({outcome['body'][:200].decode('utf-8', 'replace')})"]
    if kind == "path_trick" and b"root:" in outcome["body"]:
        return [f"{kind}: the answer shows a file"]
    return []


# --- running ----------------------------------------------------------------------------------

def make_plan(count, fraction, rationed, rng):
    """The kind of each request: "good" or a hostile kind drawn at random, then `rationed`
    ({kind: n}) hostile ones, spread at random, turned into those kinds."""
    drawn = [k for k in KINDS if k not in RATIONED]
    plan = [rng.choice(drawn) if rng.random() < fraction else "good" for _ in range(count)]
    hostile = [i for i, kind in enumerate(plan) if kind != "good"]
    wanted = [kind for kind, n in rationed.items() for _ in range(n)][:len(hostile)]
    for i, kind in zip(rng.sample(hostile, len(wanted)), wanted):
        plan[i] = kind
    return plan


class Run:
    """The shared state of one run: the plan, the next request's index and the results."""

    def __init__(self, args, images, payloads, expected):
        self.args, self.images, self.payloads, self.expected = args, images, payloads, expected
        url = urlsplit(args.base)
        self.base = (url.hostname, url.port or 80)
        self.plan = make_plan(args.requests, args.hostile,
                              {"slow_client": args.slow, "big_png": args.big_pngs},
                              random.Random(args.seed))
        self.results = [None] * len(self.plan)
        self.next = 0
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            i, self.next = self.next, self.next + 1
        return i if i < len(self.plan) else None

    def client(self, number):
        """One client thread: takes requests from the plan until it is done."""
        rng = random.Random(self.args.seed * 1000 + number)
        conn = http.client.HTTPConnection(*self.base, timeout=self.args.timeout)
        while (i := self.take()) is not None:
            try:
                self.results[i] = self.one(self.plan[i], conn, rng)
            except Exception as e:  # a bug of ours: counted, never taken for the server's
                self.results[i] = (self.plan[i], "client_error",
                                   [f"{self.plan[i]}: the client failed: {e!r}"], None)
        conn.close()

    def one(self, kind, conn, rng):
        """(kind, status, failures, probability difference) of one request."""
        if kind == "good":
            name, data, content_type = rng.choice(self.images)
            outcome = over_connection(conn, "POST", "/v1/predict?top_k=1000", data,
                                      {"Content-Type": content_type})
            failures, diff = judge_good(name, outcome, self.expected, self.args.tolerance)
            return kind, status_label(outcome), failures, diff
        outcome = send_hostile(kind, conn, self.base, self.payloads, rng, self.args.timeout)
        return kind, status_label(outcome), judge_hostile(kind, outcome), None


def status_label(outcome):
    """The status, "closed", or "error:<exception>" when no answer came."""
    status = outcome["status"]
    return f"error:{outcome.get('error')}" if status is None else status


class RssSampler(threading.Thread):
    """VmRSS of `pid` every 0.2 s; the peak in MB."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak_kb, self.samples = pid, 0, 0
        self.stopped = threading.Event()

    def run(self):
        while not self.stopped.is_set():
            rss = proc_status_kb(self.pid, "VmRSS")
            if rss is not None:
                self.peak_kb, self.samples = max(self.peak_kb, rss), self.samples + 1
            self.stopped.wait(0.2)


def proc_status_kb(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


# --- expected answers -------------------------------------------------------------------------

def expected_from_server(base, images, timeout):
    """The answer for each good image, asked once (waiting up to 60 s for the server)."""
    deadline, expected = time.time() + 60, {}
    conn = http.client.HTTPConnection(*base, timeout=timeout)
    for name, data, content_type in images:
        while True:
            outcome = over_connection(conn, "POST", "/v1/predict?top_k=1000", data,
                                      {"Content-Type": content_type})
            if outcome["status"] == 200:
                break
            if time.time() > deadline:
                raise SystemExit(f"serve_hostile: no answer for {name} from the server "
                                 f"(status {outcome['status']} {outcome.get('error', '')})")
            time.sleep(0.5)
        expected[name] = probabilities(outcome["body"])
    conn.close()
    return expected


def expected_from_file(path, images):
    """The answers of `ltfit predict --json` (one JSON object a line) for each good image,
    matched by real path, else by file name."""
    by_path, by_name = {}, {}
    with open(path) as f:
        for line in f:
            if line.strip():
                p = json.loads(line)
                if "top" in p:
                    answer = probabilities(json.dumps({"predictions": [p]}))
                    by_path[os.path.realpath(p["image"])] = answer
                    by_name.setdefault(os.path.basename(p["image"]), []).append(answer)
    expected = {}
    for name, _, _ in images:
        found = by_path.get(os.path.realpath(name))
        if found is None and len(by_name.get(os.path.basename(name), [])) == 1:
            found = by_name[os.path.basename(name)][0]
        if found is None:
            raise SystemExit(f"serve_hostile: {path} has no answer for {name}")
        expected[name] = found
    return expected


# --- the summary ------------------------------------------------------------------------------

def server_metrics(base, timeout):
    """ltfit_requests_total by status, from /metrics (empty when it cannot be read)."""
    conn = http.client.HTTPConnection(*base, timeout=timeout)
    outcome = over_connection(conn, "GET", "/metrics")
    conn.close()
    counts = {}
    if outcome["status"] == 200:
        for line in outcome["body"].decode("utf-8", "replace").splitlines():
            if line.startswith("ltfit_requests_total{status=\""):
                counts[line.split('"')[1]] = int(float(line.split()[-1]))
    return counts


def summarize(run, seconds, sampler, pid):
    """The JSON summary and the list of failures."""
    kinds, failures, diffs, wrong, not_200 = {}, [], [], 0, 0
    for kind, status, failed, diff in run.results:
        entry = kinds.setdefault(kind, {"count": 0, "statuses": {}, "unexpected": 0})
        entry["count"] += 1
        entry["statuses"][str(status)] = entry["statuses"].get(str(status), 0) + 1
        if kind != "good" and status not in KINDS[kind]:
            entry["unexpected"] += 1
        failures += failed
        wrong += kind == "good" and status == 200 and bool(failed)
        not_200 += kind == "good" and status != 200
        if diff is not None:
            diffs.append(diff)
    conn = http.client.HTTPConnection(*run.base, timeout=10)
    healthz = over_connection(conn, "GET", "/healthz")
    conn.close()
    if healthz["status"] != 200:
        failures.append(f"the server does not answer /healthz after the run: "
                        f"{healthz['status']} {healthz.get('error', '')}")
    summary = {"base": run.args.base, "requests": len(run.plan), "clients": run.args.clients,
               "hostile_fraction": run.args.hostile, "seed": run.args.seed,
               "duration_s": round(seconds, 2), "requests_per_s": round(len(run.plan) / seconds, 1),
               "kinds": dict(sorted(kinds.items())), "wrong_answers": wrong,
               "good_not_200": not_200,
               "max_probability_diff": max(diffs, default=None), "healthz": healthz["status"],
               "server_requests_total": server_metrics(run.base, 10)}
    summary.update(memory_summary(run.args, sampler, pid, failures))
    summary["failure_count"] = len(failures)
    summary["failures"] = failures[:100]
    summary["ok"] = not failures
    return summary, failures


def memory_summary(args, sampler, pid, failures):
    """Peak RSS and VmHWM against --rss-bound-mb; the server's liveness (appends failures)."""
    if pid is None:
        return {}
    hwm = proc_status_kb(pid, "VmHWM")
    out = {"server_alive": alive(pid), "rss_samples": sampler.samples,
           "peak_vmrss_mb": round(sampler.peak_kb / 1024, 1),
           "vmhwm_mb": round(hwm / 1024, 1) if hwm else None, "rss_bound_mb": args.rss_bound_mb}
    if not out["server_alive"]:
        failures.append(f"the server process {pid} is gone")
    peak = max(out["peak_vmrss_mb"], out["vmhwm_mb"] or 0)
    if args.rss_bound_mb and peak > args.rss_bound_mb:
        failures.append(f"resident memory reached {peak} MB (bound {args.rss_bound_mb} MB)")
    return out


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", help="the server, http://127.0.0.1:PORT")
    p.add_argument("--pid", type=int, help="the server's process, for memory and liveness")
    p.add_argument("--images", nargs="+", default=[], help="good images: files or folders")
    p.add_argument("--expected", help="`ltfit predict --json --top 1000` output for the images")
    p.add_argument("--requests", type=int, default=10000)
    p.add_argument("--clients", type=int, default=32)
    p.add_argument("--hostile", type=float, default=0.10, help="fraction of hostile requests")
    p.add_argument("--slow", type=int, default=5, help="slow clients at most")
    p.add_argument("--big-pngs", type=int, default=0, help="valid 9000x9000 PNGs (see big_png)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tolerance", type=float, default=1e-6)
    p.add_argument("--timeout", type=float, default=60, help="a client's socket timeout, s")
    p.add_argument("--rss-bound-mb", type=float, help="fail when the server's RSS passes this")
    p.add_argument("--write-pngs", metavar="DIR", help="write two noise PNGs to DIR and exit")
    args = p.parse_args()
    if not args.write_pngs and not (args.base and args.images):
        p.error("--base and --images are needed (or --write-pngs DIR)")
    return args


def main():
    args = parse_args()
    rng = random.Random(args.seed)
    if args.write_pngs:
        os.makedirs(args.write_pngs, exist_ok=True)
        for name, (w, h) in {"noise0.png": (96, 80), "noise1.png": (64, 64)}.items():
            with open(os.path.join(args.write_pngs, name), "wb") as f:
                f.write(noise_png(w, h, rng))
        return 0
    images = good_images(args.images)
    if not images:
        raise SystemExit("serve_hostile: no .jpg/.jpeg/.png among --images")
    url = urlsplit(args.base)
    base = (url.hostname, url.port or 80)
    expected = (expected_from_file(args.expected, images) if args.expected
                else expected_from_server(base, images, args.timeout))
    run = Run(args, images, Payloads(images, rng, big=args.big_pngs > 0), expected)
    sampler = RssSampler(args.pid) if args.pid else None
    if sampler:
        sampler.start()
    start = time.monotonic()
    threads = [threading.Thread(target=run.client, args=(n,)) for n in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - start
    if sampler:
        sampler.stopped.set()
        sampler.join()
    summary, failures = summarize(run, seconds, sampler, args.pid)
    print(json.dumps(summary, indent=1))
    for failure in failures:
        print("FAIL", failure, file=sys.stderr)
    return 0 if not failures else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, http.client.HTTPException) as e:
        print(f"serve_hostile: cannot use the server: {e}", file=sys.stderr)
        sys.exit(1)
