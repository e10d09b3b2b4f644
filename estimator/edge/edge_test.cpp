#include <gtest/gtest.h>

#include <algorithm>

#include "shardcost/error.h"
#include "shardcost/estimator.h"
#include "shardcost/split_learning.h"

namespace shardcost {
namespace {

std::string path(const char* rel) {
  return std::string(SHARDCOST_SOURCE_DIR) + "/" + rel;
}

TEST(EdgeDevices, CatalogAndFiles) {
  const auto all = edge_devices();
  ASSERT_EQ(all.size(), 4u);
  const EdgeDevice pi = find_edge_device("raspberry-pi-4");
  EXPECT_DOUBLE_EQ(pi.fp32_flops, 48e9);
  EXPECT_EQ(pi.fp16_flops, 0);
  EXPECT_THROW(find_edge_device("pixel-9"), InputError);
  const SplitSetup s = load_split_devices(path("data/examples/edge-devices.json"));
  ASSERT_EQ(s.clients.size(), 6u);
  EXPECT_DOUBLE_EQ(s.shared_uplink_Bps, 360e6 / 8);
  EXPECT_EQ(s.clients[0].batch, 16);
  try {
    parse_split_devices_json(R"({"devices": [{"device": "jetson-nano", "downlink_Mbps": 100,
                                 "batch": 8}]})",
                             "d.json");
    ADD_FAILURE() << "a device without its uplink loaded";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("devices[0]"), std::string::npos) << what;
    EXPECT_NE(what.find("uplink_Mbps"), std::string::npos) << what;
  }
  EXPECT_THROW(parse_split_devices_json(R"({"devices": []})", "d.json"), InputError);
  EXPECT_THROW(parse_split_devices_json(
                   R"({"devices": [{"device": "jetson-nano", "uplink_Mbps": 1,
                       "downlink_Mbps": 1, "batch": 8, "uplink": 3}]})",
                   "d.json"),
               InputError);
}

TEST(SplitLearning, PerDeviceCutsBeatOneCommonCut) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  const SplitSetup s = load_split_devices(path("data/examples/edge-devices.json"));
  const SplitResult r = plan_split_learning(g, find_device("a100-sxm4-80gb"), s, {});
  // Cuts where one tensor crosses: after each of the stem's four operators, after each of the
  // 16 residual blocks' add and its ReLU, and after the global pooling; never inside a block.
  EXPECT_EQ(r.cuts, 4 + 2 * 16 + 1);
  ASSERT_EQ(r.best.clients.size(), 6u);
  EXPECT_LE(r.best.round_s, r.baseline.round_s);
  double shares = 0;
  for (const ClientRound& c : r.best.clients) {
    shares += c.share;
    EXPECT_LE(c.finish_s, r.best.round_s + 1e-12);
    EXPECT_GE(c.wait_s, 0);
    EXPECT_NEAR(c.finish_s, c.device_s + c.upload_s + c.wait_s + c.server_s + c.download_s,
                1e-9 * c.finish_s);
    EXPECT_GT(c.smashed_bytes, 0);
  }
  EXPECT_NEAR(shares, 1, 1e-9);
  // The fastest device (the Orin) holds at least as many operators as a Raspberry Pi.
  EXPECT_GE(r.best.clients[4].cut, r.best.clients[0].cut);
  // The baseline gives every device the same cut.
  for (const ClientRound& c : r.baseline.clients) EXPECT_EQ(c.cut, r.baseline.clients[0].cut);
}

TEST(SplitLearning, TheRawInputNeverCrossesACut) {
  // odd-shapes reads its input in its first convolution and again in a 1x1 convolution added
  // after the grouped one: no cut before that add.
  const OpGraph g = load_onnx(path("tests/data/onnx/odd-shapes.onnx"));
  SplitSetup s = load_split_devices(path("data/examples/edge-devices.json"));
  s.clients.resize(2);
  const SplitResult r = plan_split_learning(g, find_device("a100-sxm4-80gb"), s, {});
  for (const ClientRound& c : r.best.clients) EXPECT_GE(c.cut, 4) << c.cut_after;
  EXPECT_EQ(r.cuts, 3);  // after the add, the resize, the batched matmul
}

