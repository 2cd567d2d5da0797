#include "dist/shm_communicator.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "dist/call_timer.h"
#include "dist/reduce_sum.h"

namespace pagellm::dist {
namespace {

constexpr uint64_t kMagic = 0x6d68735f6d6c6c70ULL;  // "pllm_shm"

struct alignas(64) Control {
  uint64_t magic;
  int32_t rank, world_size, pid;
  int64_t chunk_bytes;
  std::atomic<uint32_t> ready;
  Stamp coll;                    // collective step this rank has published
  Stamp send[kMaxShmRanks];      // last chunk sent to rank j
  Stamp ack[kMaxShmRanks];       // last chunk consumed from rank j
};

size_t DataOffset() { return (sizeof(Control) + 4095) / 4096 * 4096; }
size_t SegmentBytes(int world, int64_t chunk) {
  return DataOffset() + static_cast<size_t>(chunk) * 2 * static_cast<size_t>(1 + world);
}

}  // namespace

struct ShmCommunicator::Segment {
  std::string name;
  std::byte* base = nullptr;
  size_t size = 0;
  Control* control() const { return reinterpret_cast<Control*>(base); }
  // [2][chunk]: collective step buffers.
  std::byte* coll(uint32_t seq, int64_t chunk) const { return base + DataOffset() + (seq & 1) * chunk; }
  // [world][2][chunk]: what this rank sends to `dst`.
  std::byte* p2p(int dst, uint32_t seq, int64_t chunk) const {
    return base + DataOffset() + 2 * chunk + (2 * static_cast<int64_t>(dst) + (seq & 1)) * chunk;
  }
};

ShmCommunicator::ShmCommunicator(const ShmOptions& options)
    : options_(options), segments_(static_cast<size_t>(options.world_size)),
      send_seq_(static_cast<size_t>(options.world_size)), recv_seq_(static_cast<size_t>(options.world_size)) {}

ShmCommunicator::~ShmCommunicator() {
  for (Segment& s : segments_) {
    if (s.base != nullptr) munmap(s.base, s.size);
  }
  if (!unlinked_) shm_unlink(segments_[static_cast<size_t>(options_.rank)].name.c_str());
}

std::string ShmCommunicator::MakeGroupId() {
  uint64_t random = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (read(fd, &random, sizeof(random)) != static_cast<ssize_t>(sizeof(random))) random = 0;
    close(fd);
  }
  if (random == 0) random = static_cast<uint64_t>(SteadySeconds() * 1e9) ^ (static_cast<uint64_t>(getpid()) << 32);
  return fmt::format("{}-{:016x}", getpid(), random);
}

std::string ShmCommunicator::SegmentName(const std::string& group_id, int rank) {
  return fmt::format("/pagellm-{}-r{}", group_id, rank);
}

StatusOr<std::unique_ptr<ShmCommunicator>> ShmCommunicator::Create(const ShmOptions& options) {
  if (options.world_size < 1 || options.world_size > kMaxShmRanks) {
    return InvalidArgumentError(fmt::format("shared-memory communicator: world size {} is not in [1, {}]",
                                            options.world_size, kMaxShmRanks));
  }
  if (options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgumentError(fmt::format("shared-memory communicator: rank {} is not in [0, {})", options.rank,
                                            options.world_size));
  }
  if (options.chunk_bytes < 4096 || options.chunk_bytes % 64 != 0) {
    return InvalidArgumentError("shared-memory communicator: chunk_bytes must be a multiple of 64, >= 4096");
  }
  if (options.group_id.empty() || options.group_id.find('/') != std::string::npos) {
    return InvalidArgumentError(fmt::format("shared-memory communicator: bad group id '{}'", options.group_id));
  }
  std::unique_ptr<ShmCommunicator> comm(new ShmCommunicator(options));
  PAGELLM_RETURN_IF_ERROR(comm->CreateOwnSegment());
  PAGELLM_RETURN_IF_ERROR(comm->MapPeerSegments());
  // Every rank has mapped every segment once all pass this barrier: names can go.
  const double timeout = comm->options_.timeout_s;
  comm->options_.timeout_s = options.init_timeout_s;
  PAGELLM_RETURN_IF_ERROR(comm->Barrier());
  comm->options_.timeout_s = timeout;
  shm_unlink(comm->segments_[static_cast<size_t>(options.rank)].name.c_str());
  comm->unlinked_ = true;
  comm->ResetStats();
  return comm;
}

