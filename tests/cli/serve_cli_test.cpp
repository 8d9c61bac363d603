// `ltfit serve` end to end on a free loopback port, with curl as the client: answers equal
// `ltfit predict --json` on the same images (raw bodies and multipart forms), 64 concurrent
// clients each get their own answer and /metrics shows batches larger than 1, bad requests get a
// 4xx with a JSON reason while the server keeps answering, a token guards /v1/, a client sending
// one byte a second is cut off (408), and SIGTERM under load answers every request in flight
// and exits 0; a multi-label model's answers and ?tta equal predict's (--tta --tta-mode v1), and
// /v1/cam's PNG is Grad-CAM's overlay of the image as the model saw it.
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/grad_cam.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using ltfit::testing::read_file;
using ltfit::testing::run_bash;
using ltfit::testing::run_ltfit;
using ltfit::testing::write_file;

namespace {

// A linear-head ResNet-18 trained one epoch at 32 px; its last.ckpt.
fs::path train_tiny(const ltfit::testing::TempDir& dir) {
  REQUIRE(run_ltfit("synth --out " + dir.str() + "/data --train 16 --valid 8 --seed 2").exit_code ==
          0);
  const auto trained = run_ltfit(
      "train --config quickstart --set data.root=" + dir.str() +
      "/data --set data.image_size=32 --set model.arch=resnet18 --set model.pretrained=none "
      "--set train.device=cpu --set data.workers=1 --set train.epochs=1 --set "
      "train.recipe=one_cycle --set data.batch_size=4 --set eval.tta=false --run-dir " +
      dir.str() + "/run");
  INFO(trained.output);
  REQUIRE(trained.exit_code == 0);
  return dir.path() / "run/checkpoints/last.ckpt";
}

// Four images: two PNGs of noise at 32 px, two of the synthetic JPEGs (resized by ltfit).
std::vector<fs::path> images(const ltfit::testing::TempDir& dir) {
  std::vector<fs::path> out;
  for (int i = 0; i < 2; ++i) {
    out.push_back(dir.path() / ("n" + std::to_string(i) + ".png"));
    REQUIRE(ltfit::testing::write_noise_png(out.back(), 32, 11 + i));
  }
  for (const auto& entry : fs::directory_iterator(dir.path() / "data/valid/cat")) {
    if (out.size() < 4) out.push_back(entry.path());
  }
  return out;
}

std::map<std::string, double> top_of(const nlohmann::json& prediction) {
  std::map<std::string, double> out;
  for (const auto& t : prediction["top"]) out[t["class"]] = t["probability"].get<double>();
  return out;
}

// Starts the server (extra flags), waits for its port; the script then runs `body` with $PORT
// and $BASE set, stops the server with SIGTERM and prints its exit status last.
std::string with_server(const ltfit::testing::TempDir& dir, const fs::path& ckpt,
                        const std::string& flags, const std::string& body) {
  return run_bash(
      dir.path(),
      "cd '" + dir.str() + "'\n" + std::string(LTFIT_BINARY) + " serve --checkpoint " +
          ckpt.string() + " --port 0 " + flags +
          " > server.log 2>&1 &\n"
          "SERVER=$!\n"
          "for i in $(seq 300); do PORT=$(grep -o 'http://127.0.0.1:[0-9]*' "
          "server.log | head -1 | cut -d: -f3); [ -n \"$PORT\" ] && break; "
          "sleep 0.1; done\n"
          "BASE=http://127.0.0.1:$PORT\n"
          "[ -n \"$PORT\" ] || { echo no port; cat server.log; }\n" +
          body + "\nkill -TERM $SERVER; wait $SERVER; code=$?\nwait  # the clients in flight\n" +
          "echo \"server exit $code\"\n");
}

}  // namespace

