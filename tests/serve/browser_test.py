#!/usr/bin/env python3
"""`ltfit serve`'s page in a real browser: Debian's Chromium, headless, driven through
chromedriver by Selenium (run by tests/serve/browser_test.sh, which skips where a piece is
missing).

A tiny checkpoint (ltfit synth, one epoch of a linear-head ResNet-18 at 32 px on the CPU) is
served on a free loopback port. The answer for one image is fetched with urllib (POST
/v1/predict, the raw body); then the page at / is opened in the browser: the model's facts line
(#facts) must name the arch, the image is chosen through the file input #pick, the card it makes
must reach data-state "done", and its rows (.row, data-cls, best first) and percentages must be
urllib's classes and probabilities (to 0.1 %). The card's Grad-CAM toggle (button.cam-toggle) is
clicked: data-cam must become "shown" with img.cam loaded (naturalWidth > 0), the page must have
asked /v1/cam?class=<top class> alone, and the picture must have the size of the PNG that urllib
gets from POST /v1/cam; the screenshot, the test's artefact, is taken then, so it shows the heat
map; a second click must make data-cam "hidden" and img.cam invisible. SIGTERM must stop the
server with exit status 0.

Every wait is bounded; a failure names what was awaited and what was there instead, prints the
tails of the server's log and of chromedriver's (with Chromium's stderr), the browser console,
saves a screenshot of the moment (NAME_failure.png beside the artefact) and keeps the work folder.

  browser_test.py --ltfit BIN --chromium BIN --chromedriver BIN --screenshot OUT.png
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

# No Selenium Manager: it would look for (and download) drivers and browsers; the paths given
# are used as they are.
os.environ["SE_OFFLINE"] = "true"

from selenium import webdriver  # noqa: E402
from selenium.common.exceptions import TimeoutException, WebDriverException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT_S = 20  # each wait in the browser, at most
WINDOW = (1000, 900)


class Failure(Exception):
    pass


def log(text):
    print(text, flush=True)


def run(cmd, cwd, what):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=120)
    if proc.returncode != 0:
        raise Failure(f"{what} exited {proc.returncode}:\n{tail(proc.stdout, 20)}")
    return proc.stdout


def tail(text, lines):
    return "\n".join(text.rstrip().splitlines()[-lines:])


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def train_tiny(ltfit, work):
    """A linear-head ResNet-18 trained one epoch at 32 px (as serve_cli_test.cpp's train_tiny)."""
    run([ltfit, "synth", "--out", "data", "--train", "16", "--valid", "8", "--seed", "2"], work,
        "ltfit synth")
    run([ltfit, "train", "--config", "quickstart", "--set", f"data.root={work}/data",
         "--set", "data.image_size=32", "--set", "model.arch=resnet18",
         "--set", "model.pretrained=none", "--set", "train.device=cpu",
         "--set", "data.workers=1", "--set", "train.epochs=1", "--set", "train.recipe=one_cycle",
         "--set", "data.batch_size=4", "--set", "eval.tta=false", "--run-dir", f"{work}/run"],
        work, "ltfit train")
    return os.path.join(work, "run", "checkpoints", "last.ckpt")


def start_server(ltfit, ckpt, work):
    log_path = os.path.join(work, "server.log")
    with open(log_path, "w") as server_log:
        server = subprocess.Popen([ltfit, "serve", "--checkpoint", ckpt, "--port", "0"],
                                  cwd=work, stdout=server_log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", read(log_path))
        if m:
            return server, f"http://127.0.0.1:{m.group(1)}"
        if server.poll() is not None:
            raise Failure(f"ltfit serve exited {server.returncode} before listening")
        time.sleep(0.1)
    raise Failure("ltfit serve logged no http://127.0.0.1:PORT/ within 30 s")


def predict_raw(base, image):
    with open(image, "rb") as f:
        body = f.read()
    req = urllib.request.Request(base + "/v1/predict?top_k=5", data=body, method="POST",
                                 headers={"Content-Type": "image/jpeg"})
    with urllib.request.urlopen(req, timeout=30) as r:
        answer = json.load(r)
    top = answer["predictions"][0]["top"]
    return [(t["class"], t["probability"]) for t in top]


def browser(chromium, chromedriver, work):
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", "--hide-scrollbars",
                "--no-first-run", "--no-default-browser-check",
                f"--user-data-dir={os.path.join(work, 'profile')}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # chromedriver's warnings and errors with Chromium's own stderr (not every command it runs).
    service = Service(executable_path=chromedriver,
                      service_args=["--log-level=WARNING", "--enable-chrome-logs"],
                      log_output=os.path.join(work, "chromedriver.log"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(WAIT_S)
    driver.set_script_timeout(WAIT_S)
    return driver


def wait(driver, what, condition, now=None):
    """condition(driver) until truthy, at most WAIT_S; a timeout names what was awaited, and
    now() (what is there instead) when given."""
    try:
        return WebDriverWait(driver, WAIT_S, poll_frequency=0.1).until(condition)
    except TimeoutException:
        instead = f"; instead: {now()}" if now else ""
        raise Failure(f"waited {WAIT_S} s for {what}{instead}") from None


def post_cam(base, image, cls):
    """POST /v1/cam?class=CLS with the image as the raw body: the PNG's (width, height)."""
    with open(image, "rb") as f:
        body = f.read()
    url = base + "/v1/cam?class=" + urllib.parse.quote(cls, safe="")
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "image/jpeg"})
    with urllib.request.urlopen(req, timeout=30) as r:
        png = r.read()
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise Failure(f"POST /v1/cam answered no PNG ({len(png)} bytes: {png[:16]!r})")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def check_page(driver, base, image, expected, screenshot):
    driver.get(base + "/")
    if driver.title != "ltfit serve":
        raise Failure(f"the page's title is {driver.title!r}, not 'ltfit serve'")
    facts = wait(driver, "#facts to show the model's facts (resnet18)",
                 lambda d: "resnet18" in (t := d.find_element(By.ID, "facts").text) and t)
    log(f"facts: {facts}")
    if "fp32" not in facts:
        raise Failure(f"the facts line does not say the precision served (fp32): {facts!r}")

    # #pick is a hidden file input: chromedriver types a path into it without it being shown
    # (strictFileInteractability is off by default), as a person's choice through the dialog.
    driver.find_element(By.ID, "pick").send_keys(os.path.abspath(image))
    card = wait(driver, "a div.card to appear",
                lambda d: d.find_elements(By.CSS_SELECTOR, "div.card"))[0]
    state = wait(driver, "the card's data-state to become 'done' or 'error'",
                 lambda d: (s := card.get_attribute("data-state")) in ("done", "error") and s,
                 lambda: f"data-state {card.get_attribute('data-state')!r}, text {card.text!r}")
    if state != "done":
        raise Failure(f"the card's data-state is {state!r}, not 'done': {card.text!r}")

    rows = card.find_elements(By.CSS_SELECTOR, ".row")
    shown = []
    for row in rows:
        prob = row.find_element(By.CSS_SELECTOR, ".prob").text
        m = re.fullmatch(r"([0-9.]+) %", prob.strip())
        if not m:
            raise Failure(f"row {row.get_attribute('data-cls')!r}: percentage {prob!r} unreadable")
        shown.append((row.get_attribute("data-cls"), float(m.group(1))))
    log("page:   " + ", ".join(f"{c} {p:.1f} %" for c, p in shown))
    log("urllib: " + ", ".join(f"{c} {100 * p:.1f} %" for c, p in expected))
    if not shown:
        raise Failure(f"the card shows no .row: {card.text!r}")
    if shown[0][0] != expected[0][0]:
        raise Failure(f"the page's top class is {shown[0][0]!r}, urllib's {expected[0][0]!r}")
    if [c for c, _ in shown] != [c for c, _ in expected]:
        raise Failure(f"the page's classes {shown} are not urllib's {expected}")
    for (cls, pct), (_, p) in zip(shown, expected):
        if abs(pct - 100 * p) > 0.05 + 1e-9:
            raise Failure(f"{cls}: the page shows {pct} %, urllib's answer is {100 * p:.4f} %")

    # Grad-CAM: the toggle asks /v1/cam for the top class and shows the PNG in the card.
    top = shown[0][0]
    toggle = wait(driver, "button.cam-toggle in the done card",
                  lambda d: card.find_elements(By.CSS_SELECTOR, "button.cam-toggle"),
                  lambda: f"card text {card.text!r}")[0]
    toggle.click()
    wait(driver, "the card's data-cam to become 'shown' after the first click",
         lambda d: card.get_attribute("data-cam") == "shown",
         lambda: f"data-cam {card.get_attribute('data-cam')!r}, card text {card.text!r}")
    cam = card.find_element(By.CSS_SELECTOR, "img.cam")
    size = driver.execute_script("return [arguments[0].naturalWidth, arguments[0].naturalHeight]",
                                 cam)
    if not size[0] or not cam.is_displayed():
        raise Failure(f"img.cam is not shown loaded (natural size {size}, "
                      f"displayed {cam.is_displayed()})")
    asked = driver.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)"
        ".filter(n => n.includes('/v1/cam'))")
    want = base + "/v1/cam?class=" + urllib.parse.quote(top, safe="")
    if asked != [want]:
        raise Failure(f"the page asked {asked} for Grad-CAM, not [{want!r}]")
    direct = post_cam(base, image, top)
    if tuple(size) != direct:
        raise Failure(f"img.cam is {size[0]}x{size[1]}, POST /v1/cam's PNG {direct[0]}x{direct[1]}")
    log(f"grad-cam: img.cam shown for {top}, {size[0]}x{size[1]} px (as POST /v1/cam's PNG)")
    save_screenshot(driver, screenshot)
    toggle.click()
    wait(driver, "the card's data-cam to become 'hidden' after the second click",
         lambda d: card.get_attribute("data-cam") == "hidden",
         lambda: f"data-cam {card.get_attribute('data-cam')!r}")
    if cam.is_displayed():
        raise Failure("img.cam is still displayed after the second click")
    log("grad-cam: hidden after the second click")