// Inference (issue 39, item 3): a forward pass per request batch. The cuts take in both ends;
// a device's latency is its forward, the upload, the wait, the server's forward and the
// result's download; the throughput is the devices' samples over the slowest stage with
// batches pipelined.
TEST(SplitLearning, InferenceSplitsAForwardPass) {
  const OpGraph g = load_onnx(path("data/onnx/resnet50.onnx"));
  const SplitSetup s = load_split_devices(path("data/examples/edge-devices.json"));
  SplitOptions o;
  o.precision = DType::fp16;
  o.inference = true;
  const SplitResult r = plan_split_learning(g, find_device("a100-sxm4-80gb"), s, o);
  EXPECT_EQ(r.cuts, 4 + 2 * 16 + 1 + 2);  // the training cuts and both ends
  double slowest = 0, serving = 0, samples = 0;
  for (size_t i = 0; i < r.best.clients.size(); ++i) {
    const ClientRound& c = r.best.clients[i];
    EXPECT_NEAR(c.finish_s, c.device_s + c.upload_s + c.wait_s + c.server_s + c.download_s,
                1e-9 * c.finish_s);
    if (c.cut == 0) {  // all on the server: the raw input goes up (224 x 224 x 3, fp16)
      EXPECT_DOUBLE_EQ(c.smashed_bytes, 224.0 * 224 * 3 * s.clients[i].batch * 2);
      EXPECT_EQ(c.device_s, 0);
    }
    if (c.cut_after.find("all on the device") != std::string::npos) {
      EXPECT_EQ(c.smashed_bytes, 0);
      EXPECT_EQ(c.server_s, 0);
      EXPECT_EQ(c.download_s, 0);
    } else {
      EXPECT_DOUBLE_EQ(c.result_bytes, 1000.0 * s.clients[i].batch * 2);  // the logits
    }
    slowest = std::max({slowest, c.device_s, c.upload_s, c.download_s});
    serving += c.server_s;
    samples += s.clients[i].batch;
  }
  EXPECT_NEAR(r.best.samples_per_s, samples / std::max(slowest, serving), 1e-9 * samples);
  EXPECT_LE(r.best.round_s, r.baseline.round_s);
  // Forward only: sooner than a training round.
  SplitOptions training;
  training.precision = DType::fp16;
  const SplitResult t = plan_split_learning(g, find_device("a100-sxm4-80gb"), s, training);
  EXPECT_LT(r.best.round_s, t.best.round_s);
  // The Orin, fast and short of uplink, answers on its own rather than wait for the network.
  EXPECT_NE(r.best.clients[4].cut_after.find("all on the device"), std::string::npos)
      << r.best.clients[4].cut_after;
  // Without a network worth the name, every device answers on its own.
  SplitSetup slow = s;
  for (SplitClient& c : slow.clients) c.uplink_Bps = 1e3;
  slow.shared_uplink_Bps = 0;
  const SplitResult local = plan_split_learning(g, find_device("a100-sxm4-80gb"), slow, o);
  for (const ClientRound& c : local.best.clients)
    EXPECT_NE(c.cut_after.find("all on the device"), std::string::npos) << c.name;
}

TEST(SplitLearning, MemoryLimitsTheCut) {
  const OpGraph g = load_onnx(path("data/onnx/vgg16.onnx"));
  SplitSetup s = load_split_devices(path("data/examples/edge-devices.json"));
  s.clients.resize(1);
  s.clients[0].batch = 16384;  // a Raspberry Pi cannot hold even the first input it keeps
  EXPECT_THROW(plan_split_learning(g, find_device("a100-sxm4-80gb"), s, {}), InputError);
}

}  // namespace
}  // namespace shardcost