TEST_CASE("serve answers as predict does, batches concurrent clients, and stops cleanly",
          "[cli][serve]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny(dir);
  const auto files = images(dir);
  // about 27 KB as PNG: over 3 s at 8 KB/s
  REQUIRE(ltfit::testing::write_noise_png(dir.path() / "slow.png", 96, 5));
  std::string paths;
  for (const auto& f : files) paths += " " + f.string();
  const auto expected = ltfit::testing::top_probabilities(
      run_ltfit("predict --json --top 2 --checkpoint " + ckpt.string() + paths).stdout_text);
  REQUIRE(expected.size() == 4);

  std::string script =
      "curl -s $BASE/healthz > healthz.json; curl -s $BASE/readyz > readyz.json\n"
      "curl -s $BASE/v1/info > info.json; curl -s $BASE/ > page.html\n";
  for (std::size_t i = 0; i < files.size(); ++i) {
    script += "curl -s -H 'Content-Type: application/octet-stream' --data-binary @" +
              files[i].string() + " \"$BASE/v1/predict?top_k=2\" > raw" + std::to_string(i) +
              ".json\n";
  }
  script += "curl -s -F image=@" + files[0].string() + " -F image=@" + files[2].string() +
            " \"$BASE/v1/predict?top_k=2\" > form.json\n";
  // 64 concurrent clients, each image 16 times
  script += "for c in $(seq 0 63); do f=$((c % 4)); case $f in 0) p=" + files[0].string() +
            ";; 1) p=" + files[1].string() + ";; 2) p=" + files[2].string() +
            ";; 3) p=" + files[3].string() +
            ";; esac; curl -s --data-binary @$p -H 'Content-Type: image/png' "
            "\"$BASE/v1/predict?top_k=2\" > c$c.json & PIDS=\"$PIDS $!\"; done; wait $PIDS\n"
            "curl -s $BASE/metrics > metrics.txt\n"
            // SIGTERM while 32 requests are in flight (their bodies still arriving, at 8 KB/s):
            // each is read to its end and answered
            "for c in $(seq 0 31); do curl -s --limit-rate 8k -o t$c.json -w '%{http_code}\\n' "
            "--data-binary @slow.png -H 'Content-Type: image/png' $BASE/v1/predict > t$c.code & "
            "done\nsleep 1\n";
  const std::string out = with_server(dir, ckpt, "--max-batch 8 --max-wait-ms 20", script);
  INFO(out << read_file(dir.path() / "server.log"));
  CHECK_THAT(out, Contains("server exit 0"));
  CHECK(read_file(dir.path() / "healthz.json") == "{\"status\":\"ok\"}\n");
  const auto info = nlohmann::json::parse(read_file(dir.path() / "info.json"));
  CHECK(info["arch"] == "resnet18");
  CHECK(info["classes"] == nlohmann::json({"cat", "dog"}));
  CHECK(info["checkpoint_sha256"].get<std::string>().size() == 64);
  CHECK(info["precision"] == "fp32");  // the checkpoint's
  CHECK_THAT(read_file(dir.path() / "page.html"), Contains("<title>ltfit serve</title>"));
  for (std::size_t i = 0; i < files.size(); ++i) {
    INFO(files[i]);
    const auto answer =
        nlohmann::json::parse(read_file(dir.path() / ("raw" + std::to_string(i) + ".json")));
    const auto ours = top_of(answer["predictions"][0]);
    for (const auto& [name, p] : expected.at(files[i].string()))
      CHECK(ours.at(name) == Approx(p).margin(1e-6));
  }
  const auto form = nlohmann::json::parse(read_file(dir.path() / "form.json"));
  REQUIRE(form["predictions"].size() == 2);
  CHECK(form["predictions"][1]["image"] == files[2].filename().string());
  for (const auto& [name, p] : expected.at(files[2].string())) {
    CHECK(top_of(form["predictions"][1]).at(name) == Approx(p).margin(1e-6));
  }
  for (int c = 0; c < 64; ++c) {
    INFO("client " << c);
    const auto answer =
        nlohmann::json::parse(read_file(dir.path() / ("c" + std::to_string(c) + ".json")));
    for (const auto& [name, p] : expected.at(files[static_cast<std::size_t>(c % 4)].string())) {
      CHECK(top_of(answer["predictions"][0]).at(name) == Approx(p).margin(1e-6));
    }
  }
  const std::string metrics = read_file(dir.path() / "metrics.txt");
  const auto value = [&](const std::string& name) {  // the sample's line, not its # HELP
    const std::size_t at = metrics.find("\n" + name + " ");
    REQUIRE(at != std::string::npos);
    const std::size_t number = at + name.size() + 2;
    return std::stod(metrics.substr(number, metrics.find('\n', number) - number));
  };
  CHECK(value("ltfit_batch_size_sum") > value("ltfit_batch_size_count"));  // batches of 2+
  CHECK(value("ltfit_model_seconds_total") > 0);
  // The batches' large blocks were kept and used again, and the answers above are still exact.
  CHECK(value("ltfit_block_cache_hits_total") > 0);
  CHECK(value("ltfit_block_cache_bytes") <= 512.0 * (1 << 20));
  CHECK_THAT(metrics, Contains("ltfit_requests_total{status=\"200\"}"));
  for (int c = 0; c < 32; ++c) {
    INFO("in flight at SIGTERM: " << c);
    CHECK(read_file(dir.path() / ("t" + std::to_string(c) + ".code")) == "200\n");
  }
}