Status ShmCommunicator::CreateOwnSegment() {
  Segment& s = segments_[static_cast<size_t>(options_.rank)];
  s.name = SegmentName(options_.group_id, options_.rank);
  s.size = SegmentBytes(options_.world_size, options_.chunk_bytes);
  int fd = shm_open(s.name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    return UnavailableError(fmt::format("shm_open({}) failed: {}", s.name, std::strerror(errno)));
  }
  if (ftruncate(fd, static_cast<off_t>(s.size)) != 0) {
    const int err = errno;
    close(fd);
    shm_unlink(s.name.c_str());
    return ResourceExhaustedError(fmt::format("cannot size {} to {} bytes (is /dev/shm large enough?): {}", s.name,
                                              s.size, std::strerror(err)));
  }
  void* p = mmap(nullptr, s.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(s.name.c_str());
    return UnavailableError(fmt::format("mmap of {} failed: {}", s.name, std::strerror(errno)));
  }
  s.base = static_cast<std::byte*>(p);
  Control* c = new (s.base) Control{};
  c->magic = kMagic;
  c->rank = options_.rank;
  c->world_size = options_.world_size;
  c->pid = getpid();
  c->chunk_bytes = options_.chunk_bytes;
  c->ready.store(1, std::memory_order_release);
  return OkStatus();
}