def save_screenshot(driver, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if not driver.save_screenshot(path):
        raise Failure(f"could not write the screenshot {path}")
    log(f"screenshot: {path}")


def console(driver):
    try:
        entries = driver.get_log("browser")
    except WebDriverException as e:
        return f"(unavailable: {e.msg})"
    return "\n".join(f"{e.get('level')} {e.get('message')}" for e in entries) or "(empty)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ltfit", required=True)
    ap.add_argument("--chromium", required=True)
    ap.add_argument("--chromedriver", required=True)
    ap.add_argument("--screenshot", required=True)
    args = ap.parse_args()
    start = time.monotonic()
    failure_png = os.path.splitext(args.screenshot)[0] + "_failure.png"
    for old in (args.screenshot, failure_png):  # no picture of an earlier run left to mislead
        if os.path.exists(old):
            os.remove(old)
    work = tempfile.mkdtemp(prefix="ltfit-browser-test.")
    server = driver = None
    ok = False
    try:
        ckpt = train_tiny(args.ltfit, work)
        log(f"checkpoint: trained in {time.monotonic() - start:.1f} s")
        image = os.path.join(work, "data", "valid", "cat", sorted(
            os.listdir(os.path.join(work, "data", "valid", "cat")))[0])
        server, base = start_server(args.ltfit, ckpt, work)
        log(f"server: {base}")
        expected = predict_raw(base, image)
        driver = browser(args.chromium, args.chromedriver, work)
        caps = driver.capabilities
        chromedriver = caps.get("chrome", {}).get("chromedriverVersion", "?").split(" ")[0]
        log(f"browser: {caps.get('browserName')} {caps.get('browserVersion')}, "
            f"chromedriver {chromedriver}")
        check_page(driver, base, image, expected, args.screenshot)
        driver.quit()
        driver = None
        server.send_signal(signal.SIGTERM)
        try:
            code = server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            raise Failure("ltfit serve did not exit within 15 s of SIGTERM") from None
        if code != 0:
            raise Failure(f"ltfit serve exited {code} after SIGTERM, not 0")
        log("server: exit 0 after SIGTERM")
        ok = True
    except Exception as e:  # noqa: BLE001 - every failure gets the logs below
        log(f"FAIL: {e}" if isinstance(e, Failure) else f"FAIL: {type(e).__name__}: {e}")
        log(f"--- server log (last 30 lines, {work}/server.log)")
        log(tail(read(os.path.join(work, "server.log")), 30) or "(empty)")
        # chromedriver's and Chromium's complaints, less the D-Bus ones of a machine without it
        driver_log = [line[:300]
                      for line in read(os.path.join(work, "chromedriver.log")).splitlines()
                      if not re.search(r"dbus|D-Bus", line)]
        log("--- chromedriver and Chromium log (last 20 lines, D-Bus lines left out)")
        log("\n".join(driver_log[-20:]) or "(empty)")
        if driver is not None:
            log("--- browser console")
            log(console(driver))
            try:
                save_screenshot(driver, failure_png)
            except Exception:  # noqa: BLE001 - the failure above is the one to report
                pass
    finally:
        if driver is not None:
            try:
                driver.quit()
            except WebDriverException:
                pass
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
    took = time.monotonic() - start
    if ok:
        shutil.rmtree(work, ignore_errors=True)
        log(f"serve_browser: passed in {took:.1f} s")
        return 0
    log(f"serve_browser: FAILED after {took:.1f} s (work folder kept: {work})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