TEST_CASE("serve refuses bad requests with a 4xx and a JSON reason, and keeps serving",
          "[cli][serve]") {
  ltfit::testing::TempDir dir;
  const fs::path ckpt = train_tiny(dir);
  const auto files = images(dir);
  write_file(dir.path() / "token", "0123456789abcdef0123\n");
  write_file(dir.path() / "garbage.jpg", std::string("\xff\xd8\xff\xe0garbage", 12));
  write_file(dir.path() / "big.bin", std::string(2 << 20, 'x'));
  write_file(dir.path() / "held.bin", std::string(300 << 10, 'x'));
  write_file(dir.path() / "more.bin", std::string(800 << 10, 'x'));
  {  // the first 40 % of a JPEG, and a PNG whose header claims 60000 x 60000 pixels
    const std::string jpeg = read_file(files[2]);
    write_file(dir.path() / "truncated.jpg", jpeg.substr(0, jpeg.size() * 2 / 5));
  }
  const std::string auth = "-H 'Authorization: Bearer 0123456789abcdef0123' ";
  const std::string code = "curl -s -o /dev/null -w '%{http_code}\\n' ";
  const std::string good =
      code + auth + "--data-binary @" + files[0].string() + " $BASE/v1/predict";
  const std::string script =
      "echo no-token $(" + code + "--data-binary @" + files[0].string() + " $BASE/v1/predict)\n" +
      "echo wrong-token $(" + code + "-H 'Authorization: Bearer nope' $BASE/v1/info)\n" +
      "echo healthz-open $(" + code + "$BASE/healthz)\n" + "echo text $(" + code + auth +
      "-H 'Content-Type: text/plain' --data 'hello' $BASE/v1/predict)\n" + "echo garbage $(" +
      code + auth + "-H 'Content-Type: image/jpeg' --data-binary @garbage.jpg $BASE/v1/predict)\n" +
      "echo big $(" + code + auth + "--data-binary @big.bin $BASE/v1/predict)\n" + "echo empty $(" +
      code + auth + "-X POST $BASE/v1/predict)\n" + "echo multipart $(" + code + auth +
      "-H 'Content-Type: multipart/form-data; boundary=XX' --data 'nothing' $BASE/v1/predict)\n" +
      "echo topk $(" + code + auth + "--data-binary @" + files[0].string() +
      " \"$BASE/v1/predict?top_k=abc\")\n" + "echo path $(" + code + "--path-as-is " + auth +
      "$BASE/../../etc/passwd)\n" + "echo method $(" + code + auth + "$BASE/v1/predict)\n" +
      "echo dots $(" + code + "--path-as-is " + auth + "$BASE/%2e%2e/%2e%2e/etc/passwd)\n" +
      "echo slashes $(" + code + "--path-as-is " + auth + "$BASE//etc/passwd)\n" +
      "echo truncated $(" + code + auth +
      "-H 'Content-Type: image/jpeg' --data-binary @truncated.jpg $BASE/v1/predict)\n" +
      "python3 -c \"import "
      "struct,zlib\nihdr=b'IHDR'+struct.pack('>IIBBBBB',60000,60000,8,2,0,0,0)\n"
      "chunk=lambda b: struct.pack('>I',len(b)-4)+b+struct.pack('>I',zlib.crc32(b))\n"
      "open('bomb.png','wb').write(b'\\x89PNG\\r\\n\\x1a\\n'+chunk(ihdr)+chunk(b'IDAT'+zlib."
      "compress(bytes(1000)))+chunk(b'IEND'))\"\n" +
      "echo bomb $(" + code + auth +
      "-H 'Content-Type: image/png' --data-binary @bomb.png $BASE/v1/predict)\n" +
      // --inflight-mb 1: a 300 KB body still arriving holds its share; 800 KB more is refused
      code + auth + "--limit-rate 150k --data-binary @held.bin $BASE/v1/predict > held.code &\n" +
      "HELD=$!\nsleep 0.5\necho inflight $(" + code + auth +
      "--data-binary @more.bin $BASE/v1/predict)\nwait $HELD\necho inflight-after $(" + code +
      auth + "--data-binary @more.bin $BASE/v1/predict)\n" + "echo reason $(curl -s " + auth +
      "-H 'Content-Type: text/plain' --data 'x' $BASE/v1/predict)\n" +
      // one byte a second: cut off after --request-timeout-s, while others are answered
      "python3 -c \"import socket,sys,time\ns=socket.create_connection(('127.0.0.1',$PORT))\n"
      "r=b''\nfor c in b'POST /v1/predict HTTP/1.1\\r\\nHost: x\\r\\n':\n"
      "  try:\n    s.send(bytes([c])); time.sleep(0.3)\n  except OSError: break\n"
      "  s.setblocking(False)\n  try: r+=s.recv(4096)\n  except OSError: pass\n"
      "  s.setblocking(True)\n  if r: break\nprint('slow', r.split(b' ')[1].decode() if r else "
      "'none')\" &\n"
      "SLOW=$!\nsleep 0.5\necho during-slow $(" +
      good + ")\nwait $SLOW\n" + "echo after $(" + good + ")\n";
  const std::string out = with_server(
      dir, ckpt, "--token-file token --body-limit-mb 1 --inflight-mb 1 --request-timeout-s 2",
      script);
  INFO(out << read_file(dir.path() / "server.log"));
  CHECK_THAT(
      out, Contains("no-token 401") && Contains("wrong-token 401") && Contains("healthz-open 200"));
  CHECK_THAT(out, Contains("text 415") && Contains("garbage 400") && Contains("big 413") &&
                      Contains("empty 400") && Contains("multipart 400") && Contains("topk 400"));
  CHECK_THAT(out, Contains("path 404") && Contains("method 405") && Contains("dots 404") &&
                      Contains("slashes 404"));
  CHECK_THAT(out, Contains("truncated 400") && Contains("bomb 400"));
  CHECK_THAT(out, Contains("inflight 503") && Contains("inflight-after 400"));
  CHECK_THAT(out, Contains("\"error\":\"send an image"));
  CHECK_THAT(out, Contains("slow 408") && Contains("during-slow 200") && Contains("after 200"));
  CHECK_THAT(out, Contains("server exit 0"));
}