Status ShmCommunicator::MapPeerSegments() {
  const double deadline = SteadySeconds() + options_.init_timeout_s;
  const size_t want = SegmentBytes(options_.world_size, options_.chunk_bytes);
  for (int r = 0; r < options_.world_size; ++r) {
    if (r == options_.rank) continue;
    Segment& s = segments_[static_cast<size_t>(r)];
    s.name = SegmentName(options_.group_id, r);
    for (;;) {
      int fd = shm_open(s.name.c_str(), O_RDWR, 0600);
      struct stat st {};
      if (fd >= 0 && fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= want) {
        void* p = mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED) return UnavailableError(fmt::format("mmap of {} failed", s.name));
        s.base = static_cast<std::byte*>(p);
        s.size = want;
        break;
      }
      if (fd >= 0) close(fd);
      if (SteadySeconds() > deadline) {
        return UnavailableError(fmt::format("distributed: rank {} did not start within {:.0f} s (no segment {})", r,
                                            options_.init_timeout_s, s.name));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // ftruncate sizes before the header is written: wait for `ready` as well.
    while (s.control()->ready.load(std::memory_order_acquire) != 1) {
      if (SteadySeconds() > deadline) return UnavailableError(fmt::format("rank {} never became ready", r));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const Control* c = s.control();
    if (c->magic != kMagic || c->rank != r || c->world_size != options_.world_size ||
        c->chunk_bytes != options_.chunk_bytes) {
      return FailedPreconditionError(fmt::format("segment {} belongs to another group layout", s.name));
    }
  }
  return OkStatus();
}

int ShmCommunicator::peer_pid(int rank) const { return segments_[static_cast<size_t>(rank)].control()->pid; }

Status ShmCommunicator::Fail(Status status) {
  failed_ = status;
  return status;
}

Status ShmCommunicator::Wait(const Stamp& stamp, uint32_t target, int peer, const char* what) {
  WaitContext ctx{.spin_s = options_.spin_s, .timeout_s = options_.timeout_s, .peer_pid = peer_pid(peer),
                  .peer_rank = peer, .what = what};
  double waited = 0;
  Status s = WaitFor(stamp, target, ctx, &waited);
  stats_.wait_s += waited;
  if (!s.ok()) return Fail(s);
  return OkStatus();
}

Status ShmCommunicator::BeginStep(const void* payload, size_t nbytes) {
  const uint32_t seq = ++coll_seq_;
  Segment& own = segments_[static_cast<size_t>(options_.rank)];
  if (payload != nullptr) {
    for (int p = 0; p < options_.world_size; ++p) {
      if (p == options_.rank) continue;
      PAGELLM_RETURN_IF_ERROR(Wait(segments_[static_cast<size_t>(p)].control()->coll, seq - 1, p, "collective"));
    }
    std::memcpy(own.coll(seq, options_.chunk_bytes), payload, nbytes);
    stats_.num_bytes += static_cast<int64_t>(nbytes);
  }
  Publish(own.control()->coll, seq);
  return OkStatus();
}

Status ShmCommunicator::WaitPeerStep(int peer) {
  if (peer == options_.rank) return OkStatus();
  return Wait(segments_[static_cast<size_t>(peer)].control()->coll, coll_seq_, peer, "collective");
}

const std::byte* ShmCommunicator::PeerCollBuffer(int peer) const {
  return segments_[static_cast<size_t>(peer)].coll(coll_seq_, options_.chunk_bytes);
}

Status ShmCommunicator::CheckUsable(int rank_arg, bool any_rank_ok) const {
  if (!failed_.ok()) return failed_;
  if (!any_rank_ok && (rank_arg < 0 || rank_arg >= options_.world_size)) {
    return InvalidArgumentError(fmt::format("distributed: rank {} is not in [0, {})", rank_arg, options_.world_size));
  }
  return OkStatus();
}

Status ShmCommunicator::AllReduceSum(void* data, int64_t count, DType dtype) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(0, true));
  if (dtype != DType::kF32 && dtype != DType::kBF16) {
    return InvalidArgumentError(fmt::format("all-reduce of {} is not supported (f32, bf16)", DTypeName(dtype)));
  }
  if (options_.world_size == 1 || count == 0) return OkStatus();
  CallTimer timer(stats_);
  const int64_t elem = dtype == DType::kF32 ? 4 : 2;
  const int64_t per_chunk = options_.chunk_bytes / elem;
  const std::byte* sources[kMaxShmRanks];
  for (int64_t off = 0; off < count; off += per_chunk) {
    const int64_t n = std::min(per_chunk, count - off);
    std::byte* chunk = static_cast<std::byte*>(data) + off * elem;
    PAGELLM_RETURN_IF_ERROR(BeginStep(chunk, static_cast<size_t>(n * elem)));
    for (int p = 0; p < options_.world_size; ++p) {
      PAGELLM_RETURN_IF_ERROR(WaitPeerStep(p));
      sources[p] = PeerCollBuffer(p);
    }
    if (dtype == DType::kF32) {
      SumF32(reinterpret_cast<const float* const*>(sources), options_.world_size, n, reinterpret_cast<float*>(chunk));
    } else {
      SumBf16(reinterpret_cast<const uint16_t* const*>(sources), options_.world_size, n,
              reinterpret_cast<uint16_t*>(chunk));
    }
  }
  return OkStatus();
}

Status ShmCommunicator::Broadcast(void* data, int64_t nbytes, int root) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(root, false));
  if (options_.world_size == 1 || nbytes == 0) return OkStatus();
  CallTimer timer(stats_);
  const bool is_root = options_.rank == root;
  for (int64_t off = 0; off < nbytes; off += options_.chunk_bytes) {
    const int64_t n = std::min(options_.chunk_bytes, nbytes - off);
    std::byte* chunk = static_cast<std::byte*>(data) + off;
    PAGELLM_RETURN_IF_ERROR(BeginStep(is_root ? chunk : nullptr, static_cast<size_t>(n)));
    if (is_root) continue;
    PAGELLM_RETURN_IF_ERROR(WaitPeerStep(root));
    std::memcpy(chunk, PeerCollBuffer(root), static_cast<size_t>(n));
  }
  return OkStatus();
}

