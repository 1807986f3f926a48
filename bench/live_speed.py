"""The live translator in the page: download size and translation time in Chromium.

Serves the built site (``make book`` first), opens chapter 1 in Debian's Chromium, translates the
first N test sentences in its live block (onnxruntime-web, WebAssembly, one thread) and prints
the median time per sentence as the page measures it (``performance.now`` around the encoder and
every decoder step, after the model is loaded; the first sentence, the sessions' first run, is
reported apart), and what the block downloaded, raw and gzip-compressed (brotli too if the
module is there).

    python bench/live_speed.py [--sentences 20] [--page chapters/01_high_level_look]
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import sync_playwright

import tx

HTML = Path(__file__).resolve().parents[1] / "_build" / "html"
LIVE_PATHS = ("/_static/ort/", "/_static/tx-live/", "/_static/tokenizers/")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--page", default="chapters/01_high_level_look")
    parser.add_argument("--port", type=int, default=8917)
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(args.port), "--bind", "127.0.0.1",
                               "--directory", str(HTML)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{args.port}/"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "index.html", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            requests: list[str] = []
            page.on("request", lambda r: requests.append(urlsplit(r.url).path))
            page.goto(base + args.page + ".html", wait_until="load")
            times = []
            for fr, _ in tx.data.load_corpus().test[: args.sentences]:
                times.append(page.evaluate("""async (text) => {
                    const b = document.querySelector('[data-live-model="translate"]'), f = b.querySelector('form');
                    f.elements.text.value = text; b.removeAttribute('data-live-state');
                    f.requestSubmit();
                    while (!['done', 'error'].includes(b.getAttribute('data-live-state'))) await new Promise(r => setTimeout(r, 5));
                    return b.txLive.ms; }""", fr))
            browser.close()
    finally:
        server.terminate()
    fetched = sorted({p for p in requests if p.startswith(LIVE_PATHS)})
    raw = [(HTML / p.lstrip("/")).read_bytes() for p in fetched]
    sizes = f"{sum(map(len, raw)) / 1e6:.1f} MB raw, {sum(len(gzip.compress(b, 9)) for b in raw) / 1e6:.2f} MB gzip"
    try:
        import brotli

        sizes += f", {sum(len(brotli.compress(b)) for b in raw) / 1e6:.2f} MB brotli"
    except ImportError:
        pass
    print(f"{args.page}: the block downloads {len(fetched)} files, {sizes}")
    print(f"first sentence (the sessions' first run): {times[0]:.0f} ms; then median "
          f"{statistics.median(times[1:]):.1f} ms a sentence over {len(times) - 1} (min {min(times[1:]):.1f}, "
          f"max {max(times[1:]):.1f})")


if __name__ == "__main__":
    main()