namespace {

// The Grad-CAM overlay `ltfit serve` should answer for `image` and `label`, computed here with
// the library: uint8 [S,S,3] RGB.
torch::Tensor expected_overlay(const fs::path& ckpt, const fs::path& image, std::int64_t label) {
  ltfit::LoadedModel loaded = ltfit::load_model_for_eval(ckpt.string(), torch::kCPU);
  const ltfit::EvalOptions eval = ltfit::eval_options_for(loaded, torch::kCPU, "");
  std::string error;
  const auto rgb = ltfit::load_square_image(ltfit::ImageInput(image.string()),
                                            loaded.config.data.image_size, {}, &error);
  REQUIRE(rgb);
  const torch::Tensor pixels = ltfit::normalize_images(rgb->unsqueeze(0), torch::kCPU, false,
                                                       loaded.model->input_normalization());
  const torch::Tensor map =
      ltfit::grad_cam(loaded.model, pixels, torch::tensor({label}, torch::kInt64), eval)[0];
  return ltfit::cam_overlay(*rgb, map);
}

// A PNG file as uint8 [H,W,3] RGB.
torch::Tensor read_png_rgb(const fs::path& path) {
  cv::Mat bgr = cv::imread(path.string(), cv::IMREAD_COLOR);
  REQUIRE(!bgr.empty());
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return torch::from_blob(rgb.data, {rgb.rows, rgb.cols, 3}, torch::kUInt8).clone();
}

std::map<std::string, std::string> response_headers(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 2);
    if (!value.empty() && value.back() == '\r') value.pop_back();
    out[line.substr(0, colon)] = value;
  }
  return out;
}

}  // namespace

