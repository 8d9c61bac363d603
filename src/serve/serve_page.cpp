// The page `ltfit serve` answers at GET / (serve_page.h): choose or drop images, each one's top 5
// as bars, and the model's facts from /v1/info. Class names and file names are inserted as text
// (textContent), never as HTML.
#include "serve/serve_page.h"

namespace ltfit {

const std::string& serve_page() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ltfit serve</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:52em;color:#222}
#drop{border:2px dashed #888;border-radius:8px;padding:2em;text-align:center;cursor:pointer}
#drop.over{background:#eef}
.card{display:flex;gap:1em;margin:1em 0;padding:1em;border:1px solid #ddd;border-radius:8px}
.card img{width:128px;height:128px;object-fit:cover;border-radius:4px}
.bars{flex:1}.row{display:flex;align-items:center;gap:.5em;margin:.2em 0}
.name{width:10em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.bar{height:1em;background:#4a7bd0;border-radius:3px}.error{color:#b00}
#facts{font-size:.9em;color:#555}
</style></head><body>
<h1>ltfit serve</h1>
<p id="facts">loading the model's facts…</p>
<div id="drop">Drop images here, or click to choose them<input id="pick" type="file" accept="image/*" multiple hidden></div>
<div id="results"></div>
<script>
"use strict";
const drop = document.getElementById("drop"), pick = document.getElementById("pick");
const results = document.getElementById("results");
fetch("/v1/info").then(r => r.json()).then(info => {
  document.getElementById("facts").textContent =
    `${info.arch} (${info.head} head, ${info.task}), ${info.image_size} px, classes: ${info.classes.join(", ")}`;
}).catch(() => { document.getElementById("facts").textContent = "the model's facts are unavailable"; });
drop.onclick = () => pick.click();
pick.onchange = () => send(pick.files);
drop.ondragover = e => { e.preventDefault(); drop.classList.add("over"); };
drop.ondragleave = () => drop.classList.remove("over");
drop.ondrop = e => { e.preventDefault(); drop.classList.remove("over"); send(e.dataTransfer.files); };
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
async function send(files) {
  for (const file of files) {
    const card = el("div", "card"), img = el("img"), bars = el("div", "bars");
    img.src = URL.createObjectURL(file); img.alt = file.name;
    card.append(img, bars); results.prepend(card);
    bars.append(el("div", "", file.name));
    const form = new FormData(); form.append("image", file, file.name);
    try {
      const r = await fetch("/v1/predict?top_k=5", {method: "POST", body: form});
      const answer = await r.json();
      if (!r.ok) { bars.append(el("div", "error", answer.error)); continue; }
      const p = answer.predictions[0];
      if (p.error) { bars.append(el("div", "error", p.error)); continue; }
      for (const t of p.top) {
        const row = el("div", "row"), bar = el("div", "bar");
        bar.style.width = (t.probability * 20) + "em";
        row.append(el("span", "name", t["class"]), bar, el("span", "prob", (100 * t.probability).toFixed(1) + " %"));
        row.dataset.cls = t["class"];
        bars.append(row);
      }
    } catch (e) { bars.append(el("div", "error", String(e))); }
  }
}
</script></body></html>
)HTML";
  return page;
}

}  // namespace ltfit