Status ShmCommunicator::Gather(const void* send, int64_t nbytes, void* recv, int root) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(root, false));
  const bool is_root = options_.rank == root;
  if (is_root && recv == nullptr && nbytes > 0) return InvalidArgumentError("Gather: the root needs a buffer");
  if (is_root && nbytes > 0) std::memcpy(static_cast<std::byte*>(recv) + root * nbytes, send, static_cast<size_t>(nbytes));
  if (options_.world_size == 1 || nbytes == 0) return OkStatus();
  CallTimer timer(stats_);
  for (int64_t off = 0; off < nbytes; off += options_.chunk_bytes) {
    const int64_t n = std::min(options_.chunk_bytes, nbytes - off);
    PAGELLM_RETURN_IF_ERROR(BeginStep(static_cast<const std::byte*>(send) + off, static_cast<size_t>(n)));
    if (!is_root) continue;
    for (int p = 0; p < options_.world_size; ++p) {
      if (p == root) continue;
      PAGELLM_RETURN_IF_ERROR(WaitPeerStep(p));
      std::memcpy(static_cast<std::byte*>(recv) + p * nbytes + off, PeerCollBuffer(p), static_cast<size_t>(n));
    }
  }
  return OkStatus();
}

Status ShmCommunicator::Barrier() {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(0, true));
  if (options_.world_size == 1) return OkStatus();
  CallTimer timer(stats_);
  PAGELLM_RETURN_IF_ERROR(BeginStep(nullptr, 0));
  for (int p = 0; p < options_.world_size; ++p) PAGELLM_RETURN_IF_ERROR(WaitPeerStep(p));
  return OkStatus();
}

Status ShmCommunicator::Send(const void* data, int64_t nbytes, int dst) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(dst, false));
  if (dst == options_.rank) return InvalidArgumentError("Send: a rank cannot send to itself");
  CallTimer timer(stats_);
  Segment& own = segments_[static_cast<size_t>(options_.rank)];
  const Segment& peer = segments_[static_cast<size_t>(dst)];
  return ForEachChunk(nbytes, options_.chunk_bytes, [&](int64_t off, int64_t n) -> Status {
    const uint32_t seq = ++send_seq_[static_cast<size_t>(dst)];
    // The receiver has consumed the chunk that used this buffer two messages ago.
    PAGELLM_RETURN_IF_ERROR(Wait(peer.control()->ack[options_.rank], seq - 2, dst, "receive"));
    std::memcpy(own.p2p(dst, seq, options_.chunk_bytes), static_cast<const std::byte*>(data) + off,
                static_cast<size_t>(n));
    stats_.num_bytes += n;
    Publish(own.control()->send[dst], seq);
    return OkStatus();
  });
}

Status ShmCommunicator::Recv(void* data, int64_t nbytes, int src) {
  PAGELLM_RETURN_IF_ERROR(CheckUsable(src, false));
  if (src == options_.rank) return InvalidArgumentError("Recv: a rank cannot receive from itself");
  CallTimer timer(stats_);
  Segment& own = segments_[static_cast<size_t>(options_.rank)];
  const Segment& peer = segments_[static_cast<size_t>(src)];
  return ForEachChunk(nbytes, options_.chunk_bytes, [&](int64_t off, int64_t n) -> Status {
    const uint32_t seq = ++recv_seq_[static_cast<size_t>(src)];
    PAGELLM_RETURN_IF_ERROR(Wait(peer.control()->send[options_.rank], seq, src, "send"));
    std::memcpy(static_cast<std::byte*>(data) + off, peer.p2p(options_.rank, seq, options_.chunk_bytes),
                static_cast<size_t>(n));
    Publish(own.control()->ack[src], seq);
    return OkStatus();
  });
}

}  // namespace pagellm::dist
