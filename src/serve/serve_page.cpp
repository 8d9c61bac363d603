// The page `ltfit serve` answers at GET / (serve_page.h): choose or drop images, each one's top 5
// as bars (test-time augmented when the box is ticked), a Grad-CAM toggle per image (POST
// /v1/cam), and the model's facts from /v1/info. Class names and file names are inserted as text
// (textContent), never as HTML.
#include "serve/serve_page.h"

namespace ltfit {

const std::string& serve_page() {
  static const std::string page = R"HTML(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ltfit serve</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:56em;color:#222}
#drop{border:2px dashed #888;border-radius:8px;padding:2em;text-align:center;cursor:pointer}
#drop.over{background:#eef}
.card{display:flex;gap:1em;margin:1em 0;padding:1em;border:1px solid #ddd;border-radius:8px}
.card img{width:128px;height:128px;object-fit:cover;border-radius:4px}
.card img.cam{object-fit:contain;image-rendering:pixelated}
.bars{flex:1}.row{display:flex;align-items:center;gap:.5em;margin:.2em 0}
.name{width:10em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.bar{height:1em;background:#4a7bd0;border-radius:3px}.error{color:#b00}
.cam-toggle{margin-top:.5em}
#facts{font-size:.9em;color:#555}
</style></head><body>
<h1>ltfit serve</h1>
<p id="facts">loading the model's facts…</p>
<p><label><input id="tta" type="checkbox"> test-time augmentation (8 views, slower)</label></p>
<div id="drop">Drop images here, or click to choose them<input id="pick" type="file" accept="image/*" multiple hidden></div>
<div id="results"></div>
<script>
"use strict";
const drop = document.getElementById("drop"), pick = document.getElementById("pick");
const results = document.getElementById("results"), tta = document.getElementById("tta");
fetch("/v1/info").then(r => r.json()).then(info => {
  document.getElementById("facts").textContent =
    `${info.arch} (${info.head} head, ${info.task}), ${info.image_size} px, ${info.precision}, classes: ${info.classes.join(", ")}`;
}).catch(() => { document.getElementById("facts").textContent = "the model's facts are unavailable"; });
drop.onclick = () => pick.click();
pick.onchange = () => send(pick.files);
drop.ondragover = e => { e.preventDefault(); drop.classList.add("over"); };
drop.ondragleave = () => drop.classList.remove("over");
drop.ondrop = e => { e.preventDefault(); drop.classList.remove("over"); send(e.dataTransfer.files); };
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function fail(card, bars, text) { bars.append(el("div", "error", text)); card.dataset.state = "error"; }
// The Grad-CAM toggle of a card: the first click asks /v1/cam for the class and shows the
// picture beside the image; later clicks hide and show it.
function camToggle(card, file, cls) {
  const button = el("button", "cam-toggle", "Grad-CAM"), cam = el("img", "cam");
  cam.alt = "Grad-CAM for " + cls; cam.hidden = true; card.dataset.cam = "hidden";
  cam.onload = () => { cam.hidden = false; card.dataset.cam = "shown"; };
  button.onclick = async () => {
    if (cam.src) { cam.hidden = !cam.hidden; card.dataset.cam = cam.hidden ? "hidden" : "shown"; return; }
    button.disabled = true;
    try {
      const r = await fetch("/v1/cam?class=" + encodeURIComponent(cls),
                            {method: "POST", body: file, headers: {"Content-Type": file.type || "application/octet-stream"}});
      if (!r.ok) { const a = await r.json(); card.querySelector(".bars").append(el("div", "error", a.error)); return; }
      cam.src = URL.createObjectURL(await r.blob());
    } catch (e) { card.querySelector(".bars").append(el("div", "error", String(e))); }
    finally { button.disabled = false; }
  };
  card.insertBefore(cam, card.children[1]);
  return button;
}
async function send(files) {
  for (const file of files) {
    const card = el("div", "card"), img = el("img"), bars = el("div", "bars");
    card.dataset.state = "pending";
    img.src = URL.createObjectURL(file); img.alt = file.name;
    card.append(img, bars); results.prepend(card);
    bars.append(el("div", "", file.name));
    const form = new FormData(); form.append("image", file, file.name);
    try {
      const r = await fetch("/v1/predict?top_k=5" + (tta.checked ? "&tta=1" : ""), {method: "POST", body: form});
      const answer = await r.json();
      if (!r.ok) { fail(card, bars, answer.error); continue; }
      const p = answer.predictions[0];
      if (p.error) { fail(card, bars, p.error); continue; }
      for (const t of p.top) {
        const row = el("div", "row"), bar = el("div", "bar");
        bar.style.width = (t.probability * 20) + "em";
        row.append(el("span", "name", t["class"]), bar, el("span", "prob", (100 * t.probability).toFixed(1) + " %"));
        row.dataset.cls = t["class"];
        bars.append(row);
      }
      bars.append(camToggle(card, file, p.top[0]["class"]));
      card.dataset.state = "done";
    } catch (e) { fail(card, bars, String(e)); }
  }
}
</script></body></html>
)HTML";
  return page;
}

}  // namespace ltfit