TEST_CASE("serve answers a multi-label model and TTA as predict does, and draws Grad-CAM",
          "[cli][serve][multi_label]") {
  ltfit::testing::TempDir dir;
  REQUIRE(run_ltfit("synth --out " + dir.str() +
                    "/shapes --layout csv --task shapes --train 24 --valid 8 --seed 2")
              .exit_code == 0);
  write_file(dir.path() / "shapes.yaml",
             "run: {name: shapes, out_dir: " + dir.str() + "/runs, seed: 3}\ndata: {root: " +
                 dir.str() + "/shapes, image_size: 32, batch_size: 8, workers: 1, layout: csv, " +
                 "csv: {valid_column: is_valid, label_delim: ' '}}\n" +
                 "model: {arch: resnet18, pretrained: none}\n" +
                 "train: {recipe: one_cycle, epochs: 1, lr: 2.0e-3, device: cpu}\n" +
                 "eval: {tta: false}\n");
  REQUIRE(run_ltfit("train --config " + (dir.path() / "shapes.yaml").string()).exit_code == 0);
  const fs::path ckpt = dir.path() / "runs/shapes/checkpoints/last.ckpt";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir.path() / "shapes/images")) {
    if (files.size() < 3) files.push_back(entry.path());
  }
  REQUIRE(files.size() == 3);
  std::string paths;
  for (const auto& f : files) paths += " " + f.string();
  const auto plain = run_ltfit("predict --json --top 4 --checkpoint " + ckpt.string() + paths);
  const auto tta =
      run_ltfit("predict --json --top 4 --tta --tta-mode v1 --checkpoint " + ckpt.string() + paths);
  INFO(plain.output << tta.output);
  REQUIRE((plain.exit_code == 0 && tta.exit_code == 0));

  std::string script;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string n = std::to_string(i), body = "--data-binary @" + files[i].string() + " ";
    script += "curl -s " + body + "\"$BASE/v1/predict?top_k=4\" > plain" + n + ".json\n";
    script += "curl -s " + body + "\"$BASE/v1/predict?top_k=4&tta=1\" > tta" + n + ".json\n";
  }
  const std::string image = "--data-binary @" + files[0].string() + " ";
  const std::string code = "curl -s -o /dev/null -w '%{http_code}\\n' ";
  script += "curl -s -D cam.h -o cam.png " + image + "$BASE/v1/cam\n" +
            "curl -s -D star.h -o star.png " + image + "\"$BASE/v1/cam?class=star\"\n" +
            "curl -s -D two.h -o /dev/null " + image + "\"$BASE/v1/cam?class=2\"\n" +
            "echo zebra $(" + code + image + "\"$BASE/v1/cam?class=zebra\")\n" + "echo get $(" +
            code + "$BASE/v1/cam)\n" + "echo two-images $(" + code + "-F a=@" + files[0].string() +
            " -F b=@" + files[1].string() + " $BASE/v1/cam)\n" + "echo bad-tta $(" + code + image +
            "\"$BASE/v1/predict?tta=maybe\")\n";
  const std::string out = with_server(dir, ckpt, "", script);
  INFO(out << read_file(dir.path() / "server.log"));
  CHECK_THAT(out, Contains("server exit 0"));
  const auto want_plain = ltfit::testing::top_probabilities(plain.stdout_text);
  const auto want_tta = ltfit::testing::top_probabilities(tta.stdout_text);
  std::istringstream plain_lines(plain.stdout_text);
  const auto label_names = [](const nlohmann::json& labels) {
    std::vector<std::string> names;
    for (const auto& l : labels) names.push_back(l["class"]);
    return names;
  };
  std::map<std::string, std::vector<std::string>> label_sets;
  for (std::string line; std::getline(plain_lines, line);) {
    const auto j = nlohmann::json::parse(line);
    label_sets[j["image"]] = label_names(j["labels"]);
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    INFO(files[i]);
    const auto p =
        nlohmann::json::parse(read_file(dir.path() / ("plain" + std::to_string(i) + ".json")));
    const auto t =
        nlohmann::json::parse(read_file(dir.path() / ("tta" + std::to_string(i) + ".json")));
    for (const auto& [name, prob] : want_plain.at(files[i].string())) {
      CHECK(top_of(p["predictions"][0]).at(name) == Approx(prob).margin(1e-6));
    }
    CHECK(label_names(p["predictions"][0]["labels"]) == label_sets.at(files[i].string()));
    CHECK(t["predictions"][0]["tta"] == "v1");
    for (const auto& [name, prob] : want_tta.at(files[i].string())) {
      CHECK(top_of(t["predictions"][0]).at(name) == Approx(prob).margin(1e-6));
    }
  }
  // Grad-CAM: the predicted class by default, a named one, one by index; refusals
  const auto best = nlohmann::json::parse(read_file(dir.path() / "plain0.json"));
  const std::string predicted = best["predictions"][0]["top"][0]["class"];
  const auto cam_h = response_headers(read_file(dir.path() / "cam.h"));
  CHECK(cam_h.at("Content-Type") == "image/png");
  CHECK(cam_h.at("X-Ltfit-Class") == predicted);
  CHECK(std::stod(cam_h.at("X-Ltfit-Probability")) ==
        Approx(best["predictions"][0]["top"][0]["probability"].get<double>()).margin(1e-6));
  CHECK(response_headers(read_file(dir.path() / "star.h")).at("X-Ltfit-Label") == "2");
  CHECK(response_headers(read_file(dir.path() / "two.h")).at("X-Ltfit-Class") == "star");
  CHECK_THAT(out, Contains("zebra 400") && Contains("get 405") && Contains("two-images 413") &&
                      Contains("bad-tta 400"));
  const torch::Tensor served = read_png_rgb(dir.path() / "star.png");
  CHECK(served.sizes() == torch::IntArrayRef({32, 32, 3}));
  const torch::Tensor want = expected_overlay(ckpt, files[0], 2);
  CHECK((served.to(torch::kInt32) - want.to(torch::kInt32)).abs().max().item<int>() <= 1);
}
