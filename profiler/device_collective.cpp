// The NCCL collective benchmark's logic over CollectiveLanes (device_collective.h).
#include "device_collective.h"

#include <fmt/format.h>

#include <algorithm>

#include "host_buffers.h"
#include "shardcost/error.h"

namespace shardcost::bench {

DeviceCollective::DeviceCollective(const CollectiveOptions& o, std::string op, int64_t bytes,
                                   CollectiveLanes& lanes, RankGroup group)
    : o_(o), op_(std::move(op)), lanes_(lanes), group_(std::move(group)) {
  in_place_ = o.in_place && op_ != "all_to_all" && op_ != "send_recv";
  ts_ = lanes_.type_size(o.dtype);
  layout_ = collective_layout(op_, bytes, ts_, lanes_.ranks());
  const int64_t n = std::max(layout_.send_count, layout_.recv_count);
  for (int l = 0; l < lanes_.lanes(); ++l) {
    check_room(2 * n * ts_, lanes_.free_bytes(l),
               fmt::format("NCCL {} of {} bytes", op_, layout_.bytes), "device");
    send_.push_back(lanes_.alloc(l, n * ts_));
    recv_.push_back(lanes_.alloc(l, n * ts_));
  }
  fill();
}

void DeviceCollective::prepare(int) {
  if (group_.barrier) group_.barrier();
}

std::pair<const std::byte*, std::byte*> DeviceCollective::pointers(int lane) const {
  const auto l = static_cast<size_t>(lane);
  if (!in_place_) return {send_[l].get(), recv_[l].get()};
  // In place, both pointers lie in one buffer at the offsets NCCL documents (an all-gather
  // sends from its own slot of the output, a reduce-scatter receives into its slot).
  const InPlaceOffsets at = in_place_offsets(op_, lanes_.rank(lane), layout_, ts_);
  return {recv_[l].get() + at.send, recv_[l].get() + at.recv};
}

void DeviceCollective::run(int) {
  lanes_.group_start();
  for (int l = 0; l < lanes_.lanes(); ++l) {
    const auto [send, recv] = pointers(l);
    lanes_.enqueue(l, op_, send, recv, layout_.send_count, layout_.recv_count, o_.dtype, o_.redop,
                   o_.root);
  }
  lanes_.group_end();
}

void DeviceCollective::finish() {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(o_.timeout_s));
  if (lanes_.wait(deadline)) return;
  lanes_.abort();
  throw Error(fmt::format(
      "NCCL {} of {} bytes over {} ranks did not finish within {:g} s; communicators aborted. "
      "Check that every rank runs the same command, or raise --timeout",
      op_, layout_.bytes, lanes_.ranks(), o_.timeout_s));
}

int64_t DeviceCollective::checked_elements() const {
  return layout_.recv_count * lanes_.lanes();
}

int64_t DeviceCollective::check() {
  fill();
  run(0);
  finish();
  int64_t wrong = 0;
  for (int l = 0; l < lanes_.lanes(); ++l) {
    const auto [send, recv] = pointers(l);
    (void)send;
    const std::vector<float> out = lanes_.download(l, recv, layout_.recv_count, o_.dtype);
    for (int64_t i = 0; i < layout_.recv_count; ++i) {
      const auto want =
          expected_value(op_, o_.redop, lanes_.ranks(), lanes_.rank(l), o_.root, i, layout_);
      if (want && out[static_cast<size_t>(i)] != static_cast<float>(*want)) ++wrong;
    }
  }
  return group_.sum_all ? group_.sum_all(wrong) : wrong;
}

void DeviceCollective::fill() {
  const int64_t n = std::max(layout_.send_count, layout_.recv_count);
  for (int l = 0; l < lanes_.lanes(); ++l) {
    const auto i = static_cast<size_t>(l);
    std::vector<float> in(static_cast<size_t>(layout_.send_count));
    for (int64_t k = 0; k < layout_.send_count; ++k)
      in[static_cast<size_t>(k)] = static_cast<float>(input_value(o_.redop, lanes_.rank(l), k));
    lanes_.upload(l, in, send_[i].get(), o_.dtype);
    lanes_.zero(l, recv_[i].get(), n * ts_);
    if (in_place_ || op_ == "broadcast") {
      // In place, the input sits where NCCL reads it: this rank's slot for all_gather.
      const int64_t offset =
          in_place_ ? in_place_offsets(op_, lanes_.rank(l), layout_, ts_).send : 0;
      lanes_.copy(l, recv_[i].get() + offset, send_[i].get(), layout_.send_count * ts_);
    }
  }
}

}  // namespace shardcost::bench
